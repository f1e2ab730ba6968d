"""``morbo``: MORBO (Daulton, Eriksson, Balandat, Bakshy, "Multi-Objective Bayesian Optimization over
High-Dimensional Search Spaces", UAI 2022): several TuRBO trust regions that share their data and pick a batch
together by the hypervolume improvement of Thompson samples. Every objective is minimised (``request.Y``: n x k).

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
              Sobol point's with probability min(1, 20 / d) (hit-and-run samples of box ∩ polytope under parameter
              constraints, ``polytope.sample``). Each candidate's value is its hypervolume improvement over the
              observed front plus the same sample at the pending points and the points already picked (the paper's
              sequential greedy selection); the pick is the best candidate over all regions, by this rule first:
              (3) a largest positive improvement, else (2) the lowest random Chebyshev scalarisation
              max_j w_j (f_j - ref_j) / s_j (w uniform on the simplex, one per pick; s_j = ref_j - the best y_j, or
              y_j's range where none is below ref_j; the paper's tie-break, a linear one there), else (1) under
              constraints, when
              no candidate is feasible in its sample, the least total sampled violation
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

Outcome constraints (``request.C``: n x m, <= 0 where one holds) as SCBO: one GP per constraint on
bilog(c) = sign(c) log(1 + |c|); a sampled candidate is feasible when every sampled constraint is <= 0; the front
and the centres use the feasible results only. One objective (``request.Y`` None): y is the single column, the
reference point inferred from it; the hypervolume is then max(ref - best, 0), so the picks are Thompson sampling with
several trust regions.

>>> request = dataclasses.replace(make_request("morbo", X, Y[:, 0], count=4), Y=Y, reference_point=ref)
>>> Morbo().suggest(request).X                        # 4 x d, each from one of the trust regions
"""

from __future__ import annotations

import math

import torch
from botorch.models import SingleTaskGP
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from localbo.policies import register
from localbo.policies.base import (
    Box,
    Display,
    KernelKind,
    Policy,
    PolicyConfig,
    PolicyState,
    Progress,
    Suggestion,
    SuggestRequest,
)
from localbo.policies.gp import Hypers, fit_model, to_state
from localbo.policies.pareto import (
    feasible,
    hypervolume,
    hypervolume_contributions,
    hypervolume_improvement,
    infer_reference_point,
    non_dominated,
    pareto_front,
)
from localbo.policies.polytope import EmptyRegion, design, sample
from localbo.policies.ts import pathwise_path
from localbo.policies.violation import bilog, total_violation

MATCH_TOLERANCE = 1e-6  # a result within this (max-norm) of a proposed point is that point's
MAX_PROPOSED = 512  # proposed points a region remembers while their results are out


class MorboConfig(PolicyConfig):
    n_init: int | None = Field(default=None, ge=2, le=10_000, description="Initial Sobol design (2 (d + 1))")
    batch_size: int = Field(default=1, ge=1, le=1000, description="Points per batch q (at least the ask's count)")
    regions: int = Field(default=5, ge=1, le=50, description="Trust regions")
    length_init: float = Field(default=0.8, gt=0, le=2, description="Side length of a new region")
    length_min: float = Field(default=0.01, gt=0, le=1, description="A region below this restarts")
    length_max: float = Field(default=1.6, gt=0, le=2, description="The largest side length")
    success_tolerance: int | None = Field(
        default=None, ge=1, le=10_000, description="Successes in a row that double L (None: never, as the paper)"
    )
    failure_tolerance: int | None = Field(
        default=None, ge=1, le=10_000, description="Failed evaluations in a row that halve L (max(d // 3, 10))"
    )
    success_margin: float = Field(default=1e-3, ge=0, le=1, description="Relative hypervolume gain of a success")
    candidates: int = Field(default=4096, ge=1, le=100_000, description="Thompson-sampling candidates per region")
    min_region_data: int = Field(default=250, ge=2, le=100_000, description="Fewest results a region's GPs see")
    max_region_data: int = Field(default=2000, ge=2, le=100_000, description="Most results a region's GPs see")
    winsorize: float = Field(default=0.05, ge=0, lt=0.5, description="Worst share of each objective clipped")
    tabu_tenure: int = Field(default=100, ge=0, le=1_000_000, description="Results a collapsed centre stays tabu")


class MorboRegion(BaseModel):
    """One trust region: side length, counters, where it is and what it proposed."""

    model_config = ConfigDict(extra="forbid")
    length: float
    successes: int = 0
    failures: int = 0
    restarts: int = 0
    centre: list[float] | None = None
    lower: list[float] | None = None  # the box of the last batch
    upper: list[float] | None = None
    proposed: list[list[float]] = Field(default_factory=list)  # points it proposed whose results are not in yet


class Tabu(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: list[float]
    until: int  # tabu while the study has fewer results than this


class MorboState(PolicyState):
    version = 1
    regions: list[MorboRegion] = Field(default_factory=list)  # empty during the initial design
    counted: list[int] = Field(default_factory=list)  # trial numbers whose result was seen (sorted)
    design_asked: int = 0
    hypers: list[Hypers] = Field(default_factory=list)  # the objectives' last GP fits
    constraint_hypers: list[Hypers] = Field(default_factory=list)  # the constraints' last GP fits
    tabu: list[Tabu] = Field(default_factory=list)
    hypervolume: float | None = None  # of the front at the last call
    front_size: int = 0
    reference_point: list[float] | None = None
    feasible_share: float | None = None  # with outcome constraints: the share of feasible results


def failure_tolerance(config: MorboConfig, d: int) -> int:
    return config.failure_tolerance or max(d // 3, 10)


def winsorized(y: Tensor, share: float) -> Tensor:
    """y with its largest (worst, minimising) floor(share n) values set to the largest of the others."""
    k = int(share * y.shape[0])
    if k < 1 or y.shape[0] - k < 1:
        return y
    cap = y.sort().values[y.shape[0] - k - 1]
    return y.clamp_max(cap)


def ref_scale(Y: Tensor, ref: Tensor) -> Tensor:
    """k: each objective's unit for distances from the reference point: ref - its best value, or its range (at least
    1e-12) where no value is below ref."""
    ideal, span = Y.amin(0), (Y.amax(0) - Y.amin(0)).clamp_min(1e-12)
    return torch.where(ref > ideal, ref - ideal, span)


def box(centre: Tensor, length: float) -> tuple[Tensor, Tensor]:
    return (centre - length / 2).clamp(0, 1), (centre + length / 2).clamp(0, 1)


def region_rows(X: Tensor, centre: Tensor, length: float, config: MorboConfig) -> Tensor:
    """The rows of X a region's GPs see (sorted indices): those within centre +- L, at least the min_region_data and
    at most the max_region_data nearest."""
    n = X.shape[0]
    inside = ((X - centre).abs().amax(-1) <= length).nonzero()[:, 0]
    count = inside.numel()
    if count < config.min_region_data or count > config.max_region_data:
        keep = min(n, max(config.min_region_data, 2)) if count < config.min_region_data else config.max_region_data
        distance = (X - centre).norm(dim=-1)
        inside = distance.argsort(stable=True)[:keep]
    return inside.sort().values


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
            numbers["reference point"] = ", ".join(f"{v:.4g}" for v in state.reference_point)
        if state.feasible_share is not None:
            numbers["feasible share"] = round(state.feasible_share, 4)
        if not state.regions:
            total = config.n_init or max(state.design_asked, 1)
            progress = Progress(done=min(state.design_asked, total), total=total, label="design points asked")
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
            regions, tabu = self._update(regions, tabu, X, Y, v, ok, fresh, ref, config, d)

        front = pareto_front(Y, C) & (Y < ref).all(-1)
        centres = self._centres(regions, tabu, X, Y, v, ok, front, ref)
        models = self._models(regions, centres, X, Y, C, state, config, request)
        hypers = [to_state(m) for m in models[0][0]] if models else []
        constraint_hypers = [to_state(m) for m in models[0][1]] if models and C is not None else []
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
        return Suggestion(X=X, state=state.model_copy(update={"design_asked": state.design_asked + k}))

    @staticmethod
    def _update(
        regions: list[MorboRegion],
        tabu: list[Tabu],
        X: Tensor,
        Y: Tensor,
        v: Tensor,
        ok: Tensor,
        fresh: Tensor,
        ref: Tensor,
        config: MorboConfig,
        d: int,
    ) -> tuple[list[MorboRegion], list[Tabu]]:
        """The regions after the new results (``fresh``), each judged by its own against the previous front."""
        old = ~fresh
        Y_old = Y[old & ok]
        hv_old = hypervolume(Y_old, ref) if Y_old.shape[0] else 0.0
        any_feasible = bool((old & ok).any())
        v_old = float(v[old].min()) if bool(old.any()) else math.inf
        proposed = [[list(p) for p in r.proposed] for r in regions]
        owners: dict[int, list[int]] = {}
        for i in fresh.nonzero()[:, 0].tolist():
            owner = Morbo._owner(X[i], regions, proposed)
            if owner is not None:
                owners.setdefault(owner, []).append(i)
        out, n = [], X.shape[0]
        for r, region in enumerate(regions):
            region = region.model_copy(update={"proposed": proposed[r]})
            rows = owners.get(r)
            if not rows:
                out.append(region)
                continue
            index = torch.tensor(rows)
            new_ok = ok[index]
            if any_feasible or bool(new_ok.any()):
                hv_new = hypervolume(torch.cat([Y_old, Y[index][new_ok]]), ref)
                improved = hv_new > hv_old * (1 + config.success_margin) and hv_new > 0
                improved = improved or (not any_feasible and bool(new_ok.any()))
            else:
                improved = float(v[index].min()) < v_old
            successes, failures = (region.successes + 1, 0) if improved else (0, region.failures + len(rows))
            length = region.length
            if config.success_tolerance is not None and successes >= config.success_tolerance:
                length, successes = min(2 * length, config.length_max), 0
            if failures >= failure_tolerance(config, d):
                length, failures = length / 2, 0
            if length < config.length_min:  # collapsed: restart, its centre tabu for a while
                if region.centre is not None and config.tabu_tenure:
                    tabu.append(Tabu(x=region.centre, until=n + config.tabu_tenure))
                out.append(MorboRegion(length=config.length_init, restarts=region.restarts + 1))
                continue
            out.append(region.model_copy(update={"length": length, "successes": successes, "failures": failures}))
        return out, tabu

    @staticmethod
    def _owner(x: Tensor, regions: list[MorboRegion], proposed: list[list[list[float]]]) -> int | None:
        """The region that proposed x (its proposal is then used up), else the one whose box holds x nearest its
        centre, else None (a design point, a trial added by hand)."""
        best, where = math.inf, None
        for r, points in enumerate(proposed):
            if points:
                gap = (torch.tensor(points, dtype=torch.float64) - x).abs().amax(-1)
                j = int(gap.argmin())
                if float(gap[j]) < best:
                    best, where = float(gap[j]), (r, j)
        if where is not None and best <= MATCH_TOLERANCE:
            proposed[where[0]].pop(where[1])
            return where[0]
        owner, nearest = None, math.inf
        for r, region in enumerate(regions):
            if region.lower is None or region.upper is None or region.centre is None:
                continue
            lo, hi = torch.tensor(region.lower), torch.tensor(region.upper)
            if bool(((x >= lo - 1e-12) & (x <= hi + 1e-12)).all()):
                gap_ = float((x - torch.tensor(region.centre)).norm())
                if gap_ < nearest:
                    owner, nearest = r, gap_
        return owner

    @staticmethod
    def _centres(
        regions: list[MorboRegion],
        tabu: list[Tabu],
        X: Tensor,
        Y: Tensor,
        v: Tensor,
        ok: Tensor,
        front: Tensor,
        ref: Tensor,
    ) -> list[int]:
        """The row each region centres on (see the module's docstring)."""
        if not bool(front.any()):
            if not bool(ok.any()):  # nothing feasible: the least violating rows, one per region
                order = v.argsort(stable=True).tolist()
            else:
                index = ok.nonzero()[:, 0]
                index = index[non_dominated(Y[index])]
                past = ((Y[index] - ref) / ref_scale(Y, ref)).amax(-1)
                order = index[past.argsort(stable=True)].tolist()
            return [order[i % len(order)] for i in range(len(regions))]
        index = front.nonzero()[:, 0]
        contributions = hypervolume_contributions(Y[index], ref)
        banned = torch.zeros(index.numel(), dtype=torch.bool)
        if tabu:
            T = torch.tensor([t.x for t in tabu], dtype=torch.float64)
            banned = (X[index].unsqueeze(1) == T.unsqueeze(0)).all(-1).any(-1)
        taken = torch.zeros(index.numel(), dtype=torch.bool)
        out = []
        for region in regions:
            pool = ~taken & ~banned
            if region.lower is not None and region.upper is not None:
                lo, hi = torch.tensor(region.lower), torch.tensor(region.upper)
                inside = ((X[index] >= lo) & (X[index] <= hi)).all(-1)
                if bool((pool & inside).any()):
                    pool = pool & inside
            if not bool(pool.any()):
                pool = ~banned if bool((~banned).any()) else torch.ones_like(banned)
            score = torch.where(pool, contributions, torch.full_like(contributions, -math.inf))
            j = int(score.argmax())
            taken[j] = True
            out.append(int(index[j]))
        return out

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
                        Xr, bilog(C[rows, j]), "matern52", warm_c[j], device=request.device, generator=request.generator
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
        coordinate replaced by a Sobol point's with probability min(1, 20 / d); hit-and-run samples of box ∩ polytope
        under parameter constraints."""
        d, g = request.dim, request.generator
        if request.polytope is not None:
            try:
                return sample(request.polytope, n, g, lower, upper, thinning=1).to(torch.float64).cpu()
            except EmptyRegion:  # a centre outside the constraints (a trial added by hand): anywhere inside them
                return sample(request.polytope, n, g, thinning=1).to(torch.float64).cpu()
        sobol = torch.quasirandom.SobolEngine(d, scramble=True, seed=int(torch.randint(2**31, (1,), generator=g)))
        pert = lower + (upper - lower) * sobol.draw(n, dtype=torch.float64)
        base = bases[torch.randint(bases.shape[0], (n,), generator=g)]
        mask = torch.rand(n, d, generator=g, dtype=torch.float64) <= min(1.0, 20.0 / d)
        empty = ~mask.any(-1)
        mask[empty, torch.randint(d, (int(empty.sum()),), generator=g)] = True
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
