"""Where the gradient's exploration points of a constrained local policy may go: the local box around x_t, inside
the parameter constraints and where the constraint models allow (``exploration.Region``; the rules are stated in
``local_constraints``' docstring, "exploration")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from localbo.policies.polytope import EmptyRegion, sample
from localbo.policies.polytope_steps import into_polytope

if TYPE_CHECKING:
    from localbo.policies.local_constraints import Constraints

PULL_BACK = tuple(0.5**k for k in range(1, 7))  # the fractions of an exploration point's offset from x_t tried


@dataclass(frozen=True)
class ExplorationRegion:
    """``exploration.Region`` for the local box around ``anchor`` (x_t): polytope and models."""

    constraints: Constraints
    anchor: Tensor  # d, inside the polytope

    def sample(self, n: int, lo: Tensor, hi: Tensor, generator: torch.Generator) -> Tensor:
        """n x d starts in box ∩ polytope: hit-and-run (``polytope.sample``), or scrambled Sobol points in the box."""
        polytope = self.constraints.polytope
        if polytope is not None:
            try:
                return sample(polytope, n, generator, lo, hi, thinning=1).to(self.anchor)
            except EmptyRegion:  # only rounding can make the box around x_t miss the polytope
                return self.anchor.expand(n, -1).clone()
        seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
        U = torch.quasirandom.SobolEngine(lo.shape[-1], scramble=True, seed=seed).draw(n, dtype=torch.float64)
        return lo + (hi - lo) * U.to(lo)

    def move(self, Z: Tensor, moved: Tensor, lo: Tensor, hi: Tensor) -> Tensor:
        """``moved`` (k x d) brought into box ∩ polytope along the segments from Z's rows (inside)."""
        if self.constraints.rows is None:
            return moved
        return into_polytope(self.constraints.rows, moved, Z, lo, hi)

    def allows(self, Z: Tensor) -> Tensor:
        return self.constraints.allows(Z)

    def admit(self, Z: Tensor, lo: Tensor, hi: Tensor) -> Tensor:
        """Z (k x d) into box ∩ polytope along the segment from the anchor, then, where the models refuse a row,
        pulled back towards the anchor (``PULL_BACK``) to the first point they allow; else the anchor."""
        Z = into_polytope(self.constraints.rows, Z, self.anchor, lo, hi)
        ok = self.allows(Z)
        if bool(ok.all()):
            return Z
        out = Z.clone()
        for i in (~ok).nonzero()[:, 0].tolist():
            fractions = torch.tensor(PULL_BACK, dtype=Z.dtype, device=Z.device).unsqueeze(-1)
            tries = self.anchor + fractions * (Z[i] - self.anchor)
            good = self.allows(tries)
            out[i] = tries[int(good.nonzero()[0, 0])] if bool(good.any()) else self.fallback(lo, hi)
        return out

    def fallback(self, lo: Tensor, hi: Tensor) -> Tensor:
        """Where a row that no pull-back makes allowed goes: the anchor; in safe mode the known-safe point of the
        box nearest to it (the anchor itself once it has met every limit), for the anchor is a step's point,
        predicted safe but not yet measured: rows stacked on it would share its risk (welded_beam: up to 5 of a
        batch's rows on a new x_t that then broke a limit)."""
        known = self.constraints.known_safe
        if not self.constraints.safe or known is None or not known.shape[0]:
            return self.anchor
        known = known.to(self.anchor)
        known = known[((known >= lo) & (known <= hi)).all(-1)]
        if not known.shape[0]:
            return self.anchor
        return known[int((known - self.anchor).pow(2).sum(-1).argmin())]
