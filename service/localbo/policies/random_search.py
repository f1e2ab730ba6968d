"""``random``: independent uniform points in the unit cube, reproducible per study."""

from __future__ import annotations

import torch

from localbo.policies import register
from localbo.policies.base import PlanAheadConfig, Policy, Suggestion, SuggestRequest


@register
class RandomSearch(Policy):
    """x ~ U[0, 1]^d. The generator is seeded by (study seed, points drawn so far)."""

    name = "random"
    Config = PlanAheadConfig
    needs_history = False

    def suggest(self, request: SuggestRequest) -> Suggestion:
        config: PlanAheadConfig = request.config  # type: ignore[assignment]
        drawn = int(request.state.get("drawn", 0))
        k = max(request.count, config.plan_ahead)
        generator = torch.Generator().manual_seed(request.seed * 1_000_003 + drawn)
        X = torch.rand(k, request.dim, generator=generator, dtype=torch.float64)
        return Suggestion(X=X, state={"drawn": drawn + k})
