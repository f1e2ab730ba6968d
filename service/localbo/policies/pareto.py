"""Pareto fronts and hypervolumes of several objectives, all to MINIMISE (BoTorch's utilities, negated).

Every function takes ``Y``: n x k (k >= 1 objectives, each column to minimise, as ``SuggestRequest.Y``) and, where it
needs one, a ``reference_point``: k in the same units. A point counts in the hypervolume only when it is strictly below
the reference point in every column; the hypervolume of a set is the volume of the region it dominates between it and
the reference point:

    HV(Y) = vol{ z : z <= ref and y <= z (componentwise) for some row y of Y }

BoTorch maximises, so each function negates: ``is_non_dominated(-Y)``, ``DominatedPartitioning(-ref, -Y)``. With one
objective (k = 1) the same definitions reduce to HV = max(ref - min(y), 0), computed directly.

    non_dominated(Y)                        the Pareto-optimal rows (mask), duplicates counted once
    pareto_front(Y, C)                      the same among the feasible rows (C: n x m, all <= 0 feasible)
    infer_reference_point(Y)                BoTorch's rule, see below
    hypervolume(Y, ref)                     HV of the rows (dominated rows and rows not below ref add nothing)
    hypervolume_history(Y, ref, C)          HV of the first i rows (feasible ones), i = 1..n
    hypervolume_improvement(Z, Y, ref)      HV(Y + z) - HV(Y) for each row z of Z alone
    hypervolume_contributions(Y, ref)       HV(F) - HV(F without row i), F Y's front: the exclusive share of each row

``infer_reference_point`` (BoTorch's ``infer_reference_point`` with scale 0.1, Ishibuchi et al. 2011): the nadir of the
Pareto front (each objective's worst value among the non-dominated rows) plus 10 % of the front's range in each
objective (a range of 0 counts as 1e-7); a front of one row: that row plus 10 % of its absolute value (at least 1e-7).
"""

from __future__ import annotations

import torch
from botorch.utils.multi_objective.box_decompositions.dominated import DominatedPartitioning
from botorch.utils.multi_objective.box_decompositions.non_dominated import FastNondominatedPartitioning
from botorch.utils.multi_objective.hypervolume import infer_reference_point as _botorch_reference_point
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor

__all__ = [
    "feasible",
    "hypervolume",
    "hypervolume_contributions",
    "hypervolume_history",
    "hypervolume_improvement",
    "infer_reference_point",
    "non_dominated",
    "pareto_front",
]


def _as_matrix(Y: Tensor) -> Tensor:
    Y = Y.detach().to(torch.float64)
    return Y.reshape(-1, 1) if Y.ndim == 1 else Y


def feasible(C: Tensor | None, n: int) -> Tensor:
    """n (bool): the rows whose outcome constraints all hold (C: n x m, <= 0 where one holds); all when C is None."""
    if C is None or C.numel() == 0:
        return torch.ones(n, dtype=torch.bool)
    return (C.detach().to(torch.float64).reshape(n, -1) <= 0).all(-1).cpu()


def non_dominated(Y: Tensor) -> Tensor:
    """n (bool): the rows of Y (n x k, minimised) that no other row dominates (no worse in every column, better in
    one); of equal rows only the first. Rows holding a NaN are dominated."""
    Y = _as_matrix(Y)
    if Y.shape[0] == 0:
        return torch.zeros(0, dtype=torch.bool)
    return is_non_dominated(Y.cpu(), maximize=False, deduplicate=True)


def pareto_front(Y: Tensor, C: Tensor | None = None) -> Tensor:
    """n (bool): the non-dominated rows among the feasible ones (C: n x m, all <= 0 feasible; None: all feasible)."""
    Y = _as_matrix(Y)
    ok = feasible(C, Y.shape[0])
    mask = torch.zeros(Y.shape[0], dtype=torch.bool)
    if bool(ok.any()):
        mask[ok.nonzero()[:, 0]] = non_dominated(Y[ok.to(Y.device)])
    return mask


def infer_reference_point(Y: Tensor, scale: float = 0.1) -> Tensor:
    """k: a reference point from the data (the rule in the module's docstring), in Y's (minimised) units.
    Y's front is taken over all its rows: pass the feasible rows only when there are constraints."""
    Y = _as_matrix(Y).cpu()
    if Y.shape[0] == 0:
        raise ValueError("no rows to infer a reference point from")
    front = Y[non_dominated(Y)]
    return -_botorch_reference_point(-front, scale=scale)


def _below(Y: Tensor, reference_point: Tensor) -> Tensor:
    """The rows of Y strictly below the reference point in every column (only they count in a hypervolume)."""
    return Y[(Y < reference_point).all(-1)]


def _ref(reference_point: Tensor, k: int) -> Tensor:
    ref = reference_point.detach().to(torch.float64).cpu().reshape(-1)
    if ref.numel() != k:
        raise ValueError(f"a reference point of {ref.numel()} values for {k} objectives")
    return ref


def hypervolume(Y: Tensor, reference_point: Tensor) -> float:
    """HV of the rows of Y (n x k, minimised) with respect to ``reference_point`` (k); 0 when none is below it."""
    Y = _as_matrix(Y).cpu()
    ref = _ref(reference_point, Y.shape[-1])
    Y = _below(Y, ref)
    if Y.shape[0] == 0:
        return 0.0
    if Y.shape[-1] == 1:
        return float(ref[0] - Y[:, 0].min())
    Y = Y[non_dominated(Y)]
    return float(DominatedPartitioning(ref_point=-ref, Y=-Y).compute_hypervolume())


def hypervolume_history(Y: Tensor, reference_point: Tensor, C: Tensor | None = None) -> list[float]:
    """The hypervolume of the first i rows of Y, i = 1..n (the infeasible rows, C: n x m, counted as absent): the
    study's hypervolume after each result, in Y's row order. Recomputed only when a row enters the front."""
    Y = _as_matrix(Y).cpu()
    ref = _ref(reference_point, Y.shape[-1])
    ok = feasible(C, Y.shape[0])
    front = Y.new_zeros(0, Y.shape[-1])
    value, out = 0.0, []
    for i in range(Y.shape[0]):
        y = Y[i]
        useful = bool(ok[i]) and bool((y < ref).all())
        if useful and front.shape[0]:
            useful = not bool((front <= y).all(-1).any())  # weakly dominated: nothing new
        if useful:
            front = torch.cat([front[~(y <= front).all(-1)], y[None]])
            value = hypervolume(front, ref)
        out.append(value)
    return out


def hypervolume_improvement(Z: Tensor, Y: Tensor, reference_point: Tensor) -> Tensor:
    """r: HV(Y with z) - HV(Y) for each row z of Z (r x k) alone, Y: n x k (its rows need not be non-dominated).

    The box decomposition of the region Y does not dominate (BoTorch's ``FastNondominatedPartitioning``, the cells
    qEHVI integrates over) gives each improvement at once: sum over the cells [l, u] of prod_j max(min(z_j, u_j) - l_j,
    0) in the negated (maximised) units."""
    Z = _as_matrix(Z)
    k = Z.shape[-1]
    ref = _ref(reference_point, k).to(Z.device)
    Yb = _below(_as_matrix(Y).to(Z.device), ref)
    if k == 1:
        best = Yb[:, 0].min() if Yb.shape[0] else ref[0]
        return (best - Z[:, 0]).clamp_min(0)  # best <= ref: a z not below ref improves nothing
    if Yb.shape[0] == 0:  # nothing below the reference point: each z improves by its own box
        return (ref - Z).clamp_min(0).prod(-1)
    partitioning = FastNondominatedPartitioning(ref_point=-ref, Y=-Yb[non_dominated(Yb).to(Yb.device)])
    cells = partitioning.get_hypercell_bounds()  # 2 x c x k, maximised units
    lower, upper = cells[0], cells[1]
    z = -Z.unsqueeze(-2)  # r x 1 x k
    sides = (torch.minimum(z, upper) - lower).clamp_min(0)  # r x c x k
    return sides.prod(-1).sum(-1)


def hypervolume_contributions(Y: Tensor, reference_point: Tensor) -> Tensor:
    """n: the volume only row i dominates, HV(F) - HV(F without row i) over the front F of Y (0 for a dominated row, a
    repeated row or one not below the reference point; the rows it dominates do not step in). Computed as
    vol[y_i, ref] - HV({max(y_i, y_j) : j != i}): the other rows limited to row i's box, which dominance mostly thins
    out."""
    Y = _as_matrix(Y).cpu()
    ref = _ref(reference_point, Y.shape[-1])
    out = torch.zeros(Y.shape[0], dtype=torch.float64)
    useful = non_dominated(Y) & (Y < ref).all(-1)
    index = useful.nonzero()[:, 0]
    front = Y[index]
    for j, i in enumerate(index.tolist()):
        limited = torch.maximum(torch.cat([front[:j], front[j + 1 :]]), front[j])
        out[i] = max(float((ref - front[j]).prod()) - hypervolume(limited, ref), 0.0)
    return out
