"""Every query of the service, on SQLAlchemy Core connections (one short statement each)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Table,
    bindparam,
    delete,
    exists,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Connection, Row

from localbo.storage.models import (
    Base,
    Candidate,
    CandidateKernel,
    IdempotencyRecord,
    PlannedPoint,
    Study,
    Trial,
)


def _table(model: type[Base]) -> Table:
    """The model's Table (typed as such: ``__table__`` is declared as any FROM clause)."""
    table = model.__table__
    assert isinstance(table, Table)
    return table


studies = _table(Study)
candidates = _table(Candidate)
kernels = _table(CandidateKernel)
trials = _table(Trial)
plan = _table(PlannedPoint)
idempotency = _table(IdempotencyRecord)

TRIAL_COLUMNS = [
    trials.c.id,
    trials.c.study_id,
    trials.c.number,
    trials.c.state,
    trials.c.params,
    trials.c.x,
    trials.c.value,
    trials.c.metrics,
    trials.c.feasible,
    trials.c.reason,
    trials.c.source,
    trials.c.client_id,
    trials.c.lease_expires_at,
    trials.c.created_at,
    trials.c.completed_at,
    trials.c.candidate,
    trials.c.candidate_id,
    trials.c.note,
]


# -- studies ---------------------------------------------------------------------------


def insert_study(conn: Connection, values: dict[str, Any]) -> int:
    return conn.execute(insert(studies).values(**values).returning(studies.c.id)).scalar_one()


def get_study(conn: Connection, name: str, *, for_update: bool = False) -> Row | None:
    query = select(studies).where(studies.c.name == name)
    if for_update:
        query = query.with_for_update()  # a row lock on Postgres; SQLite ignores it
    return conn.execute(query).first()


# Built once: the ask and tell paths run these on every call, and building a statement
# costs more than running it on SQLite.
_CLIENT_RUNNING = (
    select(func.count())
    .where(trials.c.study_id == studies.c.id, trials.c.client_id == bindparam("client_id"), trials.c.state == "running")
    .scalar_subquery()
)
# What an ask reads of its study: not the policy's state (it can be large, and only a fallback needs it),
# and how many trials the client holds open (most asks hold none, and then need not read them).
_STUDY_FOR_ASK = (
    select(
        studies.c.id,
        studies.c.name,
        studies.c.space,
        studies.c.policy,
        studies.c.seed,
        studies.c.trial_count,
        studies.c.created_at,
        studies.c.safety,  # safe mode: a planned point shown unsafe since is never handed out
        studies.c.failures,
        _CLIENT_RUNNING.label("client_running"),
        func.now().label("db_now"),  # leases are set and compared in the database's time, not a host's
        idempotency.c.request_hash.label("idem_hash"),
        idempotency.c.response.label("idem_response"),
    )
    .select_from(
        studies.outerjoin(
            idempotency, (idempotency.c.study_id == studies.c.id) & (idempotency.c.key == bindparam("key"))
        )
    )
    .where(studies.c.name == bindparam("name"))
)
_LOCK_FOR_ASK = _STUDY_FOR_ASK.with_for_update(of=studies)
_RUNNING_OF_CLIENT = (
    select(*TRIAL_COLUMNS)
    .where(
        trials.c.study_id == bindparam("study_id"),
        trials.c.client_id == bindparam("client_id"),
        trials.c.state == "running",
    )
    .order_by(trials.c.number)
    .limit(bindparam("limit"))
)


def study_for_ask(conn: Connection, name: str, key: str | None, client_id: str | None, *, lock: bool) -> Row | None:
    """The study's ask columns (``lock``: and its row lock), the stored answer for ``key`` if there is one, and
    how many trials ``client_id`` holds running (one round trip)."""
    query = _LOCK_FOR_ASK if lock else _STUDY_FOR_ASK
    return conn.execute(query, {"name": name, "key": key, "client_id": client_id}).first()


def list_studies(conn: Connection) -> Sequence[Row]:
    return conn.execute(select(studies).order_by(studies.c.id)).all()


_NUMBER_TRIALS = (
    update(studies)
    .where(studies.c.id == bindparam("b_study_id"))
    .values(trial_count=studies.c.trial_count + bindparam("b_new"))
    .returning(studies.c.trial_count)
)
_LOCKED_TRIAL_COUNT = select(studies.c.trial_count).where(studies.c.id == bindparam("study_id")).with_for_update()


def number_trials(conn: Connection, study_id: int, new: int) -> int | None:
    """Counts ``new`` trials in and returns the study's count after them (their numbers end there), or None if
    the study is gone. On Postgres this takes the study's row lock, held to the commit: asks number their
    trials one after another, and the lock is held only from here on."""
    return conn.execute(_NUMBER_TRIALS, {"b_study_id": study_id, "b_new": new}).scalar()


def lock_trial_count(conn: Connection, study_id: int) -> int | None:
    """The study's trial count under its row lock (Postgres), or None if the study is gone."""
    return conn.execute(_LOCKED_TRIAL_COUNT, {"study_id": study_id}).scalar()


def update_study(conn: Connection, study_id: int, **values: Any) -> None:
    conn.execute(update(studies).where(studies.c.id == study_id).values(**values))


def get_study_by_id(conn: Connection, study_id: int, *, for_update: bool = False) -> Row | None:
    query = select(studies).where(studies.c.id == study_id)
    if for_update:
        query = query.with_for_update()
    return conn.execute(query).first()


def delete_study(conn: Connection, study_id: int) -> None:
    # Children first, explicitly: no reliance on the dialect's cascade settings.
    for table in (idempotency, plan, trials, candidates, kernels):
        conn.execute(delete(table).where(table.c.study_id == study_id))
    conn.execute(delete(studies).where(studies.c.id == study_id))


# -- trials ----------------------------------------------------------------------------


def insert_trials(conn: Connection, rows: list[dict[str, Any]]) -> None:
    if rows:
        conn.execute(insert(trials), rows)


_LOCK_TRIAL = (
    select(*TRIAL_COLUMNS, studies.c.created_at.label("study_created_at"))
    .select_from(trials.join(studies, trials.c.study_id == studies.c.id))
    .where(studies.c.name == bindparam("name"), trials.c.number == bindparam("number"))
    .with_for_update(of=trials)
)


def lock_trial(conn: Connection, name: str, number: int) -> Row | None:
    """The trial, locked, found by its study's name and its number, in one round trip (with its study's
    creation time, ``study_created_at``)."""
    return conn.execute(_LOCK_TRIAL, {"name": name, "number": number}).first()


_STUDY_ID_BY_NAME = select(studies.c.id).where(studies.c.name == bindparam("name")).scalar_subquery()
_FINISH_OPEN_TRIAL = (
    update(trials)
    .where(
        trials.c.study_id == _STUDY_ID_BY_NAME,
        trials.c.number == bindparam("b_number"),
        trials.c.state.in_(("running", "stale")),
    )
    .values(
        state=bindparam("b_state"),
        value=bindparam("b_value"),
        metrics=bindparam("b_metrics", type_=trials.c.metrics.type),
        feasible=bindparam("b_feasible", type_=trials.c.feasible.type),
        reason=bindparam("b_reason"),
        completed_at=bindparam("b_completed_at"),
        lease_expires_at=None,
    )
    # whether the study's plan holds points, read in the same statement: suggest-ahead after the tell
    # needs no read (a connection and a thread hop) of its own when it does
    .returning(
        *TRIAL_COLUMNS,
        exists().where(plan.c.study_id == trials.c.study_id).label("plan_holds"),
        # the study's identity beside its name: a tell that names its study (a trial token) is checked against it
        select(studies.c.created_at)
        .where(studies.c.id == trials.c.study_id)
        .scalar_subquery()
        .label("study_created_at"),
        # whether the study names its metrics: a tell of a bare value then needs the study's outcome spec
        select(studies.c.objectives.isnot(None))
        .where(studies.c.id == trials.c.study_id)
        .scalar_subquery()
        .label("study_named"),
    )
)


def finish_open_trial(
    conn: Connection,
    name: str,
    number: int,
    state: str,
    value: float | None,
    reason: str | None,
    at: datetime,
    metrics: dict[str, float] | None = None,
    feasible: bool | None = None,
) -> Row | None:
    """Completes or fails a running (or stale) trial in one statement; None if it is not open. The row
    also says whether the study's plan holds points (``plan_holds``) and when the study was created
    (``study_created_at``)."""
    params = {
        "name": name,
        "b_number": number,
        "b_state": state,
        "b_value": value,
        "b_metrics": metrics,
        "b_feasible": feasible,
        "b_reason": reason,
        "b_completed_at": at,
    }
    return conn.execute(_FINISH_OPEN_TRIAL, params).first()


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
        .returning(trials.c.number, trials.c.x, trials.c.candidate)
    ).all()


def running_of_client(conn: Connection, study_id: int, client_id: str, limit: int) -> Sequence[Row]:
    return conn.execute(_RUNNING_OF_CLIENT, {"study_id": study_id, "client_id": client_id, "limit": limit}).all()


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


def get_trial(conn: Connection, study_id: int, number: int) -> Row | None:
    return conn.execute(select(*TRIAL_COLUMNS).where(trials.c.study_id == study_id, trials.c.number == number)).first()


def count_complete(conn: Connection, study_id: int) -> int:
    """Completed trials of the study (from the (study_id, state) index)."""
    query = select(func.count()).select_from(trials).where(trials.c.study_id == study_id, trials.c.state == "complete")
    return int(conn.execute(query).scalar_one())


def latest_complete(conn: Connection, study_id: int, limit: int) -> list[Row]:
    """(number, x, value) of the study's last ``limit`` completed trials by number, oldest first."""
    rows = conn.execute(
        select(trials.c.number, trials.c.x, trials.c.value)
        .where(trials.c.study_id == study_id, trials.c.state == "complete")
        .order_by(trials.c.number.desc())
        .limit(limit)
    ).all()
    return list(reversed(rows))


def best_trial(conn: Connection, study_id: int, direction: str) -> Row | None:
    """The best completed trial that broke no outcome constraint (the lowest number on ties)."""
    order = trials.c.value.asc() if direction == "minimize" else trials.c.value.desc()
    return conn.execute(
        select(*TRIAL_COLUMNS)
        .where(trials.c.study_id == study_id, trials.c.state == "complete", trials.c.feasible.isnot(False))
        .order_by(order, trials.c.number)
        .limit(1)
    ).first()


def history(conn: Connection, study_id: int) -> tuple[Sequence[Row], Sequence[Row]]:
    """(completed (number, x, value, metrics, candidate) rows by number, pending (x, candidate) rows: running
    trials and the plan)."""
    done = conn.execute(
        select(trials.c.number, trials.c.x, trials.c.value, trials.c.metrics, trials.c.candidate)
        .where(trials.c.study_id == study_id, trials.c.state == "complete")
        .order_by(trials.c.number)
    ).all()
    pending = conn.execute(
        select(trials.c.x, trials.c.candidate).where(trials.c.study_id == study_id, trials.c.state == "running")
    ).all()
    pending = [*pending, *conn.execute(select(plan.c.x, plan.c.candidate).where(plan.c.study_id == study_id)).all()]
    return done, pending
