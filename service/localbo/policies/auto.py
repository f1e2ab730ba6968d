"""``auto``: picks the policy for the study from its space, what it must respect and its data, and says why.

Each suggest reads the request (the kind of space, d, the number of results n, and what the study asks to respect:
outcome constraints ``C``, a ``polytope``, failures to avoid, safe mode, several objectives ``Y``), walks the
preferences below in order and runs the first policy whose ``spaces`` and ``handles`` cover the study:

    finite space        chaining-ucb up to 2,000 candidates (it led on Himmelblau and the graph task, 16 of 16
                        runs: results/chaining.md), else ucb (level with it on GP samples at ~1/300 of the cost);
                        random for several objectives (no model policy serves them on a finite space)
    several objectives  d <= 5: qlognehvi (global; morbo 5x behind on VehicleSafety, d 5: results/multiobjective.md),
                        from SMALL_DESIGN without outcome constraints (VehicleSafety at 200 evaluations -0.55
                        against -0.45 with its own search, the benchmark row's last run to 200, for 0.7x the CPU;
                        Branin-Currin level), searching as Ax does for its first
                        20 d results (WIDE_SEARCH; VehicleSafety at 100 -0.22 against 0.02); d 6 to 10
                        without outcome constraints: qlognehvi from a 5-point design, each GP refitted from its priors
                        (``SMALL_DESIGN``, as Ax's default: on DTLZ2-10 at 100 evaluations -1.31 against -1.03 for
                        minucb then morbo; at 200 -1.96 against -1.62, 5 of 5 seeds ahead; handed to morbo at 10 d
                        only -1.63) until 20 d results (``qlognehvi_until``), then morbo on the
                        front it reached; else (above 10, or with outcome constraints) minucb on ParEGO
                        scalarisations (local: it reaches the front first, ahead of morbo on DTLZ2-10, DTLZ2-30 and
                        C2DTLZ2-12) until 5 d results (its window), then morbo on the front it reached, its candidates
                        moving about 2 coordinates of a front point (``perturbed_coordinates``; the paper's 20 move
                        every coordinate up to d = 20 and leave the front): they slide along it, which the scalarised
                        steps, one weight at a time, cover slowly (at 200 evaluations, 5 seeds: DTLZ2-10 -1.14 ->
                        -1.62, DTLZ2-30 -0.69 -> -0.78, C2DTLZ2 -0.85 -> -1.25 in log10 hypervolume difference;
                        results/multiobjective_findings.md)
    safe mode           turbo (the measured safe mode: results/constrained.md)
    categorical         ei (global; the local steps have no meaning on one-hot blocks)
    outcome constraints turbo as SCBO (led every peer on the d >= 6 problems of results/constrained.md)
    or failures
    d <= 10             ei while n < 500 (global BO: results/lipschitz.md, d 2 to 10); then minucb from the best
                        point so far: past 500 results ei's GP fits a thinned subset (subsets.py, its cost kept
                        flat), where minucb's window of the last 5 d points stays dense around the best
    d > 10              mpd for the first 4 d results (its long walk down the most probable descent direction leads
                        the local policies at 2-4 d evaluations: results/league.md's early checkpoints), then
                        minucb from the best point (local BO: led CMA-ES, TuRBO, GPSampler and TPE at d 25 to 100
                        in results/league.md; the cheapest of the local policies; mpd stalls later, where minucb
                        keeps descending: Ackley-25 at 500 evaluations 2.13 against 0.60)

The choice can change as the study grows (the d <= 10 switch at n = 500; mpd to minucb at 4 d results above, set by
``mpd_until``; minucb to morbo at 5 d results for several objectives, ``morbo_after``; qlognehvi to morbo at 20 d
results on 6 to 10 coordinates, ``qlognehvi_until``): the new policy starts fresh on
all the data, a local one at the best point so far (its ``x0``), morbo with its regions on the front of all the data.
``configs`` holds settings for the policies it may pick, by name, checked at creation; under them, auto runs ei
with ``winsorize`` (its GP fitted to y clipped above Tukey's upper fence, as Ax does: a fifth of the regret on
Rosenbrock-3 and -4 at 100 evaluations, a tenth on Goldstein-Price, 1.2x on Rosenbrock-10; the policy's own default
stays off), minucb with its output warp (``CHOSEN_DEFAULTS``: measured ahead on Rosenbrock-25 and Ackley-25, level
on gp25; on Swimmer the unit-cube window and box, not the warp, cost it; the policy's own default stays the paper's
raw values) and mpd as the paper has it (its warp: Ackley-25 at 100 evaluations 5.05 against 5.37 on the league's
seeds, 3 of 5 better; Rosenbrock-25 worse on held-out seeds: results/probes/; a step after 10 exploration points
instead of d: Ackley-25 at 100 4.01 against 5.37, but 2 of 5 Rosenbrock-25 runs did not leave the centre in 100
evaluations and it ended behind at 200 and 500: results/league_findings.md, "auto with mpd first").
The state keeps the chosen policy's own state and the switches (bounded); ``display``
shows the chosen policy's display with "auto: chose" and "auto: why" added.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

from pydantic import BaseModel, Field, field_validator

from localbo.policies import register, registry
from localbo.policies.base import (
    CAPABILITIES,
    SPACE_KINDS,
    Display,
    Policy,
    PolicyConfig,
    PolicyConfigError,
    PolicyState,
    Suggestion,
    SuggestRequest,
    state_as,
)

GLOBAL_MAX_DIM = 10  # at most this many coordinates: a global GP policy
GLOBAL_MAX_N = 500  # ei's max_data: beyond, its GP sees a thinned subset; a local policy's window stays dense
MO_GLOBAL_MAX_DIM = 5  # several objectives: qlognehvi up to here, minucb beyond
MO_SMALL_DESIGN_MAX_DIM = 10  # several objectives beyond MO_GLOBAL_MAX_DIM up to here: qlognehvi (SMALL_DESIGN)
MO_GLOBAL_PER_DIM = 20  # ... for 20 d results (200 at d 10, the longest run measured), then morbo
MO_WIDE_SEARCH_PER_DIM = 20  # several objectives up to MO_GLOBAL_MAX_DIM: qlognehvi's WIDE_SEARCH for 20 d results
MO_SPREAD_PER_DIM = 5  # several objectives beyond MO_SMALL_DESIGN_MAX_DIM: minucb for 5 d results, then morbo
MPD_PER_DIM = 4  # d > GLOBAL_MAX_DIM, nothing to respect: mpd for 4 d results, then minucb (results/league.md)
CHAINING_MAX_CANDIDATES = 2000  # chaining-ucb's cover costs seconds a suggest at 10,000 candidates
MAX_SWITCHES = 20  # kept in the state, newest last
# auto's own settings of the policies it runs, under the study's ``configs``: minucb's GP on warped values
# (results/league_findings.md, "Output warping": Rosenbrock-25 898 -> 176.5, Ackley-25 0.66 -> 0.52, gp25 level).
# Smaller exploration batches were tried here and dropped (same file, "Anytime": stalls on Swimmer, late losses
# at d = 50 and 100).
# morbo after minucb: candidates that move about 2 coordinates of a front point (the paper's 20 move all of them up to
# d = 20), so they slide along the front minucb reached rather than leave it (results/multiobjective_findings.md).
# ei with Ax's Winsorize (y clipped above Tukey's upper fence for its GP): on the 14 lipschitz.md objectives, 10 seeds
# paired at 100 evaluations, it cut the regret on Rosenbrock-2/3/4, Goldstein-Price and six-hump camel to 0.1-0.5x,
# left 8 level and cost Rosenbrock-10 1.2x (within one standard error; 1.3x at 50, 5 seeds of 10 worse)
# (results/probes/*_ei_winsorize_100.md; results/league_findings.md, "Winsorize where auto runs ei").
# qlognehvi without outcome constraints: 5 design points instead of 2 (d + 1) and each GP fitted from its priors' modes
# rather than its last fit (as Ax's default): on DTLZ2-10 at 100 evaluations, 5 seeds, log10 hypervolume difference
# -1.25 +- 0.06 with the small design, -1.31 +- 0.03 with fresh fits too (paired -0.06 +- 0.05, 3 of 5 better; at 50
# -0.10 +- 0.04, 4 of 5), against -1.03 for minucb then morbo (results/probes/mo_dtlz2_10_qlognehvi_ninit5_model.md;
# an RBF kernel instead of Matérn-5/2 was worse on 5 of 5); at d <= 5 too since 2026-12-05 (multiobjective_findings.md)
SMALL_DESIGN: dict[str, Any] = {"n_init": 5, "warm_start": False}
# qlognehvi at d <= 5 without outcome constraints, for its first 20 d results: Ax's acquisition search (20 starts among
# 1,024 raw q-batches, against 4 among 128): on VehicleSafety at 100 evaluations, 5 seeds, -0.22 +- 0.01 against
# 0.02 +- 0.04 (results/multiobjective.md; the probes: results/probes/mo_vehiclesafety_auto_axsearch_100*.md). Not
# beyond: a run with it throughout took over 2,900 CPU s to 200 against 1,400 (stopped; multiobjective_findings.md)
WIDE_SEARCH: dict[str, Any] = {"num_restarts": 20, "raw_samples": 1024}
CHOSEN_DEFAULTS: dict[str, dict[str, Any]] = {
    "ei": {"winsorize": True},
    "minucb": {"output_warp": "power"},
    "morbo": {"perturbed_coordinates": 2.0},
}


def needs_of(request: SuggestRequest[Any, Any]) -> frozenset[str]:
    """What the request asks its policy to respect (``CAPABILITIES``' names)."""
    needs = {
        "constraints": request.C is not None and request.C.shape[-1] > 0,
        "parameter_constraints": request.polytope is not None,
        "failures": request.X_failed is not None,
        "safety": request.max_violation_probability is not None,
        "objectives": request.Y is not None and request.Y.shape[-1] > 1,
    }
    return frozenset(name for name, needed in needs.items() if needed)


def preferences(
    kind: str,
    dim: int,
    needs: frozenset[str],
    n: int,
    candidates: int,
    spread: float = MO_SPREAD_PER_DIM,
    descent: float = MPD_PER_DIM,
    until: float = MO_GLOBAL_PER_DIM,
) -> list[tuple[str, str]]:
    """The policies in the order ``auto`` prefers them for this study, each with why (module docstring); ``spread``:
    several objectives beyond MO_SMALL_DESIGN_MAX_DIM, morbo from ``spread`` d results on; ``until``: several
    objectives on MO_GLOBAL_MAX_DIM + 1 .. MO_SMALL_DESIGN_MAX_DIM coordinates, qlognehvi until ``until`` d results,
    then morbo; ``descent``: beyond GLOBAL_MAX_DIM, mpd until ``descent`` d results."""
    if kind == "finite":
        if "objectives" in needs:
            return [("random", "a finite space with several objectives: no model policy serves them there")]
        if candidates <= CHAINING_MAX_CANDIDATES:
            return [
                ("chaining-ucb", f"a finite space of {candidates} candidates: chaining-ucb led on Himmelblau and "
                                 "graphs (results/chaining.md)"),
                ("ucb", f"a finite space of {candidates} candidates, failures to avoid: ucb (chaining-ucb does not "
                        "model failures)"),
            ]  # fmt: skip
        return [("ucb", f"a finite space of {candidates} candidates: ucb (chaining-ucb's cover costs seconds a "
                        f"suggest beyond {CHAINING_MAX_CANDIDATES})")]  # fmt: skip
    if "objectives" in needs:
        out = []
        policies = registry()
        served = lambda name: needs <= policies[name].handles  # noqa: E731
        # 6 to 10 coordinates without outcome constraints: qlognehvi from its small design, then morbo (with one, on
        # C2DTLZ2 at d 12, it was far behind minucb then morbo: results/probes/mo_c2dtlz2_qlognehvi_small_design_100.md)
        mid = (
            MO_GLOBAL_MAX_DIM < dim <= MO_SMALL_DESIGN_MAX_DIM and kind != "categorical" and "constraints" not in needs
        )
        if dim <= MO_GLOBAL_MAX_DIM or kind == "categorical":
            out.append(("qlognehvi", f"several objectives, {dim} coordinates: global qLogNEHVI (a global GP led the "
                                     "local regions at d 5, results/multiobjective.md)"))  # fmt: skip
            local = None
        elif mid:
            local = math.ceil(until * dim)
            if n < local:
                out.append(("qlognehvi", f"several objectives, {dim} coordinates, {n} results: global qLogNEHVI from "
                                         "a 5-point design, refitted afresh each suggest (ahead of the local "
                                         f"policies at 100 evaluations on DTLZ2-10), until {until:g} d = {local} "
                                         "results (results/multiobjective_findings.md)"))  # fmt: skip
        else:
            local = math.ceil(spread * dim)
        if local is not None and n >= local:
            after, per = ("qlognehvi", until) if mid else ("minucb", spread)
            out.append(("morbo", f"several objectives, {n} results past {per:g} d = "
                                 f"{local}: morbo's regions on the front {after} reached, "
                                 "candidates moving 2 coordinates, spread it "
                                 "(results/multiobjective_findings.md)"))  # fmt: skip
        then = f"; morbo from {local} results" if local is not None and served("morbo") else ""
        unserved = [p for p in ("qlognehvi", "morbo") if not served(p)]
        besides = needs - {"objectives", "constraints", "parameter_constraints"}
        what = " and ".join(sorted({"failures": "failures to avoid", "safety": "safe mode"}[c] for c in besides))
        verb = "does" if len(unserved) == 1 else "do"
        since = f" ({' and '.join(unserved)} {verb} not serve {what})" if unserved and besides else ""
        out.append(("minucb", f"several objectives, {dim} coordinates: minucb on ParEGO scalarisations (it reaches "
                              f"the front first, results/multiobjective.md){then}{since}"))  # fmt: skip
        return out
    if "safety" in needs:
        return [("turbo", "safe mode: turbo's safe region (results/constrained.md)"),
                ("minucb", "safe mode: minucb's pessimistic step")]  # fmt: skip
    if kind == "categorical":
        return [("ei", f"categorical parameters ({dim} coordinates): global log-EI; a local step has no meaning on "
                       "one-hot blocks")]  # fmt: skip
    if needs & {"constraints", "failures"}:
        return [("turbo", "outcome constraints or failures to avoid: turbo as SCBO (ahead of the local policies "
                          "on the engineering problems of results/constrained.md; behind minucb on "
                          "Ackley-10)")]  # fmt: skip
    if dim <= GLOBAL_MAX_DIM and n < GLOBAL_MAX_N:
        return [("ei", f"{dim} coordinates, {n} results: global log-EI (results/lipschitz.md, d 2 to 10); local "
                       f"from {GLOBAL_MAX_N} results on")]  # fmt: skip
    if dim <= GLOBAL_MAX_DIM:
        return [("minucb", f"{n} results: past {GLOBAL_MAX_N} a global GP fits a thinned subset of them; minucb "
                           "refines from the best point on a dense window of the last points")]  # fmt: skip
    until = math.ceil(descent * dim)
    early = [("mpd", f"{dim} coordinates, {n} results: mpd's walk down the most probable descent direction until "
                     f"{descent:g} d = {until} results (it leads the local policies early, results/league.md); "
                     "then minucb")] if n < until else []  # fmt: skip
    return [*early, ("minucb", f"{dim} coordinates: local BO (results/league.md, d 25 to 100: ahead of CMA-ES, TuRBO, "
                               "GPSampler and TPE; the cheapest local policy)")]  # fmt: skip


def choose(
    kind: str,
    dim: int,
    needs: frozenset[str],
    n: int = 0,
    candidates: int = 0,
    spread: float = MO_SPREAD_PER_DIM,
    descent: float = MPD_PER_DIM,
    until: float = MO_GLOBAL_PER_DIM,
) -> tuple[str, str]:
    """The first preference that serves the study (its space kind and every need), or a PolicyConfigError."""
    policies = registry()
    for name, why in preferences(kind, dim, needs, n, candidates, spread, descent, until):
        cls = policies[name]
        if kind in cls.spaces and needs <= cls.handles:
            return name, why
    others = [cls for name, cls in policies.items() if name != Auto.name and kind in cls.spaces]
    # the field to name: a need no policy serves on this space, else the last of them (the one that adds to the rest)
    unserved = [c for c in CAPABILITIES if c in needs and not any(c in cls.handles for cls in others)]
    field = unserved[0] if unserved else next((c for c in reversed(CAPABILITIES) if c in needs), "space")
    what = " and ".join(c.replace("_", " ") if c != "objectives" else "several objectives" for c in sorted(needs))
    raise PolicyConfigError(field, f"no policy serves {what} together on a {kind} search space (auto chooses among "
                                   "the policies; none of them does)")  # fmt: skip


def _hand_over(default: float, description: str) -> Any:
    """A setting of when auto hands one policy's study to the next: results per coordinate."""
    return Field(default=default, ge=0.0, le=1000.0, description=description)


class AutoConfig(PolicyConfig):
    configs: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description='Settings for the policies auto may choose, by name: {"minucb": {"beta": 2.0}}',
    )
    morbo_after: float = _hand_over(
        MO_SPREAD_PER_DIM,
        f"Several objectives beyond {MO_SMALL_DESIGN_MAX_DIM} coordinates: minucb until this many results per "
        "coordinate (results/multiobjective_findings.md), then morbo",
    )
    qlognehvi_until: float = _hand_over(
        MO_GLOBAL_PER_DIM,
        f"Several objectives on {MO_GLOBAL_MAX_DIM + 1} to {MO_SMALL_DESIGN_MAX_DIM} coordinates: qlognehvi from a "
        "5-point design until this many results per coordinate (results/multiobjective_findings.md), then morbo",
    )
    mpd_until: float = _hand_over(
        MPD_PER_DIM,
        f"One objective beyond {GLOBAL_MAX_DIM} coordinates, nothing to respect: mpd until this many results per "
        "coordinate (0: minucb from the start; results/league_findings.md), then minucb",
    )

    @field_validator("configs")
    @classmethod
    def _known(cls, configs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Names only: each setting is checked as its policy's own config at creation, its field named under
        ``configs.<policy>`` (the service's ``validate_policy``)."""
        policies = registry()
        for name in configs:
            if name not in policies or name == Auto.name:
                raise ValueError(f"unknown policy {name!r}; expected one of {sorted(set(policies) - {Auto.name})}")
        return configs


class Switch(BaseModel):
    n: int  # results when it switched
    policy: str
    why: str


class AutoState(PolicyState):
    chosen: str | None = None
    why: str | None = None
    x0: list[float] | None = None  # where a local policy chosen after another starts: the best point then
    inner: dict[str, Any] | None = None  # the chosen policy's dumped state
    settings: dict[str, Any] = Field(default_factory=dict)  # auto's settings of it for this study (SMALL_DESIGN)
    switches: list[Switch] = Field(default_factory=list)


def study_settings(name: str, kind: str, dim: int, needs: frozenset[str]) -> dict[str, Any]:
    """Auto's settings of ``name`` that depend on the study, kept in its state: SMALL_DESIGN for qlognehvi on several
    objectives over at most MO_SMALL_DESIGN_MAX_DIM continuous coordinates without outcome constraints."""
    small = kind == "continuous" and dim <= MO_SMALL_DESIGN_MAX_DIM and "constraints" not in needs
    return dict(SMALL_DESIGN) if name == "qlognehvi" and "objectives" in needs and small else {}


def search_settings(name: str, kind: str, dim: int, needs: frozenset[str], n: int) -> dict[str, Any]:
    """Auto's settings of ``name`` that depend on the results so far, not kept: WIDE_SEARCH for qlognehvi on several
    objectives over at most MO_GLOBAL_MAX_DIM continuous coordinates without outcome constraints, for its first
    MO_WIDE_SEARCH_PER_DIM d results."""
    early = kind == "continuous" and dim <= MO_GLOBAL_MAX_DIM and n < MO_WIDE_SEARCH_PER_DIM * dim
    wide = name == "qlognehvi" and "objectives" in needs and "constraints" not in needs and early
    return dict(WIDE_SEARCH) if wide else {}


def inner_config(
    name: str, config: AutoConfig, x0: list[float] | None, settings: dict[str, Any] | None = None
) -> PolicyConfig:
    """The chosen policy's config: auto's defaults for it and its ``settings`` for the study under the study's
    ``configs``, and x0 where it starts after another policy."""
    cls = registry()[name]
    raw = {**CHOSEN_DEFAULTS.get(name, {}), **(settings or {}), **config.configs.get(name, {})}
    if x0 is not None and "x0" in cls.Config.model_fields and raw.get("x0") is None:
        raw["x0"] = x0
    return cls.Config.model_validate(raw)


@register
class Auto(Policy[AutoConfig, AutoState]):
    """Runs the policy the study's space, needs and data call for (module docstring), and says which and why."""

    name = "auto"
    Config = AutoConfig
    State = AutoState
    spaces: ClassVar[frozenset[str]] = frozenset(SPACE_KINDS)
    handles: ClassVar[frozenset[str]] = frozenset(CAPABILITIES)  # each study's combination: ``check_needs``

    @classmethod
    def check_needs(cls, kind: str, dim: int, needs: frozenset[str], config: AutoConfig | None = None) -> None:
        choose(kind, dim, needs, candidates=CHAINING_MAX_CANDIDATES + 1)  # raises when no preference serves
        for name, raw in (config.configs if config is not None else {}).items():  # a setting the study rules out
            inner = registry()[name]
            try:
                inner.check_needs(kind, dim, needs & inner.handles, inner.Config.model_validate(raw))
            except PolicyConfigError as exc:
                field = exc.field.removeprefix("policy_config.")
                raise PolicyConfigError(f"policy_config.configs.{name}.{field}", str(exc).split(": ", 1)[-1]) from None

    @classmethod
    def _inner(cls, state: AutoState, config: AutoConfig) -> tuple[type[Policy[Any, Any]], Any, Any] | None:
        """The chosen policy, its loaded state and its config (None before the first choice)."""
        if state.chosen is None:
            return None
        policy = registry()[state.chosen]
        return policy, policy.load_state(state.inner)[0], inner_config(state.chosen, config, state.x0, state.settings)

    @classmethod
    def plans_now(cls, state: AutoState, n_complete: int, n_running: int) -> bool:
        inner = cls._inner(state, AutoConfig())
        return True if inner is None else inner[0].plans_now(inner[1], n_complete, n_running)

    @classmethod
    def fallback_box(cls, state: AutoState, config: AutoConfig, dim: int) -> tuple[list[float], list[float]]:
        inner = cls._inner(state, config)
        return super().fallback_box(state, config, dim) if inner is None else inner[0].fallback_box(*inner[1:], dim)

    @classmethod
    def gp_points(cls, state: AutoState, config: AutoConfig, dim: int, n: int) -> int:
        """The GP data of the policy it chose last (all n before its first choice)."""
        inner = cls._inner(state, config)
        return n if inner is None else inner[0].gp_points(*inner[1:], dim, n)

    @classmethod
    def display(cls, state: AutoState, config: AutoConfig, n_complete: int) -> Display | None:
        inner = cls._inner(state, config)
        if inner is None:
            return Display(phase="not started", numbers={"auto: chose": None})
        shown = inner[0].display(inner[1], inner[2], n_complete) or Display()
        numbers: dict[str, float | int | str | None] = {"auto: chose": state.chosen, "auto: why": state.why}
        if len(state.switches) > 1:
            numbers["auto: switches"] = " -> ".join(f"{s.policy} at n = {s.n}" for s in state.switches)
        return shown.model_copy(update={"numbers": {**numbers, **shown.numbers}})

    def suggest(self, request: SuggestRequest[AutoConfig, AutoState]) -> Suggestion:
        state = state_as(request.state, AutoState)
        n = int(request.X.shape[0])
        candidates = request.finite.size if request.finite is not None else 0
        kind, needs = request.space.kind, needs_of(request)
        own = request.config
        # mpd only opens a study: one that ran another policy (stored before mpd came first) does not go back to it
        descent = own.mpd_until if state.chosen in (None, "mpd") else 0.0
        # nor does one that reached morbo go back to qlognehvi (on 6 to 10 coordinates an older rule ran minucb, then
        # morbo from 5 d results): its regions keep the front they hold
        until = own.qlognehvi_until if state.chosen != "morbo" else 0.0
        name, why = choose(kind, request.dim, needs, n, candidates, own.morbo_after, descent, until)
        if name != state.chosen:  # a fresh start of the new policy on all the data; a local one at the best point
            x0 = request.X[int(request.y.argmin())].tolist() if n else None  # (results told before the first choice)
            switches = [*state.switches, Switch(n=n, policy=name, why=why)][-MAX_SWITCHES:]
            settings = study_settings(name, kind, request.dim, needs)
            state = AutoState(chosen=name, why=why, x0=x0, inner=None, switches=switches, settings=settings)
        policy = registry()[name]
        inner_state = policy.load_state(state.inner)[0]
        settings = {**state.settings, **search_settings(name, kind, request.dim, needs, n)}
        config = inner_config(name, request.config, state.x0, settings)
        inner: SuggestRequest[Any, Any] = dataclasses.replace(request, state=inner_state, config=config)  # type: ignore[arg-type]
        out = policy().suggest(inner)
        kept = state.model_copy(update={"inner": policy.dump_state(out.state), "why": why})
        return Suggestion(X=out.X, state=kept, index=out.index)
