"""``sobol``: a scrambled Sobol sequence, seeded per study, continued across calls.

With parameter constraints (``request.polytope``): when they are inequalities only, the sequence's points
that satisfy them, in order (rejection; the state counts the Sobol points used, accepted or not), as long as
at least 1 % of them are accepted within 65536 tries (``polytope.sobol_in``); else (an equality, which no
Sobol point meets, or a sliver of the cube) hit-and-run samples (``polytope.sample``) from a generator seeded
by (study seed, points drawn so far), as ``random`` does.
"""

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
from localbo.policies.polytope import sample, sobol_in
from localbo.policies.random_search import DrawnState

SOBOL_MAX_DIM = torch.quasirandom.SobolEngine.MAXDIM


@register
class Sobol(Policy[PlanAheadConfig, DrawnState]):
    """Point i of the study is point i of one scrambled Sobol sequence (low discrepancy), or of its points that
    satisfy the parameter constraints (see the module's docstring).

    >>> request = make_request("sobol", torch.zeros(0, 3), torch.zeros(0), config={"plan_ahead": 8})
    >>> Sobol().suggest(request).state.drawn  # the next call continues at point 8
    8
    """

    name = "sobol"
    Config = PlanAheadConfig
    State = DrawnState
    needs_history = False
    spaces = frozenset({"continuous", "categorical"})
    handles = frozenset({"parameter_constraints", "objectives"})  # several objectives: ignored, as the data

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
        if request.polytope is not None:
            found = sobol_in(request.polytope, request.seed, drawn, k)
            if found is not None:
                return Suggestion(X=found[0], state=DrawnState(drawn=found[1]))
            generator = torch.Generator().manual_seed(request.seed * 1_000_003 + drawn)
            return Suggestion(X=sample(request.polytope, k, generator), state=DrawnState(drawn=drawn + k))
        engine = torch.quasirandom.SobolEngine(request.dim, scramble=True, seed=request.seed)
        if drawn:
            engine.fast_forward(drawn)
        X = engine.draw(k, dtype=torch.float64)
        return Suggestion(X=X, state=DrawnState(drawn=drawn + k))
