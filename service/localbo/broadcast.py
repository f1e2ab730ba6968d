"""The event streams' reads, shared: one poll per process for the studies list, and one per watched
study, each fanned out to every open stream.

Each open ``GET /events`` used to poll the database every second and rebuild the whole list for
itself, in the threads that also serve writes; 200 open dashboards starved the API. Here one task
per process (started with the first stream, ended with the last or at shutdown) reads the cheap
change marks every ``LIST_POLL_SECONDS`` and rebuilds the list only when they change; each stream
filters that one list by its token's scope and sends only when its own view changed, so a reader
learns nothing of studies it may not read. Every feed read runs under its own thread limiter: open
streams never hold the threads or connections that requests need.

A study's page streams (``GET /studies/{study}/events``) likewise: each used to read the study's
feed every half second for itself, so 500 open pages of a busy study cut its ask/tell cycles by
seven eighths. Now one task per watched study (``StudyBroadcast``, started with its first stream,
ended with its last, at shutdown, or when the study is gone) reads what changed every
``STUDY_POLL_SECONDS`` and keeps the last changes; each stream takes from them what its own cursor
has not seen (``Feed.apply``), worked out once for all the streams that have seen the same. A stream
reads the database for itself only to start (its own ``after`` and ``since``) or when it fell further
behind than the kept changes reach, and those reads take turns with the study's poll, so every change
a stream is handed is newer than what it read.
A broadcast belongs to one study (by its identity: a study deleted and made again under its name,
even with the same id, is another), and a stream may open only on a study its token may read.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio

from localbo.errors import NotFound
from localbo.progress import POLL_SECONDS, Change, Events, Feed, Seen, StudiesList, StudiesSnapshot

log = logging.getLogger(__name__)
T = TypeVar("T")

FEED_THREADS = 4  # feed reads at once per process; the rest wait their turn, requests never do
LIST_POLL_SECONDS = 1.0
STUDY_POLL_SECONDS = POLL_SECONDS
KEPT_CHANGES = 120  # a study's changes kept for slow streams; one further behind reads for itself


class Live:
    """Per API process: the limiter of the feeds' reads, the studies-list broadcast and the watched studies'."""

    def __init__(self, studies: StudiesList, closing: anyio.Event) -> None:
        """Made in the event loop (its limiter belongs to it), once per process."""
        self.reads = anyio.CapacityLimiter(FEED_THREADS)
        self.closing = closing
        self.studies = StudiesBroadcast(studies, self.reads, closing)
        self.watched: dict[str, StudyBroadcast] = {}  # by study (``Feed.study``), while anybody watches

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread, under the feeds' own limiter."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.reads)

    @asynccontextmanager
    async def watching(self, viewer: Feed) -> AsyncIterator[StudyBroadcast]:
        """The broadcast of ``viewer``'s study, counting the viewer while it is inside (the first starts it)."""
        study = self.watched.get(viewer.study)
        if study is None:
            study = self.watched[viewer.study] = StudyBroadcast(viewer, self.reads, self.closing, self._ended)
        async with study.watching():  # no await between the lookup and the count: a broadcast never ends between
            yield study

    def _ended(self, study: StudyBroadcast) -> None:
        if self.watched.get(study.study) is study:
            del self.watched[study.study]


class Watched(ABC):
    """What both broadcasts share: one poller task while anybody watches, started by the first viewer."""

    _viewers: int
    _task: asyncio.Task | None

    def _may_poll(self) -> bool:
        return True

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """Counts a viewer for as long as it is inside; the first starts the poller."""
        self._viewers += 1
        if self._task is None and self._may_poll():
            self._task = asyncio.get_running_loop().create_task(self._poll_while_watched())
        try:
            yield
        finally:
            self._viewers -= 1

    @abstractmethod
    async def _poll_while_watched(self) -> None: ...


class StudiesBroadcast(Watched):
    """The latest studies list for every open stream, polled by one task while anybody watches."""

    def __init__(self, studies: StudiesList, reads: anyio.CapacityLimiter, closing: anyio.Event) -> None:
        self.studies, self.reads, self.closing = studies, reads, closing
        self.latest: StudiesSnapshot | None = None
        self.interval = LIST_POLL_SECONDS
        self._published = anyio.Event()
        self._viewers = 0
        self._task = None

    async def next(self, seen: int, timeout: float) -> StudiesSnapshot | None:
        """The latest snapshot if newer than version ``seen``, waiting up to ``timeout`` for one; else None."""
        with anyio.move_on_after(timeout):
            while (self.latest is None or self.latest.version <= seen) and not self.closing.is_set():
                await self._published.wait()
        latest = self.latest
        return latest if latest is not None and latest.version > seen else None

    def _wake(self) -> None:
        woken, self._published = self._published, anyio.Event()
        woken.set()

    async def _poll_while_watched(self) -> None:
        try:
            while self._viewers and not self.closing.is_set():
                try:
                    snapshot = await anyio.to_thread.run_sync(self.studies.poll, limiter=self.reads)
                    if snapshot is not None:
                        self.latest = snapshot
                        self._wake()
                except Exception:  # a database blip: the streams stay open and the next poll tries again
                    log.warning("polling the studies list failed", exc_info=True)
                with anyio.move_on_after(self.interval):
                    await self.closing.wait()
        finally:
            self._task, self.latest = None, None
            self.studies.forget()  # a later first viewer waits for a fresh list, not this one
            self._wake()  # the streams see ``closing``


class StudyBroadcast(Watched):
    """A study's latest changes for every open stream of its page, read by one task while anybody watches."""

    def __init__(
        self,
        first: Feed,
        reads: anyio.CapacityLimiter,
        closing: anyio.Event,
        ended: Callable[[StudyBroadcast], None],
    ) -> None:
        """``first`` is the first viewer's feed: the study's name, identity and database (its cursor stays its own)."""
        self.db, self.name, self.study = first.db, first.name, first.study
        self.reads, self.closing, self.ended = reads, closing, ended
        self.interval = STUDY_POLL_SECONDS
        self.changes: deque[Change] = deque(maxlen=KEPT_CHANGES)
        self.published = 0  # changes published so far; the last ``len(changes)`` of them are kept
        self.polls = 0  # reads of the study by this broadcast, for the tests
        self.gone = False
        self._turn = anyio.Lock()  # the poll and a stream's own read of the study, one at a time
        self._feed: Feed | None = None  # what changes from the first poll on, for everybody
        self._head: dict[str, Any] | None = None  # the study's head as last published
        self._same: weakref.WeakValueDictionary[tuple[Any, ...], Seen] = weakref.WeakValueDictionary()
        self._published = anyio.Event()
        self._viewers = 0
        self._task = None

    def _may_poll(self) -> bool:
        return not self.gone

    async def catch_up(self, viewer: Feed) -> tuple[int, Events]:
        """The viewer's own read of the database (its first, or after falling behind the kept changes): the
        changes published so far count as seen, and every later one is read after this read."""
        async with self._turn:
            await self._start()
            seen = self.published
            events = await anyio.to_thread.run_sync(viewer.poll, limiter=self.reads)
        return seen, events

    async def next(self, viewer: Feed, seen: int, timeout: float) -> tuple[int, Events]:
        """The viewer's events in the changes published after number ``seen``, waiting up to ``timeout`` for
        one; with the number of the last change it has now seen."""
        if self.published <= seen:  # (no timer for a stream that is behind: it has its changes now)
            with anyio.move_on_after(timeout):
                while self.published <= seen and not self.gone and not self.closing.is_set():
                    await self._published.wait()
        missed = self.published - seen
        if missed > len(self.changes):  # the oldest it needs is no longer kept
            return await self.catch_up(viewer)
        events: Events = []
        for change in list(self.changes)[len(self.changes) - missed :]:
            events += viewer.apply(change, self._same)
        return self.published, events

    async def _start(self) -> None:
        """The broadcast's own feed, made once, under the turn: what changes after this, it reads."""
        if self._feed is None and not self.gone:
            try:
                feed = await anyio.to_thread.run_sync(lambda: Feed(self.db, self.name, after=None), limiter=self.reads)
            except NotFound:
                feed = None
            if feed is None or feed.study != self.study:  # deleted (and perhaps made again under its name)
                self._publish(Change("", None))
            else:
                self._feed = feed

    def _publish(self, change: Change) -> None:
        self.gone = change.study is None  # the last change: the streams say ``gone`` and end
        self.changes.append(change)
        self.published += 1
        woken, self._published = self._published, anyio.Event()
        woken.set()

    async def _poll(self) -> None:
        async with self._turn:
            await self._start()
            if self._feed is None:
                return  # gone
            change = await anyio.to_thread.run_sync(self._feed.read, limiter=self.reads)
            self.polls += 1
            if change.study is None or change.columns or change.study != self._head:
                self._head = change.study
                self._publish(change)

    async def _pause(self) -> None:
        with anyio.move_on_after(self.interval):
            await self.closing.wait()

    async def _poll_while_watched(self) -> None:
        try:
            while self._viewers and not self.closing.is_set() and not self.gone:
                try:
                    await self._poll()
                except Exception:  # a database blip: the streams stay open and the next poll tries again
                    log.warning("polling study %r for its event streams failed", self.name, exc_info=True)
                if not self.gone:
                    await self._pause()
        finally:
            self._task = None
            self.ended(self)  # a later first viewer starts another broadcast, from its own read
            woken, self._published = self._published, anyio.Event()
            woken.set()  # the streams see ``gone`` or ``closing``
