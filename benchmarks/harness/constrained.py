"""Constrained problems and the runners that drive a method on one of them (``benchmarks/constrained.py``).

A ``Problem`` is minimised in its own (user) units: ``problem(x)`` with ``x`` a float64 vector inside
``problem.lower``..``problem.upper`` gives ``(f, c)``, the noise-free objective and the ``m`` outcome constraints'
values, ``c_j <= 0`` where constraint j holds (BoTorch's slack, negated). A mixture problem also has a linear
equality on the parameters (``Problem.equality``: sum x = 1), which every point a method evaluates must satisfy.

Problems (``PROBLEMS``):

- BoTorch's constrained test problems (``botorch.test_functions.synthetic``, 0.18.1), noise-free, with BoTorch's
  ``optimal_value`` as f*: ``pressure_vessel`` (d 4, m 4), ``welded_beam`` (``WeldedBeamSO``, d 4, m 6),
  ``tension_compression`` (``TensionCompressionString``, d 3, m 4), ``speed_reducer`` (d 7, m 11),
  ``c_hartmann6`` (``ConstrainedHartmann``, d 6, m 1: ||x||^2 <= 1), ``c_gramacy`` (``ConstrainedGramacy``, d 2,
  m 2).
- ``ackley10``: SCBO's (Eriksson & Poloczek 2021, sec. 5) Ackley in 10-D on [-5, 10]^10 with c1 = sum(x) <= 0 and
  c2 = ||x||_2 - 5 <= 0; f* = 0 at x = 0.
- ``fail_hartmann6``: Hartmann-6 on [0, 1]^6 (f* = -3.32237, BoTorch's) with no outcome constraint and a failure
  region: an evaluation with x0 + x1 + x2 > 1.6 fails (no value; 42 % of the cube, away from the optimum, whose
  x0 + x1 + x2 = 0.83). A failed evaluation counts in ``failed``; localbo's ``-avoid`` methods model the failures
  (``failures: "avoid"``), the others are told nothing but that it failed (Optuna: a FAIL trial; Ax: a failed
  trial).
- ``mixture8``: a mixture of 8 fractions (x in [0, 1]^8, sum x = 1: a parameter equality), f = (x - x0)^T Q
  (x - x0), a fixed positive definite Q and target blend x0, with one outcome constraint, a purity
  0.5 - p^T x <= 0 (purity p^T x of at least 0.5; x0 has less, so the optimum lies on the constraint);
  f* from SLSQP on the convex problem (``mixture_optimum``).

Runners (``run_method``), one (problem, method, seed) each, ``evals`` sequential evaluations. A localbo method named
``ei-greedy`` is ei without its every-4th uniform point (``random_every: 0``; the default 4 is Ahmed et al.'s
protocol). ``-noisefree`` sets the policy's ``noise_floor`` to ``NOISEFREE_FLOOR`` (1e-6, as Optuna's GPSampler;
the default 1e-4 is BoTorch's), the setting a user of a noise-free simulator would choose; ``-exact`` sets it to
``EXACT_FLOOR`` (1e-8, the lowest the config allows: a deterministic simulator's values are exact to far more
digits than 1e-6 resolves); the suffixes combine (``ei-greedy-noisefree``, ``ei-greedy-exact``).
``<policy>-avoid`` runs the policy with ``failures: "avoid"`` (``SuggestRequest.X_failed``), ``<policy>-safe`` in safe
mode (delta = ``SAFE_DELTA``) from the problem's safe seed (``Problem.safe_seed``: a known-feasible point, the
75th-percentile value among the feasible points of 4096 Sobol points, so not a head start), asked first, with the
engine's safe fallback (the feasible point with the widest margin, else the seed) in place of a random one:

- ``direct`` (localbo's policies: ``turbo`` (SCBO), ``ei`` (constrained log-EI), ``ucb`` (weighted by the
  probability of feasibility), ``minucb``, ``la-minucb`` and ``gibo`` (the paper's local policies with constraint
  GPs beside the objective's, ``policies/local_constraints.py``), ``random``): the policy API in process, emulating
  the engine as ``harness.runners.run_direct`` does (a plan queue refilled by ``suggest``, the state stored as JSON
  between calls, the engine's seeds; a failing policy answered with the engine's fallback points, counted), with the
  study's outcome constraints as ``SuggestRequest.C`` (only for policies that declare "constraints": the
  service refuses them to the others) and its parameter constraints as ``SuggestRequest.polytope`` (in the unit
  cube); fallback points are hit-and-run samples of the fallback box ∩ polytope, as the engine's.
- ``optuna`` (``tpe``, ``gpsampler`` with ``constraints_func``; ``optuna-random``), ask/tell in process: the
  constraint values go to the trial's user attributes and ``constraints_func`` reads them back (Optuna's
  convention: c <= 0 feasible). Optuna has no parameter constraints: on the mixture it samples z in [0, 1]^8
  and evaluates x_i = -log z_i / sum_j (-log z_j) (the uniform-simplex map), so every point it evaluates
  satisfies sum x = 1 (to rounding).
- ``ax`` (Ax's ``Client``, its default generation strategy: Sobol, then BoTorch's modular model with
  outcome constraints): outcome constraints ``c_j <= 0``; Ax has no parameter equalities: on the mixture it
  searches the first 7 fractions under ``x0 + .. + x6 <= 1`` and x7 = 1 - their sum (the usual mixture recipe).
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

import numpy as np
import torch
from torch import Tensor

from harness.sweep import run_timed

DTYPE = torch.float64
LOCALBO_METHODS = (
    "turbo",
    "ei",
    "ucb",
    "random",
    "turbo-avoid",
    "ei-avoid",
    "turbo-safe",
    "ei-greedy",
    "turbo-noisefree",
    "ei-greedy-noisefree",
    "ei-greedy-exact",
    "minucb",
    "la-minucb",
    "gibo",
    "minucb-safe",
    "la-minucb-safe",
    "gibo-safe",
)
MODES = ("avoid", "safe", "greedy", "noisefree", "exact")  # a method's suffixes: how its policy runs
NOISEFREE_FLOOR = 1e-6  # the GPs' noise floor of a "-noisefree" run: Optuna's GPSampler's (gp.py)
EXACT_FLOOR = 1e-8  # an "-exact" run's: the lowest noise_floor a policy config accepts (gp.noise_floor_field)
SAFE_DELTA = 0.05  # safe mode's max_violation_probability
SEED = "seed"  # a safe run's first point
SAFE_FALLBACK = "fallback-safe"
OPTUNA_METHODS = ("tpe", "gpsampler", "optuna-random")
AX_METHODS = ("ax",)
FALLBACK = "fallback"
TRACE_EVERY = 10  # localbo's runs record their policy's display numbers every this many evaluations
EQ_TOL = 1e-9  # a point off the parameter equality by more than this counts as a parameter-constraint violation


@dataclass(frozen=True)
class Problem:
    name: str
    dim: int
    lower: Tensor  # d, user units
    upper: Tensor  # d
    m: int  # outcome constraints
    evaluate: Callable[[Tensor], tuple[float, Tensor]]  # x (d, user units) -> (f, c (m,)); c <= 0 feasible
    optimum: float | None  # f* (minimum over the feasible set), when known
    optimum_from: str
    mixture: bool = False  # the parameters are fractions: sum x == 1
    fails: Callable[[Tensor], bool] | None = None  # x (user units) -> whether the evaluation fails (no value)

    def to_user(self, u: Tensor) -> Tensor:
        return self.lower + u * (self.upper - self.lower)

    def polytope(self) -> Any:
        """The parameter constraints in the unit cube (``localbo.policies.Polytope``), or None."""
        if not self.mixture:
            return None
        from localbo.policies.base import Polytope

        width = (self.upper - self.lower).reshape(1, -1)
        return Polytope(
            torch.zeros(0, self.dim, dtype=DTYPE),
            torch.zeros(0, dtype=DTYPE),
            width.to(DTYPE),
            torch.tensor([1.0 - float(self.lower.sum())], dtype=DTYPE),
        )

    def equality_violation(self, x: Tensor) -> float:
        return abs(float(x.sum()) - 1.0) if self.mixture else 0.0

    def safe_seed(self) -> Tensor | None:
        """A known-feasible point in the unit cube (None: none among 4096 Sobol points): the one at the 75th
        percentile of f among the feasible ones that do not fail, as a lab's safe but unremarkable recipe."""
        u = torch.quasirandom.SobolEngine(self.dim, scramble=True, seed=0).draw(4096, dtype=DTYPE)
        if self.mixture:
            u = torch.stack([simplex_map(row.clamp(min=1e-12)) for row in u])
            u = (u - self.lower) / (self.upper - self.lower)
        found = []
        for row in u:
            x = self.to_user(row)
            if self.fails is not None and self.fails(x):
                continue
            f, c = self.evaluate(x)
            if not c.numel() or float(c.max()) <= 0:
                found.append((f, row))
        if not found:
            return None
        found.sort(key=lambda item: item[0])
        return found[int(0.75 * (len(found) - 1))][1]


def _botorch(name: str, cls_name: str) -> Problem:
    from botorch.test_functions import synthetic

    fn = getattr(synthetic, cls_name)()

    def evaluate(x: Tensor) -> tuple[float, Tensor]:
        X = x.reshape(1, -1).to(DTYPE)
        return float(fn.evaluate_true(X)[0]), -fn.evaluate_slack_true(X)[0]

    return Problem(
        name, fn.dim, fn.bounds[0].to(DTYPE), fn.bounds[1].to(DTYPE), fn.num_constraints, evaluate,
        float(fn.optimal_value), f"BoTorch's {cls_name}.optimal_value",
    )  # fmt: skip


def _ackley10() -> Problem:
    from botorch.test_functions.synthetic import Ackley

    fn = Ackley(dim=10)

    def evaluate(x: Tensor) -> tuple[float, Tensor]:
        x = x.to(DTYPE)
        f = float(fn.evaluate_true(x.reshape(1, -1))[0])
        return f, torch.stack([x.sum(), x.norm() - 5.0])

    d = 10
    return Problem(
        "ackley10", d, torch.full((d,), -5.0, dtype=DTYPE), torch.full((d,), 10.0, dtype=DTYPE), 2, evaluate, 0.0,
        "f(0) = 0, feasible",
    )  # fmt: skip


MIXTURE_D = 8


@cache
def _mixture_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Q, x0, p): a fixed quadratic, target blend and purities (one instance for every seed)."""
    rng = np.random.default_rng(30)
    B = rng.standard_normal((MIXTURE_D, MIXTURE_D)) / math.sqrt(MIXTURE_D)
    Q = B @ B.T + 0.1 * np.eye(MIXTURE_D)
    x0 = np.linspace(2.0, 0.5, MIXTURE_D)
    x0 = x0 / x0.sum()  # heavy on the low-purity fractions
    p = np.linspace(0.1, 0.9, MIXTURE_D)  # p @ x0 ~ 0.42 < 0.5: the purity constraint is active at the optimum
    return Q, x0, p


@cache
def mixture_optimum() -> float:
    """min f on {x in [0, 1]^8, sum x = 1, p^T x >= 0.5}: convex, so SLSQP's answer is the global minimum."""
    from scipy.optimize import minimize

    Q, x0, p = _mixture_data()
    res = minimize(
        lambda x: float((x - x0) @ Q @ (x - x0)), np.full(MIXTURE_D, 1.0 / MIXTURE_D),
        jac=lambda x: 2 * Q @ (x - x0), method="SLSQP", bounds=[(0.0, 1.0)] * MIXTURE_D,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0}, {"type": "ineq", "fun": lambda x: p @ x - 0.5}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )  # fmt: skip
    assert res.success, res.message
    return float(res.fun)


def _mixture() -> Problem:
    Q, x0, p = (torch.tensor(a, dtype=DTYPE) for a in _mixture_data())

    def evaluate(x: Tensor) -> tuple[float, Tensor]:
        x = x.to(DTYPE)
        return float((x - x0) @ Q @ (x - x0)), (0.5 - p @ x).reshape(1)

    d = MIXTURE_D
    return Problem(
        "mixture8", d, torch.zeros(d, dtype=DTYPE), torch.ones(d, dtype=DTYPE), 1, evaluate, mixture_optimum(),
        "SLSQP on the convex problem", mixture=True,
    )  # fmt: skip


def _fail_hartmann6() -> Problem:
    from botorch.test_functions.synthetic import Hartmann

    fn = Hartmann(dim=6)

    def evaluate(x: Tensor) -> tuple[float, Tensor]:
        return float(fn.evaluate_true(x.to(DTYPE).reshape(1, -1))[0]), torch.zeros(0, dtype=DTYPE)

    d = 6
    return Problem(
        "fail_hartmann6", d, torch.zeros(d, dtype=DTYPE), torch.ones(d, dtype=DTYPE), 0, evaluate,
        float(fn.optimal_value), "BoTorch's Hartmann(6).optimal_value", fails=lambda x: float(x[:3].sum()) > 1.6,
    )  # fmt: skip


PROBLEMS: dict[str, Callable[[], Problem]] = {
    "pressure_vessel": lambda: _botorch("pressure_vessel", "PressureVessel"),
    "welded_beam": lambda: _botorch("welded_beam", "WeldedBeamSO"),
    "tension_compression": lambda: _botorch("tension_compression", "TensionCompressionString"),
    "speed_reducer": lambda: _botorch("speed_reducer", "SpeedReducer"),
    "c_hartmann6": lambda: _botorch("c_hartmann6", "ConstrainedHartmann"),
    "c_gramacy": lambda: _botorch("c_gramacy", "ConstrainedGramacy"),
    "ackley10": _ackley10,
    "mixture8": _mixture,
    "fail_hartmann6": _fail_hartmann6,
}


def get_problem(name: str) -> Problem:
    if name not in PROBLEMS:
        raise KeyError(f"unknown problem {name!r}; known: {', '.join(PROBLEMS)}")
    return PROBLEMS[name]()


# -- recording ----------------------------------------------------------------------------------------------


@dataclass
class ConstrainedRun:
    problem: str
    method: str
    seed: int
    evals: int
    f: list[float] = field(default_factory=list)  # per evaluation
    violation: list[float] = field(default_factory=list)  # max_j c_j (<= 0: feasible)
    source: list[str] = field(default_factory=list)
    equality_violations: int = 0  # points off the parameter equality by more than EQ_TOL
    failed: int = 0  # evaluations that failed (the problem's failure region): no value
    errors: list[str] = field(default_factory=list)
    policy_trace: dict[str, dict[str, Any]] = field(default_factory=dict)  # localbo: the display's numbers every 10
    wall_s: float = 0.0
    cpu_s: float = 0.0

    def record(self, problem: Problem, x_user: Tensor, source: str) -> tuple[float, Tensor] | None:
        """The evaluation's (f, c), or None when it failed (counted, no value)."""
        if problem.fails is not None and problem.fails(x_user):
            self.failed += 1
            self.f.append(math.nan)
            self.violation.append(math.nan)
            self.source.append(source)
            self.equality_violations += problem.equality_violation(x_user) > EQ_TOL
            return None
        f, c = problem.evaluate(x_user)
        self.f.append(f)
        self.violation.append(float(c.max()) if c.numel() else -math.inf)
        self.source.append(source)
        self.equality_violations += problem.equality_violation(x_user) > EQ_TOL
        return f, c

    def best_feasible(self, n: int) -> float | None:
        """The best f among the first ``n`` evaluations that satisfy every constraint (None: none does)."""
        vals = [f for f, v in zip(self.f[:n], self.violation[:n], strict=True) if v <= 0]
        return min(vals) if vals else None

    def summary(self, checkpoints: list[int]) -> dict[str, Any]:
        n = len(self.f)
        feasible = [i + 1 for i, v in enumerate(self.violation) if v <= 0]
        trace_at = sorted({*range(10, n + 1, 10), n})
        return {
            "problem": self.problem,
            "method": self.method,
            "seed": self.seed,
            "evals": n,
            "best": {str(k): self.best_feasible(k) for k in checkpoints if k <= n},
            "trace": {str(k): self.best_feasible(k) for k in trace_at},  # best feasible every 10 evaluations
            "first_feasible": feasible[0] if feasible else None,
            "infeasible": sum(1 for v in self.violation if v > 0),  # failed evaluations are not counted here
            "failed": self.failed,
            "fallbacks": sum(s in (FALLBACK, SAFE_FALLBACK) for s in self.source),
            "equality_violations": self.equality_violations,
            **({"policy_trace": self.policy_trace} if self.policy_trace else {}),
            "errors": self.errors[:5],
            "n_errors": len(self.errors),
            "wall_s": round(self.wall_s, 2),
            "cpu_s": round(self.cpu_s, 2),
        }


# -- localbo's policies, in process ---------------------------------------------------------------------------


def split_method(method: str) -> tuple[str, set[str]]:
    """A method's policy and its modes: "la-minucb-safe" is la-minucb in safe mode, "ei-greedy-exact" is ei with
    random_every 0 and the exact noise floor (the suffixes are ``MODES``; a policy's own name may hold a hyphen)."""
    parts = method.split("-")
    cut = len(parts)
    while cut > 1 and parts[cut - 1] in MODES:
        cut -= 1
    return "-".join(parts[:cut]), set(parts[cut:])


def run_direct(
    problem: Problem,
    method: str,
    seed: int,
    evals: int,
    run: ConstrainedRun,
    config: dict[str, Any] | None = None,
    device: str = "cpu",
) -> None:
    from localbo.planning.fallback import mixed_seed
    from localbo.planning.runner import FAILURE_SALT, RNG_SALT
    from localbo.policies import get_policy
    from localbo.policies.polytope import feasible_or_none, sample
    from localbo.policies.requests import make_request, on_device

    base, modes = split_method(method)
    mode = "safe" if "safe" in modes else "avoid" if "avoid" in modes else ""
    cls = get_policy(base)
    settings: dict[str, Any] = {}
    if "greedy" in modes:  # no random points
        settings["random_every"] = 0
    if "noisefree" in modes:
        settings["noise_floor"] = NOISEFREE_FLOOR
    if "exact" in modes:
        settings["noise_floor"] = EXACT_FLOOR
    policy_config = cls.Config.model_validate({**settings, **(config or {})})  # a probe's setting over the modes'
    cls.check_study(problem.dim, policy_config)
    policy_config = cls.Config.model_validate(policy_config.model_dump(mode="json"))  # as stored by the engine
    d = problem.dim
    polytope = problem.polytope()
    models_constraints = "constraints" in cls.handles and problem.m > 0
    queue: deque[tuple[Tensor, str]] = deque()
    X_done: list[Tensor] = []
    y_done: list[float] = []
    C_done: list[Tensor] = []
    X_failed: list[Tensor] = []
    stored: dict[str, Any] = {}
    version = 0
    seed_point = problem.safe_seed() if mode == "safe" else None
    if mode == "safe":
        if seed_point is None:
            raise ValueError(f"{problem.name}: no known-feasible seed for safe mode")
        queue.append((seed_point, SEED))

    def stack(rows: list[Tensor], width: int) -> Tensor:
        return torch.stack(rows) if rows else torch.empty(0, width, dtype=DTYPE)

    def safest() -> Tensor:
        """The engine's safe fallback: the completed feasible point with the widest margin, else the seed."""
        if C_done and problem.m:
            C = torch.stack(C_done)
            feasible = (C <= 0).all(-1)
            if bool(feasible.any()):
                margin = torch.where(feasible, (-C).min(-1).values, torch.full_like(C[:, 0], -math.inf))
                return X_done[int(margin.argmax())]
        assert seed_point is not None
        return seed_point

    for _ in range(evals):
        if not queue:
            state, _ = cls.load_state(stored or None)
            request = make_request(
                cls, stack(X_done, d), torch.tensor(y_done, dtype=DTYPE), pending=stack([x for x, _ in queue], d),
                state=state, config=policy_config, seed=seed, rng_seed=mixed_seed(seed, RNG_SALT, version),
                device=device,
            )  # fmt: skip
            request = on_device(dataclasses.replace(  # the added tensors on the device too, as the engine's
                request,
                C=stack(C_done, problem.m) if models_constraints else None,
                polytope=polytope,
                X_failed=stack(X_failed, d) if mode == "avoid" else None,
                n_failed=len(X_failed),  # as the engine: every study's failed trials count
                max_violation_probability=SAFE_DELTA if mode == "safe" else None,
            ))  # fmt: skip
            try:
                suggestion = cls().suggest(request)
                X = suggestion.X.detach().to("cpu", DTYPE)
                if X.ndim != 2 or X.shape[1] != d or X.shape[0] < 1 or not bool(torch.isfinite(X).all()):
                    raise ValueError(f"policy returned points of shape {tuple(X.shape)}, need >= 1 x {d}, finite")
                stored = json.loads(json.dumps(cls.dump_state(suggestion.state)))
                queue.extend((x, cls.name) for x in X.clamp(0.0, 1.0))
            except Exception as exc:  # the engine's fallback: seeded points of the fallback box (∩ the polytope)
                run.errors.append(f"eval {len(run.f) + 1}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
                if mode == "safe":
                    queue.append((safest(), SAFE_FALLBACK))
                else:
                    generator = torch.Generator().manual_seed(mixed_seed(seed, FAILURE_SALT, version))
                    lo, hi = (torch.tensor(v, dtype=DTYPE) for v in cls.fallback_box(state, policy_config, d))
                    if polytope is not None:
                        if feasible_or_none(polytope, lo, hi) is None:
                            lo, hi = torch.zeros(d, dtype=DTYPE), torch.ones(d, dtype=DTYPE)
                        point = sample(polytope, 1, generator, lo, hi)[0]
                    else:
                        point = lo + torch.rand(1, d, generator=generator, dtype=DTYPE)[0] * (hi - lo)
                    queue.append((point, FALLBACK))
            version += 1
        x, source = queue.popleft()
        result = run.record(problem, problem.to_user(x), source)
        if len(run.f) % TRACE_EVERY == 0 and stored:  # the policy's state as the dashboard shows it (its last plan)
            shown = cls.display(cls.load_state(stored)[0], policy_config, len(X_done))
            if shown is not None:
                run.policy_trace[str(len(run.f))] = {"phase": shown.phase, **shown.numbers}
        if result is None:  # failed: no value; a point the failure model learns from
            X_failed.append(x)
            continue
        f, c = result
        X_done.append(x)
        y_done.append(f)
        C_done.append(c.to(DTYPE))


# -- Optuna's samplers, in process ----------------------------------------------------------------------------


def _constraints(trial: Any) -> list[float]:
    return list(trial.user_attrs.get("constraints", []))


def make_sampler(method: str, seed: int) -> Any:
    import optuna

    if method == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constraints_func=_constraints)
    if method == "gpsampler":
        return optuna.samplers.GPSampler(seed=seed, constraints_func=_constraints)
    if method == "optuna-random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(f"unknown Optuna method {method!r}")


def simplex_map(z: Tensor) -> Tensor:
    """z in (0, 1]^d -> the simplex: x_i = -log z_i / sum_j (-log z_j) (uniform z: uniform x)."""
    e = -torch.log(z.clamp(min=1e-300))
    total = e.sum()
    return e / total if float(total) > 0 else torch.full_like(z, 1.0 / z.numel())


def run_optuna(problem: Problem, method: str, seed: int, evals: int, run: ConstrainedRun) -> None:
    import optuna
    from optuna.distributions import FloatDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    names = [f"x{i}" for i in range(problem.dim)]
    lo, hi = problem.lower.tolist(), problem.upper.tolist()
    distributions = {n: FloatDistribution(lo[i], hi[i]) for i, n in enumerate(names)}
    study = optuna.create_study(direction="minimize", sampler=make_sampler(method, seed))
    for _ in range(evals):
        trial = study.ask(distributions)
        x = torch.tensor([trial.params[n] for n in names], dtype=DTYPE)
        if problem.mixture:
            x = simplex_map(x)
        result = run.record(problem, x, method)
        if result is None:  # the rig faulted: a failed trial, as Optuna takes one
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            continue
        f, c = result
        trial.set_user_attr("constraints", [float(v) for v in c])
        study.tell(trial, f)


# -- Ax ---------------------------------------------------------------------------------------------------------


def run_ax(problem: Problem, method: str, seed: int, evals: int, run: ConstrainedRun) -> None:
    from ax.api.client import Client
    from ax.api.configs import RangeParameterConfig

    from harness.sweep import quiet_ax as hush

    hush()
    warnings.filterwarnings("ignore")
    d = problem.dim
    free = d - 1 if problem.mixture else d  # the mixture: the last fraction is 1 - the others
    names = [f"x{i}" for i in range(free)]
    lo, hi = problem.lower.tolist(), problem.upper.tolist()
    client = Client(random_seed=seed)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=n, bounds=(lo[i], hi[i]), parameter_type="float") for i, n in enumerate(names)
        ],
        parameter_constraints=[" + ".join(names) + " <= 1"] if problem.mixture else None,
        name=f"{problem.name}-{seed}",
    )
    client.configure_optimization(objective="-f", outcome_constraints=[f"c{j} <= 0" for j in range(problem.m)] or None)
    hush()
    for _ in range(evals):
        ((index, params),) = client.get_next_trials(max_trials=1).items()
        x = torch.tensor([float(params[n]) for n in names], dtype=DTYPE)
        if problem.mixture:
            x = torch.cat([x, (1.0 - x.sum()).clamp(min=0.0).reshape(1)])
        result = run.record(problem, x, method)
        if result is None:  # the rig faulted: a failed trial, as Ax takes one
            client.mark_trial_failed(index)
            continue
        f, c = result
        client.complete_trial(index, raw_data={"f": f, **{f"c{j}": float(v) for j, v in enumerate(c)}})


def runner_of(method: str) -> str:
    if method in OPTUNA_METHODS:
        return "optuna"
    if method in AX_METHODS:
        return "ax"
    return "direct"


def run_method(
    problem_name: str, method: str, seed: int, evals: int, config: dict[str, Any] | None = None
) -> ConstrainedRun:
    """One run, timed; ``config``: settings merged into a localbo policy's config (``probe.py``)."""
    problem = get_problem(problem_name)
    run = ConstrainedRun(problem_name, method, seed, evals)
    runners = {"direct": run_direct, "optuna": run_optuna, "ax": run_ax}
    run_timed(run, method, runner_of(method), runners, (problem, method, seed, evals), config)
    return run
