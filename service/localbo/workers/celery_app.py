"""The Celery app shared by the API (which sends ``localbo.suggest``) and ``localbo worker`` (which runs it).

Reliability settings: a task is acknowledged only after it finished (``task_acks_late``) and is
handed back to the queue if its worker process dies (``task_reject_on_worker_lost``); a task whose
whole worker was SIGKILLed is handed out again by Redis after ``visibility_timeout`` seconds.
Each worker takes one task at a time (prefetch 1), since a task is seconds of compute.

The visibility timeout is no way to notice a dead worker quickly (a shorter one would hand a long computation
to a second worker while the first still runs it): a worker instead publishes its heartbeat and its tasks'
(``liveness.py``), and the API re-sends a task whose heartbeat lapsed (``celery_executor.py``).
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import torch
from celery import Celery, Task
from celery.exceptions import Ignore
from celery.signals import task_received, task_revoked, worker_ready

from localbo.config import Settings
from localbo.workers.base import run_suggest
from localbo.workers.liveness import Liveness, Pulse, worker_pulse
from localbo.workers.wire import request_from_wire, suggestion_to_wire

log = logging.getLogger("localbo.workers")
TASK = "localbo.suggest"
LIVENESS = "localbo_liveness"  # the app's Liveness, in its conf
CONNECT_TIMEOUT_S = 2.0  # a Redis outage must cost an ask seconds, not minutes

_worker_device = torch.device("cpu")


def resolve_device(device: str) -> torch.device:
    """auto: cuda when there is one, else cpu; cuda without one is an error a person can act on."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: torch sees no CUDA device here (torch {torch.__version__})")
    if device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"device: expected auto, cpu or cuda, got {device!r}")
    return torch.device(device)


def set_worker_device(device: torch.device) -> None:
    global _worker_device
    _worker_device = device


def suggest(payload: dict[str, Any]) -> dict[str, Any]:
    """The task: rebuild the request on this worker's device, run the policy, send the points back."""
    policy, request = request_from_wire(payload, _worker_device)
    return suggestion_to_wire(run_suggest(policy, request), f"{socket.gethostname()}/{_worker_device}")


def suggest_task(task: Task, payload: dict[str, Any]) -> dict[str, Any]:
    """``suggest`` under the task's claim and heartbeat; a task abandoned or run before is dropped."""
    pulse = worker_pulse(task.app.backend.client, task.app.conf[LIVENESS], task.request.hostname or "worker")
    if not pulse.begin(task.request.id):
        log.warning("task %s was abandoned by the API or ran before; dropped", task.request.id)
        raise Ignore()
    try:
        return suggest(payload)
    finally:
        pulse.release(task.request.id)


def _pulse_of(app: Celery, name: str) -> Pulse | None:
    return worker_pulse(app.backend.client, app.conf[LIVENESS], name) if LIVENESS in app.conf else None


@worker_ready.connect
def _publish_presence(sender: Any, **_: Any) -> None:
    """From a worker's start, its queues are known to be served (the API waits for a queued task then)."""
    pulse = _pulse_of(sender.app, sender.hostname)
    if pulse is not None:
        pulse.serve(sender.app.amqp.queues.consume_from.keys())


@task_received.connect
def _hold(sender: Any, request: Any, **_: Any) -> None:
    """A received task is alive from now: a worker that dies holding it (started or not) lets it lapse."""
    pulse = _pulse_of(sender.app, sender.hostname) if request.name == TASK else None
    if pulse is not None:
        pulse.hold(request.id)


@task_revoked.connect
def _drop(sender: Any, request: Any, **_: Any) -> None:
    pulse = _pulse_of(sender.app, request.hostname or "worker") if sender.name == TASK else None
    if pulse is not None:
        pulse.release(request.id)


def make_celery(settings: Settings) -> Celery:
    app = Celery("localbo", broker=settings.redis_url, backend=settings.redis_url)
    visibility = settings.celery_visibility_timeout
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_expires=int(max(settings.policy_timeout_seconds, 3600)),
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "visibility_timeout": visibility,
            # sweep for abandoned tasks often enough to honour a short visibility timeout
            "unacked_restore_interval": max(1, min(10, int(visibility / 4))),
            "unacked_restore_throttle": 1,
            "socket_connect_timeout": CONNECT_TIMEOUT_S,
        },
        redis_socket_connect_timeout=CONNECT_TIMEOUT_S,
        redis_backend_health_check_interval=10,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    app.conf[LIVENESS] = Liveness.of(settings)
    app.task(name=TASK, bind=True)(suggest_task)
    return app


def queue_name(settings: Settings, kind: str) -> str:
    return f"{settings.celery_queue_prefix}{kind}"
