"""Background planning jobs: at most one per study in this process, shared by everyone who waits.

``start(key, fn, *args)`` runs ``fn`` in the pool unless a job for ``key`` is under way; then
the caller gets that job's future instead (concurrent asks coalesce), and the job runs ``fn``
once more when it ends (a tell that arrived meanwhile may have made a new plan possible).
Across processes, the engine's claim on the study row keeps computations apart.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

log = logging.getLogger("localbo.planning")


class Jobs:
    def __init__(self, threads: int) -> None:
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="localbo-plan")
        self._running: dict[Hashable, Future] = {}
        self._again: dict[Hashable, tuple[Callable[..., Any], tuple, bool]] = {}
        self._guard = threading.Lock()

    def start(self, key: Hashable, fn: Callable[..., Any], *args: Any, weak: bool = False) -> Future:
        """The future of the job for ``key``: a new one, or the one under way (which then runs ``fn`` again).

        A ``weak`` call (suggest-ahead) does not replace a strong one (an ask's) waiting to run again.
        """
        with self._guard:
            job = self._running.get(key)
            if job is not None:
                if not (weak and key in self._again and not self._again[key][2]):
                    self._again[key] = (fn, args, weak)
                return job
            job = self._pool.submit(self._run, key, fn, args)
            self._running[key] = job
            return job

    def running(self, key: Hashable) -> Future | None:
        with self._guard:
            return self._running.get(key)

    def _run(self, key: Hashable, fn: Callable[..., Any], args: tuple) -> Any:
        """Run ``fn`` until nobody asked for it again; the future's result is the last run's (an ask that joined
        the job waits for the run that had its need). Every failure is logged; the first one's is raised."""
        try:
            first, result = True, None
            while True:
                try:
                    result = fn(*args)
                except Exception:
                    log.exception("planning job for %s failed", key)
                    if first:
                        raise  # the caller that started the job sees its error
                first = False
                with self._guard:
                    again = self._again.pop(key, None)
                    if again is None:
                        del self._running[key]
                        return result
                fn, args, _ = again
        except BaseException:
            with self._guard:
                self._again.pop(key, None)
                self._running.pop(key, None)
            raise

    def close(self, wait: bool = False) -> None:
        """Cancel the queued jobs; ``wait``: also let the running ones finish (tests, for isolation)."""
        self._pool.shutdown(wait=wait, cancel_futures=True)
