"""Routes for watching a study: its trials as columns, and a server-sent event stream of changes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse

from localbo import progress
from localbo.api.auth import check_read
from localbo.api.deps import Caller, EngineDep, StudyName

router = APIRouter(prefix="/api/v1/studies/{study}", tags=["progress"])
KEEPALIVE_SECONDS = 15.0

After = Annotated[int, Query(ge=0, description="Only trials numbered above this")]


@router.get("/series")
def series(study: StudyName, engine: EngineDep, who: Caller, after: After = 0) -> Response:
    """The trials above ``after`` as columns (number, state, value, x in the unit cube, source, times, reasons).

    ``as_of`` and ``last`` are what to pass to ``/events`` as ``since`` and ``after``.
    """
    check_read(who, study)
    return Response(progress.series(engine.db, study, after), media_type="application/json")


@router.get("/events")
async def events(
    study: StudyName,
    request: Request,
    engine: EngineDep,
    who: Caller,
    after: After = 0,
    since: Annotated[datetime | None, Query(description="Also resend trials finished since this time")] = None,
) -> StreamingResponse:
    """Server-sent events: ``trials`` (columns as in ``/series``, new or changed trials), ``study``
    (policy state version, last policy error, trial count) and ``gone`` when the study is deleted."""
    check_read(who, study)
    feed = await anyio.to_thread.run_sync(progress.Feed, engine.db, study, after, since)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(_stream(feed, request), media_type="text/event-stream", headers=headers)


async def _stream(feed: progress.Feed, request: Request) -> AsyncIterator[str]:
    yield "retry: 2000\n\n"
    quiet_since = anyio.current_time()
    closing: anyio.Event = request.app.state.closing
    while not feed.gone and not closing.is_set():
        events = await anyio.to_thread.run_sync(feed.poll)
        for name, data in events:
            yield f"event: {name}\ndata: {data}\n\n"
        now = anyio.current_time()
        if events:
            quiet_since = now
        elif now - quiet_since >= KEEPALIVE_SECONDS:
            quiet_since = now
            yield ": keep-alive\n\n"
        with anyio.move_on_after(progress.POLL_SECONDS):
            await closing.wait()
