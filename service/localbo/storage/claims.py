"""The queries of a study's planning claim: which process computes its plan now (``planning.claims``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection, Row

from localbo.storage.repository import plan, studies


def claim_planning(conn: Connection, study_id: int, token: str, now: datetime, until: datetime) -> bool:
    """Take the study's planning claim if nobody holds it (or the holder's claim ran out)."""
    done = conn.execute(
        update(studies)
        .where(
            studies.c.id == study_id,
            (studies.c.plan_claimed_until.is_(None)) | (studies.c.plan_claimed_until < now),
        )
        .values(plan_claim=token, plan_claimed_until=until)
    )
    return done.rowcount == 1


def renew_planning(conn: Connection, study_id: int, token: str, until: datetime) -> None:
    conn.execute(
        update(studies).where(studies.c.id == study_id, studies.c.plan_claim == token).values(plan_claimed_until=until)
    )


def release_planning(conn: Connection, study_id: int, token: str) -> None:
    conn.execute(
        update(studies)
        .where(studies.c.id == study_id, studies.c.plan_claim == token)
        .values(plan_claim=None, plan_claimed_until=None)
    )


def planning_status(conn: Connection, study_id: int) -> Row | None:
    """(claimed_until, planned: points in the plan) of the study, read without a lock; None if it is gone."""
    planned = select(func.count()).select_from(plan).where(plan.c.study_id == study_id).scalar_subquery()
    return conn.execute(
        select(studies.c.plan_claimed_until.label("claimed_until"), planned.label("planned")).where(
            studies.c.id == study_id
        )
    ).first()
