"""``ts``, ``ar-ts``: Thompson sampling and its accept-reject Lipschitz variant (Ahmed, Vaswani, Schmidt, sec. 3).

    ts:     draw one posterior sample path f~ (BoTorch's pathwise/Matheron sampling: 1024 random Fourier
            features for the prior, plus the exact data update), x = argmin_x f~(x)
            (``sampler = "weight-space"``: instead, f~ = phi(x)^T w with ``features`` random Fourier features and
            w drawn from their Bayesian linear regression posterior, as pybo, on which the paper built, does with
            100 features; a cruder sample, kept to compare with the paper)
    ar-ts:  the same, with x rejected unless f_l(x) <= f~(x) <= f_u(x)

The path is a deterministic, differentiable function once drawn, so the global maximiser can refine on it;
a new path is drawn for every point (on the GP conditioned on the lies of the points before it).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from botorch.models import SingleTaskGP
from botorch.sampling.pathwise import draw_matheron_paths
from botorch.sampling.pathwise.features.generators import gen_kernel_features
from pydantic import Field
from torch import Tensor

from localbo.policies import register
from localbo.policies.global_bo import (
    Acquisition,
    Context,
    GlobalConfig,
    GlobalPolicy,
    LipschitzConfig,
    accept_reject_score,
)


class TSConfig(GlobalConfig):
    sampler: Literal["pathwise", "weight-space"] = Field(
        default="pathwise", description="Exact-update pathwise sample, or a weight-space random-feature one (pybo's)"
    )
    features: int = Field(default=100, ge=1, le=100_000, description="Random features of the weight-space sampler")


class LipschitzTSConfig(LipschitzConfig, TSConfig):
    pass


def weight_space_path(model: SingleTaskGP, features: int) -> Acquisition:
    """f~(x) = c + phi(x)^T w, w ~ N(A^-1 Phi^T (y - c) / s2, A^-1), A = Phi^T Phi / s2 + I (standardised y)."""
    X, y = model.train_inputs[0], model.train_targets  # n x d, n (standardised by the outcome transform)
    feature_map = gen_kernel_features(kernel=model.covar_module, num_inputs=X.shape[-1], num_outputs=features)
    noise, c = model.likelihood.noise.detach().reshape(()), model.mean_module.constant.detach().reshape(())
    with torch.no_grad():
        Phi = feature_map(X)  # n x m
        A = Phi.T @ Phi / noise + torch.eye(Phi.shape[-1], dtype=X.dtype, device=X.device)
        L = torch.linalg.cholesky(A)
        mean = torch.cholesky_solve((Phi.T @ (y - c) / noise).unsqueeze(-1), L).squeeze(-1)
        z = torch.randn(Phi.shape[-1], dtype=X.dtype, device=X.device)
        w = mean + torch.linalg.solve_triangular(L.T, z.unsqueeze(-1), upper=True).squeeze(-1)  # cov A^-1

    def path(Xq: Tensor) -> Tensor:
        f = c + feature_map(Xq) @ w
        return model.outcome_transform.untransform(f.unsqueeze(-1))[0].reshape(-1)

    return path


def sample_path(ctx: Context, config: Any) -> Acquisition:
    """One posterior sample path of f at X: k x d -> k, in the units of y (drawn from torch's global RNG)."""
    if config.sampler == "weight-space":
        return weight_space_path(ctx.model, config.features)
    path = draw_matheron_paths(ctx.model, sample_shape=torch.Size([1]))
    return lambda X: path(X).reshape(-1)


@register
class TS(GlobalPolicy):
    """Thompson sampling: minimise one posterior sample path."""

    name = "ts"
    Config = TSConfig

    def acquisition(self, ctx: Context, config: Any) -> Acquisition:
        path = sample_path(ctx, config)
        return lambda X: -path(X)


@register
class ARTS(GlobalPolicy):
    """AR-TS: Thompson sampling where the path must lie within the Lipschitz bounds."""

    name = "ar-ts"
    Config = LipschitzTSConfig
    lipschitz = True

    def acquisition(self, ctx: Context, config: Any) -> Acquisition:
        return accept_reject_score(ctx, sample_path(ctx, config))
