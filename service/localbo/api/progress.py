"""Routes for watching a study: its trials as columns, and a server-sent event stream of changes.

The streams' wire format is FastAPI's (``fastapi.sse``: ``format_sse_event`` frames every event, comment and
retry hint; ``EventSourceResponse`` is the response), but not its generator endpoints
(``response_class=EventSourceResponse`` on a function that yields): FastAPI runs such a function inside the
stream's task group, so a 403 or 404 it raises before its first event ends as an unhandled ``ExceptionGroup``
(a 500) instead of the JSON error; it sends each yielded event on its own, where one poll's events go out here
in one write; and its keep-alive is a fixed private interval, where ours follows the study's feed and stops
when the server shuts down. The routes still declare ``response_class=StreamingResponse``: with
``EventSourceResponse`` there, the OpenAPI document would give their JSON errors the event-stream media type.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse
from fastapi.sse import EventSourceResponse, format_sse_event
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from localbo import metrics, progress
from localbo.api.auth import Principal, check_read
from localbo.api.deps import Caller, ServiceDep, StudyName
from localbo.api.errors import READ, responses
from localbo.api.progress_schemas import SERIES_TYPES, STUDIES_EVENTS, TRIAL_EVENTS, EventsSince
from localbo.api.schemas import DB_INT_MAX, StudyOut
from localbo.broadcast import Live

router = APIRouter(prefix="/api/v1", tags=["progress"])
KEEPALIVE_SECONDS = 15.0
KEEPALIVE = format_sse_event(comment="keep-alive")  # b": keep-alive\n\n": keeps proxies from closing a quiet stream
RECONNECT = format_sse_event(retry=2000)  # b"retry: 2000\n\n": a browser reconnects after 2 s
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


def _event_stream(stream: AsyncIterator[bytes]) -> StreamingResponse:
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no proxy buffers or caches the stream
    return EventSourceResponse(metrics.counted_stream(stream), headers=headers)


def _event(name: str, data: str) -> bytes:
    """One event, ``event: NAME`` and its ``data:`` line(s), framed by FastAPI's SSE encoder."""
    return format_sse_event(event=name, data_str=data)


async def _studies_stream(hub: Live, who: Principal, closing: anyio.Event) -> AsyncIterator[bytes]:
    """The process's one studies list, filtered to what ``who`` may read, sent when that view changes."""
    yield RECONNECT
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
                    yield _event("studies", view)
            if anyio.current_time() - quiet_since >= KEEPALIVE_SECONDS and not closing.is_set():
                quiet_since = anyio.current_time()
                yield KEEPALIVE


async def _study_stream(hub: Live, feed: progress.Feed, closing: anyio.Event) -> AsyncIterator[bytes]:
    """The study's changes as the process's one poll of it reads them, less what this viewer has seen, until
    ``gone``, the client leaves, or the server stops."""
    yield RECONNECT
    quiet_since = anyio.current_time()
    async with hub.watching(feed) as study:
        seen, events = await study.catch_up(feed)
        while True:
            if events:  # one write for what one poll found (its trials and the study's head), not one each
                yield b"".join(_event(name, data) for name, data in events)
            if any(name == "gone" for name, _ in events):
                return
            now = anyio.current_time()
            if events:
                quiet_since = now
            elif now - quiet_since >= KEEPALIVE_SECONDS and not closing.is_set():
                quiet_since = now
                yield KEEPALIVE
            if closing.is_set():
                return
            wait = max(0.0, quiet_since + KEEPALIVE_SECONDS - anyio.current_time())
            seen, events = await study.next(feed, seen, timeout=wait)
