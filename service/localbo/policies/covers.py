"""Greedy eps-covers and the chaining bonus of Chaining-UCB (Contal, Malherbe, Vayatis; Algorithms 1 and 2).

Greedy-Cover(X, d, eps) (Algorithm 2): G[x, x'] = 1{d(x, x') <= eps}; while points are uncovered, add the
uncovered x covering the most uncovered points and remove its neighbours. A greedy dominating set, within a
factor 1 + ln(max degree) of the smallest cover.

Hierarchical covers (Algorithm 1, step 2): for i = 1 .. ceil(1 - log2 sigma_min), eps_i = 2^(1 - i),
T_i = T_(i-1) + Greedy-Cover({x : d(x, T_(i-1)) > eps_i}, d, eps_i), and
H_i = eps_i sqrt(2 log((|T_i| + 1) i^2 t^2 pi^4 / (36 delta))); the bonus of x is the sum of H_i over
sigma_min <= eps_i < sigma(x). As printed in Algorithm 1; the appendix's proof uses eps_(i-1), i.e. 2 H_i.

``sq_distance(a, b)`` gives |a| x |b| blocks of d^2, so no N x N float matrix is ever held; one pass
covers the upper triangle (d is symmetric). Up to N^2 <= ``dense`` (16,384 candidates): that pass stores
one byte per pair, the number of levels whose eps reaches it (code >= i is G at level i, the same
comparisons d^2 <= eps_i^2), and every level's greedy reads its graph off those codes. Beyond: the pass
stores the pairs within a radius (1, halved while they are more than ``max_pairs``), each level keeps
only those within the next eps, and a level beyond the radius computes its graph again in blocks: dense
when its points fit, else streamed with neighbour rows recomputed, so memory stays
O(block + max_pairs + dense) at any |X|. Both greedy loops (a dense one in numpy, a lazy heap over
neighbour lists) pick the same centres (ties: the lowest index).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

SqDistance = Callable[[Tensor, Tensor], Tensor]  # (a: k, b: m) candidate indices -> k x m squared distances
Rows = Callable[[np.ndarray], np.ndarray]  # point indices -> their boolean rows of G over all points
MAX_LEVELS = 30
BLOCK_ELEMENTS = 1 << 24
MAX_PAIRS = 1 << 26  # stored edges (two int64 each): 1 GiB at most
DENSE_ELEMENTS = 1 << 28  # a boolean graph of up to 16,384 points (256 MB)
SPARSE = 32  # pairs are stored while at most 1 / SPARSE of all pairs (beyond, dense graphs cost less)


class _Graph:
    """G restricted to some points (local indices 0..m-1): degrees and neighbour lists (CSR)."""

    def __init__(self, degree: np.ndarray, cols: np.ndarray) -> None:
        self.degree, self.cols, self.end = degree, cols, np.cumsum(degree)

    def neighbours(self, local: np.ndarray) -> np.ndarray:
        """The neighbours of the points ``local`` (repeats across points kept), one flat array."""
        cols, end, degree = self.cols, self.end, self.degree
        return np.concatenate([cols[end[i] - degree[i] : end[i]] for i in local.tolist()] or [np.zeros(0, int)])


def _near_rows(sq_distance: SqDistance, points: Tensor, eps: float) -> Callable[[np.ndarray], np.ndarray]:
    """Local indices -> their rows of G on ``points``, computed on demand (each point its own neighbour)."""
    eps2 = eps * eps

    def rows(local: np.ndarray) -> np.ndarray:
        index = torch.as_tensor(local, device=points.device)
        near = sq_distance(points[index], points) <= eps2
        near[torch.arange(index.shape[0], device=points.device), index] = True
        return near.cpu().numpy()

    return rows


def _blocks_graph(sq_distance: SqDistance, points: Tensor, eps: float, block: int, max_pairs: int) -> _Graph | None:
    """G on ``points`` from blocks of distances; None as soon as it has more than ``max_pairs`` edges."""
    m = points.shape[0]
    step = max(1, block // m)
    rows = _near_rows(sq_distance, points, eps)
    degree, parts, stored = [], [], 0
    for s in range(0, m, step):
        near = rows(np.arange(s, min(s + step, m)))
        stored += int(near.sum())
        if stored > max_pairs:
            return None
        degree.append(near.sum(1))
        parts.append(near.nonzero()[1])  # row-major: sorted by row
    return _Graph(np.concatenate(degree), np.concatenate(parts))


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


def _greedy_dense(
    rows: Rows, todo: np.ndarray, block: int = BLOCK_ELEMENTS, degree: np.ndarray | None = None
) -> np.ndarray:
    """Algorithm 2 on the points ``todo`` (a mask) of a symmetric graph given by ``rows`` (indices -> their
    boolean rows over all N points, diagonal set): the centres, as ``_greedy`` picks them (ties: the lowest
    index). Points outside ``todo`` count as covered already. O(N) per step and per point covered; numpy on
    the CPU (a step is a few microseconds there, a sync on a GPU).
    """
    n = todo.shape[0]
    step = max(1, block // max(n, 1))

    def column_counts(index: np.ndarray) -> np.ndarray:  # the rows' column sums, a block of rows at a time
        total = np.zeros(n, dtype=np.int32)
        for s in range(0, index.shape[0], step):
            total += rows(index[s : s + step]).sum(0, dtype=np.int32)
        return total

    uncovered = todo.copy()
    score = column_counts(np.flatnonzero(todo)) if degree is None else degree.astype(np.int32)  # within todo
    centres: list[int] = []
    while n:
        masked = np.where(uncovered, np.maximum(score, 1), -1)  # >= 1 even if rounding made degrees disagree
        c = int(masked.argmax())  # the first on ties
        if masked[c] <= 0:
            break
        if masked[c] == 1:  # as in _greedy: the rest cover only themselves
            centres.extend(np.flatnonzero(uncovered).tolist())
            break
        newly = rows(np.array([c]))[0] & uncovered
        uncovered &= ~newly
        centres.append(c)
        score -= column_counts(np.flatnonzero(newly))
    return np.array(sorted(centres), dtype=np.int64)


def greedy_cover(
    sq_distance: SqDistance,
    points: Tensor,
    eps: float,
    block: int = BLOCK_ELEMENTS,
    max_pairs: int = MAX_PAIRS,
    dense: int = DENSE_ELEMENTS,
    store: bool = True,
) -> Tensor:
    """Algorithm 2: the centres (candidate indices, a subset of ``points``) of a greedy eps-cover of ``points``.

    ``store``: try holding G's edges (up to ``max_pairs``) before computing rows again when needed."""
    m = points.shape[0]
    if m == 0:
        return points
    rows = _near_rows(sq_distance, points, eps)
    if m * m <= dense:  # G held: m^2 booleans
        step = max(1, block // m)
        G = np.concatenate([rows(np.arange(s, min(s + step, m))) for s in range(0, m, step)])
        local = _greedy_dense(lambda index: G[index], np.ones(m, dtype=bool), block)
    elif store and (graph := _blocks_graph(sq_distance, points, eps, block, max_pairs)) is not None:
        local = _greedy(graph, m)
    else:  # rows computed again when needed: about two passes over the pairs, memory O(block)
        local = _greedy_dense(rows, np.ones(m, dtype=bool), block)
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


def _upper_blocks(sq_distance: SqDistance, n: int, device: torch.device, block: int) -> Iterator[tuple[int, Tensor]]:
    """(s, d^2 of rows s..e-1 against columns s..n-1): the upper triangle, each pair once (d is symmetric)."""
    rows = max(1, block // n)
    for s in range(0, n, rows):
        e = min(s + rows, n)
        d2 = sq_distance(torch.arange(s, e, device=device), torch.arange(s, n, device=device))
        square = d2[:, : e - s]
        square.copy_(torch.minimum(square, square.T))  # exactly symmetric where both orders were computed
        square.fill_diagonal_(0.0)  # itself, whatever rounding says
        yield s, d2


def _level_codes(sq_distance: SqDistance, n: int, levels: int, device: torch.device, block: int) -> Tensor:
    """n x n uint8: code[a, b] = #{i <= levels : d(a, b) <= eps_i}, so G at level i is code >= i (the same
    comparisons d^2 <= eps_i^2 as a graph built at that level)."""
    codes = torch.empty(n, n, dtype=torch.uint8, device=device)
    for s, d2 in _upper_blocks(sq_distance, n, device, block):
        code = (d2 <= 1.0).to(torch.uint8)
        for i in range(2, levels + 1):
            code += d2 <= 4.0 ** (1 - i)  # eps_i^2: a power of 2, exact in any float
        codes[s : s + code.shape[0], s:] = code
        codes[s:, s : s + code.shape[0]] = code.T
    return codes


def _dense_levels(codes: Tensor, levels: int) -> Iterator[Tensor]:
    """The centres added at each level, all graphs read off the level codes."""
    device = codes.device
    codes_np = codes.cpu().numpy()  # the greedy runs in numpy (see _greedy_dense)
    del codes
    n = codes_np.shape[0]
    near = np.zeros(n, dtype=np.uint8)  # the highest level whose eps reaches T
    for i in range(1, levels + 1):

        def rows(index: np.ndarray, i: int = i) -> np.ndarray:
            return codes_np[index] >= i

        centres = _greedy_dense(rows, near < i)  # far: d(x, T_(i-1)) > eps_i
        if centres.size:
            near = np.maximum(near, codes_np[centres].max(0))
        yield torch.as_tensor(centres, device=device)


def _stored_pairs(
    sq_distance: SqDistance, n: int, device: torch.device, smallest: float, block: int, max_pairs: int
) -> tuple[_Edges | None, np.ndarray]:
    """The pairs within a radius (1, halved while more than ``max_pairs`` or n^2 / SPARSE; None below
    ``smallest``), and each point's degree at eps = 1 (level 1's), from one pass over the upper triangle."""
    radius = 1.0
    degree = torch.zeros(n, dtype=torch.int64, device=device)
    a_parts: list[Tensor] = []
    b_parts: list[Tensor] = []
    d_parts: list[Tensor] = []
    pairs = 0  # a < b within the radius; stored both ways, plus the n pairs (a, a)
    for s, d2 in _upper_blocks(sq_distance, n, device, block):
        within_one = d2 <= 1.0
        e = s + d2.shape[0]
        degree[s:e] += within_one.sum(1)  # the square s..e-1 holds both orders: its columns are not added
        degree[e:] += within_one[:, e - s :].sum(0)
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
    if radius < smallest:
        return None, degree.cpu().numpy()
    everyone = torch.arange(n, device=device)
    a, b, d2 = torch.cat(a_parts), torch.cat(b_parts), torch.cat(d_parts)
    zero = torch.zeros(n, dtype=d2.dtype, device=device)
    a, b, d2 = torch.cat([a, b, everyone]), torch.cat([b, a, everyone]), torch.cat([d2, d2, zero])
    order = torch.argsort(a * n + b)
    return _Edges(a[order], b[order], d2[order], radius), degree.cpu().numpy()


def _edges_graph(edges: _Edges, far: Tensor, eps: float) -> tuple[_Graph, Tensor]:
    """G on the points ``far`` (a mask over all candidates) at ``eps``, from the stored edges; and the points."""
    points = far.nonzero()[:, 0]
    local = torch.cumsum(far.long(), 0) - 1  # candidate index -> local index
    keep = far[edges.a] & far[edges.b] & (edges.d2 <= eps * eps)
    a, b = local[edges.a[keep]], local[edges.b[keep]]  # still sorted by a
    degree = torch.bincount(a, minlength=points.shape[0])

    return _Graph(degree.cpu().numpy(), b.cpu().numpy()), points


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
    How each level gets its graph (level codes, stored pairs, or blocks computed again): the module doc.
    """
    n = sigma.shape[0]
    device = sigma.device
    sigma_min = max(float(sigma.min()), 2.0 ** (1 - MAX_LEVELS))
    levels = math.ceil(1.0 - math.log2(sigma_min))
    if n * n <= dense:
        added = _dense_levels(_level_codes(sq_distance, n, levels, device, block), levels)
    else:
        added = _sparse_levels(sq_distance, n, levels, device, block, max_pairs, dense)
    size, eps_list, sizes, H = 0, [], [], []
    for i, centres in enumerate(added, 1):
        eps = 2.0 ** (1 - i)
        size += centres.shape[0]
        eps_list.append(eps)
        sizes.append(size)
        H.append(eps * math.sqrt(2.0 * log_term(size, i, t, delta)))
    eps_t = torch.tensor(eps_list, dtype=sigma.dtype, device=device)
    H_t = torch.tensor(H, dtype=sigma.dtype, device=device)
    counts = (eps_t[None, :] >= sigma_min) & (eps_t[None, :] < sigma[:, None])  # N x levels
    bonus = (counts.to(sigma.dtype) * H_t).sum(1)
    return Chaining(eps_list, sizes, H, sigma_min, bonus)


def _sparse_levels(
    sq_distance: SqDistance, n: int, levels: int, device: torch.device, block: int, max_pairs: int, dense: int
) -> Iterator[Tensor]:
    """The centres added at each level, from stored pairs where their radius reaches, else from blocks."""
    smallest = 2.0 ** (1 - levels)
    to_centres = torch.full((n,), math.inf, dtype=torch.float64, device=device)  # d(x, T_(i-1))^2
    everyone = torch.arange(n, device=device)
    edges, degree_one = _stored_pairs(sq_distance, n, device, smallest, block, max_pairs)
    for i in range(1, levels + 1):
        eps = 2.0 ** (1 - i)
        far = to_centres > eps * eps
        if edges is not None and eps <= edges.radius:
            graph, points = _edges_graph(edges, far, eps)
            centres = points[torch.as_tensor(_greedy(graph, points.shape[0]), device=device)]
        elif i == 1 and n * n > dense:  # too many pairs to store: rows again, the degrees from the pass
            rows = _near_rows(sq_distance, everyone, 1.0)
            centres = torch.as_tensor(_greedy_dense(rows, np.ones(n, dtype=bool), block, degree_one), device=device)
        else:  # too many pairs within eps to store (that is why the radius is below it)
            centres = greedy_cover(sq_distance, everyone[far], eps, block, max_pairs, dense, store=False)
        yield centres
        if i < levels:  # the next level needs d(x, T_i) up to eps / 2; pairs farther apart are no longer needed
            if edges is not None and eps / 2 <= edges.radius:
                edges = edges.within(eps / 2)
                to_centres = _closer(to_centres, centres, edges, sq_distance, everyone, block)
            else:
                to_centres = _closer(to_centres, centres, None, sq_distance, everyone, block)


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
