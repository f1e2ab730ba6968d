"""The queries of what a study measures: its outcome spec as a tell reads it, a trial's metrics and feasibility,
and the points of failed trials (the failure model's data). Kept apart so ``repository.py`` stays the asking and
telling hot path's queries."""

from __future__ import annotations

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.engine import Connection, Row

from localbo.storage.repository import studies, trials

_STUDY_OUTCOMES = select(
    studies.c.id,
    studies.c.created_at,
    studies.c.objectives,
    studies.c.constraints,
    studies.c.failures,
    studies.c.safety,
    studies.c.reference_point,
).where(studies.c.name == bindparam("name"))


def study_outcomes(conn: Connection, name: str) -> Row | None:
    """What a tell needs of its study: its identity and outcome spec (``domain/outcomes.py``)."""
    return conn.execute(_STUDY_OUTCOMES, {"name": name}).first()


def set_trial_metrics(conn: Connection, trial_id: int, metrics: dict[str, float] | None, feasible: bool | None) -> None:
    conn.execute(update(trials).where(trials.c.id == trial_id).values(metrics=metrics, feasible=feasible))


def failed_points(conn: Connection, study_id: int) -> list[list[float]]:
    """The points of the study's failed trials (where the rig faulted), by number."""
    rows = conn.execute(
        select(trials.c.x).where(trials.c.study_id == study_id, trials.c.state == "failed").order_by(trials.c.number)
    ).all()
    return [list(r.x) for r in rows]


def shown_unsafe(conn: Connection, study_id: int, failures_count: bool) -> list[list[float]]:
    """The points safe mode must not ask again: where a completed trial broke a limit, and (``failures_count``:
    failures are avoided) where a trial failed."""
    unsafe = (trials.c.state == "complete") & (trials.c.feasible.is_(False))
    if failures_count:
        unsafe = unsafe | (trials.c.state == "failed")
    rows = conn.execute(select(trials.c.x).where(trials.c.study_id == study_id, unsafe)).all()
    return [list(r.x) for r in rows]


def count_failed(conn: Connection, study_id: int) -> int:
    """How many of the study's trials failed."""
    query = select(func.count()).select_from(trials).where(trials.c.study_id == study_id, trials.c.state == "failed")
    return int(conn.execute(query).scalar_one())


def completed_outcomes(conn: Connection, study_id: int) -> list[Row]:
    """Every completed trial's (number, metrics, feasible), by number: what a Pareto front is made of."""
    return list(
        conn.execute(
            select(trials.c.number, trials.c.metrics, trials.c.feasible)
            .where(trials.c.study_id == study_id, trials.c.state == "complete")
            .order_by(trials.c.number)
        ).all()
    )
