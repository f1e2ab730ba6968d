"""What a planning job came to, as a value: the ask that waits on it decides what each means for it.

    Planned            the plan holds what was needed (or suggest-ahead found nothing to do)
    Gone               the study was deleted meanwhile
    ClaimedElsewhere   another process computes its plan: wait without a thread, read, try again
    Failed(error)      the job itself failed (the database blinked...): logged and recorded on the study

A policy that fails or runs past its time is not a ``Failed`` job: the runner stores fallback points and
records why (``runner.py``), and the job is ``Planned``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Planned:
    pass


@dataclass(frozen=True)
class Gone:
    pass


@dataclass(frozen=True)
class ClaimedElsewhere:
    pass


@dataclass(frozen=True)
class Failed:
    error: str


Outcome = Planned | Gone | ClaimedElsewhere | Failed
