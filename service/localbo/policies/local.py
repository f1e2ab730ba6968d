"""The ask/tell iteration shared by the local gradient policies (gibo, minucb).

One iteration t around the iterate x_t is one batch: ``resamples`` copies of x_t followed by the
exploration points around x_t (``exploration.explore``). It is returned by one suggest call, so the
engine queues it as the plan. The state (``LocalState``, ``local_state.py``) says what the policy waits for:
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

Constraints (issue 30; ``local_constraints.py`` states the rules): a policy whose ``handles`` declares them (gibo,
minucb, la-minucb) keeps its points inside the parameter constraints (x_0 moved to its nearest point inside when
it is not), fits one GP per outcome constraint (and the failure model with failures to avoid) beside the
objective's at every step, takes ``constrained_step`` (the policy's step subject to the constraints' bounds), moves
the centre only to likely-feasible points (``Constraints.centre``: the step shortened, else x_t stays) and explores
only where the constraints allow (``exploration.Region``). The state's ``constraints`` keeps the fits and what the
display shows. A request with none of C, polytope, X_failed or safe mode takes exactly the unconstrained path, and
its state is dumped as before (no ``constraints`` key).

Several objectives (issue 31; ``request.Y``): the step of iteration t minimises ParEGO's augmented Chebyshev
scalarisation of the normalised objectives with a weight on the simplex for t (``scalarise.py``: stratified over the
steps by default, ``scalarisation_weights: "uniform"`` for independent draws), so the iterate moves towards a
different part of the Pareto front from step to step; everything else is as above.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from localbo.policies import gp
from localbo.policies.base import (
    Display,
    KernelKind,
    Policy,
    PolicyConfigError,
    PolicyError,
    Suggestion,
    SuggestRequest,
)
from localbo.policies.exploration import explore, local_box
from localbo.policies.gradients import GradientTrace
from localbo.policies.local_constraints import Constraints, ConstraintState, Demands, fit_constraints
from localbo.policies.local_display import local_display
from localbo.policies.local_state import LocalConfig, LocalState, _extend_path, _samples, last_batch_improved
from localbo.policies.restarts import RESTART_BLOCKERS, RunState, after_step, restart_point, restarts_serve, stalled
from localbo.policies.scalarise import chebyshev, step_weights
from localbo.policies.warping import power_warp


@dataclass(frozen=True)
class Data:
    X: Tensor  # n x d, completed
    y: Tensor  # n
    pending: Tensor  # m x d, asked or planned, not told
    n_max: int  # the GP's data window
    first: int = 0  # the study's results before X's first row (those of the runs before a restart)

    @property
    def told(self) -> int:
        """The study's results: those before the run and the run's own."""
        return self.first + self.X.shape[0]

    def conditioning(self) -> Tensor:
        """The inputs the exploration conditions on: the window of X and the pending points, (N + m) x d."""
        return torch.cat([self.X[-self.n_max :], self.pending])


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
    def check_needs(cls, kind: str, dim: int, needs: frozenset[str], config: LocalConfigT | None = None) -> None:
        blocking = sorted(needs & RESTART_BLOCKERS)
        if config is not None and config.restart_after is not None and blocking:
            raise PolicyConfigError(
                "policy_config.restart_after",
                "restarts serve a study with one objective and no outcome constraints, failures to avoid or safe "
                f"mode (a restart's point is not known safe, nor its run's value comparable); this one has "
                f"{', '.join(blocking)}",
            )

    @classmethod
    def queue(cls, config: LocalConfigT) -> str:
        return config.queue

    @classmethod
    def gp_points(cls, state: LocalState, config: LocalConfigT, dim: int, n: int) -> int:
        return min(n, config.n_max or 5 * dim)  # the window of the last N_max results

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
        """The iteration: its phase and batch progress, x_t, the exploration box, the path, the step and the GP
        (``local_display.py``)."""
        if state.x_t is None:
            return Display(phase="not started")
        return local_display(state, cls.fallback_box(state, config, len(state.x_t)), n_complete)

    @abstractmethod
    def step(self, model: Any, x_t: Tensor, config: LocalConfigT) -> tuple[Tensor, dict[str, Any]]:
        """x_{t+1} (d) from the fitted GP and x_t (d), and what is worth showing about the step."""

    def constrained_step(
        self, model: Any, x_t: Tensor, config: LocalConfigT, constraints: Constraints
    ) -> tuple[Tensor, dict[str, Any], Callable[[Tensor], Tensor] | None]:
        """The step under constraints: its point x* (d, inside cube ∩ polytope), what to show, and the merit
        (k x d -> k, lower better) the centre rule may not raise (None: any likely-feasible move is taken).

        The default: the unconstrained step, brought into the polytope along the segment from x_t."""
        x, info = self.step(model, x_t, config)
        lo, hi = torch.zeros_like(x_t), torch.ones_like(x_t)
        return constraints.project(x, x_t) if constraints.polytope is not None else x.clamp(lo, hi), info, None

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
        constraints: Constraints | None = None,
    ) -> tuple[Tensor, dict[str, Any]]:
        """The batch's points after ``head`` (k x d, count >= k >= min_count) and what to show about them.

        GIBO's exploration: greedy argmin of tr Cov(grad f(x_t)) in x_t +- delta, given the data window,
        the pending points and ``head``; the early stop only within a batch, never in a top-up. With
        ``constraints``, only where they allow (``exploration.Region``).
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
            region=None if constraints is None else constraints.region(x_t),
            search_iterations=getattr(config, "search_iterations", None),  # mpd's sequential search only
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
        if request.Y is not None and request.Y.shape[-1] > 1:  # several objectives: this step's ParEGO scalar
            weights = step_weights(request.Y.shape[-1], request.seed, request.state.t + 1, config.scalarisation_weights)
            y = chebyshev(request.Y.to(dev, torch.float64), weights)
        pending = request.X_pending.to(dev, torch.float64).reshape(-1, d)
        state, n, n_max = request.state, X.shape[0], config.n_max or 5 * d
        if config.restart_after is not None and state.run is None and restarts_serve(request):
            state = state.model_copy(update={"run": RunState()})
        run_start = min(n, state.run.start) if state.run is not None else 0  # the current run's results only
        raw = y = y[run_start:]  # raw: the run's values as told, for its best (the warp below is refitted each call)
        if config.output_warp == "power" and y.shape[0]:  # the GP sees a monotone warp of y fitted to its window
            y = power_warp(y, y[-n_max:])
        data = Data(X[run_start:], y, pending, n_max, run_start)
        demands = Demands.of(request, self.handles)  # None: nothing to respect, the unconstrained path
        if state.x_t is None:  # the first call: x_0 and its batch
            start = config.x0 if config.x0 is not None else [0.5] * d
            x_t = torch.tensor(start, dtype=torch.float64, device=dev)
            hypers = gp.to_state(self._fit(data, config, None, _seed(request.seed, 0, 0))) if n else None
            if demands is None:
                return self._iteration(request, data, state, 0, x_t, hypers, {"event": "start"})
            # safe mode: from x0 (the engine's first seed) unless a result there broke a limit, else the best
            # feasible result; with neither nothing is known safe (the engine's safe fallback or 409 follows)
            if demands.delta is not None and (config.x0 is None or demands.shown_unsafe(x_t, data.X)):
                known = demands.safe_start(data.X, data.y)
                if known is None:
                    raise PolicyError("safe mode: no x0 known safe, no feasible result: nothing is known safe")
                x_t = known
            x_t = demands.start(x_t)
            first = self._constraints(request, data, demands, state, 0, fit=True)
            return self._iteration(request, data, state, 0, x_t, hypers, {"event": "start"}, first)
        t, x_t = state.t, torch.tensor(state.x_t, dtype=torch.float64, device=dev)
        if n - state.n_start < state.batch and pending.shape[0] > 0:
            held = None if demands is None else self._constraints(request, data, demands, state, t, fit=False)
            return self._top_up(request, data, state, x_t, held)
        if data.X.shape[0] == 0:  # every trial of the (run's) batch failed: send the same iteration again
            again = None if demands is None else self._constraints(request, data, demands, state, t, fit=True)
            return self._iteration(request, data, state, t, x_t, state.hypers, {"event": "retry"}, again)
        if state.run is not None:
            run = after_step(state.run, raw)
            if stalled(run, config.restart_after):
                return self._restart(request, X, data, state, t + 1, run, demands)
            state = state.model_copy(update={"run": run})
        improved = last_batch_improved(raw, state.n_start - run_start)  # for batch_growth "on_stall"
        model = self._fit(data, config, state.hypers, _seed(request.seed, t + 1, 0), t + 1)
        if demands is None:
            x_next, info = self.step(model, x_t, config)
            info = {"event": "step", **info}
            return self._iteration(request, data, state, t + 1, x_next, gp.to_state(model), info, improved=improved)
        fitted = self._constraints(request, data, demands, state, t + 1, fit=True)
        x_star, info, merit = self.constrained_step(model, x_t, config, fitted)
        x_next, moved = fitted.centre(x_t, x_star, merit, data.X[-n_max:], data.y[-n_max:])
        info = {**info, **moved, "step_norm": float((x_next - x_t).norm())}
        hypers = gp.to_state(model)
        info = {"event": "step", **info}
        return self._iteration(request, data, state, t + 1, x_next, hypers, info, fitted, improved=improved)

    def _restart(
        self,
        request: SuggestRequest[LocalConfigT, LocalState],
        X: Tensor,
        data: Data,
        state: LocalState,
        t: int,
        run: RunState,
        demands: Demands | None,
    ) -> Suggestion:
        """Iteration t starts a new run (``restarts.py``) at the point farthest from every evaluated and pending one,
        inside the parameter constraints; its GP window begins with the results still to come."""
        seen = torch.cat([X, data.pending])
        x_new = restart_point(seen, request.seed, run.restarts)
        fresh = RunState(start=X.shape[0], restarts=run.restarts + 1)
        empty = Data(X[:0], data.y[:0], data.pending, data.n_max, X.shape[0])
        state = state.model_copy(update={"run": fresh})
        info = {"event": "restart", "restarts": fresh.restarts, "stalled_at": run.best}
        if demands is None:
            return self._iteration(request, empty, state, t, x_new, state.hypers, info)
        constraints = self._constraints(request, empty, demands, state, t, fit=True)
        return self._iteration(request, empty, state, t, demands.start(x_new), state.hypers, info, constraints)

    def _constraints(
        self,
        request: SuggestRequest[LocalConfigT, LocalState],
        data: Data,
        demands: Demands,
        state: LocalState,
        t: int,
        *,
        fit: bool,
    ) -> Constraints:
        """The constraint models of iteration t: fitted as the objective's GP (``_fit``, warm-started from the state),
        or, in a top-up, built from the last fits."""
        config, seed = request.config, _seed(request.seed, t, 0) + 1  # not the objective's generator

        at_bound = 0.0 if demands.delta is not None else None  # safe mode: the prior at the bound (SafeOpt's)

        def fit_outcome(c: Tensor, hypers: gp.Hypers | None) -> Any:
            return self._fit(data, config, hypers, seed, t, y=c, mean_at=at_bound)

        return fit_constraints(
            demands,
            data.X,
            fit_outcome,
            config.kernel,
            state.constraints,
            config.constraint_beta,
            torch.Generator().manual_seed(seed),
            fit,
            data.n_max,
        )

    def _fit(
        self,
        data: Data,
        config: LocalConfig,
        hypers: gp.Hypers | None,
        seed: int,
        t: int = 0,
        y: Tensor | None = None,
        mean_at: float | None = None,
    ) -> Any:
        """The GP on the data window, refitted as ``config.refit`` says, warm-started from ``hypers``: a bounded
        refit (``warm_fit_iterations``) between full ones (every ``full_fit_every`` iterations, and the first).
        ``y``: other values at data.X than the objective's (an outcome constraint's); ``mean_at``: its prior mean
        held there (``gp.build_model``)."""
        refit = config.refit == "every" or (config.refit == "when_full" and data.X.shape[0] >= data.n_max)
        full = hypers is None or t % config.full_fit_every == 0
        maxiter = None if full else config.warm_fit_iterations
        return gp.fit_model(
            data.X,
            data.y if y is None else y,
            config.kernel,
            hypers,
            n_max=data.n_max,
            fit=refit,
            device=data.X.device,
            generator=torch.Generator().manual_seed(seed),
            maxiter=maxiter,
            mean_at=mean_at,
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
        constraints: Constraints | None = None,
        *,
        improved: bool = True,
    ) -> Suggestion:
        """The batch of iteration t: b1 copies of x_t, then the exploration points around x_t (only x_t in safe
        mode while there is nothing to model the constraints with); ``improved``: whether the last batch improved
        the best value (``_samples``)."""
        config, d = request.config, request.dim
        b1 = self.resamples(config)
        head = x_t.expand(b1, d)
        if constraints is not None and constraints.blind:
            Z, found = x_t.expand(max(0, request.count - b1), d), {"safe": "no result yet: x_t only"}
        else:
            Z, found = self.explore(
                request,
                data,
                x_t,
                hypers,
                head,
                max(_samples(config, d, t, improved), request.count - b1),
                min_count=request.count - b1,
                seed=_seed(request.seed, t, 0),
                top_up=False,
                constraints=constraints,
            )
        batch = torch.cat([head, Z])
        info = {**info, "t": t, "batch": batch.shape[0], **found}
        kept = state.constraints
        if constraints is not None:
            kept = self._constraint_state(request, data, constraints, x_t, t, state.constraints)
            info["feasibility"] = kept.feasibility
        new_state = LocalState(
            t=t,
            x_t=x_t.tolist(),
            phase="batch",
            n_start=data.told,
            batch=batch.shape[0],
            extra=0,
            hypers=hypers,
            path=_extend_path(state.path, t, data.told, x_t, info),
            constraints=kept,
            run=state.run,
        )
        return Suggestion(X=batch, state=new_state)

    def _constraint_state(
        self,
        request: SuggestRequest[LocalConfigT, LocalState],
        data: Data,
        constraints: Constraints,
        x_t: Tensor,
        t: int,
        previous: ConstraintState | None,
    ) -> ConstraintState:
        generator = torch.Generator().manual_seed(_seed(request.seed, t, 0) + 2)
        return constraints.summary(x_t, data.n_max, local_box(x_t, request.config.delta), generator, previous)

    def _top_up(
        self,
        request: SuggestRequest[LocalConfigT, LocalState],
        data: Data,
        state: LocalState,
        x_t: Tensor,
        constraints: Constraints | None = None,
    ) -> Suggestion:
        """``count`` more exploration points around x_t while the batch's results are still out (no fit)."""
        if constraints is not None and constraints.blind:
            Z = x_t.expand(request.count, request.dim)
        else:
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
                constraints=constraints,
            )
        return Suggestion(X=Z, state=state.model_copy(update={"phase": "top-up", "extra": state.extra + Z.shape[0]}))
