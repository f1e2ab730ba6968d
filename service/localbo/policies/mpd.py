"""``mpd``: local BO by the most probable descent direction (Nguyen, Wu, Gardner, Garnett, NeurIPS 2022).

With the gradient posterior grad f(x) | D ~ N(mu, Sigma) (``gradients.py``), the direction most
likely to descend is v* = -Sigma^{-1} mu / |Sigma^{-1} mu|, with probability p* = Phi(sqrt(mu^T Sigma^{-1} mu))
(algorithms.md 2, minimisation form).

    repeat:  evaluate x_t once                                               (b1 = 1, as the reference code)
             Z = greedy argmax_z E[mu_z^T Sigma_z^{-1} mu_z],  z in x_t +- delta  (q = 1 per point, d points)
             evaluate Z, D <- D + (x_t, Z);  fit the GP
             walk: x <- clip(x + 0.01 v*(x)) while p*(x) >= 0.65, at most 10 000 steps;  x_{t+1} = the end

The acquisition is the reference code's ``DownhillQuadratic``: after observing z, Sigma_z = Sigma - a a^T
with a = Cov(grad f(x_t), f(z)) / sqrt(Var f(z) + n2), and E[mu_z^T Sigma_z^{-1} mu_z] =
mu^T Sigma_z^{-1} mu + a^T Sigma_z^{-1} a, here by Sherman-Morrison from Sigma^{-1}. As in the reference,
mu is the gradient mean of the data (not refreshed within a batch); Sigma shrinks with every chosen
point. ``probability = "code"`` uses the reference code's Phi(sqrt(v^T mu)) with v the unit vector
along Sigma^{-1} mu (algorithms.md 2) instead of the paper's p*. Defaults are MPD's synthetic settings:
delta 0.2, d samples per iteration, N_max = 5 d, no early stop, a MAP refit every iteration; walk
step 0.01 (unit-cube units), threshold 0.65. The walk stays in [0, 1]^d (clipped; it stops where
clipping leaves it in place). Each exploration point's search runs BoTorch's L-BFGS-B to its own limit;
``search_iterations`` caps it (30: about 3-4x less CPU at d = 25 and 10x at d = 100, but behind on gp25 at every
checkpoint and on gp50 to 200 when auto ran it: results/league_findings.md, "mpd's searches capped")."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models import SingleTaskGP
from pydantic import Field
from torch import Tensor

from localbo.policies import gp, register
from localbo.policies.base import SuggestRequest
from localbo.policies.gradients import GradientTrace, KernelParams, chol, train_data
from localbo.policies.local import Data, LocalConfig, LocalPolicy, LocalState

JITTER = 1e-9  # relative to Sigma's mean diagonal, before its Cholesky factorisation


class MPDConfig(LocalConfig):
    epsilon: None = Field(default=None, description="Not used: MPD takes every exploration point (no early stop)")
    step_size: float = Field(default=0.01, gt=0.0, le=1.0, description="Length of one walk step (unit cube)")
    threshold: float = Field(default=0.65, gt=0.5, lt=1.0, description="Walk while the descent probability >= this")
    max_steps: int = Field(default=10_000, ge=0, le=100_000, description="Most walk steps per iteration")
    probability: Literal["paper", "code"] = Field(
        default="paper", description="paper: Phi(sqrt(mu' Sigma^-1 mu)); code: the reference code's Phi(sqrt(v' mu))"
    )
    search_iterations: int | None = Field(
        default=None, ge=1, le=1000, description="L-BFGS-B iterations of each exploration point's search (None: 200)"
    )


def _chol_spd(S: Tensor) -> Tensor:
    """Cholesky factor of a covariance, with a small jitter for the nearly singular ones."""
    eye = torch.eye(S.shape[-1], dtype=S.dtype, device=S.device)
    return torch.linalg.cholesky(S + JITTER * S.diagonal(dim1=-2, dim2=-1).mean().clamp_min(1e-30) * eye)


class DownhillQuadratic(AcquisitionFunction):
    """alpha(z) = E[mu_z^T Sigma_z^{-1} mu_z] after observing z; z: batch x 1 x d -> batch (kernel units)."""

    def __init__(self, trace: GradientTrace, mean: Tensor) -> None:
        super().__init__(model=None)  # type: ignore[arg-type]  # the trace and the gradient mean are all it needs
        self.trace, self.mean = trace, mean

    def forward(self, X: Tensor) -> Tensor:
        t = self.trace
        cov = t.params.prior_grad_cov() - t.W.transpose(-1, -2) @ t.W  # given the data and the chosen points
        L = _chol_spd(cov)
        _, C, S = t.parts(X)  # batch x 1 x d, batch x 1 x 1
        a = (C / S.sqrt()).squeeze(-2)  # batch x d
        u = torch.linalg.solve_triangular(L, self.mean.unsqueeze(-1), upper=False).squeeze(-1)  # d
        v = torch.linalg.solve_triangular(L, a.unsqueeze(-1), upper=False).squeeze(-1)  # batch x d
        c = v.pow(2).sum(-1).clamp(max=1.0 - 1e-9)  # a' Sigma^-1 a < 1 as Sigma - a a' is positive definite
        m = (v * u).sum(-1)
        return u.pow(2).sum() + (m.pow(2) + c) / (1.0 - c)


class GradientField:
    """grad f | D at any x, in the model's standardised units, with the data's factorisation done once."""

    def __init__(self, model: SingleTaskGP) -> None:
        self.params = KernelParams.from_model(model)
        self.A, resid, _ = train_data(model)
        self.L = chol(self.params, self.A)
        self.alpha = torch.cholesky_solve(resid.unsqueeze(-1), self.L)  # n x 1

    def __call__(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(mean d, covariance d x d) of grad f(x) for x: d."""
        G = self.params.kernel_grad(x, self.A)  # n x d
        W = torch.linalg.solve_triangular(self.L, G, upper=False)
        return (G.transpose(-1, -2) @ self.alpha).squeeze(-1), self.params.prior_grad_cov() - W.transpose(-1, -2) @ W


def descent(mean: Tensor, cov: Tensor, probability: str = "paper") -> tuple[Tensor, float]:
    """(the most probable descent direction, a unit d-vector; the probability that it descends)."""
    w = torch.cholesky_solve(mean.unsqueeze(-1), _chol_spd(cov)).squeeze(-1)  # Sigma^{-1} mu
    norm = w.norm()
    if not bool(norm > 0):
        return torch.zeros_like(mean), 0.5
    quad = float(mean @ w) if probability == "paper" else float(mean @ w / norm)
    return -w / norm, 0.5 * (1.0 + math.erf(math.sqrt(max(quad, 0.0) / 2.0)))


def mpd_walk(
    model: SingleTaskGP,
    x_t: Tensor,
    step_size: float = 0.01,
    threshold: float = 0.65,
    max_steps: int = 10_000,
    probability: str = "paper",
) -> tuple[Tensor, dict[str, Any]]:
    """x_{t+1}: from x_t, steps of ``step_size`` along the most probable descent direction while its
    probability stays >= ``threshold`` (x_t itself when it starts below); clipped to [0, 1]^d."""
    field = GradientField(model)
    x, steps, p_start, p = x_t, 0, None, 0.0
    with torch.no_grad():
        while True:
            direction, p = descent(*field(x), probability)
            p_start = p if p_start is None else p_start
            if p < threshold or steps >= max_steps:
                break
            x_new = (x + step_size * direction).clamp(0.0, 1.0)
            if torch.equal(x_new, x):
                break
            x, steps = x_new, steps + 1
    return x, {"walk_steps": steps, "p_start": p_start, "p_end": p, "step_norm": float((x - x_t).norm())}


@register
class MPD(LocalPolicy[MPDConfig]):
    """MPD: explore to make the descent direction probable, then walk along it while it stays probable."""

    name = "mpd"
    Config = MPDConfig

    def step(self, model: Any, x_t: Tensor, config: MPDConfig) -> tuple[Tensor, dict[str, Any]]:
        return mpd_walk(model, x_t, config.step_size, config.threshold, config.max_steps, config.probability)

    def exploration_acquisition(
        self, request: SuggestRequest[MPDConfig, LocalState], data: Data, x_t: Tensor, hypers: gp.Hypers | None
    ) -> Callable[[GradientTrace], AcquisitionFunction] | None:
        config = request.config
        if data.X.shape[0] == 0:  # no data, no gradient mean: the trace reduction alone
            return super().exploration_acquisition(request, data, x_t, hypers)
        Xw, yw = gp.window(data.X, data.y, data.n_max)
        mean, _ = GradientField(gp.build_model(Xw, yw, config.kernel, hypers, x_t.device))(x_t)
        return lambda trace: DownhillQuadratic(trace, mean)
