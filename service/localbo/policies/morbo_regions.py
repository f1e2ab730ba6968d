"""MORBO's trust regions (``morbo.py`` states the algorithm): the policy's settings and state, which region a new
result belongs to, how results grow, shrink or restart each region (with a tabu list of collapsed centres), and
where each region centres."""

from __future__ import annotations

import math
from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from localbo.policies.base import PolicyConfig, PolicyState
from localbo.policies.gp import Hypers
from localbo.policies.pareto import hypervolume, hypervolume_contributions, non_dominated
from localbo.policies.turbo_region import perturbed_coordinates_field

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
    perturbed_coordinates: float = perturbed_coordinates_field()
    min_region_data: int = Field(default=250, ge=2, le=100_000, description="Fewest results a region's GPs see")
    max_region_data: int = Field(default=2000, ge=2, le=100_000, description="Most results a region's GPs see")
    winsorize: float = Field(default=0.05, ge=0, lt=0.5, description="Worst share of each objective clipped")
    tabu_tenure: int = Field(default=100, ge=0, le=1_000_000, description="Results a collapsed centre stays tabu")
    acquisition: Literal["ts", "lognehvi"] = Field(
        default="ts",
        description="Picks by Thompson samples' hypervolume improvement (the paper), or by qLogNEHVI in each region",
    )


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
    design_size: int | None = None  # the design's size (n_init, else 2 (d + 1)): the display's progress against it
    hypers: list[Hypers] = Field(default_factory=list)  # the objectives' last GP fits
    constraint_hypers: list[Hypers] = Field(default_factory=list)  # the constraints' last GP fits
    tabu: list[Tabu] = Field(default_factory=list)
    hypervolume: float | None = None  # of the front at the last call
    front_size: int = 0
    reference_point: list[float] | None = None
    feasible_share: float | None = None  # with outcome constraints: the share of feasible results


def failure_tolerance(config: MorboConfig, d: int) -> int:
    return config.failure_tolerance or max(d // 3, 10)


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


def update_regions(
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
        owner = owner_of(X[i], regions, proposed)
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


def owner_of(x: Tensor, regions: list[MorboRegion], proposed: list[list[list[float]]]) -> int | None:
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


def centre_rows(
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
