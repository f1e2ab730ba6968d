"""``ei``, ``tei``: expected improvement and its Lipschitz-truncated form (Ahmed, Vaswani, Schmidt, eq. 4, 9).

    ei:   x = argmax_x E[max(y* - f(x), 0)]                                  (BoTorch's LogExpectedImprovement)
    tei:  x = argmax_x E[(y* - f(x)) 1{f_l(x) < f(x) < min(y*, f_u(x))}]     (truncated.truncated_ei)

y* is the best observation. Both are maximised in log space (same maximiser; usable gradients where
the improvement is tiny); where TEI is zero (no improvement possible within the bounds) the point
counts as rejected.
"""

from __future__ import annotations

from botorch.acquisition.analytic import LogExpectedImprovement

from localbo.policies import register
from localbo.policies.global_bo import (
    Acquisition,
    Context,
    GlobalConfig,
    GlobalPolicy,
    LipschitzConfig,
    improvement_score,
    truncated_score,
)
from localbo.policies.truncated import truncated_ei


@register
class EI(GlobalPolicy[GlobalConfig]):
    """Expected improvement over the best observation."""

    name = "ei"
    Config = GlobalConfig

    def acquisition(self, ctx: Context, config: GlobalConfig) -> Acquisition:
        return improvement_score(ctx, LogExpectedImprovement)


@register
class TEI(GlobalPolicy[LipschitzConfig]):
    """Truncated expected improvement: the improvement integrated only where the Lipschitz bounds allow f."""

    name = "tei"
    Config = LipschitzConfig
    lipschitz = True

    def acquisition(self, ctx: Context, config: LipschitzConfig) -> Acquisition:
        return truncated_score(ctx, truncated_ei)
