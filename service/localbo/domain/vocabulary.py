"""The words every layer shares: a trial's state and where its point came from."""

from __future__ import annotations

from enum import StrEnum


class TrialState(StrEnum):
    RUNNING = "running"  # handed out, lease running
    COMPLETE = "complete"  # told a value
    FAILED = "failed"  # told failed: no value will come
    STALE = "stale"  # its lease ran out; its point is offered again, a late tell still counts

    @classmethod
    def open(cls) -> tuple[TrialState, ...]:
        """States a tell may still finish."""
        return (cls.RUNNING, cls.STALE)


class Source(StrEnum):
    """Where a trial's point came from, besides the name of the policy that planned it."""

    FALLBACK = "fallback"  # made up when the policy failed or was late
    STALE_RETRY = "stale-retry"  # the point of a trial whose lease ran out, offered again
    EXTERNAL = "external"  # told by a user, never asked
    SAFE_FALLBACK = "fallback-safe"  # safe mode, the policy failed or was late: the safest known point again
    SEED = "seed"  # safe mode: one of the study's seeds, known safe, asked first
    SAFE_REPEAT = "repeat-safe"  # safe mode: the policy's point was asked before (measured again, or still running)


FALLBACK_SOURCES = (Source.FALLBACK.value, Source.SAFE_FALLBACK.value)  # points the policy did not make
