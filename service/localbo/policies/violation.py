"""Outcome constraints as SCBO reads them (Eriksson & Poloczek, AISTATS 2021), shared by turbo, morbo, qlognehvi
and the local policies' constraint models.

``C``: n x m constraint values, c_j <= 0 where constraint j holds (``SuggestRequest.C``).

    total violation   v = sum_j max(c_j, 0)                     (0: feasible)
    centre            the lowest y among the feasible rows, else the lowest v
    transform         bilog(c) = sign(c) log(1 + |c|)           (the constraint GPs' target: sign kept, spread tamed)
    typical size      s_j = median_i |c_ij|, at least 1 for SCBO  (turbo fits bilog(c_j / s_j): smooth across the bound)
    active            the constraint nearest to (or furthest past) its bound at a row, in units of its spread
    safe probability  prod_j Phi(-mu_j / sigma_j) over the constraint GPs' posteriors of the measured value (safe
                      mode; sigma_j^2 = the latent variance + the fitted noise), each sigma_j optionally widened by
                      the model's leave-one-out spread (``loo_spread``)
    within reach      within SAFE_REACH lengthscales of a point observed feasible (safe mode: where the models know)
"""

from __future__ import annotations

import math

import torch
from botorch.models import SingleTaskGP
from torch import Tensor


def total_violation(C: Tensor | None, n: int, device: torch.device | None = None) -> Tensor:
    """v = sum_j max(c_j, 0): n, zero where every constraint holds (and everywhere without constraints: zeros on
    ``device``, beside the data they are read with)."""
    if C is None:
        return torch.zeros(n, dtype=torch.float64, device=device)
    return C.to(torch.float64).clamp_min(0).sum(-1)


def best_index(y: Tensor, v: Tensor) -> int:
    """The best row: the lowest y among the feasible (v == 0), else the lowest violation v."""
    feasible = v <= 0
    if bool(feasible.any()):
        return int(torch.where(feasible, y, torch.full_like(y, math.inf)).argmin())
    return int(v.argmin())


def bilog(c: Tensor) -> Tensor:
    """sign(c) log(1 + |c|): SCBO's transform of the constraint values (same sign, large values compressed)."""
    return c.sign() * c.abs().log1p()


def typical_size(C: Tensor, at_least: float = 1.0) -> Tensor:
    """m: each constraint's median |c| over the rows, at least ``at_least`` (and above 0): the unit bilog is applied
    in. bilog(c) is near-linear for |c| < 1, so a constraint measured in thousands would become a step at its bound;
    by default one already below 1 is left as it is (SCBO scaling it up, which bends what bilog leaves straight, had
    2-3x the infeasible evaluations on tension_compression, c_gramacy and mixture8)."""
    size = C.to(torch.float64).abs().median(dim=0).values.clamp_min(at_least)
    return torch.where(size > 0, size, torch.ones_like(size))


def active_constraint(C: Tensor, i: int) -> int:
    """The constraint nearest to (or furthest past) its bound at row i, in units of each one's spread over C."""
    spread = C.std(dim=0) if C.shape[0] > 1 else torch.ones(C.shape[1], dtype=C.dtype, device=C.device)
    spread = torch.where(spread > 0, spread, torch.ones_like(spread))
    return int((C[i] / spread).argmax())


def mean_violation(constraints: list[SingleTaskGP], points: Tensor) -> Tensor:
    """n: sum_j max(mu_j, 0) over the constraint models' posterior means at the points (on the CPU)."""
    with torch.no_grad():
        means = [m.posterior(points).mean.reshape(-1).cpu() for m in constraints]
    return total_violation(torch.stack(means, -1), points.shape[0])


def loo_spread(model: SingleTaskGP) -> float:
    """The root mean square of the model's leave-one-out z-scores on its own data, at least 1: how many times
    wider its errors are than its predictive sd says (Rasmussen & Williams eq. 5.12, in closed form).

    mu_-i = y_i - [K^-1 y]_i / [K^-1]_ii,  var_-i = 1 / [K^-1]_ii,  K = k(X, X) + noise I (standardised y)."""
    with torch.no_grad():
        X = model.train_inputs[0]
        if X.shape[-2] < 3:
            return 1.0
        y = model.train_targets.reshape(-1) - model.mean_module.constant.reshape(())
        K = model.covar_module(X).to_dense() + model.likelihood.noise.reshape(()) * torch.eye(X.shape[-2]).to(X)
        try:
            K_inv = torch.cholesky_inverse(torch.linalg.cholesky(K))
        except RuntimeError:  # not positive definite in floating point: no evidence either way
            return 1.0
        diag = K_inv.diagonal().clamp_min(1e-300)
        z = (K_inv @ y) / diag.sqrt()  # (y_i - mu_-i) / sd_-i
        return max(1.0, float(z.pow(2).mean().sqrt()))


def safe_probability(constraints: list[SingleTaskGP], X: Tensor, calibrated: bool = False) -> Tensor:
    """P(every constraint holds) at each row of X (n x d -> n): the product of each GP's Phi(-mu / sigma), sigma
    that of the measured value (the fitted noise added): a limit is broken by what is measured, and near a bound a
    fit explains its misfit as noise, so its latent sigma shrinks while its errors do not. On tension_compression
    (safe mode, seed 0, 150 evaluations) the latent sigma let 47 evaluations break a limit, by 3-10 sigma, with the
    noise fitted at 0.04 (standardised); the measured sigma 8, at 3 % more in value (``constrained_findings.md``).
    ``calibrated``: each sigma widened by its model's ``loo_spread``, so that a model whose own data say it is
    over-confident does not call a point safe on its word."""
    p = torch.ones(X.shape[0], dtype=torch.float64)
    normal = torch.distributions.Normal(0.0, 1.0)
    with torch.no_grad():
        for m in constraints:
            post = m.posterior(X.unsqueeze(-2), observation_noise=True)  # marginals, of the measured value
            mu, sigma = post.mean.reshape(-1).cpu(), post.variance.reshape(-1).clamp_min(1e-18).sqrt().cpu()
            p = p * normal.cdf(-mu / (sigma * (loo_spread(m) if calibrated else 1.0)))
    return p


SAFE_MARGIN = 10  # safe mode asks points safe with probability 1 - delta / 10 (turbo's docstring says why)
SAFE_REACH = 0.5  # safe mode: how far from a point observed feasible a candidate may be, in lengthscales


def within_reach(constraints: list[SingleTaskGP], X: Tensor, anchors: Tensor) -> Tensor:
    """n (bool): the rows of X (n x d) within ``SAFE_REACH`` of an anchor (a x d) in every constraint GP's own
    lengthscales (the scaled Euclidean distance): where its models have seen something, not their prior."""
    near = torch.ones(X.shape[0], dtype=torch.bool)
    for m in constraints:
        scale = m.covar_module.lengthscale.detach().reshape(-1).to(X)
        gap = torch.cdist(X / scale, anchors / scale).amin(-1)
        near &= (gap <= SAFE_REACH).cpu()
    return near
