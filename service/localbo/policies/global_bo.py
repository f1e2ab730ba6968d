"""The protocol shared by the global BO policies (ucb, ei, pi, ts) and their Lipschitz variants.

Point k of a call gets the study-wide index t = n + m + k (n told, m pending) and is, in this order:

    "init"        scrambled Sobol point t of the study, while t < n_init (max(d + 1, 5) unless set: at least
                  five, as Ax's default design, since a GP fitted on d + 1 = 3 points at d = 2 can settle in a
                  local optimum it never leaves) or nothing is told yet;
    "random"      a uniform point when (t + 1) % random_every == 0 (every 4th, as Ahmed et al. do for every
                  method); for the Lipschitz variants redrawn until f_l(x) <= y*, i.e. it could still improve;
    "acquisition" the maximiser of the policy's acquisition over [0, 1]^d (acqopt.maximize), on the GP
                  (gp.py, MAP-refitted once per call from the stored hyperparameters) conditioned on the
                  real data plus the pending points and the points already chosen in this call, each told
                  a constant lie (the mean of y by default), so parallel evaluators get distinct points;
    "fallback"    a (Lipschitz-checked) uniform point when every candidate was rejected.

With parameter constraints (``request.polytope``) every point stays inside them: "init" is point t of the Sobol
sequence's points inside (or a hit-and-run sample when rejection does not work there, ``polytope.design``),
"random" a hit-and-run sample (``polytope.sample``), "acquisition" maximised over candidates inside and refined
by SLSQP under the constraints (``acqopt.maximize``). With outcome constraints (``request.C``: n x m, c_j <= 0
feasible) a policy that handles them (``handles`` has "constraints": ei, ucb) fits one GP per constraint (the
objective's fit, real data only, no lies) on bilog(c_j / s_j), SCBO's transform on the constraint's typical size
(``violation.typical_size``, as turbo, morbo and qlognehvi: the sign, so feasibility, is unchanged, and a limit
measured in thousands stays smooth across its bound instead of a step no GP models), and weights its acquisition
by the probability of feasibility PF(x) = prod_j P(c_j(x) <= 0) = prod_j Phi(-mu_j(x) / sigma_j(x)); y* is then
the best feasible observation, or, while none is feasible, BoTorch's infeasible-cost convention: max over the
observed X of mu(x) + 6 sigma(x), a value no plausible f exceeds, so that the acquisition is led by PF.

With failures to avoid (``request.X_failed``, a policy whose ``handles`` has "failures": ei, ucb) the failure model
(``failures.py``: a GP on a +-1 failure indicator over the completed and the failed points) is one more factor of
PF, P(z(x) <= 0), the probability of not failing, with or without outcome constraints; failed points have no
value and stay out of the objective's GP (y* is over the completed points, all of which did not fail). In every
study the failed trials (``request.n_failed``) count in the study-wide index, t = n + f + m + k, so that a failed
point is not asked again: without them a design point that failed was asked again and again, and so was an
acquisition point (its t, hence its seeds and candidates, unchanged), and the study stalled.

y is standardised each call (the GP's Standardize transform; posteriors come back in the units of y); with
``winsorize`` the objective's GP, and the incumbent the acquisition compares with, see y clipped above Tukey's upper
fence first (``warping.winsorized``: the best observation is below the fence, so it is unchanged; the Lipschitz
bounds and the stored results keep the raw values; on Rosenbrock-3 and Goldstein-Price a fifth and a tenth of ei's
regret at 100 evaluations, results/league_findings.md). Past
``max_data`` results (500) the GPs fit a subset: the best half and the rest evenly spaced (``subsets.py``).
The Lipschitz bounds and L use only the real observations. Every random draw (Sobol scrambling, uniform
points, Thompson paths, GP refits) comes from a generator seeded by (study seed, t), never from torch's
global RNG. State (``GlobalState``): the last GP fit, the Lipschitz estimate {L, L_lb, t, known}, the
observations seen and how the last call chose its points.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import ClassVar, Literal, TypeVar

import torch
from botorch.models import SingleTaskGP
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from localbo.policies import failures, gp, subsets, warping
from localbo.policies.acqopt import maximize
from localbo.policies.base import (
    Display,
    KernelKind,
    Policy,
    PolicyConfig,
    PolicyConfigError,
    PolicyState,
    Polytope,
    Suggestion,
    SuggestRequest,
    config_as,
    only_on,
)
from localbo.policies.global_scores import Acquisition, Context, mean_sigma, mix_seed
from localbo.policies.lipschitz import KAPPA, LipschitzBounds, LipschitzEstimate, estimate
from localbo.policies.polytope import design, sample
from localbo.policies.violation import bilog, typical_size

SOBOL_MAX_DIM = torch.quasirandom.SobolEngine.MAXDIM
RANDOM_BATCH = 1024  # uniform points drawn at once when looking for a Lipschitz-accepted one
RANDOM_ROUNDS = 20
MIN_INIT = 5  # the smallest default design (Ax's); d + 1 above d = 4


CONTINUOUS = only_on("continuous", "categorical")  # keys of the search over the cube, meaningless on candidates


def default_design(d: int) -> int:
    """The initial Sobol points of a study that does not set ``n_init``."""
    return max(d + 1, MIN_INIT)


class GlobalConfig(PolicyConfig):
    n_init: int | None = Field(
        default=None, ge=1, le=10_000, description="Sobol points first; max(d + 1, 5) when unset"
    )
    random_every: int = Field(
        default=4, ge=0, description="Every k-th point uniform at random (0: never)", json_schema_extra=CONTINUOUS
    )
    kernel: Literal["rbf", "matern52"] = Field(default="matern52", description="ARD kernel of the GP")
    noise_floor: float = gp.noise_floor_field()
    candidates: int = Field(
        default=2048, ge=16, le=200_000, description="Sobol candidates per point", json_schema_extra=CONTINUOUS
    )
    local_candidates: int = Field(
        default=256, ge=0, le=100_000, description="Candidates around the best points", json_schema_extra=CONTINUOUS
    )
    restarts: int = Field(
        default=5,
        ge=1,
        le=64,
        description="L-BFGS-B refinements from the best candidates",
        json_schema_extra=CONTINUOUS,
    )
    liar: Literal["mean", "min", "max"] = Field(
        default="mean",
        description="The value pending points are assumed to have (constant liar)",
        json_schema_extra=CONTINUOUS,
    )
    max_data: int | None = Field(
        default=500,
        ge=10,
        le=100_000,
        description="Past this many results the GPs fit a subset of them: the best half and the rest evenly spaced "
        "over the study (subsets.py), so a suggest's cost stops growing with n; None: every result",
    )
    winsorize: bool = Field(
        default=False,
        description="Fit the objective's GP to the values clipped above Tukey's upper fence, q3 + 1.5 IQR (Ax's "
        "Winsorize): a few very bad values no longer flatten the model where the good ones are; the best value, "
        "and what is stored, unchanged",
    )


class LipschitzConfig(GlobalConfig):
    kappa: float = Field(default=KAPPA, gt=0.0, description="L = kappa * t * (largest observed slope)")
    lipschitz_constant: float | None = Field(
        default=None,
        gt=0.0,
        description="A known L (units of y per unit of the normalised parameters), used instead of the estimate",
    )


class LipschitzState(BaseModel):
    """The Lipschitz estimate of the last call (lipschitz.LipschitzEstimate; L None: no usable estimate yet)."""

    model_config = ConfigDict(extra="forbid")
    L: float | None
    L_lb: float
    t: int
    known: bool

    @classmethod
    def of(cls, est: LipschitzEstimate) -> LipschitzState:
        return cls(L=est.L if math.isfinite(est.L) else None, L_lb=est.L_lb, t=est.t, known=est.known)


class PointNote(BaseModel):
    """How one point of the last call was chosen."""

    model_config = ConfigDict(extra="forbid")
    t: int
    how: Literal["init", "random", "acquisition", "fallback"]
    value: float | None = None  # the acquisition's value there
    accepted: float | None = None  # the fraction of candidates the Lipschitz bounds accepted
    refined: bool | None = None  # L-BFGS-B improved on the best candidate


class GlobalState(PolicyState):
    """The last GP fit (warm start), the Lipschitz estimate, observations seen, how the last points were chosen."""

    version = 1
    hypers: gp.StoredHypers = None
    n: int = 0
    lipschitz: LipschitzState | None = None
    points: list[PointNote] = Field(default_factory=list)
    constraint_hypers: list[gp.Hypers] = Field(default_factory=list)  # the constraint GPs' last fits
    feasible_share: float | None = None  # the share of observations satisfying every outcome constraint
    failure_hypers: gp.StoredHypers = None  # the failure model's last fit (failures: "avoid")
    n_failed: int = 0  # the failed points the last call saw (failures: "avoid")


GlobalConfigT = TypeVar("GlobalConfigT", bound=GlobalConfig)


class GlobalPolicy(Policy[GlobalConfigT, GlobalState]):
    """Base of the global policies: the protocol above; subclasses give ``Config`` and ``acquisition``."""

    State = GlobalState
    lipschitz: ClassVar[bool] = False
    spaces: ClassVar[frozenset[str]] = frozenset({"continuous", "categorical"})
    handles: ClassVar[frozenset[str]] = frozenset({"parameter_constraints"})  # ei, ucb: "constraints", "failures"

    @classmethod
    def check_study(cls, dim: int, config: GlobalConfigT) -> None:
        if dim > SOBOL_MAX_DIM:
            raise PolicyConfigError(
                "space",
                f"{cls.name} supports at most {SOBOL_MAX_DIM} coordinates (a categorical: one per choice), got {dim}",
            )

    @classmethod
    def kernel(cls, config: GlobalConfigT) -> KernelKind:
        return config.kernel

    @classmethod
    def display(cls, state: GlobalState, config: GlobalConfigT, n_complete: int) -> Display | None:
        """The phase (initial design or model-based), and the Lipschitz estimate of the variants that keep one."""
        n_init = config.n_init
        numbers: dict[str, float | int | str | None] = {"observations": state.n}
        if state.points:
            numbers["last point"] = state.points[-1].how
        if state.lipschitz is not None:
            numbers["L"] = state.lipschitz.L
            numbers["largest observed slope"] = state.lipschitz.L_lb
        if state.feasible_share is not None:
            numbers["feasible share"] = round(state.feasible_share, 4)
        if state.n_failed:
            numbers["failure model"] = failures.describe(state.n_failed, state.n + state.n_failed)
        initial = (
            state.n == 0 or (n_init is not None and n_complete < n_init) or all(p.how == "init" for p in state.points)
        )
        return Display(phase="initial design" if initial else "model-based", numbers=numbers)

    @abstractmethod
    def acquisition(self, ctx: Context, config: GlobalConfigT) -> Acquisition:
        """The score to maximise for one point (it may draw random numbers from ``ctx.generator``)."""

    def suggest(self, request: SuggestRequest[GlobalConfigT, GlobalState]) -> Suggestion:
        config = request.config
        dev, d = request.device, request.dim
        X = request.X.to(dev, torch.float64).reshape(-1, d)
        y = request.y.to(dev, torch.float64).reshape(-1)
        pending = request.X_pending.to(dev, torch.float64).reshape(-1, d)
        n, m = X.shape[0], pending.shape[0]
        n_init = config.n_init or default_design(d)
        hypers = request.state.hypers
        lipschitz: LipschitzState | None = None
        bounds: LipschitzBounds | None = None
        if self.lipschitz and n:
            cfg = config_as(config, LipschitzConfig)  # a Lipschitz variant's config
            est = estimate(X, y, cfg.kappa, cfg.lipschitz_constant)
            bounds = LipschitzBounds(X, y, est.L)
            lipschitz = LipschitzState.of(est)
        C = request.C if "constraints" in self.handles else None
        C = C.to(dev, torch.float64).reshape(n, -1) if C is not None and C.numel() else None
        X_failed = failures.failed_points(request.X_failed, d) if "failures" in self.handles else None
        X_failed = X_failed.to(dev) if X_failed is not None else None
        f = request.n_failed if X_failed is None else X_failed.shape[0]  # a failed point is not asked again
        if config.max_data is not None and n > config.max_data:  # the GPs' data, bounded (the Lipschitz bounds: all)
            keep = subsets.best_and_spread(y, C, config.max_data)
            X, y, C = X[keep], y[keep], (C[keep] if C is not None else None)
            X_failed = X_failed[-config.max_data :] if X_failed is not None else None
        y_model = warping.winsorized(y) if config.winsorize else y  # the objective GP's values
        failure_hypers = request.state.failure_hypers
        polytope = request.polytope
        constraint_hypers = request.state.constraint_hypers
        constraints: tuple[SingleTaskGP, ...] = ()
        chosen: list[Tensor] = []
        notes: list[PointNote] = []
        fitted = False
        for k in range(request.count):
            t = n + f + m + k
            if n == 0 or t < n_init:
                x, note = self._sobol(request.seed, t, d, dev, polytope), PointNote(t=t, how="init")
            elif config.random_every and (t + 1) % config.random_every == 0:
                x, note = self._random(request.seed, t, d, bounds, dev, polytope), PointNote(t=t, how="random")
            else:
                if not fitted:
                    generator = torch.Generator().manual_seed(mix_seed(request.seed, t, 3))
                    hypers = gp.to_state(
                        gp.fit_model(
                            X,
                            y_model,
                            config.kernel,
                            hypers,
                            device=dev,
                            generator=generator,
                            noise_floor=config.noise_floor,
                        )
                    )
                    if C is not None:
                        constraints = self._fit_constraints(X, C, config, constraint_hypers, dev, generator)
                        constraint_hypers = [gp.to_state(model) for model in constraints]
                    if X_failed is not None:  # one more constraint: the failure indicator (+1 failed, -1 completed)
                        failure = failures.fit_failure_model(X, X_failed, config.kernel, failure_hypers, dev, generator)
                        constraints = (*constraints, failure)
                        failure_hypers = gp.to_state(failure)
                    fitted = True
                lies_at = torch.cat([pending, *chosen])
                x, note = self._acquire(request, config, X, y_model, hypers, lies_at, bounds, t, constraints, C)
            chosen.append(x.reshape(1, d))
            notes.append(note)
        share = float((C <= 0).all(-1).double().mean()) if C is not None and n else None
        state = GlobalState(
            hypers=hypers,
            n=n,
            lipschitz=lipschitz,
            points=notes,
            constraint_hypers=constraint_hypers,
            feasible_share=share,
            failure_hypers=failure_hypers,
            n_failed=f,
        )
        return Suggestion(X=torch.cat(chosen), state=state)

    @staticmethod
    def _fit_constraints(
        X: Tensor,
        C: Tensor,
        config: GlobalConfig,
        previous: list[gp.Hypers],
        dev: torch.device,
        generator: torch.Generator,
    ) -> tuple[SingleTaskGP, ...]:
        """One GP per column of C (n x m) on X, on bilog(c_j / s_j) (the sign, so P(c_j <= 0), unchanged), warm-started
        from the previous fits when there are as many."""
        warm: list[gp.Hypers | None] = list(previous) if len(previous) == C.shape[1] else [None] * C.shape[1]
        size = typical_size(C)
        return tuple(
            gp.fit_model(
                X,
                bilog(C[:, j] / size[j]),
                config.kernel,
                h,
                device=dev,
                generator=generator,
                noise_floor=config.noise_floor,
            )
            for j, h in enumerate(warm)
        )

    def _acquire(
        self,
        request: SuggestRequest[GlobalConfigT, GlobalState],
        config: GlobalConfigT,
        X: Tensor,
        y: Tensor,
        hypers: gp.Hypers | None,
        lies_at: Tensor,
        bounds: LipschitzBounds | None,
        t: int,
        constraints: tuple[SingleTaskGP, ...] = (),
        C: Tensor | None = None,
    ) -> tuple[Tensor, PointNote]:
        """Maximise the acquisition on the GP conditioned on (X, y) and the lies; a random point if none is accepted."""
        d = request.dim
        lies = self._lies(y, config.liar, lies_at.shape[0])
        model = gp.build_model(
            torch.cat([X, lies_at]),
            torch.cat([y, lies]),
            config.kernel,
            hypers,
            X.device,
            noise_floor=config.noise_floor,
        )
        generator = torch.Generator().manual_seed(mix_seed(request.seed, t))
        y_best, y_worst, rank = float(y.min()), None, y
        if constraints:  # the best feasible observation; the local candidates around the best feasible ones
            with torch.no_grad():
                mean, sigma = mean_sigma(model, X)
            y_worst = float((mean + 6 * sigma).max())
        if C is not None and y_worst is not None:
            feasible = (C <= 0).all(-1)
            y_best = float(y[feasible].min()) if bool(feasible.any()) else y_worst
            rank = torch.where(feasible, y, y.max() + 1 + C.clamp_min(0).sum(-1))
        ctx = Context(model, y_best, t, X.shape[0], d, bounds, generator, constraints, y_worst)
        score = self.acquisition(ctx, config)
        best = X[rank.argsort()[: config.restarts]]
        found = maximize(
            score,
            d,
            seed=mix_seed(request.seed, t, 2) % (2**31),
            n_candidates=config.candidates,
            restarts=config.restarts,
            around=best,
            local=config.local_candidates,
            device=X.device,
            polytope=request.polytope,
            scale=None if hypers is None else torch.tensor(hypers.lengthscale, dtype=torch.float64, device=X.device),
        )
        if found is None:
            x = self._random(request.seed, t, d, bounds, X.device, request.polytope)
            return x, PointNote(t=t, how="fallback", accepted=0.0)
        value = found.value if math.isfinite(found.value) else None
        note = PointNote(t=t, how="acquisition", value=value, accepted=found.accepted, refined=found.refined)
        return found.x, note

    @staticmethod
    def _lies(y: Tensor, liar: str, count: int) -> Tensor:
        value = {"mean": y.mean(), "min": y.min(), "max": y.max()}[liar]
        return value.expand(count)

    @staticmethod
    def _sobol(seed: int, t: int, d: int, dev: torch.device, polytope: Polytope | None = None) -> Tensor:
        """Point t of the study's Sobol design (inside the polytope when given)."""
        return design(polytope, d, seed, t, 1).to(dev).reshape(d)

    @staticmethod
    def _random(
        seed: int,
        t: int,
        d: int,
        bounds: LipschitzBounds | None,
        dev: torch.device,
        polytope: Polytope | None = None,
    ) -> Tensor:
        """A uniform point (of the polytope, when given); with bounds, the first of 20 x 1024 draws where f could
        improve (else the lowest f_l)."""
        g = torch.Generator().manual_seed(mix_seed(seed, t, 1))
        best, best_lower = None, math.inf
        for _ in range(RANDOM_ROUNDS if bounds is not None else 1):
            size = RANDOM_BATCH if bounds is not None else 1
            if polytope is not None:
                U = sample(polytope, size, g, thinning=1 if size > 1 else None).to(dev)
            else:
                U = torch.rand(size, d, generator=g, dtype=torch.float64).to(dev)
            if bounds is None:
                return U[0]
            lower, _ = bounds(U)
            ok = (lower <= bounds.y_best).nonzero()  # f could still beat the best observation here
            if ok.numel():
                return U[int(ok[0])]
            i = int(lower.argmin())
            if float(lower[i]) < best_lower:
                best, best_lower = U[i], float(lower[i])
        assert best is not None
        return best
