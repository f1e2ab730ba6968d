"""Executors: where a policy's ``suggest`` runs.

- ``inline`` (the default): a bounded thread pool in the API process.
- ``celery``: a task on a Redis queue (``PREFIX + cpu | gpu``), run by ``localbo worker``
  processes on any machine; the task carries the whole request, so a worker needs no database.

The engine builds the ``SuggestRequest`` snapshot, an executor returns the ``Suggestion`` or
raises what the policy raised; the engine's fallback handles every failure the same way.
"""

from __future__ import annotations

from localbo.config import Settings
from localbo.workers.base import Executor, run_suggest
from localbo.workers.inline import InlineExecutor

__all__ = ["Executor", "InlineExecutor", "make_executor", "run_suggest"]


def make_executor(settings: Settings) -> Executor:
    inline = InlineExecutor(settings.inline_workers)
    if settings.executor == "celery":
        from localbo.workers.celery_executor import CeleryExecutor

        return CeleryExecutor(settings, fallback=inline)
    return inline
