"""The celery executor: send the request to a worker queue and wait for the suggestion.

When Redis cannot be reached the computation runs inline instead (with a warning), and the
broker is not tried again for ``RETRY_BROKER_AFTER_S``, so an outage slows no ask twice.
"""

from __future__ import annotations

import logging
import threading
import time

import redis.exceptions
from celery import Celery
from celery.exceptions import TimeoutError as CeleryTimeout
from kombu.exceptions import OperationalError

from localbo.config import Settings
from localbo.policies import Suggestion, SuggestRequest
from localbo.workers.base import Executor, PolicyTimeout
from localbo.workers.celery_app import TASK, make_celery, queue_name
from localbo.workers.wire import request_to_wire, suggestion_from_wire

log = logging.getLogger("localbo.workers")
RETRY_BROKER_AFTER_S = 30.0
BROKER_DOWN = (OperationalError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
# The API gives the result store one quick retry, not Celery's twenty: an outage must cost an ask
# seconds. (Workers keep the default, so that a stored result survives a blip.)
API_RESULT_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


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
        try:
            result = app.send_task(
                TASK, args=[request_to_wire(policy, request)], queue=queue_name(self.settings, queue), retry=False
            )
        except (*BROKER_DOWN, RuntimeError) as exc:  # RuntimeError: Celery gave up on the result store
            return self._inline(policy, request, queue, timeout, f"cannot send to {queue!r}", exc)
        try:
            data = result.get(timeout=timeout, propagate=True)
        except CeleryTimeout:
            result.revoke()  # not yet started: no worker takes it; started: its answer is dropped
            raise PolicyTimeout(f"{policy} on queue {queue!r} computed longer than {timeout:g} s") from None
        except BROKER_DOWN as exc:  # Redis went away while a worker computed: do it here
            return self._inline(policy, request, queue, timeout, f"lost the result of task {result.id}", exc)
        finally:
            try:
                result.forget()  # the result is read; do not keep it in Redis for result_expires
            except BROKER_DOWN:
                pass
        return suggestion_from_wire(data, policy)

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
