"""``ei``, ``tei``: expected improvement and its Lipschitz-truncated form (Ahmed, Vaswani, Schmidt, eq. 4, 9).

    ei:   x = argmax_x E[max(y* - f(x), 0)]                                  (BoTorch's LogExpectedImprovement)
    tei:  x = argmax_x E[(y* - f(x)) 1{f_l(x) < f(x) < min(y*, f_u(x))}]     (truncated.truncated_ei)

y* is the best observation. Both are maximised in log space (same maximiser; usable gradients where
the improvement is tiny); where TEI is zero (no improvement possible within the bounds) the point
counts as rejected.

With outcome constraints (``request.C``), ei is constrained log-EI (Gardner et al. 2014; Ament et al. 2023):

    x = argmax_x log EI(x) + sum_j log P(c_j(x) <= 0)                      (BoTorch's LogConstrainedExpectedImprovement)

with y* the best feasible observation (BoTorch's infeasible-cost value while none is feasible: global_bo.py).
With failures to avoid (``request.X_failed``) the failure model's P(z(x) <= 0), the probability of not failing
(failures.py), is one more term of that sum, with or without outcome constraints.

>>> request = make_request("ei", X, y)                  # X: n x d, y: n to minimise
>>> request = dataclasses.replace(request, C=C)          # C: n x m, <= 0 where each constraint holds
>>> EI().suggest(request).X                              # 1 x d
"""

from __future__ import annotations

from botorch.acquisition.analytic import LogExpectedImprovement

from localbo.policies import register
from localbo.policies.global_bo import GlobalConfig, GlobalPolicy, LipschitzConfig
from localbo.policies.global_scores import Acquisition, Context, improvement_score, log_feasibility, truncated_score
from localbo.policies.truncated import truncated_ei


@register
class EI(GlobalPolicy[GlobalConfig]):
    """Expected improvement over the best observation; times the probability of feasibility under constraints."""

    name = "ei"
    Config = GlobalConfig
    handles = frozenset({"constraints", "parameter_constraints", "failures"})

    def acquisition(self, ctx: Context, config: GlobalConfig) -> Acquisition:
        log_ei = improvement_score(ctx, LogExpectedImprovement)
        if not ctx.constraints:
            return log_ei
        return lambda X: log_ei(X) + log_feasibility(ctx, X)


@register
class TEI(GlobalPolicy[LipschitzConfig]):
    """Truncated expected improvement: the improvement integrated only where the Lipschitz bounds allow f."""

    name = "tei"
    Config = LipschitzConfig
    lipschitz = True

    def acquisition(self, ctx: Context, config: LipschitzConfig) -> Acquisition:
        return truncated_score(ctx, truncated_ei)
