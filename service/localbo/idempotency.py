"""Idempotency keys: a retried write (same key, same body) gets the first answer back, never a second effect.

A key names one request of one study; reusing it for a different body is a 422. Answers are kept
``LOCALBO_IDEMPOTENCY_TTL_SECONDS`` (the ask path forgets older ones as it sweeps leases).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy.engine import Connection

from localbo.errors import InvalidInput
from localbo.storage import idempotency_records


def request_hash(op: str, body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([op, body], sort_keys=True).encode()).hexdigest()


def replay(conn: Connection, study_id: int, key: str | None, op: str, body: dict[str, Any]) -> Any | None:
    """The stored answer for ``key`` if this request was made before; a 422 if the key was used otherwise.

    Read in a statement of its own after the caller locked the study: on Postgres (read committed)
    a concurrent duplicate that waited for the lock then sees the first request's committed answer.
    """
    if not key:
        return None
    record = idempotency_records.get_idempotency(conn, study_id, key)
    if record is None:
        return None
    if record.request_hash != request_hash(op, body):
        raise InvalidInput("Idempotency-Key", f"{key!r} was already used for a different request")
    return record.response


def remember(conn: Connection, study_id: int, key: str | None, op: str, body: dict[str, Any], response: Any) -> None:
    if key:
        idempotency_records.put_idempotency(conn, study_id, key, request_hash(op, body), 200, response)
