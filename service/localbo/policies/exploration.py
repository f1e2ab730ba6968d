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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
) -> Exploration:
    """Up to ``count`` points (at least ``min_count``) that greedily minimise alpha_trace at x.

    A: n x d, the inputs conditioned on (observed, pending, planned); x: d; bounds: 2 x d.
    ``acquisition`` None: GIBO's trace reduction, batched (see the module's docstring); otherwise an
    acquisition built from the trace, which ``explore_sequential`` extends point by point (mpd's).
    """
    if acquisition is not None:
        return explore_sequential(
            params, A, x, count, bounds, epsilon=epsilon, min_count=min_count, num_restarts=num_restarts,
            raw_samples=raw_samples, seed=seed, acquisition=acquisition,
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
        starts = initial_conditions(score, bounds, 1, num_restarts, raw_samples, generator).reshape(-1, d)
        Z, values = ascend(trace.reduction_and_grad, torch.cat([starts, warm]), lo, hi, ascent_steps, step_scale)
        best = int(values.argmax())
        z, gain = Z[best], float(values[best])
        chosen.append(z.reshape(1, -1))
        trace.extend(z)
        others = torch.cat([values[:best], values[best + 1 :]]).argsort(descending=True)[:num_restarts]
        warm = torch.cat([Z[:best], Z[best + 1 :]])[others]
        if epsilon is not None and i >= 1 and i + 1 >= min_count and gain < epsilon:
            break
    Z = torch.cat(chosen) if chosen else x.new_zeros(0, d)
    return Exploration(Z, trace_before, float(trace.trace))


def ascend(
    f: Callable[[Tensor], tuple[Tensor, Tensor]],
    Z: Tensor,
    lo: Tensor,
    hi: Tensor,
    steps: int,
    scale: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Projected gradient ascent of f (k x d -> values k, gradients k x d) from every row of Z (k x d) at once.

    Each row z moves to clip(z + a * scale * grad, lo, hi) when that raises f (then a doubles), else stays
    (a shrinks 4x); its first a moves it at most FIRST_STEP of the box's widest side. One evaluation of f
    per step for all rows. Returns (the rows after ``steps`` steps, their values): no row ends below its start.
    """
    values, grad = f(Z)
    scale = torch.ones_like(lo) if scale is None else scale
    direction = grad * scale
    reach = direction.abs().amax(-1)
    a = torch.where(reach > 0, FIRST_STEP * float((hi - lo).max()) / reach.clamp_min(1e-300), torch.zeros_like(reach))
    for _ in range(steps):
        moved = torch.minimum(torch.maximum(Z + a.unsqueeze(-1) * direction, lo), hi)
        new_values, new_grad = f(moved)
        up = new_values > values
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
) -> Exploration:
    """``explore`` with any acquisition built from a ``GradientTrace``: one ``optimize_acqf`` per point."""
    trace = GradientTrace(params, A, x)
    trace_before = float(trace.trace)
    acq = acquisition(trace)
    chosen: list[Tensor] = []
    for i in range(count):
        generator = torch.Generator().manual_seed((seed + i) % 2**63)
        starts = initial_conditions(acq, bounds, 1, num_restarts, raw_samples, generator)
        z, gain = optimize_acqf(acq, bounds, q=1, num_restarts=starts.shape[0], batch_initial_conditions=starts)
        z = z.detach().reshape(1, -1)
        chosen.append(z)
        trace.extend(z)
        if epsilon is not None and i >= 1 and i + 1 >= min_count and gain is not None and float(gain) < epsilon:
            break
    Z = torch.cat(chosen) if chosen else x.new_zeros(0, x.shape[-1])
    return Exploration(Z, trace_before, float(trace.trace))
