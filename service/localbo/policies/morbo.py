"""``morbo``: MORBO (Daulton, Eriksson, Balandat, Bakshy, "Multi-Objective Bayesian Optimization over
High-Dimensional Search Spaces", UAI 2022): several TuRBO trust regions that share their data and pick a batch
together by the hypervolume improvement of Thompson samples. Every objective is minimised (``request.Y``: n x k).
The regions' bookkeeping (settings, state, ownership, success and restart, centres) is ``morbo_regions.py``.

    design:   n_init Sobol points (2 (d + 1) by default) in [0, 1]^d (inside the parameter constraints)
    front:    the Pareto front of the feasible results strictly below the reference point (``request.reference_point``;
              inferred by ``pareto.infer_reference_point`` when the request has none), and its hypervolume (pareto.py)
    centres:  each of the ``regions`` trust regions, in turn, centres on the front point of largest hypervolume
              contribution among those no earlier region took this call and not tabu, preferring those inside its
              own current box; a region that restarted (no box yet) takes the best free one. No front point below
              the reference point: the feasible non-dominated rows by their normalised distance past it; no feasible
              result at all: the least violating rows (SCBO)
    box:      centre +- L / 2 in every coordinate (the paper's box: no lengthscale weighting, as several objectives'
              lengthscales disagree), clipped to the cube
    models:   per region, one GP per objective (``gp.fit_model``, ARD Matérn-5/2, warm-started) on the results within
              centre +- L (the paper's "trimmed trace", twice the box), at least the ``min_region_data`` nearest and at
              most the ``max_region_data`` nearest; each objective's worst ``winsorize`` share clipped to the value at
              that quantile first (the paper's winsorisation); regions with the same data share one fit (below
              min_region_data results: every region, one fit)
    batch:    q = max(the ask's count, batch_size) points picked one at a time; for each pick every region draws one
              Thompson sample (``ts.pathwise_path``, one independent path per objective and per constraint) over its
              ``candidates`` perturbed Sobol points: a front point inside its box, each coordinate replaced by the
              Sobol point's with probability min(1, p / d), p = ``perturbed_coordinates`` (20, TuRBO's) (hit-and-run
              samples of box ∩ polytope under parameter constraints, ``polytope.sample``). Each candidate's value is
              its hypervolume improvement over the observed front plus the same sample at the pending points and the
              points already picked (the paper's sequential greedy selection); the pick is the best candidate over
              all regions, by this rule first: (3) a largest positive improvement, else (2) the lowest random
              Chebyshev scalarisation max_j w_j (f_j - ref_j) / s_j (w uniform on the simplex, one per pick;
              s_j = ref_j - the best y_j, or y_j's range where none is below ref_j; the paper's tie-break, a linear
              one there), else (1) under constraints, when no candidate is feasible in its sample, the least total
              sampled violation.
              With ``acquisition: "lognehvi"`` instead: each pick is the best over all regions of BoTorch's qLogNEHVI
              (the region's GPs, X_pending the pending and picked points) maximised inside the region's box
              (``hvi_search.py``: 2 starts, 128 raw samples, 64 QMC samples, 50 L-BFGS-B iterations per region); not
              the paper's, for small budgets where Thompson samples explore more than the budget allows
    update:   each new result belongs to the region that proposed it (by its point; else to the region whose box holds
              it); a region whose new results raise the previous front's hypervolume by more than ``success_margin``
              of it (or, with no feasible result before, are feasible, or violate less than the least violating one)
              succeeds: successes + 1, failures = 0; else failures + (its new results), successes = 0 (the paper counts
              evaluations); L doubles (at most length_max) after success_tolerance successes and halves after
              failure_tolerance failures
    restart:  L < length_min: the region restarts at length_init, and its centre is tabu (not a centre) for
              ``tabu_tenure`` further results

The paper's defaults (and its code's, github.com/facebookresearch/morbo ``TurboHParams``), kept here unless noted:
5 trust regions; L_init = 0.8, L_min = 0.01, L_max = 1.6; success tolerance 10 000 in a row (in effect never
expanding: here ``success_tolerance: None``); failure tolerance max(d // 3, 10) evaluations; success margin 1e-3 of
the hypervolume; 4096 Thompson candidates; trimmed trace at least 250, at most 2000 points; winsorise the worst 5 %;
tabu tenure 100 (iterations there, results here). Here, unlike the paper: the initial design is 2 (d + 1) points
(the paper: hundreds, for large batches), a restart reuses the front rather than evaluating a new design point found by
a random scalarisation, and the perturbation probability does not decay with the budget (the service has none).

Outcome constraints (``request.C``: n x m, <= 0 where one holds) as SCBO: one GP per constraint on bilog(c_j / s_j),
bilog(c) = sign(c) log(1 + |c|), s_j the constraint's median |c_j| over the study where that exceeds 1
(``violation.typical_size``, as turbo's SCBO: a limit measured in thousands stays smooth across its bound); a sampled
candidate is feasible when every sampled constraint is <= 0; the front and the centres use the feasible results only.
One objective (``request.Y`` None): y is the single column, the reference point inferred from it; the hypervolume is
then max(ref - best, 0), so the picks are Thompson sampling with several trust regions.

>>> request = dataclasses.replace(make_request("morbo", X, Y[:, 0], count=4), Y=Y, reference_point=ref)
>>> Morbo().suggest(request).X                        # 4 x d, each from one of the trust regions
"""

from __future__ import annotations

import math

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models import ModelListGP, SingleTaskGP
from torch import Tensor

from localbo.policies import register
from localbo.policies.base import (
    Box,
    Display,
    KernelKind,
    Policy,
    Progress,
    Suggestion,
    SuggestRequest,
)
from localbo.policies.gp import Hypers, fit_model, to_state
from localbo.policies.hvi_search import SearchSettings, log_nehvi, maximise
from localbo.policies.morbo_regions import (
    MAX_PROPOSED,
    MorboConfig,
    MorboRegion,
    MorboState,
    box,
    centre_rows,
    ref_scale,
    region_rows,
    update_regions,
)
from localbo.policies.pareto import (
    feasible,
    hypervolume,
    hypervolume_improvement,
    infer_reference_point,
    pareto_front,
)
from localbo.policies.polytope import EmptyRegion, design, sample
from localbo.policies.ts import pathwise_path
from localbo.policies.turbo_region import perturbation_mask
from localbo.policies.violation import bilog, total_violation, typical_size

REGION_SEARCH = SearchSettings(num_restarts=2, raw_samples=128, mc_samples=64, maxiter=50)  # per region and pick


def winsorized(y: Tensor, share: float) -> Tensor:
    """y with its largest (worst, minimising) floor(share n) values set to the largest of the others."""
    k = int(share * y.shape[0])
    if k < 1 or y.shape[0] - k < 1:
        return y
    cap = y.sort().values[y.shape[0] - k - 1]
    return y.clamp_max(cap)


@register
class Morbo(Policy[MorboConfig, MorboState]):
    name = "morbo"
    Config = MorboConfig
    State = MorboState
    handles = frozenset({"objectives", "constraints", "parameter_constraints"})

    @classmethod
    def kernel(cls, config: MorboConfig) -> KernelKind:
        return "matern52"

    @classmethod
    def plans_now(cls, state: MorboState, n_complete: int, n_running: int) -> bool:
        return n_running == 0  # the next batch once this one's results are all in (as turbo)

    @classmethod
    def fallback_box(cls, state: MorboState, config: MorboConfig, dim: int) -> tuple[list[float], list[float]]:
        """The first region's box: the one centred on the front point of largest hypervolume contribution."""
        for region in state.regions:
            if region.lower is not None and region.upper is not None:
                return list(region.lower), list(region.upper)
        return [0.0] * dim, [1.0] * dim

    @classmethod
    def display(cls, state: MorboState, config: MorboConfig, n_complete: int) -> Display | None:
        numbers: dict[str, float | int | str | None] = {
            "trust regions": config.regions,
            "front size": state.front_size,
            "hypervolume": state.hypervolume,
        }
        if state.reference_point is not None:
            # the policies minimise: a maximised objective's bound shows negated (the study's own is in its summary)
            numbers["reference point, minimised"] = ", ".join(f"{v:.4g}" for v in state.reference_point)
        if state.feasible_share is not None:
            numbers["feasible share"] = round(state.feasible_share, 4)
        if not state.regions:
            total = config.n_init or state.design_size or max(state.design_asked, 1)
            progress = Progress(done=min(state.design_asked, total), total=total, label="design points planned")
            return Display(phase="initial design", progress=progress, numbers=numbers)
        numbers["restarts"] = sum(r.restarts for r in state.regions)
        for i, r in enumerate(state.regions, start=1):
            centre = ", ".join(f"{v:.3f}" for v in r.centre) if r.centre else "-"
            numbers[f"region {i}"] = (
                f"side {r.length:.4g}, {r.successes} successes, {r.failures} failures, {r.restarts} restarts, "
                f"centre ({centre})"
            )
        first = state.regions[0]
        shown = Box(lower=first.lower, upper=first.upper) if first.lower and first.upper else None
        return Display(phase="trust regions", centre=first.centre, box=shown, numbers=numbers)

    def suggest(self, request: SuggestRequest[MorboConfig, MorboState]) -> Suggestion:
        config, state = request.config, request.state
        d = request.dim
        q = max(request.count, config.batch_size)
        n_init = config.n_init or 2 * (d + 1)
        X = request.X.detach().to("cpu", torch.float64).reshape(-1, d)
        n = X.shape[0]
        if not state.regions and (n < n_init or n < 2):
            return self._design(request, state, q, n_init)
        Y = (request.Y if request.Y is not None else request.y.reshape(-1, 1)).detach().to("cpu", torch.float64)
        Y = Y.reshape(n, -1)
        C = request.C.detach().to("cpu", torch.float64).reshape(n, -1) if request.C is not None else None
        C = C if C is not None and C.shape[-1] else None
        ok, v = feasible(C, n), total_violation(C, n)
        if request.reference_point is not None:
            ref = request.reference_point.detach().to("cpu", torch.float64).reshape(-1)
        else:
            ref = infer_reference_point(Y[ok] if bool(ok.any()) else Y)
        numbers = request.numbers.detach().cpu().tolist()
        counted = set(state.counted)
        fresh = torch.tensor([int(k) not in counted for k in numbers], dtype=torch.bool)
        regions = [r.model_copy() for r in state.regions[: config.regions]]
        regions += [MorboRegion(length=config.length_init) for _ in range(config.regions - len(regions))]
        tabu = [t for t in state.tabu if t.until > n]
        if state.regions and bool(fresh.any()):
            regions, tabu = update_regions(regions, tabu, X, Y, v, ok, fresh, ref, config, d)

        front = pareto_front(Y, C) & (Y < ref).all(-1)
        centres = centre_rows(regions, tabu, X, Y, v, ok, front, ref)
        models = self._models(regions, centres, X, Y, C, state, config, request)
        hypers = [to_state(m) for m in models[0][0]] if models else []
        constraint_hypers = [to_state(m) for m in models[0][1]] if models and C is not None else []
        if config.acquisition == "lognehvi":
            boxes = [box(X[c], region.length) for region, c in zip(regions, centres, strict=True)]
            points, owners = self._pick_lognehvi(models, boxes, ref, q, request)
        else:
            points, owners, boxes = self._pick(regions, centres, models, X, Y, front, ok, ref, q, config, request)
        for i, region in enumerate(regions):
            lower, upper = boxes[i]
            proposed = region.proposed + [points[j].tolist() for j in range(len(owners)) if owners[j] == i]
            regions[i] = region.model_copy(
                update={
                    "centre": X[centres[i]].tolist(),
                    "lower": lower.tolist(),
                    "upper": upper.tolist(),
                    "proposed": proposed[-MAX_PROPOSED:],
                }
            )
        new = state.model_copy(
            update={
                "regions": regions,
                "counted": sorted(counted | {int(k) for k in numbers}),
                "hypers": hypers,
                "constraint_hypers": constraint_hypers,
                "tabu": tabu,
                "hypervolume": hypervolume(Y[front], ref) if bool(front.any()) else 0.0,
                "front_size": int(front.sum()),
                "reference_point": ref.tolist(),
                "feasible_share": float(ok.double().mean()) if C is not None else None,
            }
        )
        return Suggestion(X=points.to(request.device), state=new)

    @staticmethod
    def _design(request: SuggestRequest[MorboConfig, MorboState], state: MorboState, q: int, n_init: int) -> Suggestion:
        """The study's Sobol design (inside the parameter constraints), the rest of it or at least ``q`` points."""
        k = max(q, n_init - state.design_asked)
        X = design(request.polytope, request.dim, request.seed % 2**31, state.design_asked, k).to(request.device)
        update = {"design_asked": state.design_asked + k, "design_size": n_init}
        return Suggestion(X=X, state=state.model_copy(update=update))

    @staticmethod
    def _models(
        regions: list[MorboRegion],
        centres: list[int],
        X: Tensor,
        Y: Tensor,
        C: Tensor | None,
        state: MorboState,
        config: MorboConfig,
        request: SuggestRequest[MorboConfig, MorboState],
    ) -> list[tuple[list[SingleTaskGP], list[SingleTaskGP]]]:
        """Per region: its objectives' GPs and its constraints' GPs (one fit per distinct data set)."""
        k = Y.shape[1]
        warm: list[Hypers | None] = list(state.hypers) if len(state.hypers) == k else [None] * k
        m = 0 if C is None else C.shape[1]
        warm_c: list[Hypers | None] = list(state.constraint_hypers) if len(state.constraint_hypers) == m else [None] * m
        fits: dict[tuple[int, ...], tuple[list[SingleTaskGP], list[SingleTaskGP]]] = {}
        size = typical_size(C) if C is not None else torch.ones(0, dtype=torch.float64)
        out = []
        for region, c in zip(regions, centres, strict=True):
            rows = region_rows(X, X[c], region.length, config)
            key = tuple(rows.tolist())
            if key not in fits:
                Xr = X[rows]
                objectives = [
                    fit_model(
                        Xr,
                        winsorized(Y[rows, j], config.winsorize),
                        "matern52",
                        warm[j],
                        device=request.device,
                        generator=request.generator,
                    )
                    for j in range(k)
                ]
                constraints = [
                    fit_model(
                        Xr,
                        bilog(C[rows, j] / size[j]),
                        "matern52",
                        warm_c[j],
                        device=request.device,
                        generator=request.generator,
                    )
                    for j in range(m)
                    if C is not None
                ]
                fits[key] = (objectives, constraints)
            out.append(fits[key])
        return out

    @staticmethod
    def _candidates(
        bases: Tensor, lower: Tensor, upper: Tensor, n: int, request: SuggestRequest[MorboConfig, MorboState]
    ) -> Tensor:
        """n x d candidates in the box: front points inside it (``bases``, each candidate's drawn at random) with each
        coordinate replaced by a Sobol point's with probability min(1, perturbed_coordinates / d); hit-and-run samples
        of box ∩ polytope under parameter constraints."""
        d, g = request.dim, request.generator
        if request.polytope is not None:
            try:
                return sample(request.polytope, n, g, lower, upper, thinning=1).to(torch.float64).cpu()
            except EmptyRegion:  # a centre outside the constraints (a trial added by hand): anywhere inside them
                return sample(request.polytope, n, g, thinning=1).to(torch.float64).cpu()
        sobol = torch.quasirandom.SobolEngine(d, scramble=True, seed=int(torch.randint(2**31, (1,), generator=g)))
        pert = lower + (upper - lower) * sobol.draw(n, dtype=torch.float64)
        base = bases[torch.randint(bases.shape[0], (n,), generator=g)]
        mask = perturbation_mask(n, d, request.config.perturbed_coordinates, g)
        return torch.where(mask, pert, base)

    def _pick(
        self,
        regions: list[MorboRegion],
        centres: list[int],
        models: list[tuple[list[SingleTaskGP], list[SingleTaskGP]]],
        X: Tensor,
        Y: Tensor,
        front: Tensor,
        ok: Tensor,
        ref: Tensor,
        q: int,
        config: MorboConfig,
        request: SuggestRequest[MorboConfig, MorboState],
    ) -> tuple[Tensor, list[int], list[tuple[Tensor, Tensor]]]:
        """q points picked greedily over all regions (see the module's docstring), the region of each, the boxes."""
        g, d = request.generator, request.dim
        boxes, candidates, all_bases = [], [], []
        for region, c in zip(regions, centres, strict=True):
            lower, upper = box(X[c], region.length)
            inside = front & ((X >= lower) & (X <= upper)).all(-1)
            bases = torch.cat([X[c : c + 1], X[inside]])
            boxes.append((lower, upper))
            all_bases.append(bases)
            candidates.append(self._candidates(bases, lower, upper, config.candidates, request))
        used = [torch.zeros(cands.shape[0], dtype=torch.bool) for cands in candidates]
        observed = Y[front]
        scale = ref_scale(Y, ref)
        pending = request.X_pending.detach().to("cpu", torch.float64).reshape(-1, d)
        chosen: list[Tensor] = []
        owners: list[int] = []
        for _ in range(q):
            weights = -torch.rand(Y.shape[1], generator=g, dtype=torch.float64).log()
            weights = weights / weights.sum()
            best: tuple[int, float, int, int] | None = None  # (rule, score, region, candidate)
            others = torch.cat([pending, *[x[None] for x in chosen]])
            for r, (objectives, constraints) in enumerate(models):
                cands = candidates[r]
                where = torch.cat([cands, others])
                on = where.to(objectives[0].train_inputs[0])
                F = torch.stack([pathwise_path(model, g)(on).detach().cpu() for model in objectives], -1)
                V = torch.zeros(where.shape[0], dtype=torch.float64)
                for model in constraints:
                    V = V + pathwise_path(model, g)(on).detach().cpu().clamp_min(0)
                N = cands.shape[0]
                Fc, Vc, Fp, Vp = F[:N], V[:N], F[N:], V[N:]
                free = ~used[r]
                if not bool(free.any()):
                    continue
                fine = free & (Vc <= 0)
                if not bool(fine.any()):
                    score = torch.where(free, -Vc, torch.full_like(Vc, -math.inf))
                    rule = 1
                else:
                    gain = torch.full((N,), -math.inf, dtype=torch.float64)
                    gain[fine] = hypervolume_improvement(Fc[fine], torch.cat([observed, Fp[Vp <= 0]]), ref)
                    if bool((gain > 0).any()):
                        score, rule = gain, 3
                    else:
                        scalar = (weights * (Fc - ref) / scale).amax(-1)  # Chebyshev, past the reference point
                        score, rule = torch.where(fine, -scalar, torch.full_like(scalar, -math.inf)), 2
                j = int(score.argmax())
                value = float(score[j])
                if best is None or (rule, value) > (best[0], best[1]):
                    best = (rule, value, r, j)
            if best is None:  # every candidate of every region used (q above their count): more of region 1's
                extra = self._candidates(all_bases[0], *boxes[0], q - len(chosen), request)
                chosen += list(extra)
                owners += [0] * extra.shape[0]
                break
            _, _, r, j = best
            used[r][j] = True
            chosen.append(candidates[r][j])
            owners.append(r)
        return torch.stack(chosen), owners, boxes

    @staticmethod
    def _pick_lognehvi(
        models: list[tuple[list[SingleTaskGP], list[SingleTaskGP]]],
        boxes: list[tuple[Tensor, Tensor]],
        ref: Tensor,
        q: int,
        request: SuggestRequest[MorboConfig, MorboState],
    ) -> tuple[Tensor, list[int]]:
        """q points picked one at a time, each the best over all regions of qLogNEHVI maximised in the region's box
        (its GPs, the pending points and the points already picked as X_pending), and the region of each."""
        g, d = request.generator, request.dim
        k, m = len(models[0][0]), len(models[0][1])
        pending = request.X_pending.detach().to("cpu", torch.float64).reshape(-1, d)
        chosen: list[Tensor] = []
        owners: list[int] = []
        for _ in range(q):
            others = torch.cat([pending, *[x[None] for x in chosen]])
            acquisitions: dict[int, AcquisitionFunction] = {}  # regions that share their fits share one
            best: tuple[float, int, Tensor] | None = None
            for r, (objectives, constraints) in enumerate(models):
                like = objectives[0].train_inputs[0]
                if id(objectives) not in acquisitions:
                    model = ModelListGP(*objectives, *constraints)
                    acquisitions[id(objectives)] = log_nehvi(model, like, others, ref, k, m, REGION_SEARCH, g)
                bounds = torch.stack(boxes[r]).to(like)
                x, value = maximise(acquisitions[id(objectives)], 1, bounds, request.polytope, REGION_SEARCH, g)
                value = -math.inf if value is None else value
                if best is None or value > best[0]:
                    best = (value, r, x[0].to(torch.float64))
            assert best is not None  # at least one region
            chosen.append(best[2])
            owners.append(best[1])
        return torch.stack(chosen), owners
