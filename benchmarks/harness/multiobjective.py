"""Problems with several objectives and the runners that drive a method on one of them
(``benchmarks/multiobjective.py``).

A ``Problem`` is minimised in every objective, in its own (user) units: ``problem.evaluate(x)`` with ``x`` a float64
vector inside ``problem.lower``..``problem.upper`` gives ``(Y, C)``: the ``k`` noise-free objective values and the
``m`` outcome constraints' values, ``c_j <= 0`` where constraint j holds (BoTorch's slack, negated). Each problem has
a reference point (``ref``, k, minimised units: the one BoTorch's test problem states) and the hypervolume of its
true Pareto front with respect to it (``max_hv``): a run's score after n evaluations is
log10(max_hv - HV(feasible results so far)), the log hypervolume difference.

Problems (``PROBLEMS``, BoTorch 0.18.1's ``botorch.test_functions.multi_objective``, noise-free, negate=False: every
objective minimised):

- ``branincurrin`` (``BraninCurrin``, d 2, k 2), ``vehiclesafety`` (``VehicleSafety``, d 5, k 3): BoTorch's
  ``max_hv`` (BoTorch's own estimates; a method may beat them by a little: a difference <= 0 counts at the floor).
- ``dtlz2_10``, ``dtlz2_30`` (``DTLZ2``, d 10 and 30, k 2, reference point (1.1, 1.1)): max_hv = 1.1^2 - pi / 4, exact
  (the front is the unit quarter circle).
- The DTLZ2 family's Pareto set is x_2 = .. = x_d = 0.5: on BoTorch's [0, 1]^d the cube's centre, where the local
  policies start by default (their first point is on the front, for free). As TuRBO moved Ackley off its symmetric
  domain, x_2..x_d range over [0, 1.25] here (``SHIFTED``; the Pareto set at 0.4 of each range, the centre at
  g = 0.0156 per coordinate); x_1, the position along the front, keeps [0, 1]. The front and max_hv are unchanged.
  A run records its problem's ``domain``; ``--resume`` keeps only runs on the current one.
- ``c2dtlz2`` (``C2DTLZ2``, d 12 as in BoTorch's constrained multi-objective tutorial, k 2, m 1, reference point
  (1.1, 1.1)): BoTorch states 0.39964 "approximate from NSGA-II"; here the true front's hypervolume is computed once
  (``c2dtlz2_max_hv``): every objective vector is r (cos t, sin t), r = 1 + g(x) >= 1, t in [0, pi / 2], and on each
  ray only the smallest feasible r can be Pareto optimal, so the front is the non-dominated set of the smallest
  feasible r on a fine grid of t (found on a grid of r, then refined by bisection): 0.400054 > BoTorch's value
  (checked against a 3001 x 3001 grid of objective space, 0.39973). Its constraint as BoTorch writes it: inside one of
  three discs, of radius 0.2 about (1, 0) and (0, 1) and 0.2 sqrt(2) about (1, 1) / sqrt(2).

Runners (``run_method``), one (problem, method, seed) each, ``evals`` sequential evaluations (ask 1, tell 1):

- ``direct`` (localbo's policies: ``morbo``, ``qlognehvi``, ``random``, and any registered policy that handles
  "objectives", e.g. a later ``minucb``): the policy API in process, emulating the engine as
  ``harness.constrained.run_direct`` does (a plan queue refilled by ``suggest``, the state stored as JSON between
  calls, the engine's seeds; a failing policy answered with the engine's fallback points, counted) with
  ``SuggestRequest.Y`` (n x k, every objective minimised; ``y`` = its first column, as the engine sends),
  ``SuggestRequest.reference_point`` = the problem's reference point (a study that states it; the engine would
  otherwise infer one from the feasible data) and ``SuggestRequest.C`` (only for policies that declare
  "constraints": the service refuses constraints to the others).
- ``optuna`` (``nsga2``: ``NSGAIISampler``, ``tpe``: ``TPESampler`` (multi-objective TPE), ``gpsampler``:
  ``GPSampler``; ``constraints_func`` on the constrained problem; ``optuna-random``), ``create_study(directions=
  ["minimize"] * k)``, ask/tell in process; the constraint values go to the trial's user attributes.
- ``ax`` (Ax's ``Client``, its default generation strategy: Sobol, then BoTorch's modular model with qLogNEHVI):
  objectives "-f0, -f1, ..." (minimised) with the problem's reference point as objective thresholds (``f_i <= ref_i``)
  and outcome constraints ``c_j <= 0``. Its design is 5 trials, the first at the centre of the box (Ax's
  ``initialize_with_center``); ``ax-nocenter``, a variant to trace what that centre is worth, draws all 5 from Sobol.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch
from torch import Tensor

from harness.sweep import run_timed

DTYPE = torch.float64
LOCALBO_METHODS = ("morbo", "qlognehvi", "random")  # more: any registered policy that handles "objectives"
# localbo policies run with a config of their own: name -> (policy, config)
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "morbo-1r": ("morbo", {"regions": 1, "length_init": 1.6}),  # one region that starts over the whole cube
    "morbo-nehvi": ("morbo", {"acquisition": "lognehvi"}),  # qLogNEHVI maximised in each trust region
    "morbo-nehvi-1r": ("morbo", {"acquisition": "lognehvi", "regions": 1, "length_init": 1.6}),  # both
}
OPTUNA_METHODS = ("nsga2", "tpe", "gpsampler", "optuna-random")
AX_METHODS = ("ax", "ax-nocenter")
FALLBACK = "fallback"
LOG_FLOOR = -10.0  # log10 of a hypervolume difference <= 1e-10 (or <= 0: beyond an estimated max_hv)


@dataclass(frozen=True)
class Problem:
    name: str
    dim: int
    k: int  # objectives
    m: int  # outcome constraints
    lower: Tensor  # d, user units
    upper: Tensor  # d
    evaluate: Callable[[Tensor], tuple[Tensor, Tensor]]  # x (d, user units) -> (Y (k,), C (m,)); C <= 0 feasible
    ref: Tensor  # k, minimised units
    max_hv: float
    max_hv_from: str
    domain: str = ""  # how the domain departs from BoTorch's ("": BoTorch's bounds); part of a run's identity

    def to_user(self, u: Tensor) -> Tensor:
        return self.lower + u * (self.upper - self.lower)


SHIFTED = "x_2..x_d in [0, 1.25]"  # the DTLZ2 family's domain here: its Pareto set off the cube's centre


def _botorch(
    name: str, cls_name: str, max_hv: float | None = None, max_hv_from: str = "", shifted: bool = False, **kwargs: Any
) -> Problem:
    from botorch.test_functions import multi_objective

    fn = getattr(multi_objective, cls_name)(**kwargs)
    if shifted:  # BoTorch checks its points against the problem's own bounds
        fn.bounds[1, 1:] = 1.25
    lower, upper = fn.bounds[0].to(DTYPE), fn.bounds[1].to(DTYPE)
    m = int(getattr(fn, "num_constraints", 0))

    def evaluate(x: Tensor) -> tuple[Tensor, Tensor]:
        X = x.reshape(1, -1).to(DTYPE)
        Y = fn.evaluate_true(X)[0]
        C = -fn.evaluate_slack_true(X)[0] if m else torch.zeros(0, dtype=DTYPE)
        return Y, C

    return Problem(
        name, fn.dim, fn.num_objectives, m, lower, upper, evaluate, fn.ref_point.to(DTYPE),
        float(fn.max_hv) if max_hv is None else max_hv, max_hv_from or f"BoTorch's {cls_name}.max_hv",
        SHIFTED if shifted else "",
    )  # fmt: skip


def _c2dtlz2_violation(f0: Tensor, f1: Tensor, r: float = 0.2) -> Tensor:
    """C2DTLZ2's constraint (k = 2) in objective space, <= 0 feasible: BoTorch's slack, negated. As BoTorch 0.18.1
    writes it, the middle disc's r^2 is subtracted once per objective (radius r sqrt(2), not r as in Jain & Deb)."""
    min1 = torch.minimum((f0 - 1) ** 2 + f1**2 - r**2, (f1 - 1) ** 2 + f0**2 - r**2)
    min2 = (f0 - 1 / math.sqrt(2)) ** 2 - r**2 + (f1 - 1 / math.sqrt(2)) ** 2 - r**2
    return torch.minimum(min1, min2)


def _staircase_hv(P: Tensor, ref: Tensor) -> float:
    """2 objectives: the hypervolume of the points P (n x 2, minimised) w.r.t. ``ref``, by their staircase."""
    P = P[(P < ref).all(-1)]
    P = P[torch.argsort(P[:, 0])]
    keep = P[:, 1] < torch.cummin(torch.cat([P[:1, 1] + 1, P[:-1, 1]]), 0).values  # strictly better f1 than all before
    P = P[keep]
    widths = torch.cat([P[1:, 0], ref[:1]]) - P[:, 0]
    return float((widths * (ref[1] - P[:, 1])).sum())


@cache
def c2dtlz2_max_hv(n_t: int = 200_001, n_r: int = 131, r_max: float = 1.3) -> float:
    """The hypervolume of C2DTLZ2's (k = 2) true front w.r.t. (1.1, 1.1), computed as the module's docstring says, on
    ``n_t`` rays. The feasible discs reach r <= 1 + 0.2 sqrt(2) < 1.3. The staircase of n_t rays falls short of the
    curve by O(1 / n_t): 2.2e-5 at 20 001 rays, 4.5e-6 at 100 001, ~2e-6 here (far below the runs' differences)."""
    t = torch.linspace(0.0, math.pi / 2, n_t, dtype=DTYPE)
    rs = torch.linspace(1.0, r_max, n_r, dtype=DTYPE)
    c, s = torch.cos(t), torch.sin(t)
    first = torch.full((n_t,), -1, dtype=torch.long)
    for j, r in enumerate(rs.tolist()):  # the first feasible grid r of each ray
        ok = (_c2dtlz2_violation(r * c, r * s) <= 0) & (first < 0)
        first[ok] = j
    has = first >= 0
    c, s, first = c[has], s[has], first[has]
    hi = rs[first]
    lo = torch.where(first > 0, rs[(first - 1).clamp(min=0)], hi)
    for _ in range(40):  # bisection between the last infeasible and the first feasible grid r
        mid = (lo + hi) / 2
        ok = _c2dtlz2_violation(mid * c, mid * s) <= 0
        hi, lo = torch.where(ok, mid, hi), torch.where(ok, lo, mid)
    return _staircase_hv(torch.stack([hi * c, hi * s], -1), torch.tensor([1.1, 1.1], dtype=DTYPE))


def _c2dtlz2() -> Problem:
    return _botorch(
        "c2dtlz2", "C2DTLZ2", c2dtlz2_max_hv(), "the true front computed once on 200 001 rays (BoTorch states "
        "0.3996406, approximate from NSGA-II)", shifted=True, dim=12, num_objectives=2,
    )  # fmt: skip


def _dtlz2(d: int) -> Problem:
    return _botorch(f"dtlz2_{d}", "DTLZ2", max_hv_from="1.1^2 - pi / 4 (exact)", shifted=True, dim=d, num_objectives=2)


PROBLEMS: dict[str, Callable[[], Problem]] = {
    "branincurrin": lambda: _botorch("branincurrin", "BraninCurrin"),
    "vehiclesafety": lambda: _botorch("vehiclesafety", "VehicleSafety"),
    "dtlz2_10": lambda: _dtlz2(10),
    "dtlz2_30": lambda: _dtlz2(30),
    "c2dtlz2": _c2dtlz2,
}


def get_problem(name: str) -> Problem:
    if name not in PROBLEMS:
        raise KeyError(f"unknown problem {name!r}; known: {', '.join(PROBLEMS)}")
    return PROBLEMS[name]()


def log_difference(max_hv: float, hv: float) -> float:
    """log10(max_hv - hv), at ``LOG_FLOOR`` when the difference is that small or <= 0."""
    diff = max_hv - hv
    return max(math.log10(diff), LOG_FLOOR) if diff > 0 else LOG_FLOOR


# -- recording ----------------------------------------------------------------------------------------------


@dataclass
class MORun:
    problem: str
    method: str
    seed: int
    evals: int
    Y: list[list[float]] = field(default_factory=list)  # per evaluation, k values (minimised)
    violation: list[float] = field(default_factory=list)  # max_j c_j (<= 0: feasible; -inf without constraints)
    source: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float = 0.0

    def record(self, problem: Problem, x_user: Tensor, source: str) -> tuple[Tensor, Tensor]:
        Y, C = problem.evaluate(x_user)
        self.Y.append([float(v) for v in Y])
        self.violation.append(float(C.max()) if C.numel() else -math.inf)
        self.source.append(source)
        return Y, C

    def summary(self, checkpoints: list[int], problem: Problem) -> dict[str, Any]:
        from localbo.policies.pareto import hypervolume_history, pareto_front

        n = len(self.Y)
        Y = torch.tensor(self.Y, dtype=DTYPE).reshape(n, problem.k)
        C = torch.tensor(self.violation, dtype=DTYPE).reshape(n, 1)
        history = hypervolume_history(Y, problem.ref, C) if n else []
        feasible = [i + 1 for i, v in enumerate(self.violation) if v <= 0]
        trace_at = sorted({*range(10, n + 1, 10), n} - {0})
        front = pareto_front(Y, C) if n else torch.zeros(0, dtype=torch.bool)
        return {
            "problem": self.problem,
            "domain": problem.domain,
            "method": self.method,
            "seed": self.seed,
            "evals": n,
            "hv": {str(k): history[k - 1] for k in checkpoints if k <= n},
            "log_hv_diff": {str(k): log_difference(problem.max_hv, history[k - 1]) for k in checkpoints if k <= n},
            "trace": {str(k): log_difference(problem.max_hv, history[k - 1]) for k in trace_at},  # every 10 evals
            "front_size": int(front.sum()),
            "first_feasible": feasible[0] if feasible else None,
            "infeasible": n - len(feasible),
            "fallbacks": sum(s == FALLBACK for s in self.source),
            "errors": self.errors[:5],
            "n_errors": len(self.errors),
            "wall_s": round(self.wall_s, 2),
            "cpu_s": round(self.cpu_s, 2),
        }


# -- localbo's policies, in process ---------------------------------------------------------------------------


def is_localbo_method(method: str) -> bool:
    """A registered policy that serves several objectives (``handles`` holds "objectives")."""
    from localbo.policies import registry

    policies = registry()
    policy = VARIANTS.get(method, (method, {}))[0]
    return policy in policies and "objectives" in policies[policy].handles


def run_direct(
    problem: Problem,
    method: str,
    seed: int,
    evals: int,
    run: MORun,
    config: dict[str, Any] | None = None,
    device: str = "cpu",
) -> None:
    from localbo.planning.fallback import mixed_seed
    from localbo.planning.runner import FAILURE_SALT, RNG_SALT
    from localbo.policies import get_policy
    from localbo.policies.requests import make_request, on_device

    policy, options = VARIANTS.get(method, (method, {}))
    cls = get_policy(policy)
    config = cls.Config.model_validate({**options, **(config or {})})  # a probe's setting over the variant's
    cls.check_study(problem.dim, config)
    config = cls.Config.model_validate(config.model_dump(mode="json"))  # as stored by the engine
    d, k = problem.dim, problem.k
    models_constraints = "constraints" in cls.handles and problem.m > 0
    queue: deque[tuple[Tensor, str]] = deque()
    X_done: list[Tensor] = []
    Y_done: list[Tensor] = []
    C_done: list[Tensor] = []
    stored: dict[str, Any] = {}
    version = 0

    def stack(rows: list[Tensor], width: int) -> Tensor:
        return torch.stack(rows) if rows else torch.empty(0, width, dtype=DTYPE)

    for _ in range(evals):
        if not queue:
            state, _ = cls.load_state(stored or None)
            Y = stack(Y_done, k)
            request = make_request(
                cls, stack(X_done, d), Y[:, 0], pending=stack([x for x, _ in queue], d), state=state, config=config,
                seed=seed, rng_seed=mixed_seed(seed, RNG_SALT, version), device=device,
            )  # fmt: skip
            request = on_device(dataclasses.replace(  # the added tensors on the device too, as the engine's
                request, Y=Y, reference_point=problem.ref.clone(),
                C=stack(C_done, problem.m) if models_constraints else None,
            ))  # fmt: skip
            try:
                suggestion = cls().suggest(request)
                X = suggestion.X.detach().to("cpu", DTYPE)
                if X.ndim != 2 or X.shape[1] != d or X.shape[0] < 1 or not bool(torch.isfinite(X).all()):
                    raise ValueError(f"policy returned points of shape {tuple(X.shape)}, need >= 1 x {d}, finite")
                stored = json.loads(json.dumps(cls.dump_state(suggestion.state)))
                queue.extend((x, cls.name) for x in X.clamp(0.0, 1.0))
            except Exception as exc:  # the engine's fallback: a seeded point of the fallback box, state kept
                run.errors.append(f"eval {len(run.Y) + 1}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
                generator = torch.Generator().manual_seed(mixed_seed(seed, FAILURE_SALT, version))
                lo, hi = (torch.tensor(v, dtype=DTYPE) for v in cls.fallback_box(state, config, d))
                queue.append((lo + torch.rand(1, d, generator=generator, dtype=DTYPE)[0] * (hi - lo), FALLBACK))
            version += 1
        x, source = queue.popleft()
        Yx, Cx = run.record(problem, problem.to_user(x), source)
        X_done.append(x)
        Y_done.append(Yx.to(DTYPE))
        C_done.append(Cx.to(DTYPE))


# -- Optuna's samplers, in process ----------------------------------------------------------------------------


def _constraints(trial: Any) -> list[float]:
    return list(trial.user_attrs["constraints"])


def make_sampler(method: str, seed: int, constrained: bool) -> Any:
    import optuna

    cf = _constraints if constrained else None
    if method == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, constraints_func=cf)
    if method == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constraints_func=cf)
    if method == "gpsampler":
        return optuna.samplers.GPSampler(seed=seed, constraints_func=cf)
    if method == "optuna-random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(f"unknown Optuna method {method!r}")


def run_optuna(problem: Problem, method: str, seed: int, evals: int, run: MORun) -> None:
    import optuna
    from optuna.distributions import FloatDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    # constraints_func: deprecated in Optuna 5.0 (Trial.set_constraint instead) but works; as harness.constrained
    warnings.filterwarnings("ignore", message=".*constraints_func.*", category=FutureWarning)
    names = [f"x{i}" for i in range(problem.dim)]
    lo, hi = problem.lower.tolist(), problem.upper.tolist()
    distributions = {n: FloatDistribution(lo[i], hi[i]) for i, n in enumerate(names)}
    study = optuna.create_study(directions=["minimize"] * problem.k, sampler=make_sampler(method, seed, problem.m > 0))
    for _ in range(evals):
        trial = study.ask(distributions)
        x = torch.tensor([trial.params[n] for n in names], dtype=DTYPE)
        Y, C = run.record(problem, x, method)
        trial.set_user_attr("constraints", [float(v) for v in C])
        study.tell(trial, [float(v) for v in Y])


# -- Ax ---------------------------------------------------------------------------------------------------------


def ax_client(problem: Problem, seed: int, center: bool = True) -> Any:
    """Ax's ``Client`` set up for ``problem``: every objective minimised, the reference point as its objective
    thresholds (Ax turns an outcome constraint on an objective's metric into one), ``c_j <= 0`` as outcome
    constraints; its default generation strategy (Sobol, then qLogNEHVI)."""
    from ax.api.client import Client
    from ax.api.configs import RangeParameterConfig

    from harness.sweep import quiet_ax as hush

    hush()
    warnings.filterwarnings("ignore")
    lo, hi = problem.lower.tolist(), problem.upper.tolist()
    client = Client(random_seed=seed)
    hush()  # the client's storage logs at INFO as it starts
    client.configure_experiment(
        parameters=[RangeParameterConfig(name=f"x{i}", bounds=(lo[i], hi[i]), parameter_type="float")
                    for i in range(problem.dim)],
        name=f"{problem.name}-{seed}",
    )  # fmt: skip
    thresholds = [f"f{i} <= {float(r)!r}" for i, r in enumerate(problem.ref)]
    client.configure_optimization(
        objective=", ".join(f"-f{i}" for i in range(problem.k)),
        outcome_constraints=thresholds + [f"c{j} <= 0" for j in range(problem.m)],
    )
    if not center:
        client.configure_generation_strategy(initialize_with_center=False)
    hush()
    return client


def run_ax(problem: Problem, method: str, seed: int, evals: int, run: MORun) -> None:
    client = ax_client(problem, seed, center=method != "ax-nocenter")
    names = [f"x{i}" for i in range(problem.dim)]
    for _ in range(evals):
        ((index, params),) = client.get_next_trials(max_trials=1).items()
        x = torch.tensor([float(params[n]) for n in names], dtype=DTYPE)
        Y, C = run.record(problem, x, method)
        raw = {f"f{i}": float(v) for i, v in enumerate(Y)} | {f"c{j}": float(v) for j, v in enumerate(C)}
        client.complete_trial(index, raw_data=raw)


def runner_of(method: str) -> str:
    if method in OPTUNA_METHODS:
        return "optuna"
    if method in AX_METHODS:
        return "ax"
    return "direct"


def run_method(
    problem_name: str, method: str, seed: int, evals: int, config: dict[str, Any] | None = None
) -> tuple[MORun, Problem]:
    """One run, timed; ``config``: settings merged into a localbo policy's config (``probe.py``)."""
    problem = get_problem(problem_name)
    run = MORun(problem_name, method, seed, evals)
    runners = {"direct": run_direct, "optuna": run_optuna, "ax": run_ax}
    run_timed(run, method, runner_of(method), runners, (problem, method, seed, evals), config)
    return run, problem
