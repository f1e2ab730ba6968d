"""Running a short write transaction from the event loop without blocking it.

SQLite has one writer at a time: its writes go to one dedicated thread, in order, so a write that
waits on the database's lock (busy timeout) stalls no request, ``/healthz`` and the event streams
included. On Postgres, transactions of different requests overlap on their own connections, so
they run in anyio's worker threads.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import anyio

T = TypeVar("T")


class Transactions:
    def __init__(self, sqlite: bool) -> None:
        self._one_writer = ThreadPoolExecutor(1, thread_name_prefix="localbo-sqlite-writer") if sqlite else None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        call = functools.partial(fn, *args)
        if self._one_writer is not None:
            return await asyncio.get_running_loop().run_in_executor(self._one_writer, call)
        return await anyio.to_thread.run_sync(call)

    def close(self) -> None:
        if self._one_writer is not None:
            self._one_writer.shutdown(wait=False, cancel_futures=True)
