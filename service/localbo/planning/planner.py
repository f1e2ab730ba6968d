"""The planning job: make a study's plan hold the points asks need, computed away from the requests.

``plan(study_id, need, ahead)`` runs as a background job (``jobs.Jobs``: one per study in this
process) and returns what it came to as a value (``outcomes.py``); across processes the claim
(``claims.Claims``) keeps computations apart, and a job that finds the claim taken returns at once
(``ClaimedElsewhere``) instead of holding a thread while another process computes. The job runs the
policy on a snapshot and stores the plan only if the study is still the one it planned for (same id,
same creation time, same state version): a study deleted (and perhaps created again under the same
name, or even the same id on SQLite) meanwhile, or planned by another process, drops the result.

Suggest-ahead (``ahead``, after a tell): only when the plan is empty and the policy says a suggest
now makes progress, so the next ask is served from the plan.
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import CancelledError, Future

from sqlalchemy import Engine
from sqlalchemy.engine import Connection

from localbo import metrics
from localbo.config import Settings
from localbo.planning.claims import Claims
from localbo.planning.jobs import Jobs
from localbo.planning.outcomes import ClaimedElsewhere, Failed, Gone, Outcome, Planned
from localbo.planning.runner import Plan, PolicyRunner
from localbo.spaces import Spaces
from localbo.storage import finite_spaces, plan_queue
from localbo.storage import outcomes as outcome_rows
from localbo.storage import repository as repo
from localbo.storage.models import utcnow
from localbo.study_handle import load_study

log = logging.getLogger("localbo.planning")
PLANNED, GONE, CLAIMED_ELSEWHERE = Planned(), Gone(), ClaimedElsewhere()


class Planner:
    def __init__(self, settings: Settings, db: Engine, write: Engine, spaces: Spaces, runner: PolicyRunner) -> None:
        self.settings, self.db, self.write, self.spaces, self.runner = settings, db, write, spaces, runner
        self.jobs = Jobs(settings.plan_threads)
        self.claims = Claims(db, write)
        self._locks: dict[int, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def close(self, wait: bool = False) -> None:
        self.jobs.close(wait)

    def start(self, study_id: int, need: int) -> Future:
        """The study's planning job for an ask that needs ``need`` points (joins one under way)."""
        return self.jobs.start(study_id, self.plan, study_id, need, False)

    def plan_ahead(self, study_id: int) -> Future | None:
        """Suggest-ahead: start the study's planning job now, if configured (it decides whether to compute)."""
        if not self.settings.suggest_ahead:
            return None
        return self.jobs.start(study_id, self.plan, study_id, 1, True, weak=True)

    def plan(self, study_id: int, need: int, ahead: bool) -> Outcome:
        """Make the plan hold at least ``need`` points, or say why not: another process computes it (the
        caller waits without a thread and asks again), the study is gone, or the job failed (logged, recorded).

        Suggest-ahead leaves partial plans (one point after a tell), so an ask for several points may
        find some planned: the policy computes only the missing ones, conditioned on those.
        """
        try:
            with self._study_lock(study_id):
                if ahead and self._plan_holds_points(study_id):
                    return PLANNED  # suggest-ahead fills only an empty plan: seen with a read, no claim taken
                status = self.claims.peek(study_id)  # a read: waiting for another process's claim writes nothing
                if status is None:
                    return GONE
                if status.claimed:
                    return PLANNED if status.planned >= need else CLAIMED_ELSEWHERE
                token = uuid.uuid4().hex
                if not self.claims.take(study_id, token):
                    return CLAIMED_ELSEWHERE  # taken between the read and the write
                try:
                    return self._plan_claimed(study_id, need, ahead, token)
                finally:
                    self.claims.release(study_id, token)
        except CancelledError:  # the server is shutting down (the executor closed): not the study's failure
            log.info("planning study %s stopped: the server is shutting down", study_id)
            return Failed("the server is shutting down")
        except Exception as exc:  # the job's own failure (not the policy's): a value, logged and recorded
            log.exception("planning study %s failed", study_id)
            metrics.policy_outcomes.labels("(planning)", "failed").inc()
            error = f"{utcnow().isoformat()} planning failed: {type(exc).__name__}: {exc}"
            self._record(study_id, error)
            return Failed(error)

    def _record(self, study_id: int, error: str) -> None:
        """The failure as the study's latest policy error, if the database takes the write."""
        try:
            with self.write.begin() as conn:
                repo.update_study(conn, study_id, last_policy_error=error[:2000])
        except Exception:
            log.exception("could not record the planning failure on study %s", study_id)

    def _plan_holds_points(self, study_id: int) -> bool:
        with self.db.connect() as conn:
            return plan_queue.count_plan(conn, study_id) > 0

    def _study_lock(self, study_id: int) -> threading.Lock:
        """Callers outside ``jobs`` (tests, a second job after a restart) never plan one study twice at once."""
        with self._locks_guard:
            return self._locks.setdefault(study_id, threading.Lock())

    def _plan_claimed(self, study_id: int, need: int, ahead: bool, token: str) -> Outcome:
        with self.db.begin() as conn:
            study = repo.get_study_by_id(conn, study_id)
            if study is None:
                return GONE
            in_plan = plan_queue.count_plan(conn, study_id)
            if in_plan >= need or (ahead and in_plan):
                return PLANNED
            handle = load_study(study, self.spaces.of(conn, study))
            finite = handle.space.candidates is not None
            done, pending = repo.history(conn, study_id) if handle.needs_history or finite else ([], [])
            failed = finite_spaces.failed_candidates(conn, study_id) if finite else []
            avoid = handle.outcomes.failures == "avoid"
            failed_points = outcome_rows.failed_points(conn, study_id) if avoid else None
            n_failed = len(failed_points) if failed_points is not None else outcome_rows.count_failed(conn, study_id)
        if ahead and not handle.plans_now(len(done), len(pending)):
            return PLANNED
        with self.claims.renewing(study_id, token):
            plan = self.runner.run(handle, done, pending, need - in_plan, failed, failed_points, n_failed)
        with self.write.begin() as conn:
            current = repo.get_study_by_id(conn, study_id, for_update=True)
            # the same study (SQLite reuses a deleted study's id: its creation time tells them apart),
            # and nobody stored a plan meanwhile
            same = current is not None and current.created_at == study.created_at
            if current is not None and same and current.policy_state_version == plan.version:
                store(conn, current.id, current.policy_state_version, plan)
        return PLANNED if same else GONE


def store(conn: Connection, study_id: int, version: int, plan: Plan) -> None:
    """The plan's points queued, its state (if any) stored as the next version, and its error as the study's
    latest (None after a computation that succeeded: the dashboard's "the policy failed" is about now)."""
    plan_queue.add_plan(conn, study_id, plan.points)
    values: dict = {"policy_state_version": version + 1, "last_policy_error": plan.error}
    if plan.state is not None:
        values["policy_state"] = plan.state
    repo.update_study(conn, study_id, **values)
