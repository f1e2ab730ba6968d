"""Local exploration shared by gibo and minucb: points that make the gradient at x_t certain.

    alpha_trace(x_t, Z) = tr Cov(grad f(x_t) | D, Z)        (GIBO; MinUCB paper eq. 5; algorithms.md 1.1-1.2)

Greedy and sequential, q = 1 at a time, as the GIBO reference code: z_i = argmax_z of the trace
reduction tr(C S^{-1} C^T) given D, the points already chosen and the pending ones, inside the box
x_t +- delta clipped to [0, 1]^d; optimize_acqf with 5 restarts and 64 raw samples per point (the starts
from ``acqopt.initial_conditions``, seeded by (seed, point), never torch's global RNG). The
trace needs no values at Z, so a whole iteration's batch is chosen in one call. Early stop
(GIBO's epsilon): after point i >= 2, stop once its reduction falls below epsilon (kernel units).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.optim import optimize_acqf
from torch import Tensor

from localbo.policies.acqopt import initial_conditions
from localbo.policies.gradients import GradientTrace, KernelParams


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
    acquisition: Callable[[GradientTrace], AcquisitionFunction] = GradientInformation,
) -> Exploration:
    """Up to ``count`` points (at least ``min_count``) that greedily minimise alpha_trace at x.

    A: n x d, the inputs conditioned on (observed, pending, planned); x: d; bounds: 2 x d.
    ``acquisition`` builds the acquisition from the trace, which ``explore`` extends point by point
    (GIBO's trace reduction by default; mpd passes its own).
    """
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
