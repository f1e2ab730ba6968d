"""``pi``, ``tpi``: probability of improvement and its Lipschitz-truncated form (Ahmed, Vaswani, Schmidt, eq. 3, 8).

    pi:   x = argmax_x P(f(x) < y*)                                  (BoTorch's LogProbabilityOfImprovement)
    tpi:  x = argmax_x P(f_l(x) < f(x) < min(y*, f_u(x)))            (truncated.truncated_pi)

Both maximised in log space; where TPI is zero the point counts as rejected.
"""

from __future__ import annotations

from botorch.acquisition.analytic import LogProbabilityOfImprovement

from localbo.policies import register
from localbo.policies.global_bo import GlobalConfig, GlobalPolicy, LipschitzConfig
from localbo.policies.global_scores import Acquisition, Context, improvement_score, truncated_score
from localbo.policies.truncated import truncated_pi


@register
class PI(GlobalPolicy[GlobalConfig]):
    """Probability of improving on the best observation."""

    name = "pi"
    Config = GlobalConfig

    def acquisition(self, ctx: Context, config: GlobalConfig) -> Acquisition:
        return improvement_score(ctx, LogProbabilityOfImprovement)


@register
class TPI(GlobalPolicy[LipschitzConfig]):
    """Truncated probability of improvement: only values of f the Lipschitz bounds allow count."""

    name = "tpi"
    Config = LipschitzConfig
    lipschitz = True

    def acquisition(self, ctx: Context, config: LipschitzConfig) -> Acquisition:
        return truncated_score(ctx, truncated_pi)
