"""``ts``, ``ar-ts``: Thompson sampling and its accept-reject Lipschitz variant (Ahmed, Vaswani, Schmidt, sec. 3).

    ts:     draw one posterior sample path f~ (BoTorch's pathwise/Matheron sampling: 1024 random Fourier
            features for the prior, plus the exact data update), x = argmin_x f~(x)
    ar-ts:  the same, with x rejected unless f_l(x) <= f~(x) <= f_u(x)

The path is a deterministic, differentiable function once drawn, so the global maximiser can refine on it;
a new path is drawn for every point (on the GP conditioned on the lies of the points before it).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from botorch.sampling.pathwise import draw_matheron_paths
from torch import Tensor

from localbo.policies import register
from localbo.policies.global_bo import Acquisition, Context, GlobalConfig, GlobalPolicy, LipschitzConfig
from localbo.policies.truncated import accepted


def sample_path(ctx: Context) -> Acquisition:
    """One posterior sample path of f at X: k x d -> k, in the units of y (drawn from torch's global RNG)."""
    path = draw_matheron_paths(ctx.model, sample_shape=torch.Size([1]))
    return lambda X: path(X).reshape(-1)


@register
class TS(GlobalPolicy):
    """Thompson sampling: minimise one posterior sample path."""

    name = "ts"
    Config = GlobalConfig

    def acquisition(self, ctx: Context, config: Any) -> Acquisition:
        path = sample_path(ctx)
        return lambda X: -path(X)


@register
class ARTS(GlobalPolicy):
    """AR-TS: Thompson sampling where the path must lie within the Lipschitz bounds."""

    name = "ar-ts"
    Config = LipschitzConfig
    lipschitz = True

    def acquisition(self, ctx: Context, config: Any) -> Acquisition:
        path = sample_path(ctx)
        assert ctx.bounds is not None
        bounds = ctx.bounds

        def score(X: Tensor) -> Tensor:
            value = path(X)
            f_l, f_u = bounds(X)
            return (-value).masked_fill(~accepted(value, f_l, f_u), -math.inf)

        return score
