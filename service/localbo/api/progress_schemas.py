"""The shapes of the progress routes (``progress.py``): the feed's time parameter, the trial series' and the event
streams' responses. Part of the public contract (``schemas.py``): extend; do not rename."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Query
from pydantic import AfterValidator

from localbo.api.examples import SERIES_EXAMPLE

EARLIEST, LATEST = datetime(1970, 1, 2, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC)


def _feed_time(since: datetime | None) -> datetime | None:
    """A time the feed can compute with (it subtracts a clock slack; databases keep 4-digit years): one
    before 1970 means everything finished, one after 9000 nothing, as they would."""
    if since is None:
        return None
    year = since.replace(tzinfo=None).year  # offsets are under a day: the year decides without overflow
    return EARLIEST if year < EARLIEST.year + 1 else LATEST if year >= LATEST.year else since


EventsSince = Annotated[
    datetime | None,
    AfterValidator(_feed_time),
    Query(description="Also resend trials finished since this time"),
]
SERIES_TYPES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Columns of the trials",
        "content": {"application/json": {"schema": {"type": "object", "examples": [SERIES_EXAMPLE]}}},
    }
}


def stream_types(*events: str) -> dict[int | str, dict[str, Any]]:
    """A server-sent event stream's 200: each event is ``event`` (one of ``events``) and JSON ``data``."""
    event = {
        "type": "object",
        "properties": {"event": {"type": "string", "enum": list(events)}, "data": {"type": "string"}},
        "required": ["event", "data"],
    }
    return {
        200: {
            "description": "Server-sent events (never ends while the study exists)",
            "content": {"text/event-stream": {"schema": event}},
        }
    }


TRIAL_EVENTS = stream_types("trials", "study", "gone")
STUDIES_EVENTS = stream_types("studies")
