"""Greedy eps-covers and the chaining bonus of Chaining-UCB (Contal, Malherbe, Vayatis; Algorithms 1 and 2).

Greedy-Cover(X, d, eps) (Algorithm 2): G[x, x'] = 1{d(x, x') <= eps}; while points are uncovered, add the
uncovered x covering the most uncovered points and remove its neighbours. A greedy dominating set, within a
factor 1 + ln(max degree) of the smallest cover.

Hierarchical covers (Algorithm 1, step 2): for i = 1 .. ceil(1 - log2 sigma_min), eps_i = 2^(1 - i),
T_i = T_(i-1) + Greedy-Cover({x : d(x, T_(i-1)) > eps_i}, d, eps_i), and
H_i = eps_i sqrt(2 log((|T_i| + 1) i^2 t^2 pi^4 / (36 delta))); the bonus of x is the sum of H_i over
sigma_min <= eps_i < sigma(x). As printed in Algorithm 1; the appendix's proof uses eps_(i-1), i.e. 2 H_i.

``sq_distance(a, b)`` gives |a| x |b| blocks of d^2, so no N x N float matrix is ever held. One pass over the
pairs (upper-triangle blocks, mirrored: d is symmetric) builds level 1's graph (eps = 1, where most pairs
are near: every low-variance pair is) as a dense boolean matrix when N^2 fits ``dense``, and stores the
pairs within the next levels' radius (1/2, halved while they are more than ``max_pairs``); each level
keeps only the pairs within the next eps, so later levels cost little. A level beyond the stored radius
computes its graph again in blocks: dense when it fits, else streamed with neighbour rows recomputed, so
memory stays O(block + max_pairs + dense) at any |X|. Both greedy loops pick the same centres (ties: the
lowest index).
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
DENSE_ELEMENTS = 1 << 28  # a boolean graph of up to 16,384 points (256 MB)
SPARSE = 32  # pairs are stored while at most 1 / SPARSE of all pairs (beyond, dense graphs cost less)


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


def _greedy_dense(G: Tensor) -> np.ndarray:
    """Algorithm 2 on a dense symmetric boolean graph (diagonal set): the centres, as ``_greedy`` picks them.

    Each step costs O(m) plus O(m) per newly covered point, O(m^2) in all; argmax takes the lowest index.
    """
    m = G.shape[0]
    score = _column_counts(G)  # the degrees (G is symmetric)
    uncovered = torch.ones(m, dtype=torch.bool, device=G.device)
    centres: list[int] = []
    while True:
        masked = score.masked_fill(~uncovered, -1)
        c = int(masked.argmax())
        best = int(masked[c])
        if best <= 0:
            break
        if best == 1:  # as in _greedy: the rest cover only themselves
            centres.extend(uncovered.nonzero()[:, 0].tolist())
            break
        newly = G[c] & uncovered
        uncovered &= ~newly
        centres.append(c)
        score -= _column_counts(G, newly)
    return np.array(sorted(centres), dtype=np.int64)


def _column_counts(G: Tensor, rows: Tensor | None = None) -> Tensor:
    """G[rows].sum(0) (all rows when None) as int32; numpy's boolean sum is several times faster on the CPU."""
    if G.device.type == "cpu":
        picked = G.numpy() if rows is None else G.numpy()[rows.numpy()]
        return torch.from_numpy(picked.sum(0, dtype=np.int32))
    return (G if rows is None else G[rows]).sum(0, dtype=torch.int32)


def _dense_graph(sq_distance: SqDistance, points: Tensor, eps: float, block: int) -> Tensor:
    """G on ``points`` as an m x m boolean matrix, from blocks of rows."""
    m = points.shape[0]
    rows = max(1, block // m)
    G = torch.empty(m, m, dtype=torch.bool, device=points.device)
    for s in range(0, m, rows):
        G[s : s + rows] = sq_distance(points[s : s + rows], points) <= eps * eps
    G.fill_diagonal_(True)
    return G


def greedy_cover(
    sq_distance: SqDistance,
    points: Tensor,
    eps: float,
    block: int = BLOCK_ELEMENTS,
    max_pairs: int = MAX_PAIRS,
    dense: int = DENSE_ELEMENTS,
) -> Tensor:
    """Algorithm 2: the centres (candidate indices, a subset of ``points``) of a greedy eps-cover of ``points``."""
    m = points.shape[0]
    if m == 0:
        return points
    if m * m <= dense:
        local = _greedy_dense(_dense_graph(sq_distance, points, eps, block))
    else:
        local = _greedy(_blocks_graph(sq_distance, points, eps, block, max_pairs), m)
    return points[torch.as_tensor(local, device=points.device)]


@dataclass
class _Edges:
    """The pairs (a, b) with d(a, b) <= radius, both ways and (a, a), sorted by a, with d^2."""

    a: Tensor
    b: Tensor
    d2: Tensor
    radius: float

    def within(self, radius: float) -> _Edges:
        keep = self.d2 <= radius * radius
        return _Edges(self.a[keep], self.b[keep], self.d2[keep], radius)


def _first_pass(
    sq_distance: SqDistance,
    n: int,
    device: torch.device,
    radius: float,
    smallest: float,
    block: int,
    max_pairs: int,
    dense: int,
) -> tuple[Tensor | None, _Edges | None]:
    """Level 1's graph (dense, when n^2 <= ``dense``) and the pairs within ``radius`` (halved while there are
    more than ``max_pairs`` or n^2 / SPARSE; None below ``smallest``), from one pass over the upper-triangle
    blocks."""
    G = torch.zeros(n, n, dtype=torch.bool, device=device) if n * n <= dense else None
    a_parts: list[Tensor] = []
    b_parts: list[Tensor] = []
    d_parts: list[Tensor] = []
    pairs = 0  # a < b within the radius; stored both ways, plus the n pairs (a, a)
    rows = max(1, block // n)
    for s in range(0, n, rows):
        e = min(s + rows, n)
        d2 = sq_distance(torch.arange(s, e, device=device), torch.arange(s, n, device=device))  # (e-s) x (n-s)
        square = d2[:, : e - s]
        square.copy_(torch.minimum(square, square.T))  # exactly symmetric where both orders were computed
        if G is not None:
            near = d2 <= 1.0
            G[s:e, s:] = near
            G[s:, s:e] = near.T
        if radius < smallest:
            continue
        i, j = (d2 <= radius * radius).triu(1).nonzero(as_tuple=True)  # j > i in local terms: b > a
        a_parts.append(i + s)
        b_parts.append(j + s)
        d_parts.append(d2[i, j])
        pairs += i.shape[0]
        while 2 * pairs + n > min(max_pairs, n * n // SPARSE) and radius >= smallest:
            radius /= 2
            for k, part in enumerate(d_parts):
                keep = part <= radius * radius
                a_parts[k], b_parts[k], d_parts[k] = a_parts[k][keep], b_parts[k][keep], part[keep]
            pairs = sum(p.shape[0] for p in d_parts)
    if G is not None:
        G.fill_diagonal_(True)
    if radius < smallest:
        return G, None
    everyone = torch.arange(n, device=device)
    a, b, d2 = torch.cat(a_parts), torch.cat(b_parts), torch.cat(d_parts)
    zero = torch.zeros(n, dtype=d2.dtype, device=device)
    a, b, d2 = torch.cat([a, b, everyone]), torch.cat([b, a, everyone]), torch.cat([d2, d2, zero])
    order = torch.argsort(a * n + b)
    return G, _Edges(a[order], b[order], d2[order], radius)


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
    dense: int = DENSE_ELEMENTS,
) -> Chaining:
    """Algorithm 1, step 2 and the sum of step 3: hierarchical greedy covers of all N candidates.

    sigma: N posterior standard deviations; sq_distance(a, b): the posterior pseudo-distance d_t, squared.
    How each level gets its graph (dense level 1, stored pairs, or blocks computed again): the module doc.
    """
    n = sigma.shape[0]
    device = sigma.device
    sigma_min = max(float(sigma.min()), 2.0 ** (1 - MAX_LEVELS))
    levels = math.ceil(1.0 - math.log2(sigma_min))
    smallest = 2.0 ** (1 - levels)
    to_centres = torch.full((n,), math.inf, dtype=sigma.dtype, device=device)  # d(x, T_(i-1))^2
    everyone = torch.arange(n, device=device)
    G1, edges = _first_pass(sq_distance, n, device, 0.5 if n * n <= dense else 1.0, smallest, block, max_pairs, dense)
    size, eps_list, sizes, H = 0, [], [], []
    for i in range(1, levels + 1):
        eps = 2.0 ** (1 - i)
        far = to_centres > eps * eps
        if i == 1 and G1 is not None:  # nothing is covered yet: far is everyone
            centres = everyone[torch.as_tensor(_greedy_dense(G1), device=device)]
            G1 = None
        elif edges is not None and eps <= edges.radius:
            graph, points = _edges_graph(edges, far, eps)
            centres = points[torch.as_tensor(_greedy(graph, points.shape[0]), device=device)]
        else:
            centres = greedy_cover(sq_distance, everyone[far], eps, block, max_pairs, dense)
        size += centres.shape[0]
        eps_list.append(eps)
        sizes.append(size)
        H.append(eps * math.sqrt(2.0 * log_term(size, i, t, delta)))
        if i < levels:  # the next level needs d(x, T_i) up to eps / 2; pairs farther apart are no longer needed
            if edges is not None and eps / 2 <= edges.radius:
                edges = edges.within(eps / 2)
                to_centres = _closer(to_centres, centres, edges, sq_distance, everyone, block)
            else:
                to_centres = _closer(to_centres, centres, None, sq_distance, everyone, block)
    eps_t = torch.tensor(eps_list, dtype=sigma.dtype, device=device)
    H_t = torch.tensor(H, dtype=sigma.dtype, device=device)
    counts = (eps_t[None, :] >= sigma_min) & (eps_t[None, :] < sigma[:, None])  # N x levels
    bonus = (counts.to(sigma.dtype) * H_t).sum(1)
    return Chaining(eps_list, sizes, H, sigma_min, bonus)


def _closer(
    to_centres: Tensor, centres: Tensor, edges: _Edges | None, sq_distance: SqDistance, everyone: Tensor, block: int
) -> Tensor:
    """min(d(x, T)^2, d(x, centres)^2) for every x, exact up to the next level's eps (beyond, the old value is
    also beyond it: no later level can tell the two apart)."""
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
