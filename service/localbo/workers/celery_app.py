"""The Celery app shared by the API (which sends ``localbo.suggest``) and ``localbo worker`` (which runs it).

Reliability settings: a task is acknowledged only after it finished (``task_acks_late``) and is
handed back to the queue if its worker process dies (``task_reject_on_worker_lost``); a task whose
whole worker was SIGKILLed is handed out again by Redis after ``visibility_timeout`` seconds.
Each worker takes one task at a time (prefetch 1), since a task is seconds of compute.
"""

from __future__ import annotations

import socket
from typing import Any

import torch
from celery import Celery

from localbo.config import Settings
from localbo.workers.base import run_suggest
from localbo.workers.wire import request_from_wire, suggestion_to_wire

TASK = "localbo.suggest"
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
    app.task(name=TASK)(suggest)
    return app


def queue_name(settings: Settings, kind: str) -> str:
    return f"{settings.celery_queue_prefix}{kind}"
