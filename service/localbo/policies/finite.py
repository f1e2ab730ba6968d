"""The protocol of the policies on finite spaces (chaining-ucb, ucb, random): candidates in, indices out.

Point k of a call gets the study-wide index t = n + m + k (n told, m pending) and is:

    "init"   a candidate drawn uniformly among those not asked yet, while t < n_init (the paper: 10);
    "score"  the argmax over the candidates not asked yet of the policy's score of f = -y (the papers
             maximise), on the GP posterior (finite_gp.py) given the real data plus the pending candidates
             and those already chosen in this call, each told the mean of the real y (constant liar).

"Not asked yet": neither completed nor pending, unless the space allows repeats. Seeds: (study seed, t).
State (``FiniteState``): gp.py's last fit (a warm start), observations seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from localbo.policies import gp
from localbo.policies.base import FiniteSpace, PolicyError, PolicyState, SuggestRequest
from localbo.policies.finite_gp import FiniteGPConfig, FinitePosterior, fit_hypers

Score = Callable[[FinitePosterior, int], tuple[Tensor, dict[str, Any]]]  # (posterior, t) -> N scores, info


class FiniteState(PolicyState):
    """The last GP fit (a warm start; None while fixed or not fitted yet) and the observations seen."""

    version = 1
    hypers: gp.StoredHypers = None
    n: int = 0


@dataclass(frozen=True)
class FiniteChoice:
    """What ``suggest_finite`` chose: the points, their candidate indices, the GP fit."""

    X: Tensor  # k x d
    index: Tensor  # k (long)
    hypers: gp.Hypers | None  # the fit (the previous one when this call fitted none)
    n: int  # observations


class Exhausted(PolicyError):
    """Every candidate of a finite space without repeats was asked."""


def available(space: FiniteSpace, chosen: list[int]) -> Tensor:
    """N booleans: the candidates that may be asked now."""
    free = torch.ones(space.size, dtype=torch.bool, device=space.candidates.device)
    if not space.allow_repeats:
        free[space.X_index.to(free.device)] = False
        free[space.pending_index.to(free.device)] = False
        free[space.blocked_index.to(free.device)] = False
        if chosen:
            free[torch.tensor(chosen, device=free.device)] = False
    return free


def random_available(free: Tensor, generator: torch.Generator) -> int:
    """A uniformly random index among ``free`` (a generator on the CPU, so seeds agree across devices)."""
    where = free.nonzero()[:, 0].cpu()
    if where.numel() == 0:
        raise Exhausted("every candidate was asked; the study allows no repeats")
    return int(where[torch.randint(where.numel(), (1,), generator=generator)])


def mix_seed(seed: int, t: int) -> int:
    return (seed * 1_000_003 + t * 65_537 + 17) % (2**62)


def suggest_finite(
    request: SuggestRequest, config: FiniteGPConfig, score: Score, warm: gp.Hypers | None
) -> FiniteChoice:
    """``request.count`` candidates: random ones first, then the argmax of ``score`` (see the module doc).

    ``warm``: the previous fit, from the policy's state.
    """
    space = request.finite
    assert space is not None, "a finite-space policy needs request.finite"
    device = space.candidates.device
    n, m = space.X_index.shape[0], space.pending_index.shape[0]
    f = -request.y.to(device, torch.float64)  # the papers maximise
    chosen: list[int] = []
    fitted = warm
    hypers = None
    for k in range(request.count):
        t = n + m + k
        free = available(space, chosen)
        if t < config.n_init or n == 0:
            chosen.append(random_available(free, torch.Generator().manual_seed(mix_seed(request.seed, t))))
            continue
        if not bool(free.any()):
            raise Exhausted("every candidate was asked; the study allows no repeats")
        if hypers is None:
            generator = torch.Generator().manual_seed(mix_seed(request.seed, t) + 1)
            hypers, f_units = fit_hypers(space, config, space.X_index, f, warm, generator)
            lie = float(f_units.mean())
            if hypers.fitted is not None:
                fitted = hypers.fitted
        lies = torch.cat([space.pending_index.to(device), torch.tensor(chosen, dtype=torch.long, device=device)])
        obs = torch.cat([space.X_index.to(device), lies])
        values = torch.cat([f_units, torch.full((lies.shape[0],), lie, dtype=torch.float64, device=device)])
        work = torch.float64 if config.float64_distances else torch.float32
        posterior = FinitePosterior(space, config.kernel, hypers, obs, values, work)
        scores, _ = score(posterior, n + k + 1)
        chosen.append(int(torch.argmax(scores.masked_fill(~free, -torch.inf))))
    index = torch.tensor(chosen, dtype=torch.long)
    X = space.candidates[index.to(device)].to(torch.float64)
    return FiniteChoice(X, index, fitted, n)
