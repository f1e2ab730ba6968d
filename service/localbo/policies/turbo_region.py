"""TuRBO's trust region (Eriksson et al., NeurIPS 2019; SCBO's rule under constraints): the policy's settings
(``TurboConfig``), what it keeps between calls (``TurboState``, ``Region``), the box around the centre, which
results are the region's own, and how a batch's results grow, shrink or restart it. ``turbo.py`` states the
algorithm and picks the points."""

from __future__ import annotations

import math
from typing import Any

import torch
from pydantic import BaseModel, Field
from torch import Tensor

from localbo.policies.base import PolicyConfig, PolicyError, PolicyState, Polytope, SuggestRequest
from localbo.policies.gp import Hypers, StoredHypers, noise_floor_field
from localbo.policies.polytope import violation
from localbo.policies.violation import best_index

SUCCESS_MARGIN = 1e-3  # relative improvement that counts as a success (the paper's)


def perturbed_coordinates_field() -> Any:
    """The setting of turbo and morbo: how many coordinates a candidate moves, on average (TuRBO's 20)."""
    return Field(
        default=20.0,
        gt=0,
        le=10_000,
        description="Each coordinate of a candidate moves from its centre with probability min(1, this / d)",
    )


def perturbation_mask(n: int, d: int, perturbed_coordinates: float, g: torch.Generator) -> Tensor:
    """n x d booleans on the CPU: which coordinates of each candidate move (probability min(1, p / d) each, at least
    one per candidate), TuRBO's rule."""
    mask = torch.rand(n, d, generator=g, dtype=torch.float64) <= min(1.0, perturbed_coordinates / d)
    empty = ~mask.any(-1)
    mask[empty, torch.randint(d, (int(empty.sum()),), generator=g)] = True
    return mask


class TurboConfig(PolicyConfig):
    n_init: int | None = Field(default=None, ge=2, le=10_000, description="Initial Sobol design per region (2 d)")
    batch_size: int = Field(default=1, ge=1, le=1000, description="Points per batch q (at least the ask's count)")
    length_init: float = Field(default=0.8, gt=0, le=2, description="Side length of a new region")
    length_min: float = Field(default=0.5**7, gt=0, le=1, description="A region below this restarts")
    length_max: float = Field(default=1.6, gt=0, le=2, description="The largest side length")
    success_tolerance: int = Field(default=3, ge=1, le=1000, description="Successes in a row that double L")
    max_data: int | None = Field(
        default=500,
        ge=10,
        le=100_000,
        description="The GPs fit at most this many of the region's results, those nearest its centre (None: all)",
    )
    noise_floor: float = noise_floor_field()
    failure_tolerance: int | None = Field(
        default=None, ge=1, le=10_000, description="Failures in a row that halve L (ceil(max(4/q, d/q)))"
    )
    candidates: int | None = Field(
        default=None, ge=1, le=100_000, description="Thompson-sampling candidates (min(5000, max(2000, 200 d)))"
    )
    perturbed_coordinates: float = perturbed_coordinates_field()
    warm_fit_iterations: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="Without outcome constraints, failures or safe mode: L-BFGS-B iterations of the objective GP's "
        "warm-started refit between full ones (None: every refit to convergence)",
    )
    full_fit_every: int = Field(default=5, ge=1, le=10_000, description="Suggests between refits to convergence")


class Region(BaseModel):
    """The trust region: side length, counters, and which results are its own."""

    length: float
    successes: int = 0
    failures: int = 0
    best: float | None = None  # the region's best value (None during its design); with constraints, the centre's
    violation: float = 0.0  # the centre's total violation sum_j max(c_j, 0) (0: feasible, or no constraints)
    centre: list[float] | None = None  # where ``best`` was observed
    first_number: int = 1  # results of trials numbered below are not the region's
    excluded: list[list[float]] = Field(default_factory=list)  # points running at the restart: not its own either
    design_asked: int = 0  # design points handed out
    design_size: int | None = None  # the design's size (n_init, else 2 d): the display's progress against it
    kept_lower: list[float] | None = None  # SCBO's restart: earlier results inside this box are the region's too
    kept_upper: list[float] | None = None
    lower: list[float] | None = None  # the box the last batch came from
    upper: list[float] | None = None


class TurboState(PolicyState):
    version = 1
    region: Region | None = None
    counted: list[int] = Field(default_factory=list)  # trial numbers whose result updated the region (sorted)
    restarts: int = 0
    hypers: StoredHypers = None
    constraint_hypers: list[Hypers] = Field(default_factory=list)  # the constraint GPs' last fits (SCBO)
    feasible_share: float | None = None  # the share of the study's results that satisfy every constraint
    active_constraint: int | None = None  # the constraint (index) nearest to, or furthest past, its bound at the centre
    failure_hypers: StoredHypers = None  # the failure model's last fit (failures: "avoid")
    n_failed: int = 0  # failed points seen by the last call (failures: "avoid")
    safe_share: float | None = None  # safe mode: the share of the last candidates predicted safe
    sample_feasible_share: float | None = None  # SCBO: the share of the last batch's candidates feasible in its
    # Thompson samples (mean over the batch's draws; the candidates ruled out count as infeasible)
    fits: int = 0  # the objective GP's refits so far (every ``full_fit_every``-th runs to convergence)


def trust_region(centre: Tensor, lengthscale: Tensor, length: float) -> tuple[Tensor, Tensor]:
    """(lower, upper): the box of side ``length * w`` around ``centre``, w = lengthscale / geometric mean."""
    w = lengthscale / lengthscale.mean()
    w = w / w.log().mean().exp()  # product 1: the box's volume is length^d
    return (centre - w * length / 2).clamp(0, 1), (centre + w * length / 2).clamp(0, 1)


def region_mask(request: SuggestRequest[Any, Any], region: Region) -> Tensor:
    """n (bool): the results that belong to the region."""
    keep = request.numbers >= region.first_number
    if region.excluded:
        old = torch.tensor(region.excluded, dtype=request.X.dtype, device=request.X.device)
        keep &= ~(request.X.unsqueeze(1) == old.unsqueeze(0)).all(-1).any(-1)
    if region.kept_lower is not None and region.kept_upper is not None:
        lower, upper = (
            torch.tensor(b, dtype=request.X.dtype, device=request.X.device)
            for b in (region.kept_lower, region.kept_upper)
        )
        keep |= ((request.X >= lower) & (request.X <= upper)).all(-1)
    return keep


def region_data(request: SuggestRequest[Any, Any], region: Region) -> tuple[Tensor, Tensor, Tensor]:
    """(X, y, numbers) of the results that belong to the region."""
    keep = region_mask(request, region)
    return request.X[keep], request.y[keep], request.numbers[keep]


def restart_at_incumbent(fresh: Region, incumbent: Tensor, state: TurboState, config: TurboConfig) -> Region:
    """SCBO's restart here: ``fresh`` (a new region of side ``length_init`` whose own results are those numbered
    from the restart on), plus the earlier results inside the box of that side around ``incumbent`` (the best
    feasible point so far), shaped by the last fit's lengthscales; no design: its centre is the incumbent."""
    d = incumbent.shape[-1]
    scale = state.hypers.lengthscale if state.hypers is not None and len(state.hypers.lengthscale) == d else [1.0] * d
    lower, upper = trust_region(incumbent, torch.tensor(scale).to(incumbent), config.length_init)
    return fresh.model_copy(update={"kept_lower": lower.tolist(), "kept_upper": upper.tolist()})


def failure_tolerance(config: TurboConfig, d: int, q: int) -> int:
    return config.failure_tolerance or math.ceil(max(4.0 / q, d / q))


def refit_iterations(config: TurboConfig, state: TurboState, plain: bool) -> int | None:
    """The L-BFGS-B bound of this suggest's objective refit: ``warm_fit_iterations`` on the plain path (``plain``:
    no outcome constraints, failures or safe mode, whose models were measured fitted to convergence) between full
    refits, which run on a fresh start or restart (no hypers) and every ``full_fit_every``-th refit; else None."""
    warm = plain and state.hypers is not None and state.fits % config.full_fit_every != 0
    return config.warm_fit_iterations if warm else None


def update(region: Region, y_new: Tensor, config: TurboConfig, d: int, q: int, v_new: Tensor | None = None) -> Region:
    """The region after one batch of new results ``y_new`` (to minimise) with total violations ``v_new`` (None: no
    constraints): the paper's success/failure rule, feasibility first under constraints (SCBO)."""
    best = region.best
    assert best is not None
    v_new = torch.zeros_like(y_new) if v_new is None else v_new
    b = best_index(y_new, v_new)
    y_b, v_b = float(y_new[b]), float(v_new[b])
    if v_b <= 0:  # a feasible result: better than an infeasible centre, or better by the margin than a feasible one
        improved = region.violation > 0 or y_b < best - SUCCESS_MARGIN * abs(best)
    else:  # none feasible: it must violate less than an infeasible centre
        improved = v_b < region.violation
    if improved:
        successes, failures = region.successes + 1, 0
        best, violation = y_b, max(v_b, 0.0)
    else:
        successes, failures = 0, region.failures + 1
        violation = region.violation
        if v_b <= 0 and region.violation <= 0:
            best = min(best, y_b)  # an improvement below the margin is still the region's best
    length = region.length
    if successes >= config.success_tolerance:
        length, successes = min(2.0 * length, config.length_max), 0
    if failures >= failure_tolerance(config, d, q):
        length, failures = length / 2.0, 0
    update_ = {"length": length, "successes": successes, "failures": failures, "best": best, "violation": violation}
    return region.model_copy(update=update_)


def update_failed(region: Region, config: TurboConfig, d: int, q: int) -> Region:
    """The region after a batch whose results are all failures (failed trials, no value): a failure."""
    failures_, length = region.failures + 1, region.length
    if failures_ >= failure_tolerance(config, d, q):
        length, failures_ = length / 2.0, 0
    return region.model_copy(update={"length": length, "successes": 0, "failures": failures_})


def centre_index(request: SuggestRequest[Any, Any], X: Tensor, y: Tensor, v: Tensor) -> int:
    """The region's centre among the rows of X: its best point (``best_index``); in safe mode one that keeps the
    parameter constraints, since safe mode asks its centre again (a trial added by hand may break them)."""
    if request.max_violation_probability is None or request.polytope is None:
        return best_index(y, v)
    off = violation(request.polytope, X) > Polytope.TOLERANCE
    if bool(off.all()):
        raise PolicyError("safe mode: every point of the region breaks the parameter constraints")
    return best_index(y, torch.where(off, torch.full_like(v, math.inf), v))
