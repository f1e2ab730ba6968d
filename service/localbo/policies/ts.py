"""``ts``, ``ar-ts``: Thompson sampling and its accept-reject Lipschitz variant (Ahmed, Vaswani, Schmidt, sec. 3).

    ts:     draw one posterior sample path f~ by pathwise (Matheron) sampling, as BoTorch's
            ``draw_matheron_paths``: a prior path from 1024 random Fourier features plus the exact data update
                f~(x) = f0(x) + k(x, A) (K + s2n I)^-1 (y - f0(A) - e),   f0 = phi^T w,  w ~ N(0, I),  e ~ N(0, s2n I);
            x = argmin_x f~(x)
            (``sampler = "weight-space"``: instead, f~ = phi(x)^T w with ``features`` random Fourier features and
            w drawn from their Bayesian linear regression posterior, as pybo, on which the paper built, does with
            100 features; a cruder sample, kept to compare with the paper)
    ar-ts:  the same, with x rejected unless f_l(x) <= f~(x) <= f_u(x)

The random Fourier features of the ARD RBF kernel have frequencies z / l, z ~ N(0, I); those of Matérn-5/2
z / l * sqrt(5 / chi2_5) (a Student-t with 5 degrees of freedom); phi(x) = sqrt(2 s2 / m) cos(W x + b),
b ~ U(0, 2 pi). Every draw comes from the point's generator (``Context.generator``, seeded by (seed, t)), so a
path is reproducible and independent of torch's global RNG. The path is a deterministic, differentiable
function once drawn, so the global maximiser can refine on it; a new path is drawn for every point (on the
GP conditioned on the lies of the points before it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import torch
from botorch.models import SingleTaskGP
from pydantic import Field
from torch import Tensor

from localbo.policies import register
from localbo.policies.global_bo import GlobalConfig, GlobalPolicy, LipschitzConfig
from localbo.policies.global_scores import Acquisition, Context, accept_reject_score
from localbo.policies.gradients import KernelParams, chol, train_data

PATHWISE_FEATURES = 1024  # BoTorch's default for the prior path


class TSConfig(GlobalConfig):
    sampler: Literal["pathwise", "weight-space"] = Field(
        default="pathwise", description="Exact-update pathwise sample, or a weight-space random-feature one (pybo's)"
    )
    features: int = Field(default=100, ge=1, le=100_000, description="Random features of the weight-space sampler")


class LipschitzTSConfig(LipschitzConfig, TSConfig):
    pass


def fourier_features(params: KernelParams, m: int, generator: torch.Generator) -> Callable[[Tensor], Tensor]:
    """phi: X (k x d) -> k x m random Fourier features with phi(x) . phi(x') ~ k(x, x') (see the module's doc)."""
    d, like = params.lengthscale.shape[-1], params.lengthscale
    z = torch.randn(m, d, generator=generator, dtype=torch.float64)
    if params.kind == "matern52":
        chi2 = torch.randn(m, 5, generator=generator, dtype=torch.float64).square().sum(-1)
        z = z * (5.0 / chi2).sqrt().unsqueeze(-1)
    b = (2.0 * math.pi * torch.rand(m, generator=generator, dtype=torch.float64)).to(like)
    W = z.to(like) / like  # m x d
    amplitude = (2.0 * params.outputscale / m).sqrt()

    def phi(X: Tensor) -> Tensor:
        return amplitude * torch.cos(X @ W.T + b)

    return phi


def _untransform(model: SingleTaskGP) -> tuple[Tensor, Tensor]:
    """(offset, scale) of the Standardize transform: y = offset + scale * f."""
    A, _, scale = train_data(model)
    transform = getattr(model, "outcome_transform", None)
    offset = transform.means.reshape(()) if transform is not None else torch.zeros((), dtype=A.dtype, device=A.device)
    return offset, scale


def pathwise_path(model: SingleTaskGP, generator: torch.Generator, features: int = PATHWISE_FEATURES) -> Acquisition:
    """One Matheron sample path of f: X (k x d) -> k, in the units of y."""
    params = KernelParams.from_model(model)
    A, resid, _ = train_data(model)  # resid: standardised targets minus the constant mean
    offset, scale = _untransform(model)
    c = model.mean_module.constant.detach().reshape(())
    phi = fourier_features(params, features, generator)
    with torch.no_grad():
        w = torch.randn(features, generator=generator, dtype=torch.float64).to(A)
        e = params.noise.sqrt() * torch.randn(A.shape[0], generator=generator, dtype=torch.float64).to(A)
        v = torch.cholesky_solve((resid - phi(A) @ w - e).unsqueeze(-1), chol(params, A)).squeeze(-1)  # n

    def path(X: Tensor) -> Tensor:
        f = c + phi(X) @ w + params.kernel(X, A) @ v
        return offset + scale * f

    return path


def weight_space_path(model: SingleTaskGP, features: int, generator: torch.Generator) -> Acquisition:
    """f~(x) = c + phi(x)^T w, w ~ N(A^-1 Phi^T (y - c) / s2, A^-1), A = Phi^T Phi / s2 + I (standardised y)."""
    params = KernelParams.from_model(model)
    X, resid, _ = train_data(model)  # n x d, n: standardised targets minus c
    offset, scale = _untransform(model)
    noise, c = params.noise, model.mean_module.constant.detach().reshape(())
    phi = fourier_features(params, features, generator)
    with torch.no_grad():
        Phi = phi(X)  # n x m
        P = Phi.T @ Phi / noise + torch.eye(Phi.shape[-1], dtype=X.dtype, device=X.device)
        L = torch.linalg.cholesky(P)
        mean = torch.cholesky_solve((Phi.T @ resid / noise).unsqueeze(-1), L).squeeze(-1)
        z = torch.randn(Phi.shape[-1], generator=generator, dtype=torch.float64).to(X)
        w = mean + torch.linalg.solve_triangular(L.T, z.unsqueeze(-1), upper=True).squeeze(-1)  # cov P^-1

    def path(Xq: Tensor) -> Tensor:
        return offset + scale * (c + phi(Xq) @ w)

    return path


def sample_path(ctx: Context, config: TSConfig) -> Acquisition:
    """One posterior sample path of f at X: k x d -> k, in the units of y, drawn from ``ctx.generator``."""
    if config.sampler == "weight-space":
        return weight_space_path(ctx.model, config.features, ctx.generator)
    return pathwise_path(ctx.model, ctx.generator)


@register
class TS(GlobalPolicy[TSConfig]):
    """Thompson sampling: minimise one posterior sample path."""

    name = "ts"
    Config = TSConfig

    def acquisition(self, ctx: Context, config: TSConfig) -> Acquisition:
        path = sample_path(ctx, config)
        return lambda X: -path(X)


@register
class ARTS(GlobalPolicy[LipschitzTSConfig]):
    """AR-TS: Thompson sampling where the path must lie within the Lipschitz bounds."""

    name = "ar-ts"
    Config = LipschitzTSConfig
    lipschitz = True

    def acquisition(self, ctx: Context, config: LipschitzTSConfig) -> Acquisition:
        return accept_reject_score(ctx, sample_path(ctx, config))
