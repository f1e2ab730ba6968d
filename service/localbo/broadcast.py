"""The event streams' reads, shared: one poll per process for the studies list, fanned out to every open stream.

Each open ``GET /events`` used to poll the database every second and rebuild the whole list for
itself, in the threads that also serve writes; 200 open dashboards starved the API. Here one task
per process (started with the first stream, ended with the last or at shutdown) reads the cheap
change marks every ``LIST_POLL_SECONDS`` and rebuilds the list only when they change; each stream
filters that one list by its token's scope and sends only when its own view changed, so a reader
learns nothing of studies it may not read. Every feed read runs under its own thread limiter: open
streams never hold the threads or connections that requests need.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio

from localbo.progress import StudiesList, StudiesSnapshot

log = logging.getLogger(__name__)
T = TypeVar("T")

FEED_THREADS = 4  # feed reads at once per process; the rest wait their turn, requests never do
LIST_POLL_SECONDS = 1.0


class Live:
    """Per API process: the limiter of the feeds' reads and the studies-list broadcast."""

    def __init__(self, studies: StudiesList, closing: anyio.Event) -> None:
        """Made in the event loop (its limiter belongs to it), once per process."""
        self.reads = anyio.CapacityLimiter(FEED_THREADS)
        self.studies = StudiesBroadcast(studies, self.reads, closing)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread, under the feeds' own limiter."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.reads)


class StudiesBroadcast:
    """The latest studies list for every open stream, polled by one task while anybody watches."""

    def __init__(self, studies: StudiesList, reads: anyio.CapacityLimiter, closing: anyio.Event) -> None:
        self.studies, self.reads, self.closing = studies, reads, closing
        self.latest: StudiesSnapshot | None = None
        self.interval = LIST_POLL_SECONDS
        self._published = anyio.Event()
        self._viewers = 0
        self._task: asyncio.Task | None = None

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """Counts a viewer for as long as it is inside; the first starts the poller."""
        self._viewers += 1
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._poll_while_watched())
        try:
            yield
        finally:
            self._viewers -= 1

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
