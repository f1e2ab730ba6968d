"""Bounded data for the GPs of the policies that would otherwise fit every result (issue 29.3: a suggest's cost
flat in n). An exact GP costs O(n^3) to fit; past ``max_data`` results a policy fits it on a subset:

    global policies (ei, ucb, ts, the Lipschitz family): the best half by value (under outcome constraints the
        feasible ones first, then the least violating), and the rest evenly spaced over the study's order, so
        the model keeps the incumbent's neighbourhood and a thinned picture of everywhere it has been;
    turbo: the region's ``max_data`` results nearest to its centre (the trust region is what it models).

A study of at most ``max_data`` results (or a region of at most that many) fits on all of them, exactly as before.
"""

from __future__ import annotations

import torch
from torch import Tensor


def best_and_spread(y: Tensor, C: Tensor | None, size: int) -> Tensor:
    """Indices (sorted) of ``size`` of the n results: the best ``size // 2`` (feasible first, by y; then by total
    violation), and ``size - size // 2`` of the others evenly spaced over their order. ``size >= n``: all."""
    n = y.shape[0]
    if size >= n:
        return torch.arange(n, device=y.device)
    rank = y.clone()
    if C is not None and C.numel():
        violation = C.clamp_min(0).sum(-1)
        rank = torch.where(violation > 0, y.max() + 1 + violation, y)
    best = rank.argsort()[: size // 2]
    others = torch.ones(n, dtype=torch.bool, device=y.device)
    others[best] = False
    rest = others.nonzero().reshape(-1)
    spread = rest[torch.linspace(0, rest.shape[0] - 1, size - best.shape[0], device=y.device).round().long()]
    return torch.cat([best, spread]).unique()


def nearest(X: Tensor, centre: Tensor, size: int) -> Tensor:
    """Indices (sorted) of the ``size`` rows of X nearest to ``centre`` (all of them when there are no more)."""
    if size >= X.shape[0]:
        return torch.arange(X.shape[0], device=X.device)
    return (X - centre).norm(dim=-1).topk(size, largest=False).indices.sort().values
