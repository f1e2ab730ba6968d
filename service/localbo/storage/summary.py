"""A study's summary for the lists and the dashboard: counts, best, liveness, in one aggregate query per call.

The queries of ``repository.py`` that only summarise (read, never lock), kept apart so that module stays the
services' queries.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import case, exists, func, select
from sqlalchemy.engine import Connection

from localbo.storage.models import utcnow
from localbo.storage.repository import candidates, studies, trials

RESULT_STATES = ("complete", "failed")


def summaries(conn: Connection, study_ids: Iterable[int] | None = None, now: datetime | None = None) -> dict[int, dict]:
    """Per study: counts per state, the lowest and highest value, the latest creation and result times and
    ``results_last_hour`` (trials completed or failed in the hour before ``now``), ``fallback`` and
    ``last_fallback_at`` (trials handed out as fallback points: the policy failed or was late) in one
    aggregate query;
    then, per study, ``since_best`` (``trials_since_best``) and on a finite space ``asked_candidates``
    (``asked_candidate_count``): two or three indexed queries each, no row reaches Python."""
    hour_ago = (now or utcnow()) - timedelta(hours=1)
    query = select(
        trials.c.study_id,
        func.count().label("n"),
        *(
            func.sum(case((trials.c.state == s, 1), else_=0)).label(s)
            for s in ("running", "complete", "failed", "stale")
        ),
        func.min(trials.c.value).label("min_value"),
        func.max(trials.c.value).label("max_value"),
        func.max(trials.c.created_at).label("last_created_at"),
        func.max(trials.c.completed_at).label("last_completed_at"),
        func.sum(case((trials.c.state.in_(RESULT_STATES) & (trials.c.completed_at >= hour_ago), 1), else_=0)).label(
            "results_last_hour"
        ),
        func.sum(case((trials.c.source == "fallback", 1), else_=0)).label("fallback"),
        func.max(case((trials.c.source == "fallback", trials.c.created_at))).label("last_fallback_at"),
    ).group_by(trials.c.study_id)
    heads = select(
        studies.c.id, studies.c.direction, exists().where(candidates.c.study_id == studies.c.id).label("finite")
    )
    if study_ids is not None:
        ids = list(study_ids)
        query = query.where(trials.c.study_id.in_(ids))
        heads = heads.where(studies.c.id.in_(ids))
    out = {row.study_id: row._asdict() for row in conn.execute(query)}
    for head in conn.execute(heads):
        summary = out.get(head.id)
        if summary is None:
            continue
        if summary["complete"]:
            summary["since_best"] = trials_since_best(conn, head.id, head.direction)
        if head.finite:
            summary["asked_candidates"] = asked_candidate_count(conn, head.id)
    return out


def trials_since_best(conn: Connection, study_id: int, direction: str) -> int | None:
    """Completed trials numbered after the study's best one (as ``best_trial`` picks it: the best value,
    the lowest number on ties); None while none is complete."""
    best = best_trial_number(conn, study_id, direction)
    if best is None:
        return None
    query = select(func.count()).where(
        trials.c.study_id == study_id, trials.c.number > best, trials.c.state == "complete"
    )
    return int(conn.execute(query).scalar_one())


def best_trial_number(conn: Connection, study_id: int, direction: str) -> int | None:
    order = trials.c.value.asc() if direction == "minimize" else trials.c.value.desc()
    return conn.execute(
        select(trials.c.number)
        .where(trials.c.study_id == study_id, trials.c.state == "complete")
        .order_by(order, trials.c.number)
        .limit(1)
    ).scalar_one_or_none()


def asked_candidate_count(conn: Connection, study_id: int) -> int:
    """Distinct candidates a trial of the study holds, stale ones aside (``held_candidates``, counted)."""
    query = select(func.count(trials.c.candidate.distinct())).where(
        trials.c.study_id == study_id, trials.c.candidate.is_not(None), trials.c.state != "stale"
    )
    return int(conn.execute(query).scalar_one())
