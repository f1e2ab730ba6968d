"""The local gradient policies' settings (``LocalConfig``) and what they keep between calls (``LocalState``, with
the path of iterates the dashboard draws); ``local.py`` runs the iteration they describe."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer
from torch import Tensor

from localbo.policies import gp
from localbo.policies.base import PolicyConfig, PolicyState
from localbo.policies.local_constraints import ConstraintState
from localbo.policies.restarts import SUCCESS_MARGIN, RunState

UnitFloat = Annotated[float, Field(ge=0.0, le=1.0)]


class LocalConfig(PolicyConfig):
    """Settings shared by the local gradient policies; defaults are GIBO's synthetic ones (algorithms.md 1.5)."""

    x0: list[UnitFloat] | None = Field(default=None, description="x_0 in [0, 1]^d; the centre of the cube when unset")
    delta: float = Field(default=0.2, gt=0.0, le=1.0, description="Exploration box x_t +- delta (unit-cube units)")
    samples_per_iteration: int | None = Field(
        default=None, ge=1, le=4096, description="Exploration points per iteration (b2); d when unset"
    )
    first_samples: int | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="Anytime start: exploration points in iteration 0, then as batch_growth says up to "
        "samples_per_iteration; unset: samples_per_iteration from the start (the papers)",
    )
    batch_growth: Literal["double", "on_stall"] = Field(
        default="double",
        description="With first_samples: double: the batch doubles each iteration up to samples_per_iteration; "
        "on_stall: first_samples while each batch improves the best value (by 1e-3 of its magnitude, TuRBO's "
        "margin), samples_per_iteration after a batch that did not (a stall guard for the small batch)",
    )
    n_max: int | None = Field(default=None, ge=2, description="GP data window: the last N_max points; 5 d when unset")
    epsilon: float | None = Field(
        default=None, ge=0.0, description="Early stop: end exploration when a point's trace reduction < epsilon"
    )
    scalarisation_weights: Literal["stratified", "uniform"] = Field(
        default="stratified",
        description="Several objectives: each step's Chebyshev weight; stratified: consecutive steps spread over the "
        "simplex (a shifted R-sequence); uniform: an independent uniform draw per step (ParEGO's random pick)",
    )
    kernel: Literal["rbf", "matern52"] = Field(default="rbf", description="ARD kernel of the GP")
    output_warp: Literal["none", "power"] = Field(
        default="none",
        description="power: the GP fits a Yeo-Johnson warp of the values fitted to its window (warping.py), for "
        "values that span orders of magnitude; none: the raw values, as the papers",
    )
    refit: Literal["every", "when_full", "never"] = Field(
        default="every", description="MAP refit every iteration, only once N >= N_max (GIBO), or never"
    )
    warm_fit_iterations: int | None = Field(
        default=25,
        ge=1,
        le=100_000,
        description="L-BFGS-B iterations of a MAP refit warm-started from the last one (None: to convergence)",
    )
    full_fit_every: int = Field(default=5, ge=1, le=10_000, description="Iterations between refits to convergence")
    num_restarts: int = Field(default=5, ge=1, le=64, description="Restarts per exploration point")
    raw_samples: int = Field(default=64, ge=1, le=4096, description="Raw samples per exploration point")
    ascent_steps: int = Field(
        default=40, ge=0, le=1000, description="Projected gradient steps per exploration point (all candidates at once)"
    )
    queue: Literal["auto", "cpu", "gpu"] = Field(
        default="auto", description="Worker queue under the celery executor; auto: gpu above LOCALBO_GPU_MIN_SIZE"
    )
    restart_after: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="Restart a stalled run after this many consecutive steps that did not improve its best value "
        "(by 1e-3 of its magnitude): the next iterate is the point farthest from every evaluated one, with a GP "
        "window of the new run's results only (restarts.py); one objective, no outcome constraints, failures to "
        "avoid or safe mode. None: never (the papers)",
    )
    constraint_beta: float = Field(
        default=2.0,
        ge=0.0,
        le=10.0,
        description="Outcome constraints outside safe mode: the step keeps each mu_j - constraint_beta * sigma_j <= 0",
    )


Scalar = bool | int | float | str | None
PATH_FLOATS = 4096  # the iterate path kept in the state: the last PATH_FLOATS / d iterations


class PathEntry(BaseModel):
    """One iterate: its t, the observations when its batch went out, x_t, and what the step did."""

    model_config = ConfigDict(extra="forbid")
    t: int
    n: int
    x: list[float]
    info: dict[str, Scalar] = Field(default_factory=dict)


class LocalState(PolicyState):
    """Where the iteration stands (see the module's docstring); x_t is None before the first call."""

    version = 1
    t: int = 0
    x_t: list[float] | None = None
    phase: Literal["batch", "top-up"] = "batch"
    n_start: int = 0
    batch: int = 0
    extra: int = 0
    hypers: gp.StoredHypers = None
    path: list[PathEntry] = Field(default_factory=list)
    constraints: ConstraintState | None = None  # set only in a study with constraints (local_constraints.py)
    run: RunState | None = None  # set only when the config restarts stalled runs (restarts.py)

    @model_serializer(mode="wrap")
    def _without_unset_parts(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The dump of a study's state without constraints or restarts stays what it was before either existed."""
        data: dict[str, Any] = handler(self)
        for key in ("constraints", "run"):
            if data.get(key, 0) is None:
                del data[key]
        return data


def _scalar(v: Any) -> Scalar:
    if isinstance(v, float):
        return round(v, 6) if math.isfinite(v) else None
    return v


def _extend_path(path: list[PathEntry], t: int, n: int, x_t: Tensor, info: dict[str, Any]) -> list[PathEntry]:
    """The iterates so far, for people to see: {t, n observations when it went out, x_t, what the step did}."""
    scalars = {k: _scalar(v) for k, v in info.items() if isinstance(v, bool | int | float | str)}
    entry = PathEntry(t=t, n=n, x=[round(v, 6) for v in x_t.tolist()], info=scalars)
    path = [p for p in path if p.t != t]  # a retried iteration replaces its entry
    keep = max(8, PATH_FLOATS // max(1, x_t.shape[0]))
    return [*path, entry][-keep:]


def _samples(config: LocalConfig, d: int, t: int, improved: bool = True) -> int:
    """b2 of iteration t: samples_per_iteration (d when unset), or from first_samples up to it: doubling each
    iteration, or (on_stall) first_samples while the last batch ``improved`` the best value and full when not."""
    full = config.samples_per_iteration or d
    if config.first_samples is None:
        return full
    if config.batch_growth == "on_stall":
        return min(full, config.first_samples) if improved else full
    return min(full, config.first_samples << min(t, 30))


def last_batch_improved(y: Tensor, batch_start: int) -> bool:
    """Whether y[batch_start:] (the last batch's values, to minimise) beat the best of y[:batch_start] by TuRBO's
    success margin; True when either side is empty (nothing to compare: no reason to grow the batch)."""
    if batch_start <= 0 or batch_start >= y.shape[0]:
        return True
    before = float(y[:batch_start].min())
    return float(y[batch_start:].min()) < before - SUCCESS_MARGIN * abs(before)
