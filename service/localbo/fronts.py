"""A multi-objective study's Pareto front, hypervolume and its history (issue 31), for ``/pareto`` and the summary.

The front is the non-dominated set of the completed trials that are feasible (or of a study without outcome
constraints); the hypervolume is the volume they dominate up to the reference point, computed by BoTorch's
utilities (``policies/pareto.py``) in minimised units (a maximised objective negated: volumes do not change).
The reference point is the study's, or inferred from the feasible completed trials (``pareto.infer_reference_point``:
the nadir of their front plus a tenth of its range) and said so; the history then uses the same inferred point
throughout, so its values compare with each other (and move when a new result moves the point).

The history lists the trials that raised the hypervolume, (number, hypervolume after it), in trial order: a
trial that adds nothing to the front adds no entry. Answers are cached per study identity and result count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from localbo.caches import BoundedCache
from localbo.domain.outcomes import Outcomes

_CACHE: BoundedCache[dict[str, Any]] = BoundedCache(max_cost=256)
OVERFLOW_NOTE = (
    "the volume the front dominates is past the double range (results near +-1e308): no number; "
    "a reference_point nearer the front, or results in smaller units, give one"
)


def reference_point(outcomes: Outcomes, Y: torch.Tensor) -> tuple[list[float], bool]:
    """The reference point in minimised units and whether it was inferred (``Y``: n x k minimised values of the
    feasible completed trials, what it is inferred from)."""
    if outcomes.reference_point is not None:
        return outcomes.minimised(outcomes.reference_point), False
    if Y.shape[0] == 0:
        return [0.0] * len(outcomes.objectives), True
    from localbo.policies.pareto import infer_reference_point

    return [float(v) for v in infer_reference_point(Y)], True


def front(outcomes: Outcomes, done: Sequence[Any]) -> dict[str, Any]:
    """The front of the completed rows ``done`` (number, metrics, feasible; by number): the front's trial numbers,
    the hypervolume, the reference point (user units) and whether it was inferred, and the history."""
    from localbo.policies.pareto import hypervolume, non_dominated

    rows = [r for r in done if r.metrics is not None and r.feasible is not False]
    k = len(outcomes.objectives)
    Y = torch.tensor([outcomes.minimised(r.metrics) for r in rows], dtype=torch.float64).reshape(-1, k)
    ref, inferred = reference_point(outcomes, Y)
    ref_t = torch.tensor(ref, dtype=torch.float64)
    mask = non_dominated(Y) if len(rows) else torch.zeros(0, dtype=torch.bool)
    signs = [-1.0 if o.direction == "maximize" else 1.0 for o in outcomes.objectives]
    out = {
        "numbers": [rows[i].number for i in range(len(rows)) if bool(mask[i])],
        "reference_point": {  # none inferred before a feasible result: null, not a made-up origin
            o.metric: _finite(v * s) if rows or not inferred else None
            for o, v, s in zip(outcomes.objectives, ref, signs, strict=True)
        },
        "reference_point_inferred": inferred,
        "completed": [r.number for r in done],
    }
    history: list[list[float]] = []
    kept: list[int] = []  # rows of the running front
    best = 0.0
    for i in range(len(rows)):
        if not bool((Y[i] < ref_t).all()):
            continue
        if any(bool((Y[j] <= Y[i]).all()) for j in kept):
            continue  # dominated by (or equal to) a point already on the front: nothing gained
        kept = [j for j in kept if not bool((Y[i] <= Y[j]).all())] + [i]
        best = hypervolume(Y[kept], ref_t)
        if not math.isfinite(best):  # values near the double range: a volume past it has no JSON number
            return {**out, "hypervolume": None, "history": history, "note": OVERFLOW_NOTE}  # the steps before it
        history.append([rows[i].number, best])
    return {**out, "hypervolume": best if history else (0.0 if rows else None), "history": history, "note": None}


def _finite(value: float) -> float | None:
    """An inferred reference point past the double range (results near +-1e300) has no JSON number: null."""
    return value if math.isfinite(value) else None


def cached_front(identity: tuple[Any, ...], outcomes: Outcomes, load: Any) -> dict[str, Any]:
    """``front`` for a study's identity and result count (``identity``), loading its rows with ``load()`` on a miss."""
    return _CACHE.get(identity, lambda: front(outcomes, load()))
