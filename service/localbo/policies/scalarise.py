"""Several objectives as one: ParEGO's augmented Chebyshev scalarisation (Knowles, IEEE TEC 2006), for the policies
that step on one value (``minucb``, ``la-minucb``, ``gibo``).

    normalise:  y_k = (Y_k - min Y_k) / (max Y_k - min Y_k) over the data, each objective to minimise (0 where
                an objective is constant)
    weights:    lambda drawn uniformly from the simplex {lambda >= 0, sum lambda = 1}, one draw per step, seeded
                by the study's seed and the step (so a step's scalarisation is the same whenever it is recomputed)
    scalar:     s(x) = max_k lambda_k y_k(x) + rho sum_k lambda_k y_k(x),  rho = 0.05 (ParEGO's), minimised

Each minimiser of s is Pareto optimal, and as lambda varies from step to step the steps trace different parts of
the front (the augmentation term keeps weakly dominated points from tying). ParEGO draws lambda from a fixed
lattice of the simplex; a uniform draw (the normalised exponential spacing of ``sample_simplex``) has the same
distribution in the limit and needs no lattice size.

>>> y = chebyshev(Y, simplex_weights(k=2, seed=7, step=3))   # Y: n x k to minimise -> y: n
"""

from __future__ import annotations

import torch
from torch import Tensor

RHO = 0.05  # ParEGO's augmentation


def simplex_weights(k: int, seed: int, step: int) -> Tensor:
    """k weights, uniform on the simplex, the same for the same (seed, step)."""
    generator = torch.Generator().manual_seed((seed * 1_000_003 + step * 7_919 + 17) % 2**62)
    e = -torch.log(torch.rand(k, generator=generator, dtype=torch.float64).clamp_min(1e-300))
    return e / e.sum()


def chebyshev(Y: Tensor, weights: Tensor, rho: float = RHO) -> Tensor:
    """Y: n x k (every column minimised) -> n: the augmented Chebyshev scalarisation of the normalised Y."""
    Y = Y.to(torch.float64)
    if Y.shape[0] == 0:
        return Y.new_zeros(0)
    low, high = Y.min(0).values, Y.max(0).values
    width = high - low
    scaled = torch.where(width > 0, (Y - low) / width.clamp_min(1e-300), torch.zeros_like(Y))
    w = weights.to(Y)
    return (w * scaled).max(-1).values + rho * (w * scaled).sum(-1)
