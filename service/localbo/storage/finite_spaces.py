"""A finite space's queries: its candidates, their kernel matrix, and which of them trials or the plan hold."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection, Row

from localbo.storage.repository import candidates, kernels, plan, trials


def insert_candidates(conn: Connection, study_id: int, rows: list[dict[str, Any]], kernel: bytes | None) -> None:
    """A finite space's candidates (rows of idx, cid, params, x) and its kernel matrix, if any."""
    for start in range(0, len(rows), 10_000):
        conn.execute(insert(candidates), [{"study_id": study_id, **r} for r in rows[start : start + 10_000]])
    if kernel is not None:
        conn.execute(insert(kernels), {"study_id": study_id, "size": len(rows), "data": kernel})


def load_candidates(conn: Connection, study_id: int) -> tuple[Sequence[Row], bytes | None]:
    """(candidate rows by index: idx, cid, params, x; the kernel matrix's bytes or None)."""
    rows = conn.execute(
        select(candidates.c.idx, candidates.c.cid, candidates.c.params, candidates.c.x)
        .where(candidates.c.study_id == study_id)
        .order_by(candidates.c.idx)
    ).all()
    kernel = conn.execute(select(kernels.c.data).where(kernels.c.study_id == study_id)).scalar_one_or_none()
    return rows, kernel


def held_candidates(conn: Connection, study_id: int, among: Iterable[int] | None = None) -> set[int]:
    """The candidates a trial of the study holds, stale ones aside (their points are offered again)."""
    query = select(trials.c.candidate).where(
        trials.c.study_id == study_id, trials.c.candidate.is_not(None), trials.c.state != "stale"
    )
    if among is not None:
        query = query.where(trials.c.candidate.in_(list(among)))
    return {r for (r,) in conn.execute(query)}


def asked_candidates(conn: Connection, study_id: int) -> set[int]:
    """The candidates a trial holds (stale ones aside) or the plan names."""
    planned = conn.execute(select(plan.c.candidate).where(plan.c.study_id == study_id, plan.c.candidate.is_not(None)))
    return held_candidates(conn, study_id) | {r for (r,) in planned}


def failed_candidates(conn: Connection, study_id: int) -> list[int]:
    """The candidates of failed trials: asked, with no value to come."""
    query = select(trials.c.candidate).where(
        trials.c.study_id == study_id, trials.c.candidate.is_not(None), trials.c.state == "failed"
    )
    return [r for (r,) in conn.execute(query)]


def purge_asked_plan(conn: Connection, study_id: int) -> None:
    """Drops planned candidates that a trial already holds (a fallback took them after the plan was computed)."""
    held = select(trials.c.candidate).where(
        trials.c.study_id == study_id, trials.c.candidate.is_not(None), trials.c.state != "stale"
    )
    conn.execute(
        delete(plan).where(plan.c.study_id == study_id, plan.c.candidate.is_not(None), plan.c.candidate.in_(held))
    )
