"""``sobol``: a scrambled Sobol sequence, seeded per study, continued across calls."""

from __future__ import annotations

import torch
from pydantic import Field

from localbo.policies import register
from localbo.policies.base import Policy, PolicyConfig, Suggestion, SuggestRequest

SOBOL_MAX_DIM = torch.quasirandom.SobolEngine.MAXDIM


class SobolConfig(PolicyConfig):
    plan_ahead: int = Field(default=16, ge=1, le=1024, description="Points planned per call")


@register
class Sobol(Policy):
    """Point i of the study is point i of one scrambled Sobol sequence (low discrepancy)."""

    name = "sobol"
    Config = SobolConfig
    needs_history = False

    def suggest(self, request: SuggestRequest) -> Suggestion:
        config: SobolConfig = request.config  # type: ignore[assignment]
        if request.dim > SOBOL_MAX_DIM:
            raise ValueError(f"sobol supports at most {SOBOL_MAX_DIM} dimensions")
        drawn = int(request.state.get("drawn", 0))
        k = max(request.count, config.plan_ahead)
        engine = torch.quasirandom.SobolEngine(request.dim, scramble=True, seed=request.seed)
        if drawn:
            engine.fast_forward(drawn)
        X = engine.draw(k, dtype=torch.float64)
        return Suggestion(X=X, state={"drawn": drawn + k})
