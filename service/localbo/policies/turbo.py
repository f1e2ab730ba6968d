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
    data:     (departs from the paper, for a suggest's cost flat in n) past ``max_data`` (500) results in the
              region, its GPs fit the ``max_data`` nearest its centre (``subsets.nearest``); up to it, all of them

"New results" are counted by trial number (the request's ``numbers``): a result is counted once, in the
first suggest that sees it, whatever order the tells came in.

With outcome constraints (``request.C``: n x m, c_j(x) <= 0 feasible) it is SCBO (Eriksson & Poloczek, "Scalable
Constrained Bayesian Optimization", AISTATS 2021):

    models:   one GP per constraint beside the objective's (the same fit, ``gp.fit_model``), on the region's data,
              each fitted to bilog(c / s) with bilog(c) = sign(c) log(1 + |c|) (the paper's transform: it keeps
              the sign, so feasibility, and tames large violations) and s = the constraint's median |c| over the
              study when that exceeds 1 (``typical_size``; departs from the paper, below); v(x) = sum_j max(c_j(x),
              0) is the total violation
    centre:   the best feasible point of the region's data, or the least violating one when none is feasible
    batch:    each of the q points draws one joint Thompson sample (f~, c~_1..c~_m) over the candidates and takes
              the lowest f~ among the candidates feasible in the sample (all c~_j <= 0), else the lowest v~
    seek:     (departs from the paper) while no point of the region's data is feasible, the batch's first point,
              when no candidate is feasible in its sample, is the candidate of least total violation by the
              constraint GPs' posterior means: beyond the data a sample reverts to the mean with a wide spread, so its
              least violating candidate wanders with the draw, and each pick that proves worse is one of the d
              failures the region spends before it shrinks. On ackley10 (seeds 0-4, q = 1; a probe) the first
              feasible point came at evaluation 43 on average instead of 49, earlier on every seed; regret 2.38 at
              100 evaluations against 2.92, level at 200 (constrained.md); a problem that starts feasible is untouched
    update:   a batch succeeds when its best point (the best feasible one, else the least violating) is feasible
              and improves on a feasible centre by the margin above, or is feasible while the centre is not, or
              violates less than an infeasible centre; anything else is a failure
    restart:  (departs from the paper) once a feasible point exists, a collapsed region restarts at length_init
              around the best feasible point so far, with the earlier results inside that box (shaped by the last
              fit's lengthscales) and no new design; while nothing is feasible, as TuRBO (a fresh design)
    scale:    (departs from the paper) bilog is near-linear only for |c| < 1: a constraint measured in thousands
              (welded_beam's stresses) becomes a step at its bound, which a GP fits with its shortest lengthscale
              and large noise; on its median size the bound is a smooth crossing. Measured on welded_beam,
              speed_reducer and pressure_vessel (2 seeds, 200 evaluations): 25-35 % fewer infeasible evaluations,
              and better at 100 on the first two. Constraints already below 1 are left alone (scaled up, they had
              2-3x the infeasible evaluations)
    faces:    (departs from the paper) once the side is length_init / 8 or less, in every other candidate each
              coordinate whose side of the box lies on one face of the cube is set to that face with
              probability 1/2, so that the draws can pick points on the bounds

Why the departures (benchmarks/results/constrained_findings.md, issue 30): on speed_reducer (d 7, 11 constraints)
and welded_beam (d 4, 6) every region collapsed at 70-100 evaluations while it was still improving (its gains
fell below the 1e-3 |best| margin, so they counted as failures), and no fresh region in the remaining 100-130
evaluations came back to the old best: the best feasible value was flat from there on. And speed_reducer's optimum
has four of its seven parameters on a lower bound, where a Sobol point in the box never lands. Neither change
touches a study without outcome constraints, nor safe mode (which restarts on all its data already).

With failures to avoid (``request.X_failed``: the points of the study's failed trials, ``failures: "avoid"``) the
failure model (``failures.py``: a GP on a +-1 failure indicator over every completed and failed point, +1 where
it failed) is one more constraint column of SCBO's Thompson samples over the candidates, with or without outcome
constraints. The candidates it predicts to fail (posterior mean > 0: P(not fail) < 1/2) are left out of the draws
unless it predicts that of all: over thousands of candidates, a sample of an uncertain indicator is feasible
somewhere deep inside a failure region the model has not learnt well yet (on the disc of tests/test_failure_model.py,
3 seeds x 30 evaluations, the rule took the points more than 0.02 inside from 24 to 18, at the same objective).
Failed points have no value, so they stay out of the objective's GP and the centre is still the best feasible
completed point. A batch whose results are all failures (new failed points, no new completed result) is a failure
of the region. Before the first failed point everything is as above.

In safe mode (``request.max_violation_probability`` = delta) nothing is asked that the models do not predict safe:

    start:    no Sobol design; the region starts at the study's first completed points (the engine asks the safe
              seeds first; with no completed point yet the call re-asks the points pending, i.e. the seeds); a
              region that collapses restarts at the initial length around the best feasible point, its models
              keeping all the study's data (the safe set is what they know)
    models:   each constraint GP fitted to bilog(c_j / s_j), s_j = median |c_j| over the study (``typical_size``:
              bilog of values in the thousands is a step at the bound, which no GP models), with its prior mean
              fixed at the bound and its scale the data's distance from it (``gp.ScaledAbout``, SafeOpt's prior):
              far from the data it reverts to "do not know", not to the seeds' comfortable level
    safe set: the candidates with P(safe) = prod_j Phi(-mu_j(x) / (k_j sigma_j(x))) >= 1 - delta / SAFE_MARGIN over
              the constraint GPs (and the failure model's z), independent per constraint: each GP's posterior, not
              a sample, its sd widened by k_j >= 1 where its own leave-one-out errors say it is over-confident
              (``loo_spread``); the margin because the batch is picked at the safe set's edge, by the lowest of
              many samples, where the models are over-confident: at 1 - delta 8.4 % of the evaluations broke a
              limit, at 1 - delta / 4 6 %, at 1 - delta / 10 fewer again at a small cost in value, at / 20 a
              larger one (``constrained_findings.md``); and within SAFE_REACH lengthscales (each constraint GP's
              own) of a point observed feasible, as SafeOpt grows its safe set from the seeds
    batch:    SCBO's Thompson selection restricted to the safe set; when it is empty, the centre again if observed
              feasible, else a PolicyError (never a point that broke a limit). ``display``: the safe set's share.

With parameter constraints (``request.polytope``) the design is the Sobol sequence's points inside them (or
hit-and-run samples, ``polytope.design``) and the candidates are hit-and-run samples of region ∩ polytope
(``polytope.sample``) instead of perturbed Sobol points (perturbing coordinates would leave an equality).

>>> request = make_request("turbo", X, y, count=4)   # X: n x d in the unit cube, y: n to minimise
>>> request = dataclasses.replace(request, C=C)       # C: n x m, <= 0 where each constraint holds (SCBO)
>>> request = dataclasses.replace(request, X_failed=F)  # F: f x d, where trials failed (one more constraint)
>>> Turbo().suggest(request).X                        # 4 x d, inside the trust region
"""

from __future__ import annotations

import math

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from localbo.policies import failures, register, subsets
from localbo.policies.base import (
    Box,
    Display,
    KernelKind,
    Policy,
    PolicyError,
    Progress,
    Suggestion,
    SuggestRequest,
)
from localbo.policies.gp import fit_model, to_state
from localbo.policies.polytope import EmptyRegion, design, sample
from localbo.policies.ts import pathwise_path
from localbo.policies.turbo_region import (
    Region,
    TurboConfig,
    TurboState,
    centre_index,
    perturbation_mask,
    refit_iterations,
    region_mask,
    restart_at_incumbent,
    trust_region,
    update,
    update_failed,
)
from localbo.policies.violation import (
    SAFE_MARGIN,
    active_constraint,
    best_index,
    bilog,
    mean_violation,
    safe_probability,
    total_violation,
    typical_size,
    within_reach,
)

FACES_AFTER = 8  # SCBO: candidates on the cube's faces once the side is length_init / 8 or less (3 halvings)


@register
class Turbo(Policy[TurboConfig, TurboState]):
    name = "turbo"
    Config = TurboConfig
    State = TurboState
    handles = frozenset({"constraints", "parameter_constraints", "failures", "safety"})

    @classmethod
    def kernel(cls, config: TurboConfig) -> KernelKind:
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
        if state.feasible_share is not None:
            numbers["feasible share"] = round(state.feasible_share, 4)
            numbers["active constraint"] = state.active_constraint
            numbers["centre violation"] = region.violation
        if state.sample_feasible_share is not None:
            numbers["candidates feasible in the sample"] = round(state.sample_feasible_share, 4)
        if state.safe_share is not None:
            numbers["safe share of candidates"] = round(state.safe_share, 4)
        if state.n_failed:
            numbers["failure model"] = failures.describe(state.n_failed, n_complete + state.n_failed)
        if region.best is None:
            n_init = config.n_init or 0
            total = n_init or region.design_size or max(region.design_asked, 1)
            progress = Progress(done=min(region.design_asked, total), total=total, label="design points planned")
            return Display(phase="initial design", progress=progress, numbers=numbers, objective_values=["region best"])
        box = Box(lower=region.lower, upper=region.upper) if region.lower and region.upper else None
        return Display(
            phase="trust region", centre=region.centre, box=box, numbers=numbers, objective_values=["region best"]
        )

    def suggest(self, request: SuggestRequest[TurboConfig, TurboState]) -> Suggestion:
        config, state = request.config, request.state
        d = request.dim
        q = max(request.count, config.batch_size)
        n_init = config.n_init or 2 * d
        region = state.region or Region(length=config.length_init)
        counted = set(state.counted)
        C_all = request.C if request.C is not None and request.C.numel() and request.C.shape[-1] else None
        v_all = total_violation(C_all, request.X.shape[0], request.X.device)
        keep = region_mask(request, region)
        X, y, numbers, v = request.X[keep], request.y[keep], request.numbers[keep], v_all[keep]
        fresh = torch.tensor([int(n) not in counted for n in numbers.tolist()], dtype=torch.bool)
        X_failed = failures.failed_points(request.X_failed, d)
        n_failed = 0 if X_failed is None else X_failed.shape[0]
        newly_failed = n_failed > state.n_failed
        if X_failed is not None:
            state = state.model_copy(update={"n_failed": n_failed})

        if region.best is not None and (bool(fresh.any()) or newly_failed):
            if bool(fresh.any()):
                region = update(region, y[fresh], config, d, q, v[fresh] if C_all is not None else None)
                counted |= set(numbers[fresh].tolist())
            else:  # only failures came back
                region = update_failed(region, config, d, q)
            if region.length < config.length_min:  # collapsed: a new region, the old data left out
                last = int(request.numbers.max()) if request.numbers.numel() else 0
                region = Region(length=config.length_init, first_number=last + 1, excluded=request.X_pending.tolist())
                if request.max_violation_probability is not None:  # safe mode: the safe set is all it knows
                    region = Region(length=config.length_init)
                elif C_all is not None and bool((v_all <= 0).any()):  # SCBO: around the best feasible point so far
                    region = restart_at_incumbent(region, request.X[best_index(request.y, v_all)], state, config)
                state = state.model_copy(
                    update={"restarts": state.restarts + 1, "hypers": None, "constraint_hypers": []}
                )
                keep = region_mask(request, region)
                X, y, numbers, v = request.X[keep], request.y[keep], request.numbers[keep], v_all[keep]

        safe = request.max_violation_probability is not None
        if safe and X.shape[0] == 0:  # nothing measured yet: only the seeds (pending) are known safe
            if request.X_pending.shape[0] == 0:
                raise PolicyError("safe mode: no completed point and no seed pending; nothing is known safe")
            again = request.X_pending[torch.arange(q) % request.X_pending.shape[0]]
            return Suggestion(X=again, state=state.model_copy(update={"region": region, "counted": sorted(counted)}))
        if region.best is None and not safe and (X.shape[0] < n_init or X.shape[0] < 2):
            return self._design(request, state, region, counted, q, n_init)
        if region.best is None:  # the design is in: from now on results count as successes or failures
            counted |= set(numbers.tolist())
        i = centre_index(request, X, y, v)  # the best (feasible, else least violating) point of the region's data
        if config.max_data is not None and X.shape[0] > config.max_data:  # the region's data nearest its centre
            near = subsets.nearest(X, X[i], config.max_data)
            X, y, numbers, v = X[near], y[near], numbers[near], v[near]
            keep = keep.nonzero().reshape(-1)[near]  # C_all[keep] lines up with X
            i = centre_index(request, X, y, v)
        floor, plain = config.noise_floor, C_all is None and X_failed is None and not safe
        model = fit_model(
            X, y, "matern52", state.hypers, device=request.device, generator=request.generator, noise_floor=floor,
            maxiter=refit_iterations(config, state, plain),
        )  # fmt: skip
        constraints = []
        if C_all is not None:
            C = C_all[keep].to(torch.float64)
            previous = state.constraint_hypers if len(state.constraint_hypers) == C.shape[1] else [None] * C.shape[1]
            scale = typical_size(C_all, at_least=0.0 if safe else 1.0)  # safe mode: every one (measured)
            constraints = [
                fit_model(
                    X,
                    bilog(C[:, j] / scale[j]),
                    "matern52",
                    h,
                    device=request.device,
                    generator=request.generator,
                    mean_at=0.0 if safe else None,
                    noise_floor=floor,
                )
                for j, h in enumerate(previous)
            ]
            state = state.model_copy(
                update={
                    "constraint_hypers": [to_state(m) for m in constraints],
                    "feasible_share": float((v_all <= 0).double().mean()),
                    "active_constraint": active_constraint(C, i),
                }
            )
        failure_model = None
        if X_failed is not None:  # one more constraint: the failure indicator (+1 failed, -1 completed), all points
            X_done, X_bad = request.X, X_failed
            if config.max_data is not None:  # bounded as the region's data: the points nearest the centre
                X_done = X_done[subsets.nearest(X_done, X[i], config.max_data)]
                X_bad = X_bad[subsets.nearest(X_bad, X[i], config.max_data)]
            failure = failures.fit_failure_model(
                X_done, X_bad, "matern52", state.failure_hypers, request.device, request.generator
            )
            constraints.append(failure)
            failure_model = failure
            state = state.model_copy(update={"failure_hypers": to_state(failure)})
        lengthscale = model.covar_module.lengthscale.detach().reshape(-1).to(X)  # the model may live on a GPU
        lower, upper = trust_region(X[i], lengthscale, region.length)
        anchors = X[v <= 0] if safe else None  # safe mode: the points observed feasible, where the safe set grows
        faces = C_all is not None and not safe and region.length <= config.length_init / FACES_AFTER
        seek = C_all is not None and not safe and not bool((v <= 0).any())  # nothing feasible in the region yet
        points, safe_share, sample_feasible = self._thompson(
            model, constraints, X[i], lower, upper, q, config, request, failure_model, anchors, faces, seek
        )
        if safe_share is not None:
            state = state.model_copy(update={"safe_share": safe_share})
        if C_all is not None and sample_feasible is not None:
            state = state.model_copy(update={"sample_feasible_share": sample_feasible})
        region = region.model_copy(
            update={
                "centre": X[i].tolist(),
                "best": float(y[i]),
                "violation": float(v[i]),
                "lower": lower.tolist(),
                "upper": upper.tolist(),
            }
        )
        new = state.model_copy(
            update={"region": region, "counted": sorted(counted), "hypers": to_state(model), "fits": state.fits + 1}
        )
        return Suggestion(X=points, state=new)

    @staticmethod
    def _design(
        request: SuggestRequest, state: TurboState, region: Region, counted: set[int], q: int, n_init: int
    ) -> Suggestion:
        """The region's Sobol design (its own sequence per restart; inside the parameter constraints), the rest of
        it or at least ``q`` points."""
        k = max(q, n_init - region.design_asked)
        seed = (request.seed + state.restarts) % 2**31
        X = design(request.polytope, request.dim, seed, region.design_asked, k).to(request.device)
        region = region.model_copy(update={"design_asked": region.design_asked + k, "design_size": n_init})
        return Suggestion(X=X, state=state.model_copy(update={"region": region, "counted": sorted(counted)}))

    @staticmethod
    def _thompson(
        model: SingleTaskGP,
        constraints: list[SingleTaskGP],
        centre: Tensor,
        lower: Tensor,
        upper: Tensor,
        q: int,
        config: TurboConfig,
        request: SuggestRequest[TurboConfig, TurboState],
        failure: SingleTaskGP | None = None,
        anchors: Tensor | None = None,
        faces: bool = False,
        seek: bool = False,
    ) -> tuple[Tensor, float | None, float | None]:
        """q points: each the argmin of one posterior sample path over the candidates in the box, among those
        feasible in the constraints' sample paths drawn with it (else the least violating in that sample); with a
        failure model (the last of ``constraints``, also given as ``failure``) only among the candidates it
        predicts not to fail (posterior mean <= 0, i.e. P(not fail) >= 1/2) unless it predicts that of none.
        In safe mode only among the candidates predicted safe (the centre again when none is), and the share
        of candidates that are (None outside safe mode); and the mean share of candidates feasible in the samples
        (None without constraints or draws). With ``seek`` (no feasible point in the region's data yet) the batch's
        first point, when no candidate is feasible in its sample, is the one of least violation by the constraint
        models' posterior means instead of by the sample."""
        d, g = request.dim, request.generator
        n = config.candidates or min(5000, max(2000, 200 * d))
        candidates = Turbo._candidates(centre, lower, upper, n, request, faces)
        on_model = candidates.to(model.train_inputs[0])  # the model's device
        chosen: list[int] = []
        ruled_out = torch.zeros(n, dtype=torch.bool)
        if failure is not None:  # only the candidates predicted not to fail (mu_z <= 0), when there are any
            with torch.no_grad():
                predicted = failure.posterior(on_model).mean.reshape(-1).cpu() > 0
            if not bool(predicted.all()):
                ruled_out = predicted
        safe_share, observed_safe = None, True
        if request.max_violation_probability is not None:
            safe = (
                safe_probability(constraints, on_model, calibrated=True)
                >= 1 - request.max_violation_probability / SAFE_MARGIN
            )
            if anchors is not None and anchors.shape[0]:
                safe &= within_reach(constraints, on_model, anchors.to(on_model))
            safe_share = float(safe.double().mean())
            observed_safe = anchors is not None and bool((anchors.to(centre) == centre).all(-1).any())
            if not bool(safe.any()):  # the centre again, if it was observed feasible (else the engine's fallback)
                if not observed_safe:
                    raise PolicyError("safe mode: no candidate is predicted safe and the region's centre broke a limit")
                return centre.expand(q, d).clone(), safe_share, None
            ruled_out = ~safe
            q = min(q, int(safe.sum()))  # never an unsafe point to fill the batch: filled below
        shares: list[float] = []
        by_means = mean_violation(constraints, on_model) if seek and constraints else None
        for _ in range(q):
            values = pathwise_path(model, g)(on_model).detach().cpu()
            if constraints:
                sampled = torch.stack([pathwise_path(m, g)(on_model).detach().cpu() for m in constraints], -1)  # n x m
                violation = sampled.clamp_min(0).sum(-1)
                violation[ruled_out] = math.inf
                shares.append(float((violation <= 0).double().mean()))
                if chosen:
                    violation[chosen] = math.inf
                if bool((violation <= 0).any()):
                    values = torch.where(violation <= 0, values, torch.full_like(values, math.inf))
                elif by_means is not None and not chosen:
                    values = by_means.masked_fill(ruled_out, math.inf)
                else:
                    values = violation
            if chosen:
                values[chosen] = math.inf  # q distinct points
            if ruled_out.any():
                values[ruled_out] = math.inf
            chosen.append(int(values.argmin()))
        points = candidates[chosen]
        short = max(request.count, config.batch_size) - len(chosen)
        if short > 0:  # the centre again; in safe mode with a centre that broke a limit, the first chosen point
            filler = centre if observed_safe else points[0]
            points = torch.cat([points, filler.expand(short, d).to(points)])
        return points, safe_share, (sum(shares) / len(shares) if shares else None)

    @staticmethod
    def _candidates(
        centre: Tensor,
        lower: Tensor,
        upper: Tensor,
        n: int,
        request: SuggestRequest[TurboConfig, TurboState],
        faces: bool = False,
    ) -> Tensor:
        """n x d candidates in the box: perturbed Sobol points (each coordinate of the centre replaced by the Sobol
        point's with probability min(1, perturbed_coordinates / d), 20 by default), or hit-and-run samples of
        box ∩ polytope. With ``faces``, in every other candidate each coordinate whose side of the box lies on one
        face of the cube (0 or 1, not both) is set to that face with probability 1/2."""
        d, g = request.dim, request.generator
        if request.polytope is not None:
            try:
                return sample(request.polytope, n, g, lower, upper, thinning=1).to(centre)
            except EmptyRegion:  # a centre outside the constraints (an added trial): anywhere inside them
                return sample(request.polytope, n, g, thinning=1).to(centre)
        sobol = torch.quasirandom.SobolEngine(d, scramble=True, seed=int(torch.randint(2**31, (1,), generator=g)))
        pert = lower + (upper - lower) * sobol.draw(n, dtype=torch.float64).to(centre)
        mask = perturbation_mask(n, d, request.config.perturbed_coordinates, g).to(centre.device)
        points = torch.where(mask, pert, centre.expand(n, d))
        on_lower, on_upper = lower <= 0, upper >= 1
        if faces and bool((on_lower ^ on_upper).any()):
            snap = torch.rand(n, d, generator=g, dtype=torch.float64).to(centre) < 0.5
            snap &= (on_lower ^ on_upper) & (torch.arange(n, device=centre.device) % 2 == 1).unsqueeze(-1)
            points = torch.where(snap, on_upper.to(points).expand(n, d), points)
        return points
