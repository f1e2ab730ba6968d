"""Every query of the service, on SQLAlchemy Core connections (one short statement each)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, delete, func, insert, select, update
from sqlalchemy.engine import Connection, Row

from localbo.storage.models import IdempotencyRecord, PlannedPoint, Study, Trial

studies = Study.__table__
trials = Trial.__table__
plan = PlannedPoint.__table__
idempotency = IdempotencyRecord.__table__

TRIAL_COLUMNS = [
    trials.c.id,
    trials.c.number,
    trials.c.state,
    trials.c.params,
    trials.c.x,
    trials.c.value,
    trials.c.reason,
    trials.c.source,
    trials.c.client_id,
    trials.c.lease_expires_at,
    trials.c.created_at,
    trials.c.completed_at,
]


# -- studies ---------------------------------------------------------------------------


def insert_study(conn: Connection, values: dict[str, Any]) -> int:
    return conn.execute(insert(studies).values(**values).returning(studies.c.id)).scalar_one()


def get_study(conn: Connection, name: str, *, for_update: bool = False) -> Row | None:
    query = select(studies).where(studies.c.name == name)
    if for_update:
        query = query.with_for_update()  # a row lock on Postgres; SQLite ignores it
    return conn.execute(query).first()


def list_studies(conn: Connection) -> Sequence[Row]:
    return conn.execute(select(studies).order_by(studies.c.id)).all()


def update_study(conn: Connection, study_id: int, **values: Any) -> None:
    conn.execute(update(studies).where(studies.c.id == study_id).values(**values))


def delete_study(conn: Connection, study_id: int) -> None:
    # Children first, explicitly: no reliance on the dialect's cascade settings.
    for table in (idempotency, plan, trials):
        conn.execute(delete(table).where(table.c.study_id == study_id))
    conn.execute(delete(studies).where(studies.c.id == study_id))


def summaries(conn: Connection, study_ids: Iterable[int] | None = None) -> dict[int, dict]:
    """Counts per state and the lowest and highest value, per study, in one query."""
    query = select(
        trials.c.study_id,
        func.count().label("n"),
        *(
            func.sum(case((trials.c.state == s, 1), else_=0)).label(s)
            for s in ("running", "complete", "failed", "stale")
        ),
        func.min(trials.c.value).label("min_value"),
        func.max(trials.c.value).label("max_value"),
    ).group_by(trials.c.study_id)
    if study_ids is not None:
        query = query.where(trials.c.study_id.in_(list(study_ids)))
    return {row.study_id: row._asdict() for row in conn.execute(query)}


# -- trials ----------------------------------------------------------------------------


def insert_trials(conn: Connection, rows: list[dict[str, Any]]) -> None:
    if rows:
        conn.execute(insert(trials), rows)


def get_trial(conn: Connection, study_id: int, number: int, *, for_update: bool = False) -> Row | None:
    query = select(*TRIAL_COLUMNS).where(trials.c.study_id == study_id, trials.c.number == number)
    if for_update:
        query = query.with_for_update()
    return conn.execute(query).first()


def get_study_trial(conn: Connection, name: str, number: int, *, for_update: bool = False) -> Row | None:
    """The trial with its study's id, name and trial count, in one round trip."""
    query = (
        select(
            *TRIAL_COLUMNS,
            studies.c.id.label("study_id"),
            studies.c.name.label("study_name"),
            studies.c.trial_count.label("study_trial_count"),
        )
        .select_from(trials.join(studies, trials.c.study_id == studies.c.id))
        .where(studies.c.name == name, trials.c.number == number)
    )
    if for_update:
        query = query.with_for_update(of=trials)
    return conn.execute(query).first()


def update_trial(conn: Connection, trial_id: int, **values: Any) -> None:
    conn.execute(update(trials).where(trials.c.id == trial_id).values(**values))


def expire_leases(conn: Connection, study_id: int, now: datetime) -> Sequence[Row]:
    """Running trials whose lease ran out become ``stale``; returns their points."""
    return conn.execute(
        update(trials)
        .where(
            trials.c.study_id == study_id,
            trials.c.state == "running",
            trials.c.lease_expires_at < now,
        )
        .values(state="stale", lease_expires_at=None)
        .returning(trials.c.number, trials.c.x)
    ).all()


def running_of_client(conn: Connection, study_id: int, client_id: str, limit: int) -> Sequence[Row]:
    return conn.execute(
        select(*TRIAL_COLUMNS)
        .where(
            trials.c.study_id == study_id,
            trials.c.client_id == client_id,
            trials.c.state == "running",
        )
        .order_by(trials.c.number)
        .limit(limit)
    ).all()


def extend_leases(conn: Connection, trial_ids: list[int], expires_at: datetime) -> None:
    if trial_ids:
        conn.execute(update(trials).where(trials.c.id.in_(trial_ids)).values(lease_expires_at=expires_at))


def list_trials(
    conn: Connection, study_id: int, *, after: int = 0, limit: int | None = None, state: str | None = None
) -> Sequence[Row]:
    query = (
        select(*TRIAL_COLUMNS).where(trials.c.study_id == study_id, trials.c.number > after).order_by(trials.c.number)
    )
    if state is not None:
        query = query.where(trials.c.state == state)
    if limit is not None:
        query = query.limit(limit)
    return conn.execute(query).all()


def best_trial(conn: Connection, study_id: int, direction: str) -> Row | None:
    order = trials.c.value.asc() if direction == "minimize" else trials.c.value.desc()
    return conn.execute(
        select(*TRIAL_COLUMNS)
        .where(trials.c.study_id == study_id, trials.c.state == "complete")
        .order_by(order, trials.c.number)
        .limit(1)
    ).first()


def history(conn: Connection, study_id: int) -> tuple[Sequence[Row], Sequence[Row]]:
    """(completed (x, value) rows, pending x rows: running trials and the plan)."""
    done = conn.execute(
        select(trials.c.x, trials.c.value)
        .where(trials.c.study_id == study_id, trials.c.state == "complete")
        .order_by(trials.c.number)
    ).all()
    pending = conn.execute(select(trials.c.x).where(trials.c.study_id == study_id, trials.c.state == "running")).all()
    pending = [*pending, *conn.execute(select(plan.c.x).where(plan.c.study_id == study_id)).all()]
    return done, pending


# -- the plan queue --------------------------------------------------------------------


def take_plan(conn: Connection, study_id: int, limit: int) -> Sequence[Row]:
    return conn.execute(
        select(plan.c.id, plan.c.x, plan.c.source)
        .where(plan.c.study_id == study_id)
        .order_by(plan.c.priority.desc(), plan.c.id)
        .limit(limit)
    ).all()


def count_plan(conn: Connection, study_id: int) -> int:
    return conn.execute(select(func.count()).select_from(plan).where(plan.c.study_id == study_id)).scalar_one()


def add_plan(conn: Connection, study_id: int, points: list[tuple[list[float], str]], priority: int = 0) -> None:
    if points:
        conn.execute(
            insert(plan),
            [{"study_id": study_id, "x": x, "source": s, "priority": priority} for x, s in points],
        )


def drop_plan(conn: Connection, ids: list[int]) -> None:
    if ids:
        conn.execute(delete(plan).where(plan.c.id.in_(ids)))


# -- idempotency -----------------------------------------------------------------------


def get_idempotency(conn: Connection, study_id: int, key: str) -> Row | None:
    return conn.execute(
        select(idempotency.c.request_hash, idempotency.c.status_code, idempotency.c.response).where(
            idempotency.c.study_id == study_id, idempotency.c.key == key
        )
    ).first()


def put_idempotency(
    conn: Connection, study_id: int, key: str, request_hash: str, status_code: int, response: dict
) -> None:
    conn.execute(
        insert(idempotency).values(
            study_id=study_id,
            key=key,
            request_hash=request_hash,
            status_code=status_code,
            response=response,
        )
    )
