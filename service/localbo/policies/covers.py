"""Greedy eps-covers and the chaining bonus of Chaining-UCB (Contal, Malherbe, Vayatis; Algorithms 1 and 2).

Greedy-Cover(X, d, eps) (Algorithm 2): G[x, x'] = 1{d(x, x') <= eps}; while points are uncovered, add the
uncovered x covering the most uncovered points and remove its neighbours. A greedy dominating set, within a
factor 1 + ln(max degree) of the smallest cover.

Hierarchical covers (Algorithm 1, step 2): for i = 1 .. ceil(1 - log2 sigma_min), eps_i = 2^(1 - i),
T_i = T_(i-1) + Greedy-Cover({x : d(x, T_(i-1)) > eps_i}, d, eps_i), and
H_i = eps_i sqrt(2 log((|T_i| + 1) i^2 t^2 pi^4 / (36 delta))); the bonus of x is the sum of H_i over
sigma_min <= eps_i < sigma(x). As printed in Algorithm 1; the appendix's proof uses eps_(i-1), i.e. 2 H_i.

``sq_distance(a, b)`` gives |a| x |b| blocks of d^2, so the graph is built one block of rows at a time: its edges are
kept (as sorted neighbour lists) while they fit in ``max_pairs``, else recomputed row by row when needed,
so memory stays O(block + max_pairs) at any |X|.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

SqDistance = Callable[[Tensor, Tensor], Tensor]  # (a: k, b: m) candidate indices -> k x m squared distances
MAX_LEVELS = 30
BLOCK_ELEMENTS = 1 << 24
MAX_PAIRS = 1 << 26  # stored edges (two int64 each): 1 GiB at most


class _Graph:
    """G restricted to ``points`` (local indices): degrees, and neighbour lists kept on the CPU or recomputed."""

    def __init__(self, sq_distance: SqDistance, points: Tensor, eps: float, block: int, max_pairs: int) -> None:
        self.sq_distance, self.points, self.eps2 = sq_distance, points, eps * eps
        m = points.shape[0]
        self.rows = max(1, block // m)
        degree = torch.zeros(m, dtype=torch.long, device=points.device)
        parts: list[Tensor] | None = []
        stored = 0
        for s in range(0, m, self.rows):
            near = self._near(torch.arange(s, min(s + self.rows, m), device=points.device))  # r x m
            degree[s : s + near.shape[0]] = near.sum(1)
            if parts is not None:
                stored += int(degree[s : s + near.shape[0]].sum())
                parts = [*parts, near.nonzero()[:, 1].cpu()] if stored <= max_pairs else None  # row-major
        self.degree = degree.cpu().numpy()
        self.cols = torch.cat(parts).numpy() if parts is not None else None
        self.end = np.cumsum(self.degree)

    def neighbours(self, local: np.ndarray) -> np.ndarray:
        """The neighbours of the points ``local`` (repeats across points kept), one flat array."""
        if self.cols is not None:
            cols, end, degree = self.cols, self.end, self.degree
            return np.concatenate([cols[end[i] - degree[i] : end[i]] for i in local.tolist()] or [np.zeros(0, int)])
        out = [np.zeros(0, dtype=np.int64)]
        index = torch.as_tensor(local, device=self.points.device)
        for s in range(0, index.shape[0], self.rows):
            out.append(self._near(index[s : s + self.rows]).nonzero()[:, 1].cpu().numpy())
        return np.concatenate(out)

    def _near(self, local: Tensor) -> Tensor:
        """|local| x m: G's rows; each point is its own neighbour, whatever rounding says."""
        near = self.sq_distance(self.points[local], self.points) <= self.eps2
        near[torch.arange(local.shape[0], device=local.device), local] = True
        return near


def greedy_cover(
    sq_distance: SqDistance, points: Tensor, eps: float, block: int = BLOCK_ELEMENTS, max_pairs: int = MAX_PAIRS
) -> Tensor:
    """Algorithm 2: the centres (candidate indices, a subset of ``points``) of a greedy eps-cover of ``points``.

    Exact greedy with lazy evaluation: scores only fall, so a popped point whose score is still current is
    the argmax (ties: the lowest index, as argmax).
    """
    m = points.shape[0]
    if m == 0:
        return points
    graph = _Graph(sq_distance, points, eps, block, max_pairs)
    score = graph.degree.copy()  # uncovered points each point would cover, itself included
    uncovered = np.ones(m, dtype=bool)
    heap = [(-int(d), i) for i, d in enumerate(score.tolist())]
    heapq.heapify(heap)
    centres: list[int] = []
    while heap:
        neg, c = heapq.heappop(heap)
        if not uncovered[c]:
            continue  # centres are chosen among uncovered points only
        if -neg != score[c]:
            heapq.heappush(heap, (-int(score[c]), c))  # stale: its neighbours were covered meanwhile
            continue
        if score[c] == 1:
            # Every uncovered point now covers only itself, and nothing else can cover it: greedy takes them
            # all, one per step; take them at once (the same set).
            centres.extend(np.flatnonzero(uncovered).tolist())
            break
        near = graph.neighbours(np.array([c]))
        newly = near[uncovered[near]]
        uncovered[newly] = False
        centres.append(c)
        np.subtract.at(score, graph.neighbours(newly), 1)  # a covered point no longer counts for its neighbours
    return points[torch.tensor(sorted(centres), dtype=torch.long, device=points.device)]


@dataclass
class Chaining:
    eps: list[float]  # eps_i, i = 1..levels
    sizes: list[int]  # |T_i|
    H: list[float]  # H_i
    sigma_min: float
    bonus: Tensor  # N, the chaining term of each candidate

    def describe(self) -> dict[str, object]:
        return {"levels": len(self.eps), "cover_sizes": self.sizes, "H": self.H, "sigma_min": self.sigma_min}


def log_term(size: int, i: int, t: int, delta: float) -> float:
    """log((|T_i| + 1) i^2 t^2 pi^4 / (36 delta)), Algorithm 1 (the seed prints pi^4 / (delta 6^2))."""
    return math.log((size + 1) * i**2 * t**2 * math.pi**4 / (36.0 * delta))


def chaining_bonus(
    sq_distance: SqDistance,
    sigma: Tensor,
    t: int,
    delta: float,
    block: int = BLOCK_ELEMENTS,
    max_pairs: int = MAX_PAIRS,
) -> Chaining:
    """Algorithm 1, step 2 and the sum of step 3: hierarchical greedy covers of all N candidates.

    sigma: N posterior standard deviations; sq_distance(a, b): the posterior pseudo-distance d_t, squared.
    """
    n = sigma.shape[0]
    device = sigma.device
    sigma_min = max(float(sigma.min()), 2.0 ** (1 - MAX_LEVELS))
    levels = math.ceil(1.0 - math.log2(sigma_min))
    to_centres = torch.full((n,), math.inf, dtype=sigma.dtype, device=device)  # d(x, T_(i-1))^2
    everyone = torch.arange(n, device=device)
    size, eps_list, sizes, H = 0, [], [], []
    for i in range(1, levels + 1):
        eps = 2.0 ** (1 - i)
        far = everyone[to_centres > eps * eps]
        centres = greedy_cover(sq_distance, far, eps, block, max_pairs)
        size += centres.shape[0]
        eps_list.append(eps)
        sizes.append(size)
        H.append(eps * math.sqrt(2.0 * log_term(size, i, t, delta)))
        if i < levels:  # the next level needs d(x, T_i)
            rows = max(1, block // n)
            for s in range(0, centres.shape[0], rows):
                d2 = sq_distance(centres[s : s + rows], everyone).min(0).values.to(sigma.dtype)
                to_centres = torch.minimum(to_centres, d2)
            to_centres[centres] = 0.0
    eps_t = torch.tensor(eps_list, dtype=sigma.dtype, device=device)
    H_t = torch.tensor(H, dtype=sigma.dtype, device=device)
    counts = (eps_t[None, :] >= sigma_min) & (eps_t[None, :] < sigma[:, None])  # N x levels
    bonus = (counts.to(sigma.dtype) * H_t).sum(1)
    return Chaining(eps_list, sizes, H, sigma_min, bonus)
