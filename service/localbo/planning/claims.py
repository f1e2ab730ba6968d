"""The cross-process planning claim on a study row: one computing process per study at a time.

A claim lasts ``CLAIM_SECONDS`` unless renewed (a thread renews it while the policy computes), so a
crashed holder's claim runs out soon. A process that finds the claim taken waits with reads, never
writes, backing off from ``POLL_FIRST_SECONDS`` to ``POLL_MAX_SECONDS``, until the plan it needs has
landed, the claim is free or ran out, the study is gone, or its deadline passes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from enum import Enum

from sqlalchemy import Engine

from localbo.storage import claims as claim_rows
from localbo.storage import repository as repo
from localbo.storage.models import utcnow

log = logging.getLogger("localbo.planning")

CLAIM_SECONDS = 10.0  # a killed process stalls its studies this long at most; renewed every third of it
POLL_FIRST_SECONDS = 0.05
POLL_MAX_SECONDS = 1.0


class Waited(Enum):
    PLANNED = "planned"  # the plan holds what was needed
    FREE = "free"  # the claim is free (or ran out): try to take it
    GONE = "gone"  # the study was deleted
    TIMEOUT = "timeout"


class Claims:
    def __init__(self, db: Engine, write: Engine) -> None:
        self.db, self.write = db, write

    def take(self, study_id: int, token: str) -> bool:
        """Take the claim if free; first drop planned candidates a fallback took meanwhile (finite spaces)."""
        now = utcnow()
        with self.write.begin() as conn:
            repo.purge_asked_plan(conn, study_id)
            return claim_rows.claim_planning(conn, study_id, token, now, now + timedelta(seconds=CLAIM_SECONDS))

    def wait(self, study_id: int, need: int, deadline: float) -> Waited:
        """Wait, reading only, until the plan holds ``need`` points or the claim is free (monotonic ``deadline``)."""
        pause = POLL_FIRST_SECONDS
        while True:
            with self.db.begin() as conn:
                status = claim_rows.planning_status(conn, study_id)
            if status is None:
                return Waited.GONE
            if status.planned >= need:
                return Waited.PLANNED
            if status.claimed_until is None or status.claimed_until < utcnow():
                return Waited.FREE
            if time.monotonic() + pause > deadline:
                return Waited.TIMEOUT
            time.sleep(pause)
            pause = min(POLL_MAX_SECONDS, pause * 2)

    def release(self, study_id: int, token: str) -> None:
        with self.write.begin() as conn:
            claim_rows.release_planning(conn, study_id, token)

    @contextmanager
    def renewing(self, study_id: int, token: str) -> Iterator[None]:
        """Keep the claim alive while the policy computes (a thread renews it every third of its life)."""
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(CLAIM_SECONDS / 3):
                try:
                    with self.write.begin() as conn:
                        claim_rows.renew_planning(conn, study_id, token, utcnow() + timedelta(seconds=CLAIM_SECONDS))
                except Exception:  # the database blinked: the next renewal may work
                    log.exception("could not renew the planning claim on study %s", study_id)

        renewer = threading.Thread(target=renew, name=f"localbo-claim-{study_id}", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()
