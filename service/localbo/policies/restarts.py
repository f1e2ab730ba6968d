"""Restarts of a stalled local gradient policy (``LocalConfig.restart_after``; issue 29, item 2), as TuRBO restarts
a collapsed trust region.

A *run* is the stretch of iterations since the policy's start or its last restart. At each step the run's best
value (the lowest y among the results told since the run began) is compared with the best of the steps before:

    improved:  best_now < best - 1e-3 |best|       (TuRBO's success margin)
    stalled:   restart_after consecutive steps without an improvement

A stalled run ends: the next iterate is the point of a scrambled Sobol set (its own sequence per restart) farthest
from every evaluated point, and the new run's GP window holds only its own results, so that the step's bound does
not lead straight back to the old basin (as TuRBO leaves the old data out of a fresh region). The study keeps every
result, so its best trial is kept whatever the new run finds. A run never restarts before its first step.
"""

from __future__ import annotations

from typing import Any

import torch
from pydantic import BaseModel, ConfigDict
from torch import Tensor
from torch.quasirandom import SobolEngine

from localbo.policies.base import SuggestRequest

SUCCESS_MARGIN = 1e-3  # a step improves the run's best by more than this share of its magnitude (TuRBO's)
CANDIDATES = 1024  # Sobol points the restart's point is chosen from


class RunState(BaseModel):
    """The current run: where its results begin, its best value so far, the steps since it last improved."""

    model_config = ConfigDict(extra="forbid")
    start: int = 0  # results (in the order told) before the run began: its window is the results from here
    best: float | None = None  # the run's best value at its last step (None: no step yet)
    stale: int = 0  # consecutive steps since the best last improved
    restarts: int = 0  # runs ended so far


def after_step(run: RunState, y_run: Tensor) -> RunState:
    """The run after a step whose window holds the run's values ``y_run`` (to minimise): best and stale updated."""
    if y_run.numel() == 0:
        return run
    best_now = float(y_run.min())
    if run.best is None or best_now < run.best - SUCCESS_MARGIN * abs(run.best):
        return run.model_copy(update={"best": best_now, "stale": 0})
    return run.model_copy(update={"stale": run.stale + 1})


def stalled(run: RunState, restart_after: int | None) -> bool:
    return restart_after is not None and run.stale >= restart_after


def restart_point(X_seen: Tensor, seed: int, restarts: int) -> Tensor:
    """The new run's x_0 (d): the farthest from every row of ``X_seen`` (n x d) among ``CANDIDATES`` scrambled
    Sobol points of the unit cube, seeded by (study seed, restart count)."""
    d = X_seen.shape[-1]
    sobol = SobolEngine(d, scramble=True, seed=(seed * 7919 + restarts) % 2**31)
    candidates = sobol.draw(CANDIDATES, dtype=torch.float64).to(X_seen)
    if X_seen.shape[0] == 0:
        return candidates[0]
    nearest = torch.cdist(candidates, X_seen.reshape(-1, d)).amin(dim=-1)
    return candidates[int(nearest.argmax())]


# What a study may need that restarts do not serve (``check_needs``): parameter constraints they do.
RESTART_BLOCKERS = frozenset({"constraints", "failures", "safety", "objectives"})


def restarts_serve(request: SuggestRequest[Any, Any]) -> bool:
    """Whether a run may restart here (``check_needs`` refuses the rest at creation; a policy ``auto`` runs is
    checked there too, this is the guard): one objective, nothing measured to respect, no safe mode."""
    several = request.Y is not None and request.Y.shape[-1] > 1
    return not several and request.C is None and request.X_failed is None and request.max_violation_probability is None
