"""What the global policies' acquisitions are built from (``global_bo``): one point's ``Context`` (the GP on the data
and the lies, the best value, the constraint models, the Lipschitz bounds) and the scores made of it, each to
maximise over X: k x d."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import torch
from botorch.models import SingleTaskGP
from torch import Tensor
from torch.special import log_ndtr

from localbo.policies.closed_form import Posterior
from localbo.policies.lipschitz import LipschitzBounds
from localbo.policies.truncated import accepted


@dataclass(frozen=True)
class Context:
    """What an acquisition needs for one point."""

    model: SingleTaskGP  # on the real data plus the lies
    y_best: float  # the best real observation
    t: int  # the study-wide index of this point
    n: int  # real observations
    dim: int
    bounds: LipschitzBounds | None  # None for the classic policies
    generator: torch.Generator  # for an acquisition that draws (Thompson sampling): seeded by (seed, t)
    constraints: tuple[SingleTaskGP, ...] = ()  # one GP per outcome constraint (c_j <= 0 feasible), real data only;
    # with failures to avoid, the failure model last (z <= 0: not predicted to fail)
    y_worst: float | None = None  # with constraints: max over the observed X of mu + 6 sigma (BoTorch's convention)

    @cached_property
    def constraint_posteriors(self) -> tuple[Posterior, ...]:
        """The constraint models' posteriors in closed form, factorised once for the whole acquisition search."""
        return tuple(Posterior(model) for model in self.constraints)


Acquisition = Callable[[Tensor], Tensor]  # X: k x d -> k, to maximise; -inf where rejected


def mix_seed(seed: int, t: int, salt: int = 0) -> int:
    return (seed * 1_000_003 + t * 65_537 + salt) % (2**62)


def mean_sigma(model: SingleTaskGP, X: Tensor) -> tuple[Tensor, Tensor]:
    """Posterior mean and standard deviation of f (no noise) at X: k x d, in the units of y."""
    posterior = model.posterior(X.unsqueeze(-2))
    return posterior.mean.reshape(-1), posterior.variance.clamp_min(1e-12).sqrt().reshape(-1)  # as BoTorch


def log_feasibility(ctx: Context, X: Tensor) -> Tensor:
    """log PF(x) = sum_j log Phi(-mu_j(x) / sigma_j(x)): the log probability that every constraint holds, k."""
    total = torch.zeros(X.shape[0], dtype=X.dtype, device=X.device)
    for posterior in ctx.constraint_posteriors:
        mean, sigma = posterior(X)
        total = total + log_ndtr(-mean / sigma)
    return total


def improvement_score(ctx: Context, log_acquisition: type) -> Acquisition:
    """A BoTorch analytic log-improvement acquisition (EI, PI) on the best observation, minimising."""
    acq = log_acquisition(ctx.model, best_f=torch.tensor(ctx.y_best, dtype=torch.float64), maximize=False)
    return lambda X: acq(X.unsqueeze(-2))


TruncatedImprovement = Callable[[Tensor, Tensor, float, Tensor, Tensor], Tensor]  # (mean, sigma, y*, f_l, f_u)


def truncated_score(ctx: Context, truncated: TruncatedImprovement) -> Acquisition:
    """The log of a Lipschitz-truncated improvement (TEI, TPI); zero, so rejected, where the bounds allow none."""
    assert ctx.bounds is not None
    bounds = ctx.bounds

    def score(X: Tensor) -> Tensor:
        mean, sigma = mean_sigma(ctx.model, X)
        f_l, f_u = bounds(X)
        return truncated(mean, sigma, ctx.y_best, f_l, f_u).log()

    return score


def accept_reject_score(ctx: Context, value: Acquisition) -> Acquisition:
    """-value(X) where value(X) lies within the Lipschitz bounds [f_l, f_u], -inf elsewhere (AR-UCB, AR-TS)."""
    assert ctx.bounds is not None
    bounds = ctx.bounds

    def score(X: Tensor) -> Tensor:
        v = value(X)
        f_l, f_u = bounds(X)
        return (-v).masked_fill(~accepted(v, f_l, f_u), -math.inf)

    return score
