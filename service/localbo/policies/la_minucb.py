"""``la-minucb``: MinUCB with look-ahead (Fan, Wang, Ng, Hu 2024, Algorithm 2; algorithms.md 3.2-3.5).

    repeat:  x_{t+1} = argmin_x mu_D(x) + beta * sigma_D(x)                    (the MinUCB step)
             Z = argmin_{Z in R^{b x d}} E_y[ min_x mu_{D+(Z,y)}(x) + beta * sigma_{D+Z}(x) ]
             evaluate [x_{t+1}; Z] as one batch, D <- D + both;  fit the GP

The look-ahead is BoTorch's one-shot knowledge-gradient machinery (``qMultiFidelityKnowledgeGradient``)
with the value function -(mu + beta sigma) of the fantasy models (``minucb.NegativeUCB``, noise-free
sigma, which depends on Z but not on y): Z and one inner minimiser per fantasy are optimised jointly
by L-BFGS-B, the fantasies y ~ the GP's predictive distribution (noise included) from fixed Sobol
base samples. The paper evaluates x_{t+1} before choosing Z; here x_{t+1} goes out at the head of the
batch and its outcome is fantasised together with Z's (BoTorch's ``X_pending``), so one GP fit serves
one batch of b + 1 points. Points still pending (asked, not told) are fantasised the same way.

Defaults (the paper reports none of b, fantasies or optimiser settings, algorithms.md 3.6):
beta = 3 on sigma (App. A); b = ``samples_per_iteration``, d when unset (GIBO's and our MinUCB's b2);
16 fantasies; 2 restarts of at most 30 L-BFGS-B iterations each, started from Z uniform in
x_{t+1} +- delta (delta 0.2) and every inner point at x_{t+1}, so no raw-sample search; Z and the
inner points are searched in the whole cube (``region_delta`` unset; else the box x_{t+1} +-
region_delta); the step over the whole cube (``step_delta``); GP window N_max = 5 d. The first batch
of a study without data is GIBO's gradient exploration around x_0 (there is no GP to fantasise from).
A top-up while results are out is one more look-ahead, without a refit, for the points asked.

Under constraints (issue 30; the rules in ``local_constraints.py``): x_{t+1} is MinUCB's constrained step and centre
rule (``minucb.constrained_minucb_step``: the UCB minimised subject to each constraint's optimistic bound, in safe
mode to PF >= 1 - delta; the centre moves only to a likely-feasible point). The look-ahead batch Z is optimised as
above (the constraints do not enter the fantasies) and then admitted row by row: projected onto the polytope's
equalities and moved back along the segment from x_{t+1} into the polytope, and, where the constraint models do not
allow it (safe mode: not safe; with failures: predicted to fail), pulled back towards x_{t+1} until they do, else
x_{t+1} itself. In safe mode Z and the step search x_{t+1} +- delta when region_delta / step_delta are unset.

>>> request = make_request("la-minucb", X, y, count=4)             # X: n x d in the unit cube, y: n to minimise
>>> request = dataclasses.replace(request, C=C, polytope=P)         # C: n x m (<= 0 holds); P: linear constraints
>>> LaMinUCB().suggest(request).X                                  # x_{t+1} and the look-ahead batch, inside P
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from botorch.acquisition.knowledge_gradient import qKnowledgeGradient
from botorch.exceptions.warnings import OptimizationWarning
from botorch.models import SingleTaskGP
from botorch.optim import optimize_acqf
from botorch.sampling.normal import SobolQMCNormalSampler
from botorch.utils.sampling import draw_sobol_normal_samples
from botorch.utils.transforms import t_batch_mode_transform
from pydantic import Field
from torch import Tensor

from localbo.policies import gp, register
from localbo.policies.base import SuggestRequest
from localbo.policies.exploration import local_box
from localbo.policies.gradients import KernelParams, chol, train_data
from localbo.policies.local import Data, LocalConfig, LocalPolicy, LocalState
from localbo.policies.local_constraints import Constraints
from localbo.policies.minucb import CONSTRAINED, constrained_minucb_step, minucb_step, step_bounds

MIN_VARIANCE = 1e-12  # sigma^2 after Z, floored: rounding can push it below 0 at a data point


class LaMinUCBConfig(LocalConfig):
    beta: float = Field(default=3.0, ge=0.0, description="UCB = mu + beta * sigma (a multiplier on sigma)")
    step_delta: float | None = Field(
        default=None, gt=0.0, le=1.0, description="Search the step in x_t +- step_delta; the whole cube when unset"
    )
    step_restarts: int = Field(default=10, ge=1, le=256, description="L-BFGS-B starts of the step")
    region_delta: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        description="Search Z and the inner minimisers in x_{t+1} +- region_delta; the whole cube when unset",
    )
    fantasies: int = Field(default=16, ge=1, le=512, description="Fantasy outcomes of the batch (one-shot)")
    lookahead_restarts: int = Field(default=2, ge=1, le=64, description="Restarts of the one-shot optimisation")
    lookahead_maxiter: int = Field(default=30, ge=1, le=2000, description="L-BFGS-B iterations per restart")


class LookaheadUCB(qKnowledgeGradient):
    """-E_y[min_x UCB(x | D + (Z, y))], one-shot: X_full = [Z (q rows); x_1 .. x_F (one per fantasy)].

    BoTorch's one-shot KG layout and optimiser hooks (``get_augmented_q_batch_size``,
    ``extract_candidates``), with the fantasy posterior in closed form (algorithms.md 3.5) instead
    of ``model.fantasize``, which costs GPyTorch ~1 s per call at d = 25: with Z' = [Z; pending],
    S = Cov_D(f(Z')) + n2 I = L_S L_S^T and c(x) = Cov_D(f(Z'), f(x)),

        mu_{D+(Z',y_i)}(x) = mu_D(x) + (L_S^{-1} c(x))^T eps_i,   sigma^2_{D+Z'}(x) = sigma^2_D(x) - |L_S^{-1} c(x)|^2

    where eps_i ~ N(0, I) are fixed scrambled-Sobol base samples (y_i = mu_D(Z') + L_S eps_i, noise
    included). The value of fantasy i is -(mu_i(x_i) + beta sigma(x_i)) in the units of y (the
    Standardize transform undone); the forward returns its mean over the fantasies: batch.
    """

    def __init__(
        self, model: SingleTaskGP, beta: float, fantasies: int, X_pending: Tensor | None = None, seed: int = 0
    ) -> None:
        # an explicit seed: BoTorch's default sampler would draw one from torch's global RNG (the sampler
        # itself is never used: the fantasies come from ``base_samples``)
        sampler = SobolQMCNormalSampler(sample_shape=torch.Size([fantasies]), seed=seed)
        super().__init__(model=model, num_fantasies=fantasies, sampler=sampler, X_pending=X_pending)
        self.beta, self.seed = beta, seed
        self.params = KernelParams.from_model(model)
        A, resid, scale = train_data(model)
        self.A, self.scale = A, scale
        transform = getattr(model, "outcome_transform", None)
        self.offset = transform.means.reshape(()) if transform is not None else torch.zeros_like(scale)
        self.mean = model.mean_module.constant.detach().reshape(())
        self.L = chol(self.params, A)  # n x n
        self.alpha = torch.cholesky_solve(resid.unsqueeze(-1), self.L).squeeze(-1)  # n
        self._eps: dict[int, Tensor] = {}

    def base_samples(self, q: int) -> Tensor:
        """F x q standard normals, the same on every call (one-shot needs fixed fantasies)."""
        if q not in self._eps:
            self._eps[q] = draw_sobol_normal_samples(q, self.num_fantasies, self.A.device, self.A.dtype, self.seed)
        return self._eps[q]

    @t_batch_mode_transform()  # type: ignore[arg-type]  # BoTorch types the decorator for the base class
    def forward(self, X: Tensor) -> Tensor:
        """X: batch x (q + F) x d -> batch."""
        F = self.num_fantasies
        return -self.fantasy_ucb(X[..., :-F, :], X[..., -F:, :]).mean(-1)

    def fantasy_ucb(self, Z: Tensor, x: Tensor) -> Tensor:
        """UCB of fantasy i at x_i after Z (y units): Z: batch x q x d, x: batch x F x d -> batch x F."""
        if self.X_pending is not None:
            Z = torch.cat([Z, self.X_pending.expand(*Z.shape[:-2], -1, -1)], dim=-2)
        p, A, L = self.params, self.A, self.L
        Vz = torch.linalg.solve_triangular(L, p.kernel(A, Z), upper=False)  # batch x n x q'
        Kx = p.kernel(A, x)  # batch x n x F
        Vx = torch.linalg.solve_triangular(L, Kx, upper=False)
        mu = self.mean + Kx.transpose(-1, -2) @ self.alpha  # batch x F
        var = p.outputscale - Vx.pow(2).sum(-2)  # batch x F
        eye = torch.eye(Z.shape[-2], dtype=Z.dtype, device=Z.device)
        S = p.kernel(Z, Z) - Vz.transpose(-1, -2) @ Vz + p.noise * eye
        C = p.kernel(Z, x) - Vz.transpose(-1, -2) @ Vx  # batch x q' x F
        W = torch.linalg.solve_triangular(torch.linalg.cholesky(S), C, upper=False)  # batch x q' x F
        eps = self.base_samples(Z.shape[-2])  # F x q'
        mu_f = mu + (W * eps.transpose(-1, -2)).sum(-2)  # fantasy i's mean at its own x_i
        sigma = (var - W.pow(2).sum(-2)).clamp_min(MIN_VARIANCE).sqrt()
        return self.offset + self.scale * (mu_f + self.beta * sigma)


def initial_conditions(
    x_next: Tensor, q: int, fantasies: int, restarts: int, bounds: Tensor, delta: float, seed: int
) -> Tensor:
    """restarts x (q + fantasies) x d: Z uniform in x_next +- delta within ``bounds``, inner points at x_next."""
    box = local_box(x_next, delta)
    lo, hi = torch.maximum(box[0], bounds[0]), torch.minimum(box[1], bounds[1])
    g = torch.Generator(device=x_next.device).manual_seed(seed)
    u = torch.rand(restarts, q, x_next.shape[-1], generator=g, dtype=x_next.dtype, device=x_next.device)
    Z = lo + (hi - lo) * u
    inner = x_next.clamp(bounds[0], bounds[1]).expand(restarts, fantasies, -1)
    return torch.cat([Z, inner], dim=-2)


def lookahead_batch(
    model: SingleTaskGP,
    x_next: Tensor,
    q: int,
    bounds: Tensor,
    *,
    pending: Tensor | None = None,
    beta: float = 3.0,
    fantasies: int = 16,
    restarts: int = 2,
    maxiter: int = 30,
    delta: float = 0.2,
    seed: int = 0,
) -> tuple[Tensor, float]:
    """Z (q x d, inside ``bounds``: 2 x d) minimising the expected minimum UCB after Z, and that expectation."""
    acq = LookaheadUCB(model, beta, fantasies, pending if pending is not None and pending.shape[0] else None, seed)
    starts = initial_conditions(x_next, q, fantasies, restarts, bounds, delta, seed)
    with warnings.catch_warnings():  # L-BFGS-B stopping at maxiter or on a line search is expected here
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", OptimizationWarning)
        Z, value = optimize_acqf(
            acq,
            bounds,
            q=q,
            num_restarts=restarts,
            batch_initial_conditions=starts,
            options={"maxiter": maxiter},
            retry_on_optimization_warning=False,
        )
    assert value is not None
    return Z.detach(), -float(value)


def search_region(x: Tensor, region_delta: float | None) -> Tensor:
    """2 x d bounds of Z and the inner minimisers: the unit cube, or x +- region_delta within it."""
    if region_delta is None:
        return torch.stack([torch.zeros_like(x), torch.ones_like(x)])
    return local_box(x, region_delta)


@register
class LaMinUCB(LocalPolicy[LaMinUCBConfig]):
    """LA-MinUCB: step to the UCB minimiser, then a batch chosen by the look-ahead of the minimum UCB."""

    name = "la-minucb"
    Config = LaMinUCBConfig
    handles = CONSTRAINED | {"objectives"}  # several: ParEGO scalarisations, one per step (local.py)

    def step(self, model: Any, x_t: Tensor, config: LaMinUCBConfig) -> tuple[Tensor, dict[str, Any]]:
        bounds = search_region(x_t, config.step_delta)
        return minucb_step(model, x_t, config.beta, bounds, config.step_restarts)

    def constrained_step(
        self, model: Any, x_t: Tensor, config: LaMinUCBConfig, constraints: Constraints
    ) -> tuple[Tensor, dict[str, Any], Callable[[Tensor], Tensor] | None]:
        bounds = step_bounds(x_t, config.step_delta, constraints, config.delta)
        return constrained_minucb_step(model, x_t, config.beta, bounds, config.step_restarts, constraints)

    def explore(
        self,
        request: SuggestRequest[LaMinUCBConfig, LocalState],
        data: Data,
        x_t: Tensor,
        hypers: gp.Hypers | None,
        head: Tensor,
        count: int,
        *,
        min_count: int,
        seed: int,
        top_up: bool,
        constraints: Constraints | None = None,
    ) -> tuple[Tensor, dict[str, Any]]:
        if data.X.shape[0] == 0:  # no GP to fantasise from yet: GIBO's exploration around x_0
            return super().explore(
                request,
                data,
                x_t,
                hypers,
                head,
                count,
                min_count=min_count,
                seed=seed,
                top_up=top_up,
                constraints=constraints,
            )
        config = request.config
        Xw, yw = gp.window(data.X, data.y, data.n_max)
        model = gp.build_model(Xw, yw, config.kernel, hypers, x_t.device)
        region = step_bounds(x_t, config.region_delta, constraints, config.delta)
        Z, expected = lookahead_batch(
            model,
            x_t,
            count,
            region,
            pending=torch.cat([data.pending, head]),
            beta=config.beta,
            fantasies=config.fantasies,
            restarts=config.lookahead_restarts,
            maxiter=config.lookahead_maxiter,
            delta=config.delta,
            seed=seed,
        )
        if constraints is not None:  # each row into the polytope and where the models allow, towards x_{t+1}
            Z = constraints.region(x_t).admit(Z, region[0], region[1])
        return Z, {"expected_min_ucb": expected}
