"""The celery executor: send the request to a worker queue and wait for the suggestion.

No live worker serves the queue (none started, or all dead for a heartbeat's life): the computation runs
here at once, a task is not even sent. While it waits, every ``LOCALBO_TASK_HEARTBEAT_SECONDS`` it reads
the task's liveness (``liveness.py``):

- held by a worker whose heartbeat is alive (received, or running): wait (a long computation is never run
  twice);
- held, but the heartbeat lapsed (the worker died): send the task again, once; lost a second time, the
  plan falls back (``WorkerLost``: a computation that kills workers must not be tried in the API);
- still queued while a live worker serves the queue: wait for its turn;
- out of the queue but held by no worker for ``TAKEN_GRACE_BEATS`` beats: a worker fetched it and died before it
  marked it received (Redis would hand it out again only after the visibility timeout): lost, as above;
- still queued and no live worker served the queue for ``LOCALBO_TASK_PICKUP_SECONDS``: abandon the task
  (a worker that takes it later drops it) and compute it here.

So a SIGKILLed worker costs the heartbeat's expiry (5 beats, 10 s by default) and one computation, not
the visibility timeout. When Redis cannot be reached the computation runs inline instead (with a
warning), and the broker is not tried again for ``RETRY_BROKER_AFTER_S``, so an outage slows few asks (an
unreachable broker costs one ask ``CONNECT_TIMEOUT_S`` at most).
"""

from __future__ import annotations

import logging
import threading
import time

import redis.exceptions
from celery import Celery
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import AsyncResult
from kombu.exceptions import OperationalError

from localbo.config import Settings
from localbo.policies import Suggestion, SuggestRequest
from localbo.workers.base import Executor, PolicyTimeout
from localbo.workers.celery_app import LIVENESS, TASK, make_celery, queue_name
from localbo.workers.liveness import ABANDONED, MISSED_BEATS, Liveness
from localbo.workers.wire import request_to_wire, suggestion_from_wire

log = logging.getLogger("localbo.workers")
RETRY_BROKER_AFTER_S = 10.0  # how soon work goes to the workers again after Redis is back
BROKER_DOWN = (OperationalError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
# The API gives the result store one quick retry, not Celery's twenty: an outage must cost an ask
# seconds. (Workers keep the default, so that a stored result survives a blip.)
API_RESULT_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


TAKEN_GRACE_BEATS = MISSED_BEATS  # out of its queue and held by no worker this long: lost, as a lapsed heartbeat
SCAN_AT_MOST = 64  # messages; a longer queue is taken to still hold the task (its turn may be far)
# kombu's Redis transport keeps one list per priority step: the queue's name, then name + sep + step
PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")
# whether any list holds a message naming the task, searched in Redis (the messages carry the request: no copies)
_FIND = """
local total = 0
for _, key in ipairs(KEYS) do total = total + redis.call('LLEN', key) end
if total > tonumber(ARGV[2]) then return 1 end
for _, key in ipairs(KEYS) do
  for _, message in ipairs(redis.call('LRANGE', key, 0, -1)) do
    if string.find(message, ARGV[1], 1, true) then return 1 end
  end
end
return 0
"""


def _queued(client: redis.Redis, queue: str, task_id: str) -> bool:
    """Whether the task's message may still wait in the broker's lists for ``queue``."""
    keys = [queue + suffix for suffix in PRIORITY_SUFFIXES]
    try:
        return bool(client.eval(_FIND, len(keys), *keys, task_id, SCAN_AT_MOST))
    except redis.exceptions.ResponseError:  # scripting disabled on this Redis: wait, as before
        return True


class WorkerLost(RuntimeError):
    """The computation's worker died, and the worker it was sent to next died too."""


class _Lost(Exception):
    """The task's heartbeat lapsed: its worker died."""


class _Unserved(Exception):
    """No live worker served the task's queue for the pickup time; the task is abandoned."""


def api_celery(settings: Settings) -> Celery:
    app = make_celery(settings)
    app.conf.result_backend_transport_options = {"retry_policy": API_RESULT_RETRY}
    return app


class CeleryExecutor:
    name = "celery"

    def __init__(self, settings: Settings, fallback: Executor) -> None:
        self.settings = settings
        self.app = api_celery(settings)
        self.fallback = fallback
        self._down_until = 0.0
        self._broken = False  # after an outage Celery's result consumer must be rebuilt
        self._guard = threading.Lock()
        self._unserved: set[str] = set()  # queues no live worker served when last looked at

    def run(
        self, policy: str, request: SuggestRequest, queue: str = "cpu", timeout: float = 900.0, local: bool = False
    ) -> Suggestion:
        if local:
            return self.fallback.run(policy, request, queue, timeout)
        with self._guard:
            if time.monotonic() < self._down_until:
                return self.fallback.run(policy, request, queue, timeout)
            if self._broken:
                self.app.close()
                self.app, self._broken = api_celery(self.settings), False
            app = self.app
        payload, to = request_to_wire(policy, request), queue_name(self.settings, queue)
        deadline = time.monotonic() + timeout
        for attempt in (1, 2):
            try:
                served = self._served(app, to)
                if served:
                    result = app.send_task(TASK, args=[payload], queue=to, retry=False)
            except (*BROKER_DOWN, RuntimeError) as exc:  # RuntimeError: Celery gave up on the result store
                return self._inline(policy, request, queue, timeout, f"cannot send to {queue!r}", exc)
            if not served:  # no live worker: computing here beats waiting for the pickup time
                return self.fallback.run(policy, request, queue, max(1.0, deadline - time.monotonic()))
            try:
                data = self._wait(app, result, to, deadline)
            except CeleryTimeout:
                self._abandon(app, result)
                raise PolicyTimeout(f"{policy} on queue {queue!r} computed longer than {timeout:g} s") from None
            except (*BROKER_DOWN, RuntimeError) as exc:  # Redis went away while a worker computed: do it here
                if isinstance(exc, RuntimeError) and not isinstance(exc.__cause__, BROKER_DOWN):
                    raise  # the policy's own error (Celery's give-up on the result store has the outage as cause)
                return self._inline(policy, request, queue, timeout, f"lost the result of task {result.id}", exc)
            except _Unserved:
                log.warning("no live worker serves %r; computing task %s in the API process", to, result.id)
                return self.fallback.run(policy, request, queue, max(1.0, deadline - time.monotonic()))
            except _Lost:
                if attempt == 2:
                    raise WorkerLost(f"{policy} on queue {queue!r}: the worker died twice computing it") from None
                log.warning("task %s on %r lost its worker (heartbeat lapsed); trying again", result.id, to)
                continue
            finally:
                try:
                    result.forget()  # the result is read; do not keep it in Redis for result_expires
                except BROKER_DOWN:
                    pass
            return suggestion_from_wire(data, policy)
        raise AssertionError("unreachable")

    def _served(self, app: Celery, queue: str) -> bool:
        """Whether a live worker serves ``queue``; says so in the log when that changes."""
        served = bool(app.backend.client.exists(app.conf[LIVENESS].serving(queue)))
        with self._guard:
            if served and queue in self._unserved:
                self._unserved.discard(queue)
                log.warning("a live worker serves %r again", queue)
            elif not served and queue not in self._unserved:
                self._unserved.add(queue)
                log.warning("no live worker serves %r; computing in the API process until one does", queue)
        return served

    def _wait(self, app: Celery, result: AsyncResult, queue: str, deadline: float) -> dict:
        """The task's answer; ``_Lost``, ``_Unserved``, or Celery's timeout at ``deadline`` (monotonic)."""
        liveness: Liveness = app.conf[LIVENESS]
        client = app.backend.client
        pickup = self.settings.task_pickup_seconds
        served_until = time.monotonic() + pickup
        held = False  # a worker's heartbeat for the task was seen
        taken_at: float | None = None  # when the task was first seen out of the queue and not held
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CeleryTimeout()
            try:
                return result.get(timeout=min(liveness.beat, left), propagate=True)
            except CeleryTimeout:
                pass
            claim_key = liveness.claim(result.id)
            claim, alive, serving = client.mget(claim_key, liveness.alive(result.id), liveness.serving(queue))
            if alive is not None:  # a live worker holds it
                held = True
            elif held or claim is not None:  # held once, no longer alive: lost, unless it just finished
                if not result.ready():
                    client.set(claim_key, ABANDONED, nx=True, ex=liveness.claim_seconds)  # no redelivery runs it
                    raise _Lost()
            elif serving is not None:  # queued, and a live worker serves the queue: wait for its turn
                served_until = time.monotonic() + pickup
                if _queued(client, queue, result.id):
                    taken_at = None
                elif taken_at is None:  # out of the queue, not yet held: a worker is between fetch and receipt
                    taken_at = time.monotonic()
                elif time.monotonic() - taken_at > TAKEN_GRACE_BEATS * liveness.beat and not result.ready():
                    # fetched by a worker that died before it marked the task received: Redis would hand it out
                    # again only after the visibility timeout
                    client.set(claim_key, ABANDONED, nx=True, ex=liveness.claim_seconds)
                    raise _Lost()
            elif time.monotonic() > served_until and client.set(
                claim_key, ABANDONED, nx=True, ex=liveness.claim_seconds
            ):
                raise _Unserved()

    @staticmethod
    def _abandon(app: Celery, result: AsyncResult) -> None:
        """A task past its time: not yet taken, no worker ever runs it; running, its answer is dropped."""
        liveness: Liveness = app.conf[LIVENESS]
        try:
            app.backend.client.set(liveness.claim(result.id), ABANDONED, nx=True, ex=liveness.claim_seconds)
            result.revoke()
        except BROKER_DOWN:
            pass

    def _inline(
        self, policy: str, request: SuggestRequest, queue: str, timeout: float, what: str, exc: BaseException
    ) -> Suggestion:
        with self._guard:
            self._down_until = time.monotonic() + RETRY_BROKER_AFTER_S
            self._broken = True
        log.warning(
            "celery broker %s unreachable (%s: %s); computing inline, retrying the broker in %.0f s",
            what,
            type(exc).__name__,
            exc,
            RETRY_BROKER_AFTER_S,
        )
        return self.fallback.run(policy, request, queue, timeout)

    def close(self) -> None:
        self.fallback.close()
        self.app.close()
