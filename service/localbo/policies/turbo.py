"""``turbo``: TuRBO-1 (Eriksson et al., NeurIPS 2019), one trust region.

    design:   n_init Sobol points (2 d by default) in [0, 1]^d
    region:   a box around the best point of the region's data, side L * w_i, w = lengthscales / their
              geometric mean (ARD Matérn-5/2 GP fitted to the region's data only), clipped to the cube
    batch:    q = max(the ask's count, batch_size) points, each the argmin of one Thompson sample (a
              pathwise posterior sample, ``ts.pathwise_path``) over ``candidates`` perturbed Sobol points:
              each coordinate of the centre is replaced by the Sobol point's with probability min(1, 20 / d)
    update:   after each batch of new results: a success if it improved the region's best by more than
              1e-3 |best|, else a failure; L doubles (at most length_max) after success_tolerance successes in
              a row and halves after failure_tolerance = ceil(max(4 / q, d / q)) failures in a row
    restart:  L < length_min: a fresh region (L = length_init) with a new Sobol design; the old data stay out
              of the new region's GP (trials numbered up to the restart, and those still running then)

"New results" are counted by trial number (the request's ``numbers``): a result is counted once, in the
first suggest that sees it, whatever order the tells came in.
"""

from __future__ import annotations

import math

import torch
from pydantic import BaseModel, Field
from torch import Tensor

from localbo.policies import register
from localbo.policies.base import (
    Box,
    Display,
    Policy,
    PolicyConfig,
    PolicyState,
    Progress,
    Suggestion,
    SuggestRequest,
)
from localbo.policies.gp import StoredHypers, fit_model, to_state
from localbo.policies.ts import pathwise_path

SUCCESS_MARGIN = 1e-3  # relative improvement that counts as a success (the paper's)


class TurboConfig(PolicyConfig):
    n_init: int | None = Field(default=None, ge=2, le=10_000, description="Initial Sobol design per region (2 d)")
    batch_size: int = Field(default=1, ge=1, le=1000, description="Points per batch q (at least the ask's count)")
    length_init: float = Field(default=0.8, gt=0, le=2, description="Side length of a new region")
    length_min: float = Field(default=0.5**7, gt=0, le=1, description="A region below this restarts")
    length_max: float = Field(default=1.6, gt=0, le=2, description="The largest side length")
    success_tolerance: int = Field(default=3, ge=1, le=1000, description="Successes in a row that double L")
    failure_tolerance: int | None = Field(
        default=None, ge=1, le=10_000, description="Failures in a row that halve L (ceil(max(4/q, d/q)))"
    )
    candidates: int | None = Field(
        default=None, ge=1, le=100_000, description="Thompson-sampling candidates (min(5000, max(2000, 200 d)))"
    )


class Region(BaseModel):
    """The trust region: side length, counters, and which results are its own."""

    length: float
    successes: int = 0
    failures: int = 0
    best: float | None = None  # the region's best value (None during its design)
    centre: list[float] | None = None  # where ``best`` was observed
    first_number: int = 1  # results of trials numbered below are not the region's
    excluded: list[list[float]] = Field(default_factory=list)  # points running at the restart: not its own either
    design_asked: int = 0  # design points handed out
    lower: list[float] | None = None  # the box the last batch came from
    upper: list[float] | None = None


class TurboState(PolicyState):
    version = 1
    region: Region | None = None
    counted: list[int] = Field(default_factory=list)  # trial numbers whose result updated the region (sorted)
    restarts: int = 0
    hypers: StoredHypers = None


def trust_region(centre: Tensor, lengthscale: Tensor, length: float) -> tuple[Tensor, Tensor]:
    """(lower, upper): the box of side ``length * w`` around ``centre``, w = lengthscale / geometric mean."""
    w = lengthscale / lengthscale.mean()
    w = w / w.log().mean().exp()  # product 1: the box's volume is length^d
    return (centre - w * length / 2).clamp(0, 1), (centre + w * length / 2).clamp(0, 1)


def region_data(request: SuggestRequest, region: Region) -> tuple[Tensor, Tensor, Tensor]:
    """(X, y, numbers) of the results that belong to the region."""
    keep = request.numbers >= region.first_number
    if region.excluded:
        old = torch.tensor(region.excluded, dtype=request.X.dtype, device=request.X.device)
        keep &= ~(request.X.unsqueeze(1) == old.unsqueeze(0)).all(-1).any(-1)
    return request.X[keep], request.y[keep], request.numbers[keep]


def failure_tolerance(config: TurboConfig, d: int, q: int) -> int:
    return config.failure_tolerance or math.ceil(max(4.0 / q, d / q))


def update(region: Region, y_new: Tensor, config: TurboConfig, d: int, q: int) -> Region:
    """The region after one batch of new results ``y_new`` (to minimise): the paper's success/failure rule."""
    best = region.best
    assert best is not None
    if float(y_new.min()) < best - SUCCESS_MARGIN * abs(best):
        successes, failures = region.successes + 1, 0
    else:
        successes, failures = 0, region.failures + 1
    length = region.length
    if successes >= config.success_tolerance:
        length, successes = min(2.0 * length, config.length_max), 0
    if failures >= failure_tolerance(config, d, q):
        length, failures = length / 2.0, 0
    return region.model_copy(
        update={"length": length, "successes": successes, "failures": failures, "best": min(best, float(y_new.min()))}
    )


@register
class Turbo(Policy[TurboConfig, TurboState]):
    name = "turbo"
    Config = TurboConfig
    State = TurboState

    @classmethod
    def kernel(cls, config: TurboConfig) -> str:
        return "matern52"  # what ``suggest`` fits

    @classmethod
    def plans_now(cls, state: TurboState, n_complete: int, n_running: int) -> bool:
        return n_running == 0  # the next batch once this one's results are all in

    @classmethod
    def fallback_box(cls, state: TurboState, config: TurboConfig, dim: int) -> tuple[list[float], list[float]]:
        region = state.region
        if region is None or region.lower is None or region.upper is None:
            return [0.0] * dim, [1.0] * dim
        return list(region.lower), list(region.upper)

    @classmethod
    def display(cls, state: TurboState, config: TurboConfig, n_complete: int) -> Display | None:
        region = state.region
        if region is None:
            return None
        numbers: dict[str, float | int | str | None] = {
            "side length": round(region.length, 6),
            "successes": region.successes,
            "failures": region.failures,
            "restarts": state.restarts,
            "region best": region.best,
        }
        if region.best is None:
            n_init = config.n_init or 0
            total = n_init or max(region.design_asked, 1)
            progress = Progress(done=min(region.design_asked, total), total=total, label="design points asked")
            return Display(phase="initial design", progress=progress, numbers=numbers)
        box = Box(lower=region.lower, upper=region.upper) if region.lower and region.upper else None
        return Display(phase="trust region", centre=region.centre, box=box, numbers=numbers)

    def suggest(self, request: SuggestRequest[TurboConfig, TurboState]) -> Suggestion:
        config, state = request.config, request.state
        d = request.dim
        q = max(request.count, config.batch_size)
        n_init = config.n_init or 2 * d
        region = state.region or Region(length=config.length_init)
        counted = set(state.counted)
        X, y, numbers = region_data(request, region)
        fresh = torch.tensor([int(n) not in counted for n in numbers.tolist()], dtype=torch.bool)

        if region.best is not None and bool(fresh.any()):
            region = update(region, y[fresh], config, d, q)
            counted |= set(numbers[fresh].tolist())
            if region.length < config.length_min:  # collapsed: a new region, the old data left out
                last = int(request.numbers.max()) if request.numbers.numel() else 0
                region = Region(length=config.length_init, first_number=last + 1, excluded=request.X_pending.tolist())
                state = state.model_copy(update={"restarts": state.restarts + 1, "hypers": None})
                X, y, numbers = region_data(request, region)

        if region.best is None and (X.shape[0] < n_init or X.shape[0] < 2):
            return self._design(request, state, region, counted, q, n_init)
        if region.best is None:  # the design is in: from now on results count as successes or failures
            counted |= set(numbers.tolist())
        i = int(y.argmin())  # the centre: the best point of the region's data
        model = fit_model(X, y, "matern52", state.hypers, device=request.device, generator=request.generator)
        lower, upper = trust_region(X[i], model.covar_module.lengthscale.detach().reshape(-1), region.length)
        points = self._thompson(model, X[i], lower, upper, q, config, request)
        region = region.model_copy(
            update={"centre": X[i].tolist(), "best": float(y[i]), "lower": lower.tolist(), "upper": upper.tolist()}
        )
        new = state.model_copy(update={"region": region, "counted": sorted(counted), "hypers": to_state(model)})
        return Suggestion(X=points, state=new)

    @staticmethod
    def _design(
        request: SuggestRequest, state: TurboState, region: Region, counted: set[int], q: int, n_init: int
    ) -> Suggestion:
        """The region's Sobol design (its own sequence per restart), the rest of it or at least ``q`` points."""
        k = max(q, n_init - region.design_asked)
        engine = torch.quasirandom.SobolEngine(request.dim, scramble=True, seed=(request.seed + state.restarts) % 2**31)
        if region.design_asked:
            engine.fast_forward(region.design_asked)
        X = engine.draw(k, dtype=torch.float64).to(request.device)
        region = region.model_copy(update={"design_asked": region.design_asked + k})
        return Suggestion(X=X, state=state.model_copy(update={"region": region, "counted": sorted(counted)}))

    @staticmethod
    def _thompson(
        model, centre: Tensor, lower: Tensor, upper: Tensor, q: int, config: TurboConfig, request: SuggestRequest
    ) -> Tensor:  # noqa: ANN001
        """q points: each the argmin of one posterior sample path over perturbed Sobol candidates in the box."""
        d, g = request.dim, request.generator
        n = config.candidates or min(5000, max(2000, 200 * d))
        sobol = torch.quasirandom.SobolEngine(d, scramble=True, seed=int(torch.randint(2**31, (1,), generator=g)))
        pert = lower + (upper - lower) * sobol.draw(n, dtype=torch.float64).to(centre)
        mask = torch.rand(n, d, generator=g, dtype=torch.float64).to(centre) <= min(1.0, 20.0 / d)
        empty = ~mask.any(-1)
        mask[empty, torch.randint(d, (int(empty.sum()),), generator=g).to(centre.device)] = True
        candidates = torch.where(mask, pert, centre.expand(n, d))
        chosen: list[int] = []
        for _ in range(q):
            values = pathwise_path(model, g)(candidates).detach()
            if chosen:
                values[chosen] = math.inf  # q distinct points
            chosen.append(int(values.argmin()))
        return candidates[chosen]
