"""The plan queue's queries: the points a study's policy computed ahead, taken by asks in order (``planning``)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, delete, func, insert, select
from sqlalchemy.engine import Connection, Row

from localbo.storage.repository import plan

_POP_PLAN = (
    delete(plan)
    .where(
        plan.c.id.in_(
            select(plan.c.id)
            .where(plan.c.study_id == bindparam("study_id"))
            .order_by(plan.c.priority.desc(), plan.c.id)
            .limit(bindparam("limit"))
            .with_for_update(skip_locked=True)  # Postgres: concurrent asks take different points, none waits
            .scalar_subquery()
        )
    )
    .returning(plan.c.id, plan.c.x, plan.c.source, plan.c.priority, plan.c.candidate)
)


def pop_plan(conn: Connection, study_id: int, limit: int) -> list[Row]:
    """Removes and returns the next ``limit`` planned points, re-offered stale points first."""
    rows = conn.execute(_POP_PLAN, {"study_id": study_id, "limit": limit}).all()
    return sorted(rows, key=lambda r: (-r.priority, r.id))


def list_plan(conn: Connection, study_id: int) -> Sequence[Row]:
    """The plan queue in the order asks will take it."""
    return conn.execute(
        select(plan.c.x, plan.c.source, plan.c.priority, plan.c.candidate)
        .where(plan.c.study_id == study_id)
        .order_by(plan.c.priority.desc(), plan.c.id)
    ).all()


def count_plan(conn: Connection, study_id: int) -> int:
    return conn.execute(select(func.count()).select_from(plan).where(plan.c.study_id == study_id)).scalar_one()


def plan_totals(conn: Connection) -> tuple[int, int]:
    """(planned points, studies with a plan) over every study: what ``/metrics`` reports."""
    row = conn.execute(select(func.count(), func.count(plan.c.study_id.distinct())).select_from(plan)).one()
    return int(row[0]), int(row[1])


PlanPoint = tuple[list[float], str, int | None]  # (x in the unit cube, source, candidate on a finite space)


def add_plan(conn: Connection, study_id: int, points: list[PlanPoint], priority: int = 0) -> None:
    if points:
        conn.execute(
            insert(plan),
            [{"study_id": study_id, "x": x, "source": s, "priority": priority, "candidate": c} for x, s, c in points],
        )
