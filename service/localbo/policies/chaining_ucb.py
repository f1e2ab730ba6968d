"""``chaining-ucb``: Chaining-UCB (Contal, Malherbe, Vayatis, "Optimization for Gaussian Processes via Chaining").

On a finite space X, with f = -y maximised (Algorithm 1):

    d_t(x, x') = sqrt(sigma_t^2(x) - 2 k_t(x, x') + sigma_t^2(x'))        the posterior pseudo-distance
    T_i        = T_(i-1) + Greedy-Cover({x : d_t(x, T_(i-1)) > eps_i}, d_t, eps_i),  eps_i = 2^(1 - i)
    x_t        = argmax_x mu_t(x) + sum_(i : sigma_min <= eps_i < sigma_t(x)) H_i

with H_i from the covering numbers |T_i| (covers.py): no beta to tune. The appendix's H_i is twice this one
(eps_(i-1) for eps_i); we implement Algorithm 1 as printed. Candidates not asked yet only (finite.py).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from localbo.policies import register
from localbo.policies.base import Policy, Suggestion, SuggestRequest
from localbo.policies.covers import chaining_bonus
from localbo.policies.finite import FiniteState, suggest_finite
from localbo.policies.finite_gp import FiniteGPConfig, FinitePosterior


class ChainingConfig(FiniteGPConfig):
    pass


@register
class ChainingUCB(Policy[ChainingConfig, FiniteState]):
    name = "chaining-ucb"
    Config = ChainingConfig
    State = FiniteState
    spaces = frozenset({"finite"})

    def suggest(self, request: SuggestRequest[ChainingConfig, FiniteState]) -> Suggestion:
        config = request.config

        def score(posterior: FinitePosterior, t: int) -> tuple[Tensor, dict[str, Any]]:
            chaining = chaining_bonus(posterior.sq_distance, posterior.sigma, t, config.delta)
            return posterior.mean + chaining.bonus, chaining.describe()

        choice = suggest_finite(request, config, score, request.state.hypers)
        return Suggestion(X=choice.X, state=FiniteState(hypers=choice.hypers, n=choice.n), index=choice.index)
