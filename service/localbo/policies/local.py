"""The ask/tell iteration shared by the local gradient policies (gibo, minucb).

One iteration t around the iterate x_t is one batch: ``resamples`` copies of x_t followed by the
exploration points around x_t (``exploration.explore``). It is returned by one suggest call, so the
engine queues it as the plan. The state (``LocalState``) then says what the policy is waiting for:
the iteration t, x_t, the phase ("batch" | "top-up"), n_start (observations when the batch went
out), the batch's size, the top-up points since, the last GP fit and the path of iterates so far
(t, n, x_t and what the step did), which ``display`` turns into what the dashboard draws.

On the next call, with n observations and m pending points:
- n - n_start < batch and m > 0 (the plan ran dry while results are still out): return ``count``
  further exploration points around x_t, conditioned on the data and the pending points (no fit).
- otherwise (the batch's results are in, or nothing is outstanding, e.g. after failures): fit the GP
  on the last N_max points, x_{t+1} = step(GP, x_t) (the policy's own rule), and return the batch of t+1.
The first call starts at x_0 = config x0, else the centre of the cube. Randomness (the initial
conditions of the acquisition optimisers, refits after a failed fit) comes from generators seeded by
(seed, t, top-ups), never from torch's global RNG.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import torch
from botorch.acquisition import AcquisitionFunction
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from localbo.policies import gp
from localbo.policies.base import (
    Box,
    Display,
    KernelKind,
    Policy,
    PolicyConfig,
    PolicyConfigError,
    PolicyState,
    Progress,
    Suggestion,
    SuggestRequest,
)
from localbo.policies.exploration import explore, local_box
from localbo.policies.gradients import GradientTrace

UnitFloat = Annotated[float, Field(ge=0.0, le=1.0)]


class LocalConfig(PolicyConfig):
    """Settings shared by the local gradient policies; defaults are GIBO's synthetic ones (algorithms.md 1.5)."""

    x0: list[UnitFloat] | None = Field(default=None, description="x_0 in [0, 1]^d; the centre of the cube when unset")
    delta: float = Field(default=0.2, gt=0.0, le=1.0, description="Exploration box x_t +- delta (unit-cube units)")
    samples_per_iteration: int | None = Field(
        default=None, ge=1, le=4096, description="Exploration points per iteration (b2); d when unset"
    )
    n_max: int | None = Field(default=None, ge=2, description="GP data window: the last N_max points; 5 d when unset")
    epsilon: float | None = Field(
        default=None, ge=0.0, description="Early stop: end exploration when a point's trace reduction < epsilon"
    )
    kernel: Literal["rbf", "matern52"] = Field(default="rbf", description="ARD kernel of the GP")
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


@dataclass(frozen=True)
class Data:
    X: Tensor  # n x d, completed
    y: Tensor  # n
    pending: Tensor  # m x d, asked or planned, not told
    n_max: int  # the GP's data window

    def conditioning(self) -> Tensor:
        """The inputs the exploration conditions on: the window of X and the pending points, (N + m) x d."""
        return torch.cat([self.X[-self.n_max :], self.pending])


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


def _seed(seed: int, t: int, k: int) -> int:
    """A seed for iteration t, call k within it (0: the batch, 1..: top-ups)."""
    return (seed * 1_000_003 + t * 65_537 + k) % (2**62)


LocalConfigT = TypeVar("LocalConfigT", bound=LocalConfig)


class LocalPolicy(Policy[LocalConfigT, LocalState]):
    """Base of gibo and minucb: the batch/top-up/step logic; subclasses give ``Config``, ``step``, ``resamples``."""

    State = LocalState

    @classmethod
    def check_study(cls, dim: int, config: LocalConfigT) -> None:
        if config.x0 is not None and len(config.x0) != dim:
            raise PolicyConfigError("policy_config.x0", f"expected {dim} values in [0, 1], got {len(config.x0)}")

    @classmethod
    def queue(cls, config: LocalConfigT) -> str:
        return config.queue

    @classmethod
    def kernel(cls, config: LocalConfigT) -> KernelKind:
        return config.kernel

    @classmethod
    def plans_now(cls, state: LocalState, n_complete: int, n_running: int) -> bool:
        # While the batch's results are out a suggest only tops the batch up with extra exploration,
        # which delays the step: plan ahead only once the batch is in (or nothing is running).
        if state.x_t is None or n_running == 0:
            return True
        return n_complete - state.n_start >= state.batch

    @classmethod
    def fallback_box(cls, state: LocalState, config: LocalConfigT, dim: int) -> tuple[list[float], list[float]]:
        """The exploration box around x_t: a late point is still a local one."""
        if state.x_t is None or len(state.x_t) != dim:
            return super().fallback_box(state, config, dim)
        return [max(0.0, v - config.delta) for v in state.x_t], [min(1.0, v + config.delta) for v in state.x_t]

    @classmethod
    def display(cls, state: LocalState, config: LocalConfigT, n_complete: int) -> Display | None:
        """The iteration: its phase and batch progress, x_t, the exploration box, the path, the step and the GP."""
        if state.x_t is None:
            return Display(phase="not started")
        done = max(0, min(state.batch, n_complete - state.n_start))
        if done >= state.batch:
            phase = "step pending"  # the batch is in: the next plan fits the GP and steps
        else:
            phase = "exploration batch" if state.phase == "batch" else "top-up"
        lower, upper = cls.fallback_box(state, config, len(state.x_t))
        last = state.path[-1].info if state.path else {}
        numbers: dict[str, float | int | str | None] = {"iteration": state.t, "top-up points": state.extra}
        for key in ("event", "step_norm", "trace_after"):
            value = last.get(key)
            if value is not None and not isinstance(value, bool):
                numbers[key] = value
        if state.hypers is not None:
            numbers["gp noise"] = round(state.hypers.noise, 6)
            numbers["gp mean lengthscale"] = round(sum(state.hypers.lengthscale) / len(state.hypers.lengthscale), 6)
        return Display(
            phase=phase,
            progress=Progress(done=done, total=state.batch, label="exploration batch"),
            centre=list(state.x_t),
            box=Box(lower=lower, upper=upper),
            path=[list(p.x) for p in state.path],
            numbers=numbers,
        )

    @abstractmethod
    def step(self, model: Any, x_t: Tensor, config: LocalConfigT) -> tuple[Tensor, dict[str, Any]]:
        """x_{t+1} (d) from the fitted GP and x_t (d), and what is worth showing about the step."""

    def resamples(self, config: LocalConfigT) -> int:
        """b1: copies of x_t at the head of each iteration's batch."""
        return 1

    def explore(
        self,
        request: SuggestRequest[LocalConfigT, LocalState],
        data: Data,
        x_t: Tensor,
        hypers: gp.Hypers | None,
        head: Tensor,
        count: int,
        *,
        min_count: int,
        seed: int,
        top_up: bool,
    ) -> tuple[Tensor, dict[str, Any]]:
        """The batch's points after ``head`` (k x d, count >= k >= min_count) and what to show about them.

        GIBO's exploration: greedy argmin of tr Cov(grad f(x_t)) in x_t +- delta, given the data window,
        the pending points and ``head``; the early stop only within a batch, never in a top-up.
        """
        config = request.config
        found = explore(
            gp.kernel_params(hypers, request.dim, config.kernel, x_t.device),
            torch.cat([data.conditioning(), head]),
            x_t,
            count,
            local_box(x_t, config.delta),
            epsilon=None if top_up else config.epsilon,
            min_count=min_count,
            num_restarts=config.num_restarts,
            raw_samples=config.raw_samples,
            seed=seed,
            acquisition=self.exploration_acquisition(request, data, x_t, hypers),
            ascent_steps=config.ascent_steps,
        )
        return found.Z, {"trace_before": found.trace_before, "trace_after": found.trace_after}

    def exploration_acquisition(
        self, request: SuggestRequest[LocalConfigT, LocalState], data: Data, x_t: Tensor, hypers: gp.Hypers | None
    ) -> Callable[[GradientTrace], AcquisitionFunction] | None:
        """The acquisition ``explore`` maximises, built from its GradientTrace; None: GIBO's trace reduction,
        optimised for all candidates at once."""
        return None

    def suggest(self, request: SuggestRequest[LocalConfigT, LocalState]) -> Suggestion:
        config = request.config
        dev, d = request.device, request.dim
        X = request.X.to(dev, torch.float64).reshape(-1, d)
        y = request.y.to(dev, torch.float64).reshape(-1)
        pending = request.X_pending.to(dev, torch.float64).reshape(-1, d)
        state, n, n_max = request.state, X.shape[0], config.n_max or 5 * d
        data = Data(X, y, pending, n_max)
        if state.x_t is None:  # the first call: x_0 and its batch
            start = config.x0 if config.x0 is not None else [0.5] * d
            x_t = torch.tensor(start, dtype=torch.float64, device=dev)
            hypers = gp.to_state(self._fit(data, config, None, _seed(request.seed, 0, 0))) if n else None
            return self._iteration(request, data, state, 0, x_t, hypers, {"event": "start"})
        t, x_t = state.t, torch.tensor(state.x_t, dtype=torch.float64, device=dev)
        if n - state.n_start < state.batch and pending.shape[0] > 0:
            return self._top_up(request, data, state, x_t)
        if n == 0:  # every trial of the batch failed: send the same iteration again
            return self._iteration(request, data, state, t, x_t, state.hypers, {"event": "retry"})
        model = self._fit(data, config, state.hypers, _seed(request.seed, t + 1, 0), t + 1)
        x_next, info = self.step(model, x_t, config)
        return self._iteration(request, data, state, t + 1, x_next, gp.to_state(model), {"event": "step", **info})

    def _fit(self, data: Data, config: LocalConfig, hypers: gp.Hypers | None, seed: int, t: int = 0) -> Any:
        """The GP on the data window, refitted as ``config.refit`` says, warm-started from ``hypers``: a bounded
        refit (``warm_fit_iterations``) between full ones (every ``full_fit_every`` iterations, and the first)."""
        refit = config.refit == "every" or (config.refit == "when_full" and data.X.shape[0] >= data.n_max)
        full = hypers is None or t % config.full_fit_every == 0
        maxiter = None if full else config.warm_fit_iterations
        return gp.fit_model(
            data.X,
            data.y,
            config.kernel,
            hypers,
            n_max=data.n_max,
            fit=refit,
            device=data.X.device,
            generator=torch.Generator().manual_seed(seed),
            maxiter=maxiter,
        )

    def _iteration(
        self,
        request: SuggestRequest[LocalConfigT, LocalState],
        data: Data,
        state: LocalState,
        t: int,
        x_t: Tensor,
        hypers: gp.Hypers | None,
        info: dict[str, Any],
    ) -> Suggestion:
        """The batch of iteration t: b1 copies of x_t, then the exploration points around x_t."""
        config, d = request.config, request.dim
        b1 = self.resamples(config)
        head = x_t.expand(b1, d)
        Z, found = self.explore(
            request,
            data,
            x_t,
            hypers,
            head,
            max(config.samples_per_iteration or d, request.count - b1),
            min_count=request.count - b1,
            seed=_seed(request.seed, t, 0),
            top_up=False,
        )
        batch = torch.cat([head, Z])
        info = {**info, "t": t, "batch": batch.shape[0], **found}
        new_state = LocalState(
            t=t,
            x_t=x_t.tolist(),
            phase="batch",
            n_start=data.X.shape[0],
            batch=batch.shape[0],
            extra=0,
            hypers=hypers,
            path=_extend_path(state.path, t, data.X.shape[0], x_t, info),
        )
        return Suggestion(X=batch, state=new_state)

    def _top_up(
        self, request: SuggestRequest[LocalConfigT, LocalState], data: Data, state: LocalState, x_t: Tensor
    ) -> Suggestion:
        """``count`` more exploration points around x_t while the batch's results are still out (no fit)."""
        Z, _ = self.explore(
            request,
            data,
            x_t,
            state.hypers,
            x_t.new_zeros(0, request.dim),
            request.count,
            min_count=request.count,
            seed=_seed(request.seed, state.t, 1 + state.extra),
            top_up=True,
        )
        return Suggestion(X=Z, state=state.model_copy(update={"phase": "top-up", "extra": state.extra + Z.shape[0]}))
