"""Routes for watching a study: its trials as columns, and a server-sent event stream of changes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse

from localbo import progress
from localbo.api.auth import check_read
from localbo.api.deps import Caller, ServiceDep, StudyName
from localbo.api.errors import READ, responses
from localbo.api.schemas import DB_INT_MAX, SERIES_TYPES, STUDIES_EVENTS, TRIAL_EVENTS, EventsSince

router = APIRouter(prefix="/api/v1", tags=["progress"])
KEEPALIVE_SECONDS = 15.0
LIST_POLL_SECONDS = 1.0
Events = list[tuple[str, str]]

After = Annotated[int, Query(ge=0, le=DB_INT_MAX, description="Only trials numbered above this")]


@router.get("/studies/{study}/series", response_class=Response, responses=SERIES_TYPES | responses(*READ))
def series(study: StudyName, service: ServiceDep, who: Caller, after: After = 0) -> Response:
    """The trials above ``after`` as columns (number, state, value, x in the unit cube, source, times, reasons).

    ``as_of`` and ``last`` are what to pass to ``/events`` as ``since`` and ``after``.
    """
    check_read(who, study)
    return Response(progress.series(service.db, study, after), media_type="application/json")


@router.get("/studies/{study}/events", response_class=StreamingResponse, responses=TRIAL_EVENTS | responses(*READ))
async def events(
    study: StudyName,
    request: Request,
    service: ServiceDep,
    who: Caller,
    after: After = 0,
    since: EventsSince = None,
) -> StreamingResponse:
    """Server-sent events: ``trials`` (columns as in ``/series``, new or changed trials, and ``as_of``
    to pass as ``since`` on a reconnect), ``study`` (policy state version, last policy error, trial
    count) and ``gone`` when the study is deleted."""
    check_read(who, study)
    feed = await anyio.to_thread.run_sync(progress.Feed, service.db, study, after, since)
    return _event_stream(feed.poll, request, progress.POLL_SECONDS)


@router.get("/events", response_class=StreamingResponse, responses=STUDIES_EVENTS | responses(401))
async def studies_events(request: Request, service: ServiceDep, who: Caller) -> StreamingResponse:
    """Server-sent events for the studies list: ``studies`` (as ``GET /studies``, only those the token
    may read) at once and whenever a study's summary changes."""
    return _event_stream(progress.StudiesFeed(service, who.can_read).poll, request, LIST_POLL_SECONDS)


def _event_stream(poll: Callable[[], Events], request: Request, interval: float) -> StreamingResponse:
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(_stream(poll, request, interval), media_type="text/event-stream", headers=headers)


async def _stream(poll: Callable[[], Events], request: Request, interval: float) -> AsyncIterator[str]:
    """Polls (in a thread) every ``interval`` until a ``gone`` event, the client leaves, or the server stops."""
    yield "retry: 2000\n\n"
    quiet_since = anyio.current_time()
    closing: anyio.Event = request.app.state.closing
    while not closing.is_set():
        events = await anyio.to_thread.run_sync(poll)
        for name, data in events:
            yield f"event: {name}\ndata: {data}\n\n"
        if any(name == "gone" for name, _ in events):
            return
        now = anyio.current_time()
        if events:
            quiet_since = now
        elif now - quiet_since >= KEEPALIVE_SECONDS:
            quiet_since = now
            yield ": keep-alive\n\n"
        with anyio.move_on_after(interval):
            await closing.wait()
