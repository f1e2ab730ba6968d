"""Random feasible polytopes for the property tests: linear constraints in the unit cube, equalities among them.

Each is built around an interior point x0 in [0.1, 0.9]^d, so it is never empty: an inequality a u <= a x0 + s
(s >= 0, sometimes tiny), an equality a u == a x0 (a mixture row of ones now and then).
"""

from __future__ import annotations

import torch
from localbo.policies.base import Polytope


def random_polytope(g: torch.Generator, d: int, m: int, equalities: int) -> tuple[Polytope, torch.Tensor]:
    """A polytope of ``m`` constraints over d coordinates, ``equalities`` of them equalities, and its point x0."""
    x0 = 0.1 + 0.8 * torch.rand(d, generator=g, dtype=torch.float64)
    A = torch.randn(m, d, generator=g, dtype=torch.float64)
    sparse = torch.rand(m, d, generator=g, dtype=torch.float64) < 0.5  # real constraints name a few parameters
    A = torch.where(sparse & (torch.arange(d) >= 2), torch.zeros_like(A), A)
    if equalities and bool(torch.rand(1, generator=g) < 0.5):
        A[0] = 1.0  # a mixture: every share sums to a constant
    slack = torch.rand(m, generator=g, dtype=torch.float64) * 0.3
    slack[torch.rand(m, generator=g) < 0.2] = 1e-6  # a nearly active constraint now and then
    b = A @ x0
    eq = torch.arange(m) < equalities
    return Polytope(A[~eq], (b + slack)[~eq], A[eq], b[eq]), x0


def cases(count: int, seed: int = 0, d_max: int = 20) -> list[tuple[Polytope, torch.Tensor]]:
    """``count`` polytopes: 2..d_max coordinates, 1..5 constraints, up to 2 of them equalities (fewer than d)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        d = int(torch.randint(2, d_max + 1, (1,), generator=g))
        m = int(torch.randint(1, 6, (1,), generator=g))
        e = int(torch.randint(0, min(2, m, d - 1) + 1, (1,), generator=g))
        out.append(random_polytope(g, d, m, e))
    return out
