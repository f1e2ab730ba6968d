"""``random``: independent uniform points in the unit cube, reproducible per study.

With parameter constraints (``request.polytope``) the points are hit-and-run samples of the cube ∩ polytope
(``polytope.sample``: uniform in the limit, 32 chains side by side, burned in and thinned), from the same
generator seeded by (study seed, points drawn so far).
"""

from __future__ import annotations

import torch

from localbo.policies import register
from localbo.policies.base import PlanAheadConfig, Policy, PolicyState, Suggestion, SuggestRequest
from localbo.policies.finite import Exhausted, available
from localbo.policies.polytope import sample


class DrawnState(PolicyState):
    """Points drawn so far (random, sobol): where the study's sequence continues."""

    version = 1
    drawn: int = 0


@register
class RandomSearch(Policy[PlanAheadConfig, DrawnState]):
    """x ~ U[0, 1]^d (U[cube ∩ polytope] with parameter constraints). The generator is seeded by (study seed,
    points drawn so far).

    >>> request = make_request("random", torch.zeros(0, 3), torch.zeros(0), config={"plan_ahead": 8})
    >>> RandomSearch().suggest(request).X.shape  # 8 x 3, the next call continues at drawn = 8
    torch.Size([8, 3])
    """

    name = "random"
    Config = PlanAheadConfig
    State = DrawnState
    needs_history = False
    spaces = frozenset({"continuous", "categorical", "finite"})
    handles = frozenset({"parameter_constraints", "objectives"})  # several objectives: ignored, as the data

    def suggest(self, request: SuggestRequest[PlanAheadConfig, DrawnState]) -> Suggestion:
        if request.finite is not None:
            return self.suggest_finite(request)
        drawn = request.state.drawn
        k = max(request.count, request.config.plan_ahead)
        generator = torch.Generator().manual_seed(request.seed * 1_000_003 + drawn)
        if request.polytope is not None:
            X = sample(request.polytope, k, generator)
        else:
            X = torch.rand(k, request.dim, generator=generator, dtype=torch.float64)
        return Suggestion(X=X, state=DrawnState(drawn=drawn + k))

    def suggest_finite(self, request: SuggestRequest[PlanAheadConfig, DrawnState]) -> Suggestion:
        """Candidates drawn uniformly among those not asked yet (the paper's Random), or among all with repeats."""
        space = request.finite
        assert space is not None
        drawn = request.state.drawn
        generator = torch.Generator().manual_seed(request.seed * 1_000_003 + drawn)
        free = available(space, []).nonzero()[:, 0].cpu()
        k = min(max(request.count, request.config.plan_ahead), free.numel())
        if k < request.count:
            raise Exhausted("every candidate was asked; the study allows no repeats")
        if space.allow_repeats:
            index = free[torch.randint(free.numel(), (k,), generator=generator)]
        else:
            index = free[torch.randperm(free.numel(), generator=generator)[:k]]
        X = space.candidates[index.to(space.candidates.device)].to(torch.float64)
        return Suggestion(X=X, state=DrawnState(drawn=drawn + k), index=index)
