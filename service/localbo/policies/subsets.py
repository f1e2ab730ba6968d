"""Bounded data for the GPs of the policies that would otherwise fit every result (issue 29.3: a suggest's cost
flat in n). An exact GP costs O(n^3) to fit; past ``max_data`` results a policy fits it on a subset:

    global policies (ei, ucb, ts, the Lipschitz family): the best half by value (under outcome constraints the
        feasible ones first, then the least violating), and the rest evenly spaced over the study's order, so
        the model keeps the incumbent's neighbourhood and a thinned picture of everywhere it has been;
    turbo: the region's ``max_data`` results nearest to its centre (the trust region is what it models);
    qlognehvi: its GPs as the global policies with the Pareto layer as the value (``layer_rank``), and its
        baseline (the points whose hypervolume the acquisition improves on; the box decomposition over its
        sampled fronts costs about the square of the front's size) the first ``max_baseline`` by layer, the
        last layer that fits only in part thinned to the points farthest apart in objective space
        (``front_first``).

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


def layer_rank(Y: Tensor, C: Tensor | None, enough: int) -> Tensor:
    """n: each result's Pareto layer (0: the feasible front; 1: the front of the rest; ...), peeled until ``enough``
    results are ranked; the infeasible after every feasible layer, by total violation; the rest ``inf``."""
    from localbo.policies.pareto import non_dominated

    n = Y.shape[0]
    rank = torch.full((n,), float("inf"), dtype=torch.float64)
    violation = C.clamp_min(0).sum(-1).cpu() if C is not None and C.numel() else torch.zeros(n, dtype=torch.float64)
    left = (violation <= 0).nonzero().reshape(-1)
    layer = 0
    while left.numel() and int((rank < float("inf")).sum()) < enough:
        top = non_dominated(Y[left].cpu())
        rank[left[top]] = layer
        left, layer = left[~top], layer + 1
    bad = (violation > 0).nonzero().reshape(-1)
    rank[bad] = layer + 1 + violation[bad].argsort().argsort().to(torch.float64)  # after every feasible layer
    return rank


def front_first(Y: Tensor, C: Tensor | None, size: int) -> Tensor:
    """Indices (sorted) of at most ``size`` results, whole Pareto layers first (``layer_rank``); the layer that fits
    only in part thinned by farthest-point sampling in objective space (each objective scaled to its range over that
    layer), from its first point in the first objective. ``size >= n``: all."""
    n = Y.shape[0]
    if size >= n:
        return torch.arange(n, device=Y.device)
    rank = layer_rank(Y, C, size)
    order = rank.argsort(stable=True)
    cut = rank[order[size - 1]]
    whole = order[rank[order] < cut]
    part = order[rank[order] == cut]
    Z = Y[part].cpu().to(torch.float64).reshape(part.shape[0], -1)
    Z = (Z - Z.amin(0)) / (Z.amax(0) - Z.amin(0)).clamp_min(1e-12)
    chosen = [int(Z[:, 0].argmin())]
    gap = (Z - Z[chosen[0]]).norm(dim=-1)
    for _ in range(size - whole.shape[0] - 1):
        gap[chosen] = -1.0
        chosen.append(int(gap.argmax()))
        gap = torch.minimum(gap, (Z - Z[chosen[-1]]).norm(dim=-1))
    keep = torch.cat([whole, part[torch.tensor(chosen, dtype=torch.long)]])
    return keep.sort().values.to(Y.device)
