"""``random``: independent uniform points in the unit cube, reproducible per study."""

from __future__ import annotations

import torch

from localbo.policies import register
from localbo.policies.base import PlanAheadConfig, Policy, PolicyState, Suggestion, SuggestRequest
from localbo.policies.finite import Exhausted, available


class DrawnState(PolicyState):
    """Points drawn so far (random, sobol): where the study's sequence continues."""

    version = 1
    drawn: int = 0


@register
class RandomSearch(Policy[PlanAheadConfig, DrawnState]):
    """x ~ U[0, 1]^d. The generator is seeded by (study seed, points drawn so far)."""

    name = "random"
    Config = PlanAheadConfig
    State = DrawnState
    needs_history = False
    spaces = frozenset({"continuous", "categorical", "finite"})

    def suggest(self, request: SuggestRequest[PlanAheadConfig, DrawnState]) -> Suggestion:
        if request.finite is not None:
            return self.suggest_finite(request)
        drawn = request.state.drawn
        k = max(request.count, request.config.plan_ahead)
        generator = torch.Generator().manual_seed(request.seed * 1_000_003 + drawn)
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
