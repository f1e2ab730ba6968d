"""Safe mode's engine side (issue 30): where a safe study starts, and what it hands out when its policy is late.

    {"safety": {"max_violation_probability": 0.05, "seeds": [{"a": 0.2, "b": 0.1}, ...]}}

- **Seeds** are points the lab knows to be safe. At creation each is checked against the space (a 422 naming
  ``safety.seeds.<i>.<param>``) and the parameter constraints; they are queued as the study's first points
  (source ``seed``), and a local policy with no ``x0`` of its own starts at the first one.
- **No seeds**: the study starts from its first feasible completed trials, told with ``POST .../trials``; until one
  exists an ask has nowhere safe to go and is a 409 saying so (never a random point).
- **A late or failing policy** gets no random fallback: the safest known point is asked again (the completed
  feasible trial with the widest margin to its bounds, each margin relative to its bound's size, among those that
  keep the parameter constraints), else the first seed not shown unsafe (told infeasible there, or failed there
  when failures are avoided); its source says so (``fallback-safe``). With none, a 409.
- **A policy that asks a point asked before** (nothing measured yet but a running seed; turbo's observed centre
  when no candidate is predicted safe; a local policy's first batch, which measures its x_0, the seed, again):
  the point is the policy's, but the lab would measure the same safe point twice; its source says so
  (``repeat-safe``), so a noise-free rig can skip it or wait for the running result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from localbo.domain.outcomes import LinearConstraints, Outcomes
from localbo.domain.vocabulary import Source
from localbo.errors import Conflict, InvalidInput
from localbo.space import SearchSpace, SpaceError
from localbo.storage.plan_queue import PlanPoint

SAFE_FALLBACK = Source.SAFE_FALLBACK.value
TOLERANCE = 1e-9  # the parameter constraints' (Polytope.TOLERANCE), in the unit cube
SEED = Source.SEED.value
SAFE_REPEAT = Source.SAFE_REPEAT.value


def seed_points(outcomes: Outcomes, space: SearchSpace | None, linear: LinearConstraints | None) -> list[list[float]]:
    """The seeds in the unit cube, each checked, or a 422 naming the seed and the parameter."""
    if outcomes.safety is None or not outcomes.safety.seeds:
        return []
    if space is None:
        raise InvalidInput("safety.seeds", "a finite space's safe points are candidates: tell them as trials")
    points: list[list[float]] = []
    for i, seed in enumerate(outcomes.safety.seeds):
        try:
            x = space.to_unit(seed, field=f"safety.seeds[{i}]")
        except SpaceError as exc:
            raise InvalidInput(exc.field, exc.message) from None
        if linear and linear.worst(x) > TOLERANCE:
            raise InvalidInput(f"safety.seeds[{i}]", "breaks the study's parameter_constraints")
        x = space.snap(x)
        if x in points:  # it would be asked twice
            raise InvalidInput(f"safety.seeds[{i}]", f"the same point as safety.seeds[{points.index(x)}]")
        points.append(x)
    return points


def start_config(config: dict[str, Any], seeds: list[list[float]]) -> dict[str, Any]:
    """A local policy's config starting at the first seed, unless it names its own ``x0``."""
    if seeds and "x0" in config and config["x0"] is None:
        return {**config, "x0": seeds[0]}
    return config


def margin(outcomes: Outcomes, metrics: dict[str, float]) -> float:
    """How far inside its bounds a feasible point is: the smallest margin, each relative to its bound's size."""
    return min(-c.violation(metrics[c.metric]) / max(1.0, abs(c.bound)) for c in outcomes.constraints)


def safest_known(
    outcomes: Outcomes,
    done: Sequence[Any],
    seeds: list[list[float]],
    linear: LinearConstraints | None = None,
    failed: Sequence[Sequence[float]] | None = None,
) -> list[float] | None:
    """The completed feasible point with the widest margin (the earliest on ties), else the first seed not shown
    unsafe (told infeasible, or, with ``failed``: the points of failed trials when failures are avoided, failed
    there); with ``linear``, only points that keep the parameter constraints (a trial added by hand may break
    them, and is never handed out again)."""
    feasible = [
        r
        for r in done
        if r.metrics is not None
        and outcomes.feasible(r.metrics) is not False
        and not (linear and linear.worst(list(r.x)) > TOLERANCE)
    ]
    if feasible and outcomes.constraints:
        return list(max(feasible, key=lambda r: (margin(outcomes, r.metrics), -r.number)).x)
    if feasible:  # failures only: any completed point did not fail
        return list(feasible[0].x)
    shown_unsafe = [list(r.x) for r in done if r.metrics is not None and outcomes.feasible(r.metrics) is False]
    shown_unsafe += [list(x) for x in failed or []]
    return next((seed for seed in seeds if not any(same_point(seed, x) for x in shown_unsafe)), None)


def same_point(a: Sequence[float], b: Sequence[float]) -> bool:
    """The same point in the unit cube (a seed is asked as it was snapped, and stored as asked)."""
    return len(a) == len(b) and all(abs(u - v) <= TOLERANCE for u, v in zip(a, b, strict=True))


def nowhere_safe(name: str, linear: LinearConstraints | None = None) -> Conflict:
    keeps = " that keeps the parameter_constraints" if linear else ""
    return Conflict(
        f"safety: study {name!r} has no seed not shown unsafe and no feasible completed trial{keeps} yet, so no "
        "point is known safe; "
        f"tell one with POST /api/v1/studies/{name}/trials (its params and values) and ask again"
    )


def safe_fallback(
    outcomes: Outcomes,
    done: Sequence[Any],
    seeds: list[list[float]],
    k: int,
    name: str,
    linear: LinearConstraints | None = None,
    failed: Sequence[Sequence[float]] | None = None,
) -> list[PlanPoint]:
    """``k`` plan points at the safest known point (``safest_known``), or the 409 of ``nowhere_safe``."""
    x = safest_known(outcomes, done, seeds, linear, failed)
    if x is None:
        raise nowhere_safe(name, linear)
    return [(list(x), SAFE_FALLBACK, None) for _ in range(k)]


def label_repeats(points: list[PlanPoint], asked: Sequence[Sequence[float]]) -> list[PlanPoint]:
    """The plan with each point asked before (``asked``: the completed and running trials' points) or earlier in the
    plan relabelled ``repeat-safe``; the others as they are."""
    seen = [list(x) for x in asked]
    out: list[PlanPoint] = []
    for x, source, candidate in points:
        if any(same_point(x, y) for y in seen):
            source = SAFE_REPEAT
        seen.append(list(x))
        out.append((x, source, candidate))
    return out
