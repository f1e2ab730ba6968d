"""``pi``, ``tpi``: probability of improvement and its Lipschitz-truncated form (Ahmed, Vaswani, Schmidt, eq. 3, 8).

    pi:   x = argmax_x P(f(x) < y*)                                  (BoTorch's LogProbabilityOfImprovement)
    tpi:  x = argmax_x P(f_l(x) < f(x) < min(y*, f_u(x)))            (truncated.truncated_pi)

Both maximised in log space; where TPI is zero the point counts as rejected.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.acquisition.analytic import LogProbabilityOfImprovement
from torch import Tensor

from localbo.policies import register
from localbo.policies.global_bo import Acquisition, Context, GlobalConfig, GlobalPolicy, LipschitzConfig, mean_sigma
from localbo.policies.truncated import truncated_pi


@register
class PI(GlobalPolicy):
    """Probability of improving on the best observation."""

    name = "pi"
    Config = GlobalConfig

    def acquisition(self, ctx: Context, config: Any) -> Acquisition:
        log_pi = LogProbabilityOfImprovement(
            ctx.model, best_f=torch.tensor(ctx.y_best, dtype=torch.float64), maximize=False
        )
        return lambda X: log_pi(X.unsqueeze(-2))


@register
class TPI(GlobalPolicy):
    """Truncated probability of improvement: only values of f the Lipschitz bounds allow count."""

    name = "tpi"
    Config = LipschitzConfig
    lipschitz = True

    def acquisition(self, ctx: Context, config: Any) -> Acquisition:
        assert ctx.bounds is not None
        bounds = ctx.bounds

        def score(X: Tensor) -> Tensor:
            mean, sigma = mean_sigma(ctx.model, X)
            f_l, f_u = bounds(X)
            return truncated_pi(mean, sigma, ctx.y_best, f_l, f_u).log()

        return score
