"""The cross-process planning claim on a study row: one computing process per study at a time.

A claim lasts ``CLAIM_SECONDS`` unless renewed (a thread renews it while the policy computes), so a
crashed holder's claim runs out soon. Every time a claim is taken, renewed or compared is the
database's clock (``db_now``), never a host's: two hosts whose clocks differ by more than a claim's
life still never compute one study at once. A process that finds the claim taken holds no thread
waiting for it: ``peek`` reads (never writes) whether it is taken and what the plan holds, and the ask
that needs the plan waits on the event loop and tries again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Engine

from localbo.storage import claims as claim_rows
from localbo.storage import finite_spaces
from localbo.storage.db import db_now

log = logging.getLogger("localbo.planning")

CLAIM_SECONDS = 10.0  # a killed process stalls its studies this long at most; renewed every third of it


@dataclass(frozen=True)
class Status:
    claimed: bool  # another process holds a live claim
    planned: int  # points in the plan


class Claims:
    def __init__(self, db: Engine, write: Engine) -> None:
        self.db, self.write = db, write

    def take(self, study_id: int, token: str) -> bool:
        """Take the claim if free; first drop planned candidates a fallback took meanwhile (finite spaces)."""
        with self.write.begin() as conn:
            now = db_now(conn)
            finite_spaces.purge_asked_plan(conn, study_id)
            return claim_rows.claim_planning(conn, study_id, token, now, now + timedelta(seconds=CLAIM_SECONDS))

    def peek(self, study_id: int) -> Status | None:
        """Whether another process holds a live claim, and what the plan holds (a read); None: the study is gone."""
        with self.db.begin() as conn:
            status = claim_rows.planning_status(conn, study_id)
            now = db_now(conn)
        if status is None:
            return None
        return Status(status.claimed_until is not None and status.claimed_until >= now, int(status.planned))

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
                        until = db_now(conn) + timedelta(seconds=CLAIM_SECONDS)
                        claim_rows.renew_planning(conn, study_id, token, until)
                except Exception:  # the database blinked: the next renewal may work
                    log.exception("could not renew the planning claim on study %s", study_id)

        renewer = threading.Thread(target=renew, name=f"localbo-claim-{study_id}", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()
