"""A study's identity beyond its name: a name can be deleted and created again, its trials cannot move."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime


def study_token(study_id: int, created_at: datetime) -> str:
    """An opaque token naming one study for good: its id and creation time (SQLite may reuse a deleted
    study's id, never with the same microsecond). A trial carries it; a tell that sends it back reaches
    that study or none."""
    at = created_at.astimezone(UTC) if created_at.tzinfo is not None else created_at.replace(tzinfo=UTC)
    return hashlib.blake2s(f"{study_id}:{at.isoformat()}".encode(), digest_size=8).hexdigest()
