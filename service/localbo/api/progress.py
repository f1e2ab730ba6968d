"""Routes for watching a study: its trials as columns, and a server-sent event stream of changes."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from localbo import metrics, progress
from localbo.api.auth import Principal, check_read
from localbo.api.deps import Caller, ServiceDep, StudyName
from localbo.api.errors import READ, responses
from localbo.api.schemas import DB_INT_MAX, SERIES_TYPES, STUDIES_EVENTS, TRIAL_EVENTS, EventsSince, StudyOut
from localbo.broadcast import Live

router = APIRouter(prefix="/api/v1", tags=["progress"])
KEEPALIVE_SECONDS = 15.0
ISO_DATE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}")

After = Annotated[int, Query(ge=0, le=DB_INT_MAX, description="Only trials numbered above this")]


def _date_time_text(value: object) -> object:
    """``since`` as an ISO 8601 date-time, as documented: the date-time parser alone would also take a
    number of seconds since 1970 (``0.5``) or a bare date."""
    if isinstance(value, str) and not ISO_DATE_TIME.match(value):
        raise PydanticCustomError("date_time", "expected an ISO 8601 date-time, such as 2026-01-31T12:00:00Z")
    return value


Since = Annotated[EventsSince, BeforeValidator(_date_time_text)]


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
    since: Since = None,
) -> StreamingResponse:
    """Server-sent events: ``trials`` (columns as in ``/series``, new or changed trials, and ``as_of``
    to pass as ``since`` on a reconnect), ``study`` (policy state version, last policy error, notes version, trial
    count) and ``gone`` when the study is deleted."""
    check_read(who, study)
    hub = live(request.app.state)
    feed = await hub.read(progress.Feed, service.db, study, after, since)
    return _event_stream(_study_stream(hub, feed, request.app.state.closing))


@router.get("/events", response_class=StreamingResponse, responses=STUDIES_EVENTS | responses(401))
async def studies_events(request: Request, service: ServiceDep, who: Caller) -> StreamingResponse:
    """Server-sent events for the studies list: ``studies`` (as ``GET /studies``, only those the token
    may read) at once and whenever one of those studies' summaries changes."""
    return _event_stream(_studies_stream(live(request.app.state), who, request.app.state.closing))


def live(state: Any) -> Live:
    """The process's feeds (made by the first stream, in the event loop)."""
    hub = getattr(state, "live", None)
    if hub is None:
        hub = state.live = Live(progress.StudiesList(state.service, study_json), state.closing)
    return hub


def study_json(study: dict) -> str:
    """One study as ``GET /studies`` shows it."""
    return StudyOut.model_validate(study).model_dump_json()


def _event_stream(stream: AsyncIterator[str]) -> StreamingResponse:
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(metrics.counted_stream(stream), media_type="text/event-stream", headers=headers)


async def _studies_stream(hub: Live, who: Principal, closing: anyio.Event) -> AsyncIterator[str]:
    """The process's one studies list, filtered to what ``who`` may read, sent when that view changes."""
    yield "retry: 2000\n\n"
    seen, sent = 0, None
    quiet_since = anyio.current_time()
    async with hub.studies.watching():
        while not closing.is_set():
            wait = max(0.0, quiet_since + KEEPALIVE_SECONDS - anyio.current_time())
            snapshot = await hub.studies.next(seen, timeout=wait)
            if snapshot is not None:
                seen, view = snapshot.version, snapshot.view(who.can_read)
                if view != sent:
                    sent, quiet_since = view, anyio.current_time()
                    yield f"event: studies\ndata: {view}\n\n"
            if anyio.current_time() - quiet_since >= KEEPALIVE_SECONDS and not closing.is_set():
                quiet_since = anyio.current_time()
                yield ": keep-alive\n\n"


async def _study_stream(hub: Live, feed: progress.Feed, closing: anyio.Event) -> AsyncIterator[str]:
    """The study's changes as the process's one poll of it reads them, less what this viewer has seen, until
    ``gone``, the client leaves, or the server stops."""
    yield "retry: 2000\n\n"
    quiet_since = anyio.current_time()
    async with hub.watching(feed) as study:
        seen, events = await study.catch_up(feed)
        while True:
            if events:  # one write for what one poll found (its trials and the study's head), not one each
                yield "".join(f"event: {name}\ndata: {data}\n\n" for name, data in events)
            if any(name == "gone" for name, _ in events):
                return
            now = anyio.current_time()
            if events:
                quiet_since = now
            elif now - quiet_since >= KEEPALIVE_SECONDS and not closing.is_set():
                quiet_since = now
                yield ": keep-alive\n\n"
            if closing.is_set():
                return
            wait = max(0.0, quiet_since + KEEPALIVE_SECONDS - anyio.current_time())
            seen, events = await study.next(feed, seen, timeout=wait)
