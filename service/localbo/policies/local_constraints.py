"""Constraints for the local policies (gibo, minucb, la-minucb; issue 30): what a step and an exploration point
may not break, and where the iterate x_t may move.

What a request may ask the local policies to respect (``Demands``, each only if the policy's ``handles`` says so):

    polytope   A_ub u <= b_ub, A_eq u == b_eq in the unit cube (``request.polytope``): every point asked satisfies it
               within ``Polytope.TOLERANCE``
    outcomes   C: n x m, c_j(x) <= 0 where constraint j holds (``request.C``)
    failures   X_failed: f x d, the points whose trials failed (``request.X_failed``, failures: "avoid")
    safe mode  delta = ``request.max_violation_probability``: only points predicted safe are asked

Models (``Constraints``): one GP per outcome constraint beside the objective's, on the same data window (the last
N_max points) and fitted the same way (``LocalPolicy._fit``: ``gp.fit_model``, warm-started from the last fit kept in
the state), on bilog(c_j / s_j) as turbo's SCBO (``scaled``; s_j = median |c_j|, at least 1 outside safe mode,
``violation.typical_size``), in safe mode with the prior mean held at the bound (``gp.ScaledAbout``, SafeOpt's
prior, as turbo's: away from the data a model says "do not know", not "like the seed"); with failures the failure
model (``failures.py``: a GP on a +-1 failure indicator over every completed and failed point) is one more
constraint, z(x) <= 0 "does not fail".
Each model j gives mu_j(x), sigma_j(x) (noise-free, ``Posterior``: the closed form of the fitted SingleTaskGP; in
safe mode sigma_j of the measured value, sqrt(sigma_j^2 + n2_j): a fit that explains its misfit near the bound as
noise is otherwise sure of a latent value the measurement misses; see ``violation.safe_probability``), and

    P(c_j(x) <= 0) = Phi(-mu_j(x) / sigma_j(x))          PF(x) = prod_j P(c_j(x) <= 0)   (independent GPs)
    optimistic bound   mu_j(x) - beta_c sigma_j(x) <= 0   (beta_c = ``constraint_beta``, 2 by default)

Safe mode uses the product of the per-constraint probabilities, the failure model's included: a point is *safe*
when PF(x) >= 1 - delta / SAFE_MARGIN (with delta = 0.05, a joint chance of a violation of at most 0.5 % under the
models: the contract's 1 - delta with turbo's margin, for the points are picked at the safe set's edge, where the
models are least sure; on welded_beam, tension_compression, speed_reducer and mixture8 (minucb, seeds 0-1, 50
evaluations) it cut the violating evaluations from 50 to 33 of 350). A point is *likely feasible* when PF(x) >= 1/2
(outside safe mode) or safe (in safe mode).

    step          the policy's own rule within box ∩ polytope, subject to every constraint's optimistic bound (in safe
                  mode: safe), solved by SLSQP (``argmin``; the gradient step of gibo as the projection
                  of its target onto that set, ``project``); when no start satisfies them, the point of the region
                  nearest feasibility instead (a restoration step, ``restoration``: the least mean violation
                  sum_j max(mu_j, 0), as SCBO's; in safe mode the highest PF)
    centre        x_{t+1} = the step's point if it is likely feasible; else the step halved, at most three times
                  (x_t + 2^-k (x* - x_t), k = 1..3), the first of those that is; with minucb's merit (its UCB) the
                  move is kept only if it does not raise the merit, as MinUCB's rule. No likely-feasible point on the
                  segment: x_t stays. When x_t itself is not likely feasible (an infeasible start, a model that
                  learnt better) the merit is ignored, and if the segment holds no likely-feasible point the centre
                  jumps to the best likely-feasible observation in the window, else to the one of the candidates
                  and the window's points nearest feasibility by ``restoration`` (the safest known point). The mean
                  violation, not PF, outside safe mode: far from the data PF is high only because sigma is the
                  prior's (ackley10, minucb, 10 seeds: the first feasible point at 23-46 evaluations, was 23-84 and
                  none by 100 on one seed)
    exploration   the gradient's exploration points stay in x_t +- delta ∩ polytope (hit-and-run starts, ascent moves
                  pulled back along their segment, ``into_polytope``); in safe mode they must also be safe, and with
                  a failure model outside safe mode not predicted to fail (mu_z <= 0, P(not fail) >= 1/2, as turbo
                  does): a move that leaves that set is refused, and a chosen point outside it is pulled back along
                  the segment to x_t (halved up to six times), else it is x_t itself (in safe mode the point of the
                  box nearest to x_t that met every limit, if any: x_t may not be measured yet)
    safe start    x_0 is the config's x0 (the engine sets it to the study's first safe seed), else the best completed
                  point that meets every outcome constraint (else the least violating one); with neither the policy
                  raises a PolicyError (nothing is known safe: the engine's safe fallback answers). Before any result
                  (nothing to model the constraints with) only x_0 is asked.

>>> demands = Demands.of(request, Gibo.handles)       # None: nothing to respect, the policy exactly as before
>>> cons = fit_constraints(demands, X, fit, "rbf", None, 2.0, generator, True, n_max)   # LocalPolicy does this
>>> cons.likely(Z), cons.allows(Z)                    # k (bool) each: PF >= 1/2 (safe mode: safe); explorable
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch
from botorch.models import SingleTaskGP
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor
from torch.special import log_ndtr

from localbo.policies import failures, gp
from localbo.policies.base import Polytope, SuggestRequest
from localbo.policies.closed_form import Posterior
from localbo.policies.exploration_region import ExplorationRegion
from localbo.policies.polytope import EmptyRegion, feasible_or_none
from localbo.policies.polytope_steps import Rows, inside, into_polytope, slsqp
from localbo.policies.violation import SAFE_MARGIN, active_constraint, bilog, total_violation, typical_size

SHORTEN = (0.5, 0.25, 0.125)  # the fractions of a step tried when the full step is not likely feasible
TIE_BREAK = 1e-3  # restoration: the weight of -log PF beside the mean violation (ties where no mean is past a bound)
MARGIN = 1e-6  # the SLSQP constraints hold with this much room, so the result passes the exact test
SAFE_SHARE_SAMPLES = 256  # points of the local box ∩ polytope behind the display's "safe share"


class ConstraintState(BaseModel):
    """What a local policy keeps about its constraints: the last fits (warm starts) and what the display shows."""

    model_config = ConfigDict(extra="forbid")
    constraint_hypers: list[gp.Hypers] = Field(default_factory=list)  # the outcome constraints' GPs
    failure_hypers: gp.StoredHypers = None  # the failure model's last fit (failures: "avoid")
    n_failed: int = 0  # failed points seen by the last fit
    feasible_share: float | None = None  # the share of the results that satisfy every outcome constraint
    active_constraint: int | None = None  # the constraint nearest to (or furthest past) its bound at x_t
    feasibility: float | None = None  # PF(x_t)
    safe_share: float | None = None  # safe mode: the share of x_t +- delta (∩ polytope) predicted safe
    max_violation_probability: float | None = None  # safe mode's delta


# --- what the request asks, and the models ----------------------------------------------------------------------


@dataclass(frozen=True)
class Demands:
    """What a request asks the policy to respect (only what its ``handles`` declares); ``of`` gives None when
    nothing, and the policy is then exactly the unconstrained one."""

    C: Tensor | None  # n x m, c_j <= 0 holds
    polytope: Polytope | None
    X_failed: Tensor | None  # f x d
    delta: float | None  # safe mode: the largest predicted chance of a violation a point may have

    @classmethod
    def of(cls, request: SuggestRequest[Any, Any], handles: frozenset[str]) -> Demands | None:
        d, dev = request.dim, request.device
        C = request.C if "constraints" in handles else None
        C = C.to(dev, torch.float64).reshape(-1, C.shape[-1]) if C is not None and C.ndim == 2 and C.shape[-1] else None
        polytope = request.polytope if "parameter_constraints" in handles else None
        X_failed = failures.failed_points(request.X_failed, d) if "failures" in handles else None
        delta = request.max_violation_probability if "safety" in handles else None
        if C is None and polytope is None and X_failed is None and delta is None:
            return None
        return cls(C, polytope, None if X_failed is None else X_failed.to(dev), delta)

    def safe_start(self, X: Tensor, y: Tensor) -> Tensor | None:
        """Safe mode's x_0 when the config names none (or one shown unsafe): the best result that satisfies every
        outcome constraint; None when none does (nothing is known safe: the engine's safe fallback or 409)."""
        if X.shape[0] == 0 or self.C is None or self.C.shape[0] != X.shape[0]:
            return X[int(y.argmin())] if X.shape[0] else None
        feasible = self.C.amax(-1) <= 0  # the largest violation of each row (<= 0: feasible)
        return X[int(torch.where(feasible, y, torch.full_like(y, math.inf)).argmin())] if feasible.any() else None

    def shown_unsafe(self, x: Tensor, X: Tensor) -> bool:
        """Whether a result at ``x`` broke an outcome constraint, or a trial failed there (failures avoided)."""
        at, C = (X - x).abs().amax(-1) <= 1e-9, self.C
        broke = C is not None and C.shape[0] == X.shape[0] and bool((at & (C.amax(-1) > 0)).any())
        return broke or (self.X_failed is not None and bool(((self.X_failed - x).abs().amax(-1) <= 1e-9).any()))

    def start(self, x0: Tensor) -> Tensor:
        """x_0 inside the polytope: itself if it is, else its nearest point of cube ∩ polytope (SLSQP from the
        polytope's Chebyshev centre)."""
        if self.polytope is None or bool(inside(self.polytope, x0.unsqueeze(0))[0]):
            return x0
        centre = feasible_or_none(self.polytope)
        if centre is None:
            raise EmptyRegion("the parameter constraints have no point in the unit cube")
        centre = centre.to(x0)
        lo, hi = torch.zeros_like(x0), torch.ones_like(x0)
        x = slsqp(lambda X: (X - x0).pow(2).sum(-1), centre, lo, hi, self.polytope, None, 100)
        return centre if x is None else x


@dataclass(frozen=True)
class Constraints:
    """The fitted constraint models of one call and the rules of the module's docstring."""

    polytope: Polytope | None
    delta: float | None
    beta: float  # the optimistic bound's multiplier on sigma (outside safe mode)
    outcome: tuple[Posterior, ...] = ()  # one per outcome constraint (none before any result)
    failure: Posterior | None = None  # the failure model
    blind: bool = False  # safe mode with outcome constraints but no result to model them with yet
    models: tuple[SingleTaskGP, ...] = ()  # the outcome constraints' GPs, for the state
    failure_model: SingleTaskGP | None = None
    C: Tensor | None = None  # n x m, every result's constraint values (for the display)
    n_failed: int = 0
    known_safe: Tensor | None = None  # safe mode: the completed points that met every outcome constraint

    @cached_property
    def rows(self) -> Rows | None:
        """The polytope's rows, built once."""
        return Rows.of(self.polytope)

    @property
    def safe(self) -> bool:
        return self.delta is not None

    @property
    def threshold(self) -> float:
        """PF at or above which a point is likely feasible: 1 - delta / SAFE_MARGIN in safe mode (as turbo: the
        step and the exploration points sit at the safe set's edge, where the models are least sure), else 1/2."""
        return 1.0 - self.delta / SAFE_MARGIN if self.delta is not None else 0.5

    def posteriors(self) -> tuple[Posterior, ...]:
        return (*self.outcome, self.failure) if self.failure is not None else self.outcome

    def log_pf(self, X: Tensor) -> Tensor:
        """log PF(x) = sum_j log Phi(-mu_j / sigma_j): k for X: k x d (0 without models)."""
        total = torch.zeros(X.shape[0], dtype=X.dtype, device=X.device)
        for post in self.posteriors():
            mean, sigma = post(X)
            total = total + log_ndtr(-mean / sigma)
        return total

    def likely(self, X: Tensor) -> Tensor:
        """k (bool): PF >= ``threshold`` (never while blind)."""
        if self.blind:
            return torch.zeros(X.shape[0], dtype=torch.bool, device=X.device)
        if not self.posteriors():
            return torch.ones(X.shape[0], dtype=torch.bool, device=X.device)
        with torch.no_grad():
            return self.log_pf(X) >= math.log(self.threshold)

    def allows(self, X: Tensor) -> Tensor:
        """k (bool): where an exploration point may lie as far as the models go: safe in safe mode; outside it not
        predicted to fail (mu_z <= 0) with a failure model; anywhere else."""
        if self.safe:
            return self.likely(X)
        if self.failure is None:
            return torch.ones(X.shape[0], dtype=torch.bool, device=X.device)
        with torch.no_grad():
            return self.failure(X)[0] <= 0

    def step_bounds(self, X: Tensor) -> Tensor:
        """k x r, >= 0 where the step's constraints hold: log PF - log(threshold) in safe mode, else each model's
        optimistic bound -(mu_j - beta_c sigma_j); with the margin MARGIN."""
        if self.safe:
            return (self.log_pf(X) - math.log(self.threshold) - MARGIN).unsqueeze(-1)
        parts = []
        for post in self.posteriors():
            mean, sigma = post(X)
            parts.append(self.beta * sigma - mean - MARGIN)
        return torch.stack(parts, -1) if parts else X.new_zeros(X.shape[0], 0)

    def meets_step(self, X: Tensor) -> Tensor:
        """k (bool): the step's constraints hold (up to MARGIN)."""
        if self.blind:
            return torch.zeros(X.shape[0], dtype=torch.bool, device=X.device)
        with torch.no_grad():
            return (self.step_bounds(X) >= -MARGIN).all(-1)

    def restoration(self, X: Tensor) -> Tensor:
        """k, lower better: how a point is ranked on the way to feasibility. Outside safe mode the models' mean
        violation sum_j max(mu_j, 0) (SCBO's total violation, on the models; turbo's first point while nothing is
        feasible), PF breaking ties where no mean is past its bound; in safe mode -log PF (safety first). Far from
        the data PF is high only because sigma is the prior's, so maximising it sends a restoration where the models
        know nothing; the mean violation keeps it where the means point the way."""
        if self.safe or not self.posteriors():
            return -self.log_pf(X)
        means = torch.stack([post(X)[0] for post in self.posteriors()], -1)  # k x r
        return total_violation(means, X.shape[0]) - TIE_BREAK * self.log_pf(X)

    def grad_log_pf(self, x: Tensor) -> Tensor:
        """d log PF / dx at x (d): the direction of a restoration step."""
        x = x.detach().clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(self.log_pf(x.unsqueeze(0)).sum(), x)
        return torch.nan_to_num(grad)

    # --- the step ---

    def argmin(
        self,
        fun: Callable[[Tensor], Tensor],
        starts: Tensor,
        lo: Tensor,
        hi: Tensor,
        *,
        nonlinear: bool,
        maxiter: int = 50,
    ) -> Tensor | None:
        """The lowest fun (k x d -> k) found by SLSQP from each start (rows of box ∩ polytope) over box ∩ polytope,
        subject to the step's constraints when ``nonlinear`` (and there are models); None when no result (a start
        included) meets them."""
        nonlinear = nonlinear and bool(self.posteriors())
        if nonlinear and self.blind:
            return None
        g = self.step_bounds if nonlinear else None
        best, best_value = None, math.inf
        for x0 in starts:
            x = slsqp(fun, x0, lo, hi, self.rows, g, maxiter)
            found = x0.unsqueeze(0) if x is None else torch.stack([x, x0])
            ok = inside(self.rows, found, lo, hi)
            if nonlinear:
                ok &= self.meets_step(found)
            with torch.no_grad():
                values = fun(found)
            for row, value, good in zip(found, values.tolist(), ok.tolist(), strict=True):
                if good and math.isfinite(value) and value < best_value:
                    best, best_value = row, value
        return best

    def project(self, target: Tensor, start: Tensor) -> Tensor:
        """The point of cube ∩ polytope nearest to ``target`` (d) meeting the step's constraints when ``start`` (d,
        inside) does (SLSQP from ``start``); the target clipped to the cube when that is already such a point; the
        segment's point (``into_polytope``) when SLSQP finds none."""
        lo, hi = torch.zeros_like(start), torch.ones_like(start)
        clipped = target.clamp(0.0, 1.0).unsqueeze(0)
        keep_step = bool(self.meets_step(start.unsqueeze(0))[0])
        if bool(inside(self.rows, clipped)[0]) and (not keep_step or bool(self.meets_step(clipped)[0])):
            return clipped[0]

        def distance(X: Tensor) -> Tensor:
            return (X - target).pow(2).sum(-1)

        x = self.argmin(distance, start.unsqueeze(0), lo, hi, nonlinear=keep_step)
        if x is None and keep_step:
            x = self.argmin(distance, start.unsqueeze(0), lo, hi, nonlinear=False)
        return into_polytope(self.rows, clipped, start, lo, hi)[0] if x is None else x

    def centre(
        self,
        x_t: Tensor,
        x_star: Tensor,
        merit: Callable[[Tensor], Tensor] | None,
        X_obs: Tensor,
        y_obs: Tensor,
    ) -> tuple[Tensor, dict[str, Any]]:
        """x_{t+1} from x_t and the step's point x_star (both d, inside the polytope) by the centre rule of the
        module's docstring; ``merit`` (k x d -> k, lower better) or None; X_obs, y_obs: the window's data."""
        fractions = torch.tensor((1.0, *SHORTEN), dtype=x_t.dtype, device=x_t.device)
        candidates = x_t + fractions.unsqueeze(-1) * (x_star - x_t)  # 4 x d, the step then shorter ones
        ok = self.likely(candidates)
        here = bool(self.likely(x_t.unsqueeze(0))[0])
        info: dict[str, Any] = {}
        if bool(ok.any()):
            k = int(ok.nonzero()[0, 0])
            x = candidates[k]
            if here and merit is not None:
                with torch.no_grad():
                    better = bool(merit(x.unsqueeze(0))[0] <= merit(x_t.unsqueeze(0))[0])
                if not better:
                    return x_t, {"centre": "held (merit)"}
            info["centre"] = "step" if k == 0 else f"step x {float(fractions[k]):g}"
            return x, info
        if here:
            return x_t, {"centre": "held (not likely feasible)"}
        keep = inside(self.rows, X_obs)
        X_ok, y_ok = X_obs[keep], y_obs[keep]
        fine = self.likely(X_ok) if X_ok.shape[0] else torch.zeros(0, dtype=torch.bool)
        if bool(fine.any()):
            i = int(torch.where(fine, y_ok, torch.full_like(y_ok, math.inf)).argmin())
            return X_ok[i], {"centre": "best likely-feasible observation"}
        pool = torch.cat([x_t.unsqueeze(0), candidates, X_ok])
        if self.blind or not self.posteriors():
            return x_t, {"centre": "held (nothing known feasible)"}
        with torch.no_grad():
            i = int(self.restoration(pool).argmin())
        return pool[i], {"centre": "held (safest)" if i == 0 else "safest known point"}

    # --- exploration ---

    def region(self, anchor: Tensor) -> ExplorationRegion:
        return ExplorationRegion(self, anchor)

    # --- what the state keeps and the display shows ---

    def summary(
        self, x_t: Tensor, n_max: int, box: Tensor, generator: torch.Generator, previous: ConstraintState | None
    ) -> ConstraintState:
        """The state's record: the fits (those of ``previous`` when this call fitted none), the feasible share of
        C's rows, the active constraint (over the last ``n_max`` rows' spread) and PF at x_t, and in safe mode the
        share of ``box`` (2 x d) ∩ polytope predicted safe."""
        C = self.C
        C_window = None if C is None else C[-n_max:]
        constraint_hypers = [gp.to_state(m) for m in self.models] if self.models else []
        if not constraint_hypers and previous is not None:
            constraint_hypers = list(previous.constraint_hypers)
        failure_hypers = gp.to_state(self.failure_model) if self.failure_model is not None else None
        if failure_hypers is None and previous is not None:
            failure_hypers = previous.failure_hypers
        share = float((C <= 0).all(-1).double().mean()) if C is not None and C.shape[0] else None
        active, feasibility, safe_share = None, None, None
        x = x_t.unsqueeze(0)
        with torch.no_grad():
            if self.outcome and C_window is not None and C_window.shape[0]:
                mean = torch.stack([post(x)[0] for post in self.outcome], -1)  # 1 x m
                active = active_constraint(torch.cat([C_window, mean]), C_window.shape[0])
            if self.posteriors() and not self.blind:
                feasibility = round(float(self.log_pf(x).exp()[0]), 6)
            if self.safe:
                points = self.region(x_t).sample(SAFE_SHARE_SAMPLES, box[0], box[1], generator)
                safe_share = round(float(self.likely(points).double().mean()), 4)
        return ConstraintState(
            constraint_hypers=constraint_hypers,
            failure_hypers=failure_hypers,
            n_failed=self.n_failed,
            feasible_share=None if share is None else round(share, 6),
            active_constraint=active,
            feasibility=feasibility,
            safe_share=safe_share,
            max_violation_probability=self.delta,
        )


def scaled(C: Tensor, safe: bool) -> Tensor:
    """What the constraint GPs fit: bilog(c_j / s_j), as turbo's SCBO (``violation.typical_size``; the sign, and so
    every P(c_j <= 0), is kept). A limit measured in thousands is otherwise, after standardising, a step too small
    to resolve next to values of 1e5 far from it (welded_beam: first feasible point at evaluation 98 of 100)."""
    size = typical_size(C, at_least=0.0 if safe else 1.0)  # safe mode: every one, as turbo
    return bilog(C / size)


def fit_constraints(
    demands: Demands,
    X: Tensor,
    fit_outcome: Callable[[Tensor, gp.Hypers | None], SingleTaskGP],
    kernel: gp.KernelKind,
    previous: ConstraintState | None,
    beta: float,
    generator: torch.Generator,
    fit: bool,
    n_max: int,
) -> Constraints:
    """The models of ``demands`` on X (n x d, every completed point; the outcome GPs by ``fit_outcome(c_j, warm)``,
    the policy's own fit on its window), the failure model on X and X_failed (fitted, or built from the last fit
    when not ``fit``); warm starts from ``previous``."""
    C, X_failed = demands.C, demands.X_failed
    outcome: list[SingleTaskGP] = []
    if C is not None and X.shape[0]:
        C = scaled(C, safe=demands.delta is not None)
        warm: Sequence[gp.Hypers | None] = (
            previous.constraint_hypers
            if previous is not None and len(previous.constraint_hypers) == C.shape[1]
            else [None] * C.shape[1]
        )
        for j, hypers in enumerate(warm):
            if fit:
                outcome.append(fit_outcome(C[:, j], hypers))
            else:
                Xw, cw = gp.window(X, C[:, j], n_max)
                outcome.append(
                    gp.build_model(Xw, cw, kernel, hypers, X.device, 0.0 if demands.delta is not None else None)
                )
    failure = None
    if X_failed is not None:
        hypers = previous.failure_hypers if previous is not None else None
        if fit:
            failure = failures.fit_failure_model(X, X_failed, kernel, hypers, X.device, generator)
        else:
            failure = gp.build_model(*failures.indicator_data(X, X_failed), kernel, hypers, X.device)
    safe = demands.delta is not None  # safe mode: the chance that the measured value breaks a limit
    return Constraints(
        polytope=demands.polytope,
        delta=demands.delta,
        beta=beta,
        outcome=tuple(Posterior(m, measured=safe) for m in outcome),
        failure=None if failure is None else Posterior(failure, measured=safe),
        blind=demands.delta is not None and C is not None and not outcome,
        models=tuple(outcome) if fit else (),
        failure_model=failure if fit else None,
        C=C,
        n_failed=0 if X_failed is None else X_failed.shape[0],
        known_safe=X[(C <= 0).all(-1)] if safe and C is not None and C.shape[0] == X.shape[0] else None,
    )
