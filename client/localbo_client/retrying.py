"""When and how long a call is retried: a time budget, exponential backoff with jitter, and ``Retry-After``.

A server restart takes seconds to tens of seconds, so the budget is measured in time, not in tries.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

import httpx

# The request never reached the server: retrying is safe for any call, even a creation.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# The server may have acted on it: retried only when a repeat is harmless (a read, or a write with an idempotency key).
MAYBE_SENT = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError, httpx.ReadTimeout, httpx.WriteTimeout)
# Server errors worth another try of a harmless call (a proxy's 502/504, a 500 during a restart).
RETRY_STATUSES = frozenset({500, 502, 503, 504})
MAX_BACKOFF = 5.0  # the longest pause between tries of a server that gives no Retry-After


@dataclass(frozen=True)
class RetryPolicy:
    retry_for: float = 60.0  # seconds from the first try within which a call keeps trying
    backoff: float = 0.2  # the first pause; it doubles on each retry up to MAX_BACKOFF
    retries: int | None = None  # an extra cap on the count of retries (None: only the time budget)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.retry_for) and self.retry_for >= 0):
            raise ValueError(f"retry_for: expected seconds >= 0, got {self.retry_for}")
        if not (math.isfinite(self.backoff) and self.backoff > 0):
            raise ValueError(f"backoff: expected seconds > 0, got {self.backoff}")

    def start(self, retry_for: float | None = None) -> Attempts:
        budget = self.retry_for if retry_for is None else retry_for
        return Attempts(self, time.monotonic() + budget)


@dataclass
class Attempts:
    """The retries of one call: ``pause`` sleeps before the next try, or says the budget is spent."""

    policy: RetryPolicy
    deadline: float
    done: int = 0

    def pause(self, hinted: float | None = None) -> bool:
        """Sleep before the next try: the server's ``Retry-After`` (``hinted``) or a jittered exponential backoff,
        never past the deadline. False (no sleep) when the budget is spent, or when the server asks for a wait
        longer than what is left of it."""
        left = self.deadline - time.monotonic()
        if left <= 0 or (self.policy.retries is not None and self.done >= self.policy.retries):
            return False
        if hinted is not None:
            if hinted > left:
                return False
            # at least what the server asked; a little spread so many clients do not return at the same instant
            wait = max(hinted, self.policy.backoff) * (1.0 + 0.25 * random.random())
        else:
            ceiling = min(MAX_BACKOFF, self.policy.backoff * 2.0 ** min(self.done, 30))
            wait = ceiling * (0.5 + 0.5 * random.random())  # "equal jitter": between half and all of it
        time.sleep(min(wait, left))
        self.done += 1
        return True


def retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (a number of seconds or an HTTP date), or None when absent or unreadable."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)  # noqa: UP017 - the client supports Python 3.10
        seconds = (when - datetime.now(timezone.utc)).total_seconds()  # noqa: UP017
    return max(0.0, seconds) if math.isfinite(seconds) else None


def hinted_wait(response: httpx.Response, harmless: bool) -> tuple[bool, float | None]:
    """Whether to retry this answer, and the server's wait if it gave one.

    429, and a 503 or 409 with ``Retry-After``, say "nothing was done, come back" (the service answers a busy
    database or a lost race that way), so any call may repeat; other 5xx only a harmless one."""
    status = response.status_code
    hinted = retry_after(response) if status in (409, 429, 503) else None
    if status == 429 or (hinted is not None and status in (409, 503)):
        return True, hinted
    return harmless and status in RETRY_STATUSES, None
