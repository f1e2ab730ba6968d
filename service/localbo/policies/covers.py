"""Greedy eps-covers and the chaining bonus of Chaining-UCB (Contal, Malherbe, Vayatis; Algorithms 1 and 2).

Greedy-Cover(X, d, eps) (Algorithm 2): G[x, x'] = 1{d(x, x') <= eps}; while points are uncovered, add the
uncovered x covering the most uncovered points and remove its neighbours. A greedy dominating set, within a
factor 1 + ln(max degree) of the smallest cover.

Hierarchical covers (Algorithm 1, step 2): for i = 1 .. ceil(1 - log2 sigma_min), eps_i = 2^(1 - i),
T_i = T_(i-1) + Greedy-Cover({x : d(x, T_(i-1)) > eps_i}, d, eps_i), and
H_i = eps_i sqrt(2 log((|T_i| + 1) i^2 t^2 pi^4 / (36 delta))); the bonus of x is the sum of H_i over
sigma_min <= eps_i < sigma(x). As printed in Algorithm 1; the appendix's proof uses eps_(i-1), i.e. 2 H_i.

``sq_distance(a, b)`` gives |a| x |b| blocks of d^2, so no N x N matrix is ever held: one pass keeps the pairs
within distance 1 (every eps_i <= 1) while they fit in ``max_pairs``, and every level filters them; beyond
that budget each level streams its graph in blocks and recomputes neighbour rows when needed, so memory
stays O(block + max_pairs) at any |X|. The greedy loop itself runs on the CPU (a lazy heap, numpy).
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
    """G restricted to ``points`` (local indices 0..m-1): degrees, and neighbour lists (stored or recomputed)."""

    def __init__(
        self, degree: np.ndarray, cols: np.ndarray | None, recompute: Callable[[Tensor], Tensor], rows: int = 1
    ) -> None:
        self.degree, self.cols, self.end = degree, cols, np.cumsum(degree)
        self.recompute = recompute  # local indices -> their rows of G as booleans, when cols is None
        self.rows = rows  # rows recomputed at once

    def neighbours(self, local: np.ndarray) -> np.ndarray:
        """The neighbours of the points ``local`` (repeats across points kept), one flat array."""
        if self.cols is not None:
            cols, end, degree = self.cols, self.end, self.degree
            return np.concatenate([cols[end[i] - degree[i] : end[i]] for i in local.tolist()] or [np.zeros(0, int)])
        index = torch.as_tensor(local)
        parts = [np.zeros(0, dtype=np.int64)]
        for s in range(0, index.shape[0], self.rows):  # one block of rows at a time: memory stays O(block)
            parts.append(self.recompute(index[s : s + self.rows]).nonzero()[:, 1].cpu().numpy())
        return np.concatenate(parts)


def _blocks_graph(sq_distance: SqDistance, points: Tensor, eps: float, block: int, max_pairs: int) -> _Graph:
    """G on ``points`` from blocks of distances: its edges kept while there are at most ``max_pairs``."""
    m = points.shape[0]
    rows = max(1, block // m)
    eps2 = eps * eps

    def near(local: Tensor) -> Tensor:  # |local| x m (|local| <= rows); each point is its own neighbour
        local = local.to(points.device)
        is_near = sq_distance(points[local], points) <= eps2
        is_near[torch.arange(local.shape[0], device=points.device), local] = True
        return is_near

    degree = torch.zeros(m, dtype=torch.long, device=points.device)
    parts: list[Tensor] | None = []
    stored = 0
    for s in range(0, m, rows):
        block_near = near(torch.arange(s, min(s + rows, m), device=points.device))
        degree[s : s + block_near.shape[0]] = block_near.sum(1)
        if parts is not None:
            stored += int(degree[s : s + block_near.shape[0]].sum())
            parts = [*parts, block_near.nonzero()[:, 1].cpu()] if stored <= max_pairs else None  # row-major
    cols = torch.cat(parts).numpy() if parts is not None else None
    return _Graph(degree.cpu().numpy(), cols, near, rows)


def _greedy(graph: _Graph, m: int) -> np.ndarray:
    """Algorithm 2 on a graph of m points: the local indices of the centres.

    Exact greedy with lazy evaluation: scores only fall, so a popped point whose score is still current is
    the argmax (ties: the lowest index, as argmax).
    """
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
    return np.array(sorted(centres), dtype=np.int64)


def greedy_cover(
    sq_distance: SqDistance, points: Tensor, eps: float, block: int = BLOCK_ELEMENTS, max_pairs: int = MAX_PAIRS
) -> Tensor:
    """Algorithm 2: the centres (candidate indices, a subset of ``points``) of a greedy eps-cover of ``points``."""
    m = points.shape[0]
    if m == 0:
        return points
    local = _greedy(_blocks_graph(sq_distance, points, eps, block, max_pairs), m)
    return points[torch.as_tensor(local, device=points.device)]


@dataclass
class _Edges:
    """The pairs (a, b) with d(a, b) <= 1, both ways, sorted by a, with d^2: every level's graph is a subset."""

    a: Tensor
    b: Tensor
    d2: Tensor


def _edges_within_one(
    sq_distance: SqDistance, n: int, device: torch.device, block: int, max_pairs: int
) -> _Edges | None:
    """One pass over all pairs; None when more than ``max_pairs`` pairs lie within 1 (then levels recompute)."""
    rows = max(1, block // n)
    everyone = torch.arange(n, device=device)
    a_parts, b_parts, d_parts, stored = [], [], [], 0
    for s in range(0, n, rows):
        part = everyone[s : s + rows]
        d2 = sq_distance(part, everyone)
        d2[torch.arange(part.shape[0], device=device), part] = 0.0  # itself, whatever rounding says
        i, j = (d2 <= 1.0).nonzero(as_tuple=True)
        stored += i.shape[0]
        if stored > max_pairs:
            return None
        a_parts.append(part[i])
        b_parts.append(j)
        d_parts.append(d2[i, j])
    return _Edges(torch.cat(a_parts), torch.cat(b_parts), torch.cat(d_parts))


def _edges_graph(edges: _Edges, far: Tensor, eps: float) -> tuple[_Graph, Tensor]:
    """G on the points ``far`` (a mask over all candidates) at ``eps``, from the stored edges; and the points."""
    points = far.nonzero()[:, 0]
    local = torch.cumsum(far.long(), 0) - 1  # candidate index -> local index
    keep = far[edges.a] & far[edges.b] & (edges.d2 <= eps * eps)
    a, b = local[edges.a[keep]], local[edges.b[keep]]  # still sorted by a
    degree = torch.bincount(a, minlength=points.shape[0])

    def never(local: Tensor) -> Tensor:
        raise AssertionError("stored edges are never recomputed")

    return _Graph(degree.cpu().numpy(), b.cpu().numpy(), never), points


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
    Every eps_i <= 1, so one pass keeps the pairs within 1 and each level filters them; when those are more
    than ``max_pairs``, each level computes its own graph in blocks (``greedy_cover``).
    """
    n = sigma.shape[0]
    device = sigma.device
    sigma_min = max(float(sigma.min()), 2.0 ** (1 - MAX_LEVELS))
    levels = math.ceil(1.0 - math.log2(sigma_min))
    to_centres = torch.full((n,), math.inf, dtype=sigma.dtype, device=device)  # d(x, T_(i-1))^2
    everyone = torch.arange(n, device=device)
    edges = _edges_within_one(sq_distance, n, device, block, max_pairs)
    size, eps_list, sizes, H = 0, [], [], []
    for i in range(1, levels + 1):
        eps = 2.0 ** (1 - i)
        far = to_centres > eps * eps
        if edges is not None:
            graph, points = _edges_graph(edges, far, eps)
            centres = points[torch.as_tensor(_greedy(graph, points.shape[0]), device=device)]
        else:
            centres = greedy_cover(sq_distance, everyone[far], eps, block, max_pairs)
        size += centres.shape[0]
        eps_list.append(eps)
        sizes.append(size)
        H.append(eps * math.sqrt(2.0 * log_term(size, i, t, delta)))
        if i < levels:  # the next level needs d(x, T_i)
            to_centres = _closer(to_centres, centres, edges, sq_distance, everyone, block)
    eps_t = torch.tensor(eps_list, dtype=sigma.dtype, device=device)
    H_t = torch.tensor(H, dtype=sigma.dtype, device=device)
    counts = (eps_t[None, :] >= sigma_min) & (eps_t[None, :] < sigma[:, None])  # N x levels
    bonus = (counts.to(sigma.dtype) * H_t).sum(1)
    return Chaining(eps_list, sizes, H, sigma_min, bonus)


def _closer(
    to_centres: Tensor, centres: Tensor, edges: _Edges | None, sq_distance: SqDistance, everyone: Tensor, block: int
) -> Tensor:
    """min(d(x, T)^2, d(x, centres)^2) for every x (beyond 1 it stays as it was: no level looks that far)."""
    out = to_centres.clone()
    if edges is not None:
        is_centre = torch.zeros_like(out, dtype=torch.bool)
        is_centre[centres] = True
        mine = is_centre[edges.a]
        out.scatter_reduce_(0, edges.b[mine], edges.d2[mine].to(out.dtype), reduce="amin")
    else:
        rows = max(1, block // everyone.shape[0])
        for s in range(0, centres.shape[0], rows):
            d2 = sq_distance(centres[s : s + rows], everyone).min(0).values.to(out.dtype)
            out = torch.minimum(out, d2)
    out[centres] = 0.0
    return out
