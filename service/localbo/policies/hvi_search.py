"""BoTorch's qLogNEHVI (several objectives) or qLogNEI (one), and its maximisation inside a box: the acquisition of
``qlognehvi`` over the unit cube, and of ``morbo``'s ``acquisition: "lognehvi"`` inside each trust region.

    acquisition:  on the negated objectives (BoTorch maximises; the reference point negated too), X_baseline the
                  points the models saw, the pending points as X_pending, ``mc_samples`` Sobol QMC samples seeded
                  from the caller's generator; outcome constraints (model outputs k.., <= 0 feasible) as BoTorch's
                  ``constraints=`` callables. BoTorch's baseline pruning is off: it seeds from torch's global RNG.
    maximise:     ``optimize_acqf`` (L-BFGS-B; SLSQP under parameter constraints) from ``num_restarts`` starts chosen
                  among ``raw_samples`` random q-batches in the box (``acqopt.initial_conditions``; under parameter
                  constraints the best hit-and-run q-batches of box ∩ polytope), and from ``front_starts`` q-batches
                  of observed front points (``anchors``, drawn at random), the results clipped to the box and pulled
                  inside the polytope (``acqopt.inside``); the best q-batch by its exact value.
                  Why the front: late in a run the improvements lie beside the front, in basins of the acquisition
                  that random starts seldom reach (Optuna's GPSampler starts its local searches at front points too;
                  multiobjective_findings.md, "qlognehvi's acquisition search starts at front points too")
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
from botorch.acquisition.multi_objective.objective import GenericMCMultiOutputObjective
from botorch.acquisition.objective import GenericMCObjective
from botorch.exceptions.warnings import OptimizationWarning
from botorch.models import ModelListGP
from botorch.optim import optimize_acqf
from botorch.sampling.normal import SobolQMCNormalSampler
from torch import Tensor

from localbo.policies.acqopt import initial_conditions, inside
from localbo.policies.base import Polytope
from localbo.policies.polytope import sample, violation


@dataclass(frozen=True)
class SearchSettings:
    num_restarts: int = 4
    raw_samples: int = 128
    mc_samples: int = 64
    maxiter: int = 100
    front_starts: int = 0


def _linear_constraints(
    polytope: Polytope, like: Tensor
) -> tuple[list[tuple[Tensor, Tensor, float]] | None, list[tuple[Tensor, Tensor, float]] | None]:
    """The polytope as optimize_acqf's (indices, coefficients, rhs) constraints: A_ub u <= b as -A_ub u >= -b, on
    ``like``'s device (the bounds' and the models': optimize_acqf checks its starts against them there)."""
    d = like.shape[-1]
    index = torch.arange(d, device=like.device)
    A_ub = polytope.A_ub.detach().to(like).reshape(-1, d)
    A_eq = polytope.A_eq.detach().to(like).reshape(-1, d)
    b_ub = polytope.b_ub.detach().double().reshape(-1)
    b_eq = polytope.b_eq.detach().double().reshape(-1)
    ineq = [(index, -A_ub[i], -float(b_ub[i])) for i in range(A_ub.shape[0])]
    eq = [(index, A_eq[i], float(b_eq[i])) for i in range(A_eq.shape[0])]
    return ineq or None, eq or None


def _column(i: int) -> Callable[[Tensor], Tensor]:
    """The i-th output of the samples (a constraint's, <= 0 feasible), as BoTorch's ``constraints=`` callables."""
    return lambda Z: Z[..., i]


def _negated(k: int) -> Callable[[Tensor, Tensor | None], Tensor]:
    """The objectives for BoTorch, which maximises: -Z[..., :k] (k objectives), or -Z[..., 0] when k is 0 (one)."""

    def objective(Z: Tensor, X: Tensor | None = None) -> Tensor:
        return -Z[..., :k] if k else -Z[..., 0]

    return objective


def log_nehvi(
    model: ModelListGP,
    X_baseline: Tensor,
    pending: Tensor,
    ref: Tensor,
    k: int,
    m: int,
    settings: SearchSettings,
    g: torch.Generator,
) -> AcquisitionFunction:
    """qLogNEHVI (k >= 2) or qLogNEI (k = 1) on the negated objectives; outputs k..k+m-1 the constraints.
    X_baseline on the models' device and dtype."""
    like = X_baseline  # the models' device and dtype
    seed = int(torch.randint(2**31 - 1, (1,), generator=g))
    sampler = SobolQMCNormalSampler(sample_shape=torch.Size([settings.mc_samples]), seed=seed)
    pending = pending.to(like)
    outcome_constraints = [_column(k + j) for j in range(m)]
    common: dict[str, Any] = {
        "X_baseline": X_baseline.to(like),
        "sampler": sampler,
        "X_pending": pending if pending.shape[0] else None,
        "prune_baseline": False,
        "constraints": outcome_constraints or None,
    }
    if k == 1:
        return qLogNoisyExpectedImprovement(model, objective=GenericMCObjective(_negated(0)), **common)
    return qLogNoisyExpectedHypervolumeImprovement(
        model, ref_point=(-ref).tolist(), objective=GenericMCMultiOutputObjective(_negated(k)), **common
    )


def maximise(
    acq: AcquisitionFunction,
    q: int,
    bounds: Tensor,
    polytope: Polytope | None,
    settings: SearchSettings,
    g: torch.Generator,
    anchors: Tensor | None = None,
) -> tuple[Tensor, float | None]:
    """The best q x d batch found in ``bounds`` (2 x d, the models' device) and inside the polytope, on the CPU, and
    its log acquisition value (None when not finite). ``anchors``: a x d points (the observed front, inside the
    bounds) of which ``settings.front_starts`` q-batches start searches too, those inside the polytope."""
    d = bounds.shape[-1]
    ineq = eq = None
    if polytope is None:
        starts = initial_conditions(acq, bounds, q, settings.num_restarts, settings.raw_samples, g)
    else:
        ineq, eq = _linear_constraints(polytope, bounds)
        lo, hi = bounds[0].cpu().double(), bounds[1].cpu().double()
        raw = sample(polytope, settings.raw_samples * q, g, lo, hi, thinning=1).to(bounds).reshape(-1, q, d)
        with torch.no_grad():
            values = acq(raw)
        values = torch.where(torch.isfinite(values), values, torch.full_like(values, -torch.inf))
        starts = raw[values.argsort(descending=True, stable=True)[: settings.num_restarts]]
    if anchors is not None and polytope is not None:  # a trial added by hand may lie outside: no start there
        anchors = anchors[violation(polytope, anchors.detach().cpu().double()) <= Polytope.TOLERANCE]
    starts = torch.cat([starts, _anchored(anchors, q, d, settings.front_starts, g).to(starts)])
    with warnings.catch_warnings():  # L-BFGS-B / SLSQP stopping at maxiter is expected with modest settings
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", OptimizationWarning)
        found, _ = optimize_acqf(
            acq,
            bounds,
            q=q,
            num_restarts=starts.shape[0],
            batch_initial_conditions=starts,
            options={"maxiter": settings.maxiter},
            inequality_constraints=ineq,
            equality_constraints=eq,
            return_best_only=False,
            retry_on_optimization_warning=False,
        )
    found = torch.max(torch.min(found.detach().reshape(-1, q, d), bounds[1]), bounds[0])
    if polytope is not None:
        lo, hi = bounds[0].cpu().double(), bounds[1].cpu().double()
        found = torch.stack(
            [inside(b.cpu().double(), s.cpu().double(), lo, hi, polytope) for b, s in zip(found, starts, strict=True)]
        ).to(bounds)
    with torch.no_grad():
        values = acq(found)
    values = torch.where(torch.isfinite(values), values, torch.full_like(values, -torch.inf))
    best = int(values.argmax())
    value = float(values[best])
    return found[best].cpu(), value if value > -torch.inf else None


def _anchored(anchors: Tensor | None, q: int, d: int, count: int, g: torch.Generator) -> Tensor:
    """Up to count x q x d starts (at most one per anchor), each q anchors drawn at random (without replacement within
    a batch where there are q); none without anchors, and nothing drawn from ``g`` then."""
    a = 0 if anchors is None else anchors.shape[0]
    count = min(count, a)
    if anchors is None or count <= 0:
        return torch.empty(0, q, d, dtype=torch.float64)
    rows = [torch.randperm(a, generator=g)[:q] if a >= q else torch.randint(a, (q,), generator=g) for _ in range(count)]
    return anchors.detach().cpu().double().reshape(a, d)[torch.stack(rows)]
