"""The stored answers of requests that carried an ``Idempotency-Key`` (``localbo.idempotency``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection, Row

from localbo.storage.repository import idempotency

_PUT_IDEMPOTENCY = insert(idempotency)


def get_idempotency(conn: Connection, study_id: int, key: str) -> Row | None:
    return conn.execute(
        select(idempotency.c.request_hash, idempotency.c.status_code, idempotency.c.response).where(
            idempotency.c.study_id == study_id, idempotency.c.key == key
        )
    ).first()


def forget_idempotency(conn: Connection, study_id: int, before: datetime) -> None:
    """Drops the answers older than ``before``: every ask of a client writes one."""
    conn.execute(delete(idempotency).where(idempotency.c.study_id == study_id, idempotency.c.created_at < before))


def put_idempotency(
    conn: Connection, study_id: int, key: str, request_hash: str, status_code: int, response: dict
) -> None:
    values = {"study_id": study_id, "key": key, "request_hash": request_hash, "status_code": status_code}
    conn.execute(_PUT_IDEMPOTENCY, {**values, "response": response})
