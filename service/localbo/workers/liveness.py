"""Liveness of celery workers and their tasks, kept in Redis, so the API tells a slow computation from a lost one.

Three keys, all under the queue prefix (``LOCALBO_CELERY_QUEUE_PREFIX``):

- ``{queue}:workers``: exists while at least one live worker serves ``queue``;
- ``{prefix}task:{id}:alive``: the task's heartbeat, exists while a live worker holds it (from its receipt:
  a worker may hold a task before it starts it) and until its result is stored;
- ``{prefix}task:{id}:claim``: who took the task (a worker's name) or ``abandoned`` (the API gave up on it).

One thread per worker process (``Pulse``) refreshes the first two every ``LOCALBO_TASK_HEARTBEAT_SECONDS``;
they expire after ``MISSED_BEATS`` missed refreshes, so a SIGKILLed worker's keys vanish within seconds.
A worker runs a task only if it wins the claim (SET NX): a task the API abandoned, or one Redis hands out
again after its worker died (the API has re-sent it by then), is acknowledged and dropped, never run twice.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

import redis

from localbo.config import Settings

log = logging.getLogger("localbo.workers")

MISSED_BEATS = 5  # a heartbeat lapses after this many refreshes did not come
ABANDONED = "abandoned"


@dataclass(frozen=True)
class Liveness:
    prefix: str
    beat: float  # seconds between refreshes
    claim_seconds: int  # a claim outlives any redelivery of its task (the visibility timeout)

    @classmethod
    def of(cls, settings: Settings) -> Liveness:
        claim = int(settings.celery_visibility_timeout + max(settings.policy_timeout_seconds, 3600))
        return cls(settings.celery_queue_prefix, settings.task_heartbeat_seconds, claim)

    @property
    def ttl_ms(self) -> int:
        return math.ceil(self.beat * MISSED_BEATS * 1000)

    def alive(self, task_id: str) -> str:
        return f"{self.prefix}task:{task_id}:alive"

    def claim(self, task_id: str) -> str:
        return f"{self.prefix}task:{task_id}:claim"

    @staticmethod
    def serving(queue: str) -> str:
        return f"{queue}:workers"


class Pulse:
    """A worker process's heartbeat thread: its queues' presence and the heartbeats of the tasks it runs."""

    def __init__(self, client: redis.Redis, liveness: Liveness, name: str) -> None:
        self.client, self.liveness, self.name = client, liveness, name
        self.queues: list[str] = []
        self.held: set[str] = set()
        self._guard = threading.Lock()
        self._thread = threading.Thread(target=self._beat, name="localbo-pulse", daemon=True)
        self._thread.start()

    def serve(self, queues: Iterable[str]) -> None:
        with self._guard:
            self.queues = sorted(set(queues))
        self._refresh()

    def hold(self, task_id: str) -> None:
        """The worker received the task: its heartbeat starts (it may wait in the worker before it runs)."""
        with self._guard:
            self.held.add(task_id)
        self.client.set(self.liveness.alive(task_id), self.name, px=self.liveness.ttl_ms)

    def begin(self, task_id: str) -> bool:
        """Claim the task before running it; False: it was abandoned or run before, do not run it."""
        self.hold(task_id)  # already held, unless the task did not come through the worker's consumer
        claimed = self.client.set(self.liveness.claim(task_id), self.name, nx=True, ex=self.liveness.claim_seconds)
        if not claimed:
            self.release(task_id)
        return bool(claimed)

    def release(self, task_id: str) -> None:
        """The heartbeat is left to expire: the result is stored after the task returns, and until it is the
        API must still see the task alive."""
        with self._guard:
            self.held.discard(task_id)

    def _refresh(self) -> None:
        with self._guard:
            keys = [self.liveness.serving(q) for q in self.queues]
            keys += [self.liveness.alive(t) for t in self.held]
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.set(key, self.name, px=self.liveness.ttl_ms)
        pipe.execute()

    def _beat(self) -> None:
        failing = False
        while True:
            time.sleep(self.liveness.beat)
            try:
                self._refresh()
                failing = False
            except Exception as exc:  # Redis blinked: the next beat may reach it (a long outage lapses the keys)
                if not failing:
                    log.warning("cannot refresh the worker's heartbeat (%s: %s); retrying", type(exc).__name__, exc)
                failing = True


_pulse: Pulse | None = None
_pulse_guard = threading.Lock()


def worker_pulse(client: redis.Redis, liveness: Liveness, name: str) -> Pulse:
    """This process's pulse (a worker process runs one Celery app), started on first use."""
    global _pulse
    with _pulse_guard:
        if _pulse is None:
            _pulse = Pulse(client, liveness, name)
        return _pulse
