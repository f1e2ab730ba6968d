"""Staying inside a polytope (linear parameter constraints in the unit cube) for the local policies' steps and
exploration points: its rows built once per call, the exact test, the pull back into it along a segment, and SLSQP
under it (and under nonlinear constraints: the local policies' outcome-constraint bounds).

    inside(polytope, X, lo, hi)             which rows of X lie in box ∩ polytope (within ``Polytope.TOLERANCE``)
    into_polytope(polytope, X, anchor, ..)  each row projected onto the equalities, then moved back towards its
                                            anchor (a point inside) as far as the box and the inequalities need
    slsqp(fun, x0, lo, hi, polytope, g, ..) argmin fun over box ∩ polytope ∩ {g >= 0}, brought exactly inside
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

from localbo.policies.base import Polytope


@dataclass(frozen=True)
class Rows:
    """A polytope's rows as float64 tensors (CPU), with the pseudo-inverse of A_eq, built once per call."""

    A_ub: Tensor  # k x d
    b_ub: Tensor  # k
    A_eq: Tensor  # e x d
    b_eq: Tensor  # e
    pinv_eq: Tensor  # d x e

    @classmethod
    def of(cls, polytope: Polytope | Rows | None) -> Rows | None:
        if polytope is None or isinstance(polytope, Rows):
            return polytope
        A_ub, A_eq = (a.detach().cpu().double() for a in (polytope.A_ub, polytope.A_eq))
        d = A_ub.shape[-1] if A_ub.ndim == 2 and A_ub.numel() else A_eq.shape[-1]
        A_ub, A_eq = A_ub.reshape(-1, d), A_eq.reshape(-1, d)
        b_ub, b_eq = (b.detach().cpu().double().reshape(-1) for b in (polytope.b_ub, polytope.b_eq))
        pinv = torch.linalg.pinv(A_eq) if A_eq.shape[0] else A_eq.new_zeros(d, 0)
        return cls(A_ub, b_ub, A_eq, b_eq, pinv)

    def to(self, like: Tensor) -> Rows:
        if self.A_ub.device == like.device:
            return self
        return Rows(*(t.to(like.device) for t in (self.A_ub, self.b_ub, self.A_eq, self.b_eq, self.pinv_eq)))

    def violation(self, X: Tensor) -> Tensor:
        """The largest violation of each row of X (k x d -> k; <= 0: satisfied), as ``Polytope.violation``."""
        parts = [torch.zeros(X.shape[0], dtype=X.dtype, device=X.device)]
        if self.b_ub.numel():
            parts.append((X @ self.A_ub.T - self.b_ub).amax(dim=-1))
        if self.b_eq.numel():
            parts.append((X @ self.A_eq.T - self.b_eq).abs().amax(dim=-1))
        return torch.stack(parts, dim=-1).amax(dim=-1)


def inside(polytope: Polytope | Rows | None, X: Tensor, lo: Tensor | None = None, hi: Tensor | None = None) -> Tensor:
    """k (bool): the rows of X (k x d) in box ∩ polytope within ``Polytope.TOLERANCE`` (the box: the cube)."""
    lo = torch.zeros_like(X[0]) if lo is None else lo
    hi = torch.ones_like(X[0]) if hi is None else hi
    tol = Polytope.TOLERANCE
    ok = ((X >= lo - tol) & (X <= hi + tol)).all(-1)
    rows = Rows.of(polytope)
    if rows is not None:
        ok &= rows.to(X).violation(X.to(torch.float64)) <= tol
    return ok


def into_polytope(polytope: Polytope | Rows | None, X: Tensor, anchor: Tensor, lo: Tensor, hi: Tensor) -> Tensor:
    """Each row of X (k x d) brought into box ∩ polytope: projected onto the equalities, then moved back along the
    segment from its anchor (a point of box ∩ polytope: d, or k x d, one per row) as far as the box and the
    inequalities need; a row that still fails the exact test is its anchor. Convex region, so the segment between
    two of its points stays in it: the result is the point of the segment nearest to X's projection."""
    anchor = anchor.to(X).expand_as(X)
    lo, hi = lo.to(X), hi.to(X)
    rows = Rows.of(polytope)
    rows = None if rows is None else rows.to(X)
    if rows is not None and rows.b_eq.numel():
        X = X - (rows.pinv_eq @ (X @ rows.A_eq.T - rows.b_eq).T).T  # onto A_eq x = b_eq
    D = X - anchor
    rates, rooms = [D, -D], [hi - anchor, anchor - lo]
    if rows is not None and rows.b_ub.numel():
        rates.append(D @ rows.A_ub.T)
        rooms.append(rows.b_ub - anchor @ rows.A_ub.T)
    rate, room = torch.cat(rates, -1), torch.cat(rooms, -1).clamp_min(0.0)
    limits = torch.where(rate > 0, room / rate.clamp_min(1e-300), torch.full_like(rate, math.inf))
    lam = limits.amin(-1).clamp(0.0, 1.0)
    out = torch.minimum(torch.maximum(anchor + lam.unsqueeze(-1) * D, lo), hi)
    return torch.where(inside(rows, out, lo, hi).unsqueeze(-1), out, anchor)


def slsqp(
    fun: Callable[[Tensor], Tensor],
    x0: Tensor,
    lo: Tensor,
    hi: Tensor,
    polytope: Polytope | Rows | None,
    nonlinear: Callable[[Tensor], Tensor] | None,
    maxiter: int,
) -> Tensor | None:
    """argmin fun over [lo, hi] ∩ polytope ∩ {nonlinear(x) >= 0} by SLSQP from x0 (d; fun: 1 x d -> 1,
    nonlinear: 1 x d -> 1 x r), brought exactly into box ∩ polytope along the segment from x0 (inside)."""
    like, d = x0, x0.shape[-1]

    def tensor(v: np.ndarray) -> Tensor:
        return torch.tensor(v, dtype=torch.float64, device=like.device)

    def value(v: np.ndarray) -> tuple[float, np.ndarray]:
        x = tensor(v).requires_grad_(True)
        f = fun(x.unsqueeze(0)).sum()
        (grad,) = torch.autograd.grad(f, x)
        return float(f.detach()), torch.nan_to_num(grad).cpu().numpy()

    constraints: list[dict[str, Any]] = []
    rows = Rows.of(polytope)
    if rows is not None:
        A_ub, b_ub, A_eq, b_eq = (t.numpy() for t in (rows.A_ub, rows.b_ub, rows.A_eq, rows.b_eq))
        if b_ub.size:
            constraints.append({"type": "ineq", "fun": lambda v: b_ub - A_ub @ v, "jac": lambda v: -A_ub})
        if b_eq.size:
            constraints.append({"type": "eq", "fun": lambda v: A_eq @ v - b_eq, "jac": lambda v: A_eq})
    if nonlinear is not None:
        g = nonlinear

        def cons(v: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                return g(tensor(v).unsqueeze(0)).reshape(-1).cpu().numpy()

        def jac(v: np.ndarray) -> np.ndarray:
            J = torch.autograd.functional.jacobian(lambda x: g(x.unsqueeze(0)).reshape(-1), tensor(v))
            return torch.nan_to_num(J).reshape(-1, d).cpu().numpy()

        constraints.append({"type": "ineq", "fun": cons, "jac": jac})
    try:
        result = minimize(
            value,
            x0.detach().cpu().numpy(),
            jac=True,
            method="SLSQP",
            bounds=list(zip(lo.tolist(), hi.tolist(), strict=True)),
            constraints=constraints,
            options={"maxiter": maxiter},
        )
    except (ValueError, RuntimeError, np.linalg.LinAlgError):  # a numerical failure: no result from this start
        return None
    if not np.all(np.isfinite(result.x)):
        return None
    return into_polytope(polytope, tensor(result.x).unsqueeze(0), x0, lo, hi)[0]
