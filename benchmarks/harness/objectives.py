"""Benchmark objectives: a registry of name -> dim, bounds, noise-free callable, known optimum, noise std.

Every objective is *minimised* and takes points in its own (user) units: ``obj(X)`` with ``X``
``n x d`` (or ``d``) float64 inside ``obj.bounds`` returns the ``n`` noise-free values; a noisy
evaluation is ``obj.noisy(X, eps) = obj(X) + noise_std * eps`` with ``eps`` standard normal draws
that the runner takes from ``noise_draws(...)`` (one fixed sequence per objective instance and
seed, so every method sees the same noise at its i-th evaluation: common random numbers).

Registered names (``registry()``; the parametric families also resolve any ``d``):

- ``gp25``, ``gp50``, ``gp100`` (and ``gp<d>``): the GP-sampled synthetic functions of GIBO
  section 4.1, built as ``shared/research/algorithms.md`` 4.1 says:

  * lengthscale rule: ``delta_n = sqrt(n/6) sqrt((1 + 2 sqrt(1 - 3/(5n)))/3)``,
    ``l_d = delta_d * 0.1 / delta_2``; one ARD vector per *dimension* (shared by all
    instances of that ``d``) drawn from ``U(2 l_d (1 - 0.3), 2 l_d (1 + 0.3))``;
  * 1000 unscrambled Sobol points in ``[0, 1]^d``; ``y`` = one noise-free draw from the GP prior
    (zero mean, RBF-ARD, outputscale 1) at them, seeded per instance;
  * the objective is the posterior mean of an exact GP on ``(X, y)`` with the same kernel and
    gpytorch's default likelihood noise ``softplus(0) + 1e-4 = 0.6932`` (a smoothed prior sample);
  * evaluation noise ``N(0, 0.01)`` (std 0.1).

  GIBO maximises this function. The GP prior is symmetric (``-f`` has the law of ``f``), so we
  minimise it as drawn: same benchmark, MinUCB's (minimisation) convention. The instance number
  is the run's seed, so each seed of a benchmark runs on a different function, as in GIBO/MPD.
  The optimum is not known; ``best_known()`` estimates it by multi-start L-BFGS-B.
- ``branin`` (2-D), ``hartmann6`` (6-D), ``ackley`` (10-D), ``rosenbrock`` (10-D; ``rosenbrock<d>``):
  ``botorch.test_functions`` on their standard domains, with their known minimum and noise std 0.1;
  ``ackley<d>`` on TuRBO's domain [-5, 10]^d (on the standard [-32.768, 32.768]^d the cube's centre, where
  the local policies start, is the minimum).
- The rest of the Lipschitz-BO paper's synthetic set (Ahmed, Vaswani, Schmidt, sec. 4): ``sixhumpcamel``
  ([-3, 3] x [-2, 2]), ``goldsteinprice`` ([-2, 2]^2, f* = 3; not in botorch, defined here), ``hartmann3``,
  ``michalewicz2``, ``michalewicz5``, ``michalewicz10`` (``michalewicz<d>``, [0, pi]^d), with
  ``rosenbrock2`` .. ``rosenbrock5`` from the family above; noise std 0.1 (a runner may override it).
- ``cartpole`` (4-D), ``swimmer`` (16-D), ``hopper`` (33-D): linear policies on gymnasium environments
  (``harness/rl.py``), *maximised*, episodic: an evaluation is one seeded episode's return
  (``Objective.episode``), the objective's value ``obj(X)`` the mean return over fixed test episodes.
  ``<task>-h<steps>`` cuts the episodes to ``steps`` (smoke runs).
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import numpy as np
import torch
from botorch.test_functions.synthetic import (
    Ackley,
    Branin,
    Hartmann,
    Michalewicz,
    Rosenbrock,
    SixHumpCamel,
    SyntheticTestFunction,
)
from scipy.optimize import minimize
from torch import Tensor

DTYPE = torch.float64
GP_POINTS = 1000  # Sobol points the prior sample is drawn at
GP_NOISE_VARIANCE = 0.01  # evaluation noise of the GP functions (GIBO generate_data_default.yaml)
GP_LIKELIHOOD_NOISE = math.log(2.0) + 1e-4  # gpytorch's default GaussianLikelihood noise: softplus(0) + 1e-4
GP_FACTOR_LENGTHSCALE = 2.0
GP_GAMMA = 0.3
DEFAULT_NOISE_STD = 0.1


def stable_seed(*parts: object) -> int:
    """A seed from a tuple of names and numbers that is the same in every process and Python run."""
    return zlib.crc32(repr(parts).encode()) & 0x7FFFFFFF


@dataclass(frozen=True)
class Objective:
    """One objective instance, to minimise, in user units (``bounds``: 2 x d, lower and upper)."""

    name: str
    dim: int
    bounds: Tensor
    fn: Callable[[Tensor], Tensor] = field(repr=False)
    noise_std: float
    optimum: float | None = None  # the exact minimum value, where known
    optimizer: Tensor | None = field(default=None, repr=False)  # one known minimiser (user units)
    instance: int = 0
    direction: Literal["minimize", "maximize"] = "minimize"
    description: str = ""
    # Episodic objectives: the return of one episode at x (d, user units) reset with a seed; evaluations
    # call it, and ``fn`` is the mean over fixed test episodes (a runner's value for an iterate).
    episode: Callable[[Tensor, int], float] | None = field(default=None, repr=False)

    def __call__(self, X: Tensor) -> Tensor:
        """Noise-free values at ``X`` (n x d or d, user units): a tensor of n values."""
        X = torch.as_tensor(X, dtype=DTYPE)
        return self.fn(X.reshape(-1, self.dim)).reshape(-1)

    def noisy(self, X: Tensor, eps: Tensor | float) -> Tensor:
        """``f(X) + noise_std * eps`` with ``eps`` standard normal (one per row)."""
        return self(X) + self.noise_std * torch.as_tensor(eps, dtype=DTYPE).reshape(-1)

    def to_user(self, U: Tensor) -> Tensor:
        """Unit cube -> user units (the same affine map as the service's float parameters)."""
        lo, hi = self.bounds
        return lo + torch.as_tensor(U, dtype=DTYPE) * (hi - lo)

    def to_unit(self, X: Tensor) -> Tensor:
        lo, hi = self.bounds
        return (torch.as_tensor(X, dtype=DTYPE) - lo) / (hi - lo)


@dataclass(frozen=True)
class ObjectiveSpec:
    """A registry entry: builds instance ``i`` of the objective (deterministic per instance)."""

    name: str
    dim: int
    noise_std: float
    per_instance: bool  # True: each instance (= run seed) is a different function
    description: str
    build: Callable[[int], Objective] = field(repr=False)


NOISE_DRAWS = 500  # the league's budget: the draws are made for at least this many evaluations


def noise_draws(objective: Objective, seed: int, n: int) -> Tensor:
    """The standard normal draws for evaluations 1..n of a run (same for every method and, up to NOISE_DRAWS, every
    budget). torch fills the last 16 values of a tensor by another path than its leading ones, so ``randn(100)`` is
    not ``randn(500)[:100]`` from evaluation 85 on: drawn at one length, a probe to 100 evaluations sees the noise a
    league run of 500 saw (league_findings.md, "auto with mpd first")."""
    generator = torch.Generator().manual_seed(stable_seed("noise", objective.name, objective.instance, seed))
    return torch.randn(max(n, NOISE_DRAWS), generator=generator, dtype=DTYPE)[:n]


# -- GP-sampled functions (GIBO 4.1) ---------------------------------------------------------


def mean_distance(n: int) -> float:
    """Approximate mean distance between two uniform points in [0, 1]^n (GIBO's rule)."""
    return math.sqrt(n / 6) * math.sqrt((1 + 2 * math.sqrt(1 - 3 / (5 * n))) / 3)


def gp_base_lengthscale(d: int) -> float:
    """l_d = delta_d * 0.1 / delta_2: lengthscale 0.1 in 2-D, scaled with the mean distance."""
    return mean_distance(d) * 0.1 / mean_distance(2)


@cache
def gp_lengthscales(d: int) -> Tensor:
    """The ARD lengthscale vector of dimension ``d``, drawn once per dimension (all instances share it)."""
    base = GP_FACTOR_LENGTHSCALE * gp_base_lengthscale(d)
    generator = torch.Generator().manual_seed(stable_seed("gp-lengthscale", d))
    u = torch.rand(d, generator=generator, dtype=DTYPE)
    return base * (1 - GP_GAMMA) + u * (2 * GP_GAMMA * base)


def rbf(A: Tensor, B: Tensor, lengthscale: Tensor) -> Tensor:
    """RBF-ARD kernel with outputscale 1: exp(-|(a - b) / l|^2 / 2).

    Squared distances by |a|^2 + |b|^2 - 2 a.b (torch.cdist is ~100x slower for one row here).
    """
    A, B = A / lengthscale, B / lengthscale
    sq = A.square().sum(-1, keepdim=True) + B.square().sum(-1) - 2 * A @ B.T
    return torch.exp(-0.5 * sq.clamp_min(0.0))


class GPFunction:
    """Posterior mean of a GP conditioned on one prior sample: f(x) = k(x, X) (K + s2 I)^-1 y."""

    def __init__(self, d: int, instance: int, n_points: int = GP_POINTS) -> None:
        self.d = d
        self.lengthscale = gp_lengthscales(d)
        self.X = torch.quasirandom.SobolEngine(d, scramble=False).draw(n_points, dtype=DTYPE)
        K = rbf(self.X, self.X, self.lengthscale)
        generator = torch.Generator().manual_seed(stable_seed("gp-function", d, instance))
        z = torch.randn(n_points, generator=generator, dtype=DTYPE)
        eye = torch.eye(n_points, dtype=DTYPE)
        jitter = 1e-8
        while True:  # the prior draw y = L z, with the least jitter that factorises
            L, info = torch.linalg.cholesky_ex(K + jitter * eye)
            if int(info) == 0:
                break
            jitter *= 10
        self.y = L @ z
        self.alpha = torch.linalg.solve(K + GP_LIKELIHOOD_NOISE * eye, self.y)
        # numpy copies for evaluation without autograd: no OpenMP thread pool to wake for one point,
        # which on a busy machine costs milliseconds per call
        self._P = (self.X / self.lengthscale).numpy()
        self._P_sq = np.square(self._P).sum(-1)
        self._alpha = self.alpha.numpy()
        self._ls = self.lengthscale.numpy()

    def __call__(self, X: Tensor) -> Tensor:
        if X.requires_grad:
            return rbf(X, self.X, self.lengthscale) @ self.alpha
        A = X.detach().cpu().numpy() / self._ls
        sq = np.square(A).sum(-1, keepdims=True) + self._P_sq - 2 * A @ self._P.T
        return torch.from_numpy(np.exp(-0.5 * np.maximum(sq, 0.0)) @ self._alpha)


def make_gp(d: int) -> ObjectiveSpec:
    name = f"gp{d}"
    lo, hi = gp_base_lengthscale(d) * 2 * (1 - GP_GAMMA), gp_base_lengthscale(d) * 2 * (1 + GP_GAMMA)

    def build(instance: int) -> Objective:
        return Objective(
            name=name,
            dim=d,
            bounds=torch.stack([torch.zeros(d, dtype=DTYPE), torch.ones(d, dtype=DTYPE)]),
            fn=GPFunction(d, instance),
            noise_std=math.sqrt(GP_NOISE_VARIANCE),
            instance=instance,
            description=f"GP sample (GIBO 4.1), d={d}, lengthscales in [{lo:.2f}, {hi:.2f}], instance = seed",
        )

    return ObjectiveSpec(name, d, math.sqrt(GP_NOISE_VARIANCE), True, f"GP-sampled function (GIBO 4.1), d={d}", build)


# -- botorch test functions -----------------------------------------------------------------


class GoldsteinPrice(SyntheticTestFunction):
    """Goldstein-Price on [-2, 2]^2; minimum 3 at (0, -1) (Jamil and Yang 2013, no. 58)."""

    dim = 2
    continuous_inds = [0, 1]
    _optimal_value = 3.0
    _optimizers = [(0.0, -1.0)]

    def __init__(self, noise_std: float | None = None, negate: bool = False) -> None:
        super().__init__(noise_std=noise_std, negate=negate, bounds=[(-2.0, 2.0), (-2.0, 2.0)])

    def _evaluate_true(self, X: Tensor) -> Tensor:
        x1, x2 = X[..., 0], X[..., 1]
        a = 1 + (x1 + x2 + 1) ** 2 * (19 - 14 * x1 + 3 * x1**2 - 14 * x2 + 6 * x1 * x2 + 3 * x2**2)
        b = 30 + (2 * x1 - 3 * x2) ** 2 * (18 - 32 * x1 + 12 * x1**2 + 48 * x2 - 36 * x1 * x2 + 27 * x2**2)
        return a * b


SIX_HUMP_CAMEL_MIN = -1.0316284534898774  # botorch rounds it to -1.0316, above values one can reach


def make_botorch(
    name: str, factory: Callable[[], SyntheticTestFunction], noise_std: float, optimum: float | None = None
) -> ObjectiveSpec:
    probe = factory()

    def build(instance: int) -> Objective:
        fn = factory()
        optimizers = getattr(fn, "_optimizers", None)
        optimizer = torch.tensor(optimizers[0], dtype=DTYPE) if optimizers else None
        return Objective(
            name=name,
            dim=fn.dim,
            bounds=fn.bounds.to(DTYPE),
            fn=fn.evaluate_true,
            noise_std=noise_std,
            optimum=float(fn.optimal_value) if optimum is None else optimum,
            optimizer=optimizer,
            instance=0,
            description=f"botorch {type(fn).__name__}, d={fn.dim}",
        )

    return ObjectiveSpec(name, probe.dim, noise_std, False, f"botorch {type(probe).__name__}, d={probe.dim}", build)


_FIXED: dict[str, Callable[[], ObjectiveSpec]] = {
    "gp25": lambda: make_gp(25),
    "gp50": lambda: make_gp(50),
    "gp100": lambda: make_gp(100),
    "branin": lambda: make_botorch("branin", Branin, DEFAULT_NOISE_STD),
    "hartmann6": lambda: make_botorch("hartmann6", lambda: Hartmann(dim=6), DEFAULT_NOISE_STD),
    "ackley": lambda: make_botorch("ackley", lambda: Ackley(dim=10), DEFAULT_NOISE_STD),
    "rosenbrock": lambda: make_botorch("rosenbrock", lambda: Rosenbrock(dim=10), DEFAULT_NOISE_STD),
    "sixhumpcamel": lambda: make_botorch("sixhumpcamel", SixHumpCamel, DEFAULT_NOISE_STD, SIX_HUMP_CAMEL_MIN),
    "goldsteinprice": lambda: make_botorch("goldsteinprice", GoldsteinPrice, DEFAULT_NOISE_STD),
    "hartmann3": lambda: make_botorch("hartmann3", lambda: Hartmann(dim=3), DEFAULT_NOISE_STD),
    "michalewicz2": lambda: make_botorch("michalewicz2", lambda: Michalewicz(dim=2), DEFAULT_NOISE_STD),
    "michalewicz5": lambda: make_botorch("michalewicz5", lambda: Michalewicz(dim=5), DEFAULT_NOISE_STD),
    "michalewicz10": lambda: make_botorch("michalewicz10", lambda: Michalewicz(dim=10), DEFAULT_NOISE_STD),
}
_FAMILIES: dict[str, Callable[[int], ObjectiveSpec]] = {
    "gp": make_gp,
    # TuRBO's domain (Eriksson et al. 2019): on Ackley's own symmetric one the centre, where the local
    # policies start, is the minimum itself
    "ackley": lambda d: make_botorch(f"ackley{d}", lambda: Ackley(dim=d, bounds=[(-5.0, 10.0)] * d), DEFAULT_NOISE_STD),
    "rosenbrock": lambda d: make_botorch(f"rosenbrock{d}", lambda: Rosenbrock(dim=d), DEFAULT_NOISE_STD),
    "michalewicz": lambda d: make_botorch(f"michalewicz{d}", lambda: Michalewicz(dim=d), DEFAULT_NOISE_STD),
}


def make_rl(name: str, horizon: int | None = None) -> ObjectiveSpec:
    from harness.rl import PARAM_BOUND, TASKS, LinearPolicyTask

    task = TASKS[name]
    label = name if horizon is None else f"{name}-h{horizon}"
    steps = horizon or task.horizon
    description = f"linear policy on {task.env_id}, {task.dim} parameters, no bias, episodes of <= {steps} steps"

    def build(instance: int) -> Objective:
        env = LinearPolicyTask(task, horizon)
        return Objective(
            name=label,
            dim=task.dim,
            bounds=torch.tensor([[-PARAM_BOUND] * task.dim, [PARAM_BOUND] * task.dim], dtype=DTYPE),
            fn=env.value,
            noise_std=0.0,
            instance=0,
            direction="maximize",
            description=description,
            episode=env.episode,
        )

    return ObjectiveSpec(label, task.dim, 0.0, False, description, build)


_RL = ("cartpole", "swimmer", "hopper")


def registry() -> list[str]:
    """The registered names (the families gp<d>, ackley<d>, rosenbrock<d>, michalewicz<d> take any d too)."""
    return [*_FIXED, *_RL]


@cache
def objective_spec(name: str) -> ObjectiveSpec:
    if name in _FIXED:
        return _FIXED[name]()
    rl = re.fullmatch(r"([a-z]+)(?:-h(\d+))?", name)
    if rl and rl.group(1) in _RL and (rl.group(2) is None or int(rl.group(2)) >= 1):
        return make_rl(rl.group(1), int(rl.group(2)) if rl.group(2) else None)
    match = re.fullmatch(r"([a-z]+)(\d+)", name)
    if match and match.group(1) in _FAMILIES and int(match.group(2)) >= 1:
        return _FAMILIES[match.group(1)](int(match.group(2)))
    families = ", ".join(f"{f}<d>" for f in _FAMILIES)
    raise KeyError(f"unknown objective {name!r}; expected one of {registry()}, {families} or <rl task>-h<steps>")


@cache
def get_objective(name: str, instance: int = 0) -> Objective:
    """Instance ``instance`` of objective ``name`` (only per-instance objectives depend on it)."""
    spec = objective_spec(name)
    return spec.build(instance if spec.per_instance else 0)


def instance_for(name: str, seed: int) -> int:
    """Which instance a run with ``seed`` uses: the seed for per-instance objectives, else 0."""
    return seed if objective_spec(name).per_instance else 0


@cache
def best_known(name: str, instance: int = 0, starts: int = 10) -> tuple[float, bool]:
    """(minimum value, exact?): the known optimum, or a multi-start L-BFGS-B estimate.

    The estimate starts from the ``starts`` best of the function's own training points (GP
    functions) and of 2000 scrambled Sobol points, as algorithms.md 4.1 recommends.
    """
    obj = get_objective(name, instance)
    if obj.optimum is not None:
        return obj.optimum, True
    sobol = torch.quasirandom.SobolEngine(obj.dim, scramble=True, seed=stable_seed("fstar", name, instance))
    candidates = obj.to_user(sobol.draw(2000, dtype=DTYPE))
    if isinstance(obj.fn, GPFunction):
        candidates = torch.cat([candidates, obj.fn.X])
    values = obj(candidates)
    starts_X = candidates[torch.argsort(values)[:starts]]
    # One L-BFGS-B run over all starts at once: the sum of independent terms separates.
    lo, hi = (b.repeat(len(starts_X)).numpy() for b in obj.bounds)

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        X = torch.tensor(x, dtype=DTYPE).reshape(len(starts_X), obj.dim).requires_grad_(True)
        value = obj(X).sum()
        (grad,) = torch.autograd.grad(value, X)
        return value.item(), grad.reshape(-1).numpy()

    result = minimize(
        fun, starts_X.reshape(-1).numpy(), jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi, strict=True))
    )
    found = obj(torch.tensor(result.x, dtype=DTYPE).reshape(len(starts_X), obj.dim).clamp(*obj.bounds))
    return min(float(values.min()), float(found.min())), False
