"""Local exploration shared by gibo and minucb: points that make the gradient at x_t certain.

    alpha_trace(x_t, Z) = tr Cov(grad f(x_t) | D, Z)        (GIBO; MinUCB paper eq. 5; algorithms.md 1.1-1.2)

Greedy and sequential, q = 1 at a time, as the GIBO reference code: z_i = argmax_z of the trace
reduction r(z) = |c(z)|^2 / s(z) given D, the points already chosen and the pending ones, inside the box
x_t +- delta clipped to [0, 1]^d. The trace needs no values at Z, so a whole iteration's batch is chosen
in one call. Early stop (GIBO's epsilon): after point i >= 2, stop once its reduction falls below
epsilon (kernel units).

``explore`` (the trace reduction, batched): for point i, ``raw_samples`` Sobol points in the box give
``num_restarts`` starts (``acqopt.initial_conditions``, seeded by (seed, i), never torch's global RNG),
joined by the last point's other refined candidates (warm starts: adding one point changes r little
away from it); all of them climb together by projected gradient ascent (one batched evaluation of r and
its closed-form gradient per step, each candidate with its own step length, a step kept only where it
raises r), and the best is chosen; the trace then takes the point by a bordered update
(``gradients.RankOneTrace``). ``explore_sequential``: any acquisition built from a ``GradientTrace``
(mpd's), one ``optimize_acqf`` per point with 5 restarts and 64 raw samples, as the GIBO code.

With a ``Region`` (parameter constraints, a safe set: ``exploration_region.ExplorationRegion``) the points also stay
in it: the raw samples come from the box ∩ polytope (hit-and-run), the ``num_restarts`` best of those the region
allows start (deterministic, no Boltzmann draw), each ascent move is brought back into the polytope along its
segment and refused where the region's models do not allow it, and a chosen point the region does not allow is
pulled back towards x (``Region.admit``). Without one, everything is as above.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.optim import optimize_acqf
from torch import Tensor

from localbo.policies.acqopt import initial_conditions
from localbo.policies.gradients import GradientTrace, KernelParams, RankOneTrace

ASCENT_STEPS = 40  # projected gradient steps per point, for all of its candidates at once
FIRST_STEP = 0.1  # the first step's largest move, as a fraction of the box's widest side
GROW, SHRINK = 2.0, 0.25  # a candidate's step length after a step that raised r / one that did not


class GradientInformation(AcquisitionFunction):
    """alpha(z) = tr Cov(grad f(x) | A) - tr Cov(grad f(x) | A, z): how much z shrinks the gradient's uncertainty."""

    def __init__(self, trace: GradientTrace) -> None:
        super().__init__(model=None)  # type: ignore[arg-type]  # the kernel and the inputs are all it needs
        self.trace = trace

    def forward(self, X: Tensor) -> Tensor:
        """X: batch x q x d -> batch."""
        return self.trace.reduction(X)


class Region(Protocol):
    """Where exploration points may lie within the box (bounds: lo, hi, each d), besides the box itself."""

    def sample(self, n: int, lo: Tensor, hi: Tensor, generator: torch.Generator) -> Tensor:
        """n x d raw points of the box inside the region's hard limits (parameter constraints)."""
        ...

    def move(self, Z: Tensor, moved: Tensor, lo: Tensor, hi: Tensor) -> Tensor:
        """The moves Z -> moved (k x d; Z's rows inside) brought back inside the hard limits."""
        ...

    def allows(self, Z: Tensor) -> Tensor:
        """k (bool): the rows of Z (k x d) the region's models allow (a safe set)."""
        ...

    def admit(self, Z: Tensor, lo: Tensor, hi: Tensor) -> Tensor:
        """Z (k x d) moved to points the region allows (towards its anchor, x)."""
        ...


@dataclass
class Exploration:
    Z: Tensor  # k x d, the chosen points in order
    trace_before: float  # tr Cov(grad f(x) | A), kernel units
    trace_after: float  # tr Cov(grad f(x) | A, Z)


def local_box(x: Tensor, delta: float) -> Tensor:
    """Bounds 2 x d of the box x +- delta clipped to the unit cube."""
    return torch.stack([(x - delta).clamp(0.0, 1.0), (x + delta).clamp(0.0, 1.0)])


def explore(
    params: KernelParams,
    A: Tensor,
    x: Tensor,
    count: int,
    bounds: Tensor,
    *,
    epsilon: float | None = None,
    min_count: int = 0,
    num_restarts: int = 5,
    raw_samples: int = 64,
    seed: int = 0,
    acquisition: Callable[[GradientTrace], AcquisitionFunction] | None = None,
    ascent_steps: int = ASCENT_STEPS,
    region: Region | None = None,
    search_iterations: int | None = None,
) -> Exploration:
    """Up to ``count`` points (at least ``min_count``) that greedily minimise alpha_trace at x.

    A: n x d, the inputs conditioned on (observed, pending, planned); x: d; bounds: 2 x d.
    ``acquisition`` None: GIBO's trace reduction, batched (see the module's docstring); otherwise an
    acquisition built from the trace, which ``explore_sequential`` extends point by point (mpd's).
    ``region``: where else the points must lie (the module's docstring); None: the box only.
    """
    if acquisition is not None:
        return explore_sequential(
            params, A, x, count, bounds, epsilon=epsilon, min_count=min_count, num_restarts=num_restarts,
            raw_samples=raw_samples, seed=seed, acquisition=acquisition, region=region,
            search_iterations=search_iterations,
        )  # fmt: skip
    trace = RankOneTrace(params, A, x, capacity=count)
    trace_before = float(trace.trace)
    d = x.shape[-1]
    lo, hi = bounds[0].to(x), bounds[1].to(x)
    step_scale = params.lengthscale**2 / params.lengthscale.pow(2).mean()  # ascent in the kernel's own metric

    def score(X: Tensor) -> Tensor:  # b x 1 x d -> b, for the starts
        return trace.reduction(X.reshape(-1, d))

    chosen: list[Tensor] = []
    warm = x.new_zeros(0, d)
    for i in range(count):
        generator = torch.Generator().manual_seed((seed + i) % 2**63)
        if region is None:
            starts = initial_conditions(score, bounds, 1, num_restarts, raw_samples, generator).reshape(-1, d)
        else:
            starts = region_starts(trace.reduction, region, lo, hi, num_restarts, raw_samples, generator)
        Z, values = ascend(
            trace.reduction_and_grad, torch.cat([starts, warm]), lo, hi, ascent_steps, step_scale, region=region
        )
        if region is not None:
            values = torch.where(region.allows(Z), values, torch.full_like(values, -torch.inf))
        best = int(values.argmax())
        z, gain = Z[best], float(values[best])
        if region is not None and not bool(region.allows(z.unsqueeze(0))[0]):
            z = region.admit(z.unsqueeze(0), lo, hi)[0]
            gain = float(trace.reduction(z.unsqueeze(0))[0])
        chosen.append(z.reshape(1, -1))
        trace.extend(z)
        others = torch.cat([values[:best], values[best + 1 :]]).argsort(descending=True)[:num_restarts]
        warm = torch.cat([Z[:best], Z[best + 1 :]])[others]
        if epsilon is not None and i >= 1 and i + 1 >= min_count and gain < epsilon:
            break
    Z = torch.cat(chosen) if chosen else x.new_zeros(0, d)
    return Exploration(Z, trace_before, float(trace.trace))


def region_starts(
    score: Callable[[Tensor], Tensor],
    region: Region,
    lo: Tensor,
    hi: Tensor,
    num_restarts: int,
    raw_samples: int,
    generator: torch.Generator,
) -> Tensor:
    """num_restarts x d starts: the best-scoring of ``raw_samples`` points of the region (score: k x d -> k) that it
    allows, then the best of the others when too few are allowed."""
    raw = region.sample(max(raw_samples, num_restarts), lo, hi, generator)
    with torch.no_grad():
        values = score(raw)
    allowed = region.allows(raw)
    rank = torch.where(allowed, values, values - (values.abs().max() + 1.0) * 2.0)  # the allowed ones first
    rank = torch.nan_to_num(rank, nan=-torch.inf)
    return raw[rank.argsort(descending=True)[:num_restarts]]


def ascend(
    f: Callable[[Tensor], tuple[Tensor, Tensor]],
    Z: Tensor,
    lo: Tensor,
    hi: Tensor,
    steps: int,
    scale: Tensor | None = None,
    region: Region | None = None,
) -> tuple[Tensor, Tensor]:
    """Projected gradient ascent of f (k x d -> values k, gradients k x d) from every row of Z (k x d) at once.

    Each row z moves to clip(z + a * scale * grad, lo, hi) when that raises f (then a doubles), else stays
    (a shrinks 4x); its first a moves it at most FIRST_STEP of the box's widest side. One evaluation of f
    per step for all rows. Returns (the rows after ``steps`` steps, their values): no row ends below its start.
    With a ``region`` a move is brought back inside its hard limits along its segment (``Region.move``; Z's rows
    inside them) and refused where the region does not allow the point it reaches.
    """
    values, grad = f(Z)
    scale = torch.ones_like(lo) if scale is None else scale
    direction = grad * scale
    reach = direction.abs().amax(-1)
    a = torch.where(reach > 0, FIRST_STEP * float((hi - lo).max()) / reach.clamp_min(1e-300), torch.zeros_like(reach))
    for _ in range(steps):
        moved = torch.minimum(torch.maximum(Z + a.unsqueeze(-1) * direction, lo), hi)
        if region is not None:
            moved = region.move(Z, moved, lo, hi)
        new_values, new_grad = f(moved)
        up = new_values > values
        if region is not None:
            up &= region.allows(moved)
        Z = torch.where(up.unsqueeze(-1), moved, Z)
        values = torch.where(up, new_values, values)
        direction = torch.where(up.unsqueeze(-1), new_grad * scale, direction)
        a = torch.where(up, a * GROW, a * SHRINK)
    return Z, values


def explore_sequential(
    params: KernelParams,
    A: Tensor,
    x: Tensor,
    count: int,
    bounds: Tensor,
    *,
    epsilon: float | None = None,
    min_count: int = 0,
    num_restarts: int = 5,
    raw_samples: int = 64,
    seed: int = 0,
    acquisition: Callable[[GradientTrace], AcquisitionFunction] = GradientInformation,
    region: Region | None = None,
    search_iterations: int | None = None,
) -> Exploration:
    """``explore`` with any acquisition built from a ``GradientTrace``: one ``optimize_acqf`` per point (in the
    box; with a ``region``, each point then admitted to it, ``Region.admit``)."""
    trace = GradientTrace(params, A, x)
    trace_before = float(trace.trace)
    acq = acquisition(trace)
    chosen: list[Tensor] = []
    for i in range(count):
        generator = torch.Generator().manual_seed((seed + i) % 2**63)
        starts = initial_conditions(acq, bounds, 1, num_restarts, raw_samples, generator)
        options: dict[str, bool | float | int | str] = (
            {} if search_iterations is None else {"maxiter": search_iterations}
        )
        z, gain = optimize_acqf(
            acq, bounds, q=1, num_restarts=starts.shape[0], batch_initial_conditions=starts, options=options
        )
        z = z.detach().reshape(1, -1)
        if region is not None:
            z = region.admit(z, bounds[0], bounds[1])
        chosen.append(z)
        trace.extend(z)
        if epsilon is not None and i >= 1 and i + 1 >= min_count and gain is not None and float(gain) < epsilon:
            break
    Z = torch.cat(chosen) if chosen else x.new_zeros(0, x.shape[-1])
    return Exploration(Z, trace_before, float(trace.trace))
