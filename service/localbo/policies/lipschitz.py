"""Lipschitz bounds on f from the observations, and the growing estimate of L.

From "Combining Bayesian Optimization and Lipschitz Optimization" (Ahmed, Vaswani, Schmidt), eqs. 6-7,
in our minimisation form (the paper maximises; negating y swaps the roles of its two bounds):

    f_l(x) = max_i  y_i - L ||x - x_i||        f_u(x) = min_i  y_i + L ||x - x_i||      (x in [0, 1]^d)
    L_lb   = max_{i != j} |y_i - y_j| / ||x_i - x_j||,    L = kappa * t * L_lb    (kappa = 10, t = n)

The bounds are equivariant under y -> a y + b, so computing them in the units of y with L in those
units is the paper's "standardise y, divide L by its standard deviation". L_lb is a max over a
growing set of pairs and t grows, so L never decreases as observations arrive. A known L (a
physical limit) is used as is; it is in units of y per unit of the normalised parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

KAPPA = 10.0
_CHUNK = 2048  # rows of the distance matrix computed at once


def distances(A: Tensor, B: Tensor) -> Tensor:
    """||a - b|| for A: k x d, B: n x d -> k x n; differentiable everywhere (also at a = b)."""
    sq = (A.unsqueeze(-2) - B).square().sum(-1)
    return sq.clamp_min(1e-30).sqrt()


def slope_lower_bound(X: Tensor, y: Tensor) -> float:
    """L_lb: the largest |y_i - y_j| / ||x_i - x_j|| over pairs of distinct points (0 for fewer than two)."""
    best = 0.0
    for start in range(0, X.shape[0], _CHUNK):
        dist = torch.cdist(X[start : start + _CHUNK], X)
        rise = (y[start : start + _CHUNK].unsqueeze(-1) - y).abs()
        slopes = torch.where(dist > 1e-12, rise / dist.clamp_min(1e-12), torch.zeros_like(rise))
        best = max(best, float(slopes.max()))
    return best


@dataclass(frozen=True)
class LipschitzEstimate:
    L: float  # the constant the bounds use (inf: no usable estimate, the bounds are vacuous)
    L_lb: float  # the largest observed slope
    t: int  # observations it was computed on
    known: bool  # L came from the study's config

    def as_dict(self) -> dict[str, float | int | bool | None]:
        return {"L": self.L if math.isfinite(self.L) else None, "L_lb": self.L_lb, "t": self.t, "known": self.known}


def estimate(X: Tensor, y: Tensor, kappa: float = KAPPA, known: float | None = None) -> LipschitzEstimate:
    """L = kappa * n * L_lb (or ``known``); infinite while no two distinct points differ in value."""
    n = X.shape[0]
    L_lb = slope_lower_bound(X, y) if n >= 2 else 0.0
    if known is not None:
        return LipschitzEstimate(float(known), L_lb, n, True)
    return LipschitzEstimate(kappa * n * L_lb if L_lb > 0 else math.inf, L_lb, n, False)


class LipschitzBounds:
    """f_l and f_u of the observations (X: n x d, y: n) with constant L, at any points."""

    def __init__(self, X: Tensor, y: Tensor, L: float) -> None:
        self.X, self.y, self.L = X, y, L
        self.y_best = float(y.min())

    def __call__(self, Xc: Tensor) -> tuple[Tensor, Tensor]:
        """(f_l, f_u) at Xc: k x d -> (k, k); (-inf, +inf) when L is infinite."""
        k = Xc.shape[0]
        if not math.isfinite(self.L):
            inf = torch.full((k,), math.inf, dtype=Xc.dtype, device=Xc.device)
            return -inf, inf
        lower, upper = [], []
        for start in range(0, k, _CHUNK):
            reach = self.L * distances(Xc[start : start + _CHUNK], self.X)  # chunk x n
            lower.append((self.y - reach).amax(-1))
            upper.append((self.y + reach).amin(-1))
        return torch.cat(lower), torch.cat(upper)
