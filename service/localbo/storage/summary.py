"""A study's summary for the lists and the dashboard: counts, best, liveness, in two statements per call.

The queries of ``repository.py`` that only summarise (read, never lock), kept apart so that module stays the
services' queries.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import Select, case, func, select
from sqlalchemy.engine import Connection

from localbo.domain.vocabulary import FALLBACK_SOURCES
from localbo.storage.models import utcnow
from localbo.storage.repository import studies, trials

RESULT_STATES = ("complete", "failed")
# a completed trial counts for the best value unless it broke an outcome constraint (None: the study has none)
FEASIBLE_OR_UNCONSTRAINED = trials.c.feasible.isnot(False)


def summaries(conn: Connection, study_ids: Iterable[int] | None = None, now: datetime | None = None) -> dict[int, dict]:
    """Per study with trials: counts per state, the lowest and highest value, the latest creation and result
    times, ``results_last_hour`` (trials completed or failed in the hour before ``now``), ``fallback`` and
    ``last_fallback_at`` (trials handed out as fallback points: the policy failed or was late),
    ``asked_candidates`` (distinct candidates a trial holds, stale ones aside; 0 off finite spaces),
    ``first_result_at`` and ``results`` (the cadence of results), ``lease_expired`` (running trials past their
    lease that no ask has swept yet) and,
    once one is complete, ``since_best`` (``since_best_query``).

    Two statements whatever the number of studies (the studies list shows them all), no trial row reaches
    Python."""
    now = now or utcnow()
    hour_ago = now - timedelta(hours=1)
    query = select(
        trials.c.study_id,
        func.count().label("n"),
        *(
            func.sum(case((trials.c.state == s, 1), else_=0)).label(s)
            for s in ("running", "complete", "failed", "stale")
        ),
        func.min(case((FEASIBLE_OR_UNCONSTRAINED, trials.c.value))).label("min_value"),
        func.max(case((FEASIBLE_OR_UNCONSTRAINED, trials.c.value))).label("max_value"),
        func.sum(case((trials.c.feasible.is_(True), 1), else_=0)).label("feasible"),
        func.sum(case((trials.c.feasible.is_(False), 1), else_=0)).label("infeasible"),
        func.max(trials.c.created_at).label("last_created_at"),
        func.max(trials.c.completed_at).label("last_completed_at"),
        func.min(case((trials.c.state.in_(RESULT_STATES), trials.c.completed_at))).label("first_result_at"),
        func.sum(case((trials.c.state.in_(RESULT_STATES), 1), else_=0)).label("results"),
        func.sum(case(((trials.c.state == "running") & (trials.c.lease_expires_at < now), 1), else_=0)).label(
            "lease_expired"
        ),
        func.sum(case((trials.c.state.in_(RESULT_STATES) & (trials.c.completed_at >= hour_ago), 1), else_=0)).label(
            "results_last_hour"
        ),
        func.sum(case((trials.c.source.in_(FALLBACK_SOURCES), 1), else_=0)).label("fallback"),
        func.max(case((trials.c.source.in_(FALLBACK_SOURCES), trials.c.created_at))).label("last_fallback_at"),
        func.count(case((trials.c.state != "stale", trials.c.candidate)).distinct()).label("asked_candidates"),
    ).group_by(trials.c.study_id)
    ids = None if study_ids is None else list(study_ids)
    if ids is not None:
        query = query.where(trials.c.study_id.in_(ids))
    out = {row.study_id: row._asdict() for row in conn.execute(query)}
    for row in conn.execute(since_best_query(ids)):
        if row.study_id in out:
            out[row.study_id]["since_best"] = int(row.since_best)
    return out


def since_best_query(study_ids: list[int] | None = None) -> Select:
    """Per study with a completed trial: ``since_best``, the completed trials numbered after its best one
    (the best value for its direction, the lowest number on ties: as ``repository.best_trial`` picks it)."""
    complete = (trials.c.state == "complete") & FEASIBLE_OR_UNCONSTRAINED
    extremes = select(
        trials.c.study_id, func.min(trials.c.value).label("low"), func.max(trials.c.value).label("high")
    ).where(complete)
    if study_ids is not None:
        extremes = extremes.where(trials.c.study_id.in_(study_ids))
    extreme = extremes.group_by(trials.c.study_id).subquery("extreme")
    wanted = case((studies.c.direction == "minimize", extreme.c.low), else_=extreme.c.high)
    best = (
        select(trials.c.study_id, func.min(trials.c.number).label("number"))
        .join(extreme, extreme.c.study_id == trials.c.study_id)
        .join(studies, studies.c.id == trials.c.study_id)
        .where(complete, trials.c.value == wanted)
        .group_by(trials.c.study_id)
        .subquery("best")
    )
    later = trials.alias("later")
    after_best = (
        (later.c.study_id == best.c.study_id) & (later.c.state == "complete") & (later.c.number > best.c.number)
    )
    return (
        select(best.c.study_id, func.count(later.c.number).label("since_best"))
        .select_from(best.outerjoin(later, after_best))
        .group_by(best.c.study_id)
    )
