"""``sobol``: a scrambled Sobol sequence, seeded per study, continued across calls."""

from __future__ import annotations

import torch

from localbo.policies import register
from localbo.policies.base import (
    PlanAheadConfig,
    Policy,
    PolicyConfigError,
    Suggestion,
    SuggestRequest,
)
from localbo.policies.random_search import DrawnState

SOBOL_MAX_DIM = torch.quasirandom.SobolEngine.MAXDIM


@register
class Sobol(Policy[PlanAheadConfig, DrawnState]):
    """Point i of the study is point i of one scrambled Sobol sequence (low discrepancy)."""

    name = "sobol"
    Config = PlanAheadConfig
    State = DrawnState
    needs_history = False
    spaces = frozenset({"continuous", "categorical"})

    @classmethod
    def check_study(cls, dim: int, config: PlanAheadConfig) -> None:
        if dim > SOBOL_MAX_DIM:
            raise PolicyConfigError(
                "space",
                f"sobol supports at most {SOBOL_MAX_DIM} coordinates (a categorical: one per choice), got {dim}",
            )

    def suggest(self, request: SuggestRequest[PlanAheadConfig, DrawnState]) -> Suggestion:
        drawn = request.state.drawn
        k = max(request.count, request.config.plan_ahead)
        engine = torch.quasirandom.SobolEngine(request.dim, scramble=True, seed=request.seed)
        if drawn:
            engine.fast_forward(drawn)
        X = engine.draw(k, dtype=torch.float64)
        return Suggestion(X=X, state=DrawnState(drawn=drawn + k))
