"""Several objectives as one: ParEGO's augmented Chebyshev scalarisation (Knowles, IEEE TEC 2006), for the policies
that step on one value (``minucb``, ``la-minucb``, ``gibo``).

    normalise:  y_k = (Y_k - min Y_k) / (max Y_k - min Y_k) over the data, each objective to minimise (0 where
                an objective is constant)
    weights:    one lambda on the simplex {lambda >= 0, sum lambda = 1} per step, the same for the same (seed, step)
                (so a step's scalarisation is the same whenever it is recomputed); by default *stratified*: step t
                takes u_t = frac(s + t alpha) in [0, 1)^(k-1) (Roberts' R-sequence: alpha_j = phi_(k-1)^-j, phi_d the
                root of x^(d+1) = x + 1, the golden ratio for two objectives; s a shift seeded by the study), mapped to
                the simplex by the spacings of its sorted coordinates; ``uniform``: an independent uniform draw per step
    scalar:     s(x) = max_k lambda_k y_k(x) + rho sum_k lambda_k y_k(x),  rho = 0.05 (ParEGO's), minimised

Each minimiser of s is Pareto optimal, and as lambda varies from step to step the steps trace different parts of
the front (the augmentation term keeps weakly dominated points from tying). ParEGO draws lambda at random from a fixed
lattice of the simplex; a uniform draw (the normalised exponential spacing of ``sample_simplex``) has the same
distribution in the limit and needs no lattice size. Each lambda of the stratified sequence is still uniform on the
simplex (the shift is), but consecutive steps spread over it instead of clustering: a local policy takes only a few
steps in a small budget (three in 100 evaluations at d = 30), and independent draws often send two of them to the same
end of the front (results/multiobjective_findings.md: DTLZ2-10, both policies, 5 seeds paired).

>>> y = chebyshev(Y, step_weights(k=2, seed=7, step=3))   # Y: n x k to minimise -> y: n
"""

from __future__ import annotations

import torch
from torch import Tensor

RHO = 0.05  # ParEGO's augmentation
WEIGHTS = ("stratified", "uniform")  # how a step's lambda is drawn (the policies' ``scalarisation_weights``)


def simplex_weights(k: int, seed: int, step: int) -> Tensor:
    """k weights, uniform on the simplex, the same for the same (seed, step)."""
    generator = torch.Generator().manual_seed((seed * 1_000_003 + step * 7_919 + 17) % 2**62)
    e = -torch.log(torch.rand(k, generator=generator, dtype=torch.float64).clamp_min(1e-300))
    return e / e.sum()


def _r_sequence_step(dim: int) -> Tensor:
    """Roberts' R_dim step: alpha_j = phi^-j (j = 1..dim), phi the root of x^(dim + 1) = x + 1 (fixed point)."""
    phi = 2.0
    for _ in range(64):
        phi = (1.0 + phi) ** (1.0 / (dim + 1))
    return phi ** -torch.arange(1, dim + 1, dtype=torch.float64)


def stratified_weights(k: int, seed: int, step: int) -> Tensor:
    """k weights on the simplex for this step: the R-sequence's point ``step`` after a shift seeded by ``seed``,
    mapped by sorted spacings; consecutive steps spread over the simplex, each one uniform on it."""
    generator = torch.Generator().manual_seed((seed * 1_000_003 + 29) % 2**62)
    shift = torch.rand(k - 1, generator=generator, dtype=torch.float64)
    u = torch.frac(shift + step * _r_sequence_step(k - 1))
    edges = torch.cat([u.new_zeros(1), u.sort().values, u.new_ones(1)])
    return edges.diff()


def step_weights(k: int, seed: int, step: int, kind: str = "stratified") -> Tensor:
    """The weights of a step: ``stratified_weights`` or ``simplex_weights`` (``kind`` one of ``WEIGHTS``)."""
    if kind not in WEIGHTS:
        raise ValueError(f"weights {kind!r}: expected one of {', '.join(WEIGHTS)}")
    return stratified_weights(k, seed, step) if kind == "stratified" else simplex_weights(k, seed, step)


def chebyshev(Y: Tensor, weights: Tensor, rho: float = RHO) -> Tensor:
    """Y: n x k (every column minimised) -> n: the augmented Chebyshev scalarisation of the normalised Y."""
    Y = Y.to(torch.float64)
    if Y.shape[0] == 0:
        return Y.new_zeros(0)
    low, high = Y.min(0).values, Y.max(0).values
    width = high / 2 - low / 2  # halves: values near +-1.8e308 overflowed high - low (inf / inf: NaN)
    scaled = torch.where(width > 0, (Y / 2 - low / 2) / width.clamp_min(1e-300), torch.zeros_like(Y))
    w = weights.to(Y)
    return (w * scaled).max(-1).values + rho * (w * scaled).sum(-1)
