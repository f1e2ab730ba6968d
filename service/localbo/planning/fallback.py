"""The one generator of fallback points: seeded, inside the policy's fallback box (and the study's parameter
constraints), never a taken candidate.

Used when the policy failed (the plan is fallback points and the error is recorded) and when an ask
waited ``LOCALBO_ASK_WAIT_SECONDS`` in vain (the missing points are made up, the policy state untouched).
"""

from __future__ import annotations

from collections.abc import Collection

import torch

from localbo.domain import Source, StudySpace
from localbo.errors import Conflict
from localbo.policies.base import Polytope
from localbo.policies.polytope import EmptyRegion, feasible_or_none, sample
from localbo.storage.plan_queue import PlanPoint


def fallback_points(
    space: StudySpace,
    k: int,
    generator: torch.Generator,
    box: tuple[list[float], list[float]] | None = None,
    taken: Collection[int] = (),
    polytope: Polytope | None = None,
) -> list[PlanPoint]:
    """``k`` random points: uniform in ``box`` (lower, upper corners; the cube when None), categoricals
    snapped; on a finite space, distinct candidates outside ``taken`` (a 409 when too few are left).

    With ``polytope`` (the study's parameter constraints in the unit cube), hit-and-run samples of box ∩ polytope,
    or of cube ∩ polytope when the box misses it (``policies.polytope``), from the same generator; a 409 when the
    cube holds no point of the constraints either."""
    candidates = space.candidates
    if candidates is not None:
        free = torch.ones(candidates.size, dtype=torch.bool)
        if taken:
            free[list(taken)] = False
        where = free.nonzero()[:, 0]
        if where.numel() < k:
            raise Conflict(f"count: {where.numel()} candidates of {candidates.size} are left to ask, not {k}")
        chosen = where[torch.randperm(where.numel(), generator=generator)[:k]].tolist()
        return [(candidates.x[c], Source.FALLBACK.value, c) for c in chosen]
    dim = space.dim
    lo, hi = box if box is not None else ([0.0] * dim, [1.0] * dim)
    low, high = torch.tensor(lo, dtype=torch.float64), torch.tensor(hi, dtype=torch.float64)
    if polytope is not None:
        if feasible_or_none(polytope, low, high) is None:  # the box misses the constraints: anywhere they hold
            low, high = torch.zeros(dim, dtype=torch.float64), torch.ones(dim, dtype=torch.float64)
        try:
            X = sample(polytope, k, generator, low, high)
        except EmptyRegion as exc:  # a study stored before creation checked the region as the samplers do
            raise Conflict(f"parameter_constraints: {exc} ({Polytope.TOLERANCE:g}); no point can be asked") from exc
    else:
        X = low + torch.rand(k, dim, generator=generator, dtype=torch.float64) * (high - low)
    return [(space.snap(row), Source.FALLBACK.value, None) for row in X.tolist()]


def mixed_seed(seed: int, salt: int, step: int) -> int:
    """A generator seed for the study's ``step``-th draw of one kind (``salt``)."""
    return (seed * 1_000_003 + salt * (step + 1)) % (2**62)
