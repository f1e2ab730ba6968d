"""Asking: hand out trials from the study's plan, one short write transaction per attempt.

An ask sweeps expired leases (at most once a second per study), takes planned points (on Postgres,
concurrent asks take different ones without waiting), numbers its new trials (where it takes the
study's row lock, held only for the inserts and the commit) and returns. Asks that must see the whole
study at once take the lock first: a finite study without repeats (which candidates are free) and a
fallback. When the plan is short it rolls back, leaves the lock and waits for
the study's planning job (``planning.Planner``), which plans for every ask of this process waiting on
the study (their needs summed), and tries again, however many rounds it loses to other asks, until its
wait is over: only an ask that waited ``LOCALBO_ASK_WAIT_SECONDS`` in vain gets fallback points (source
"fallback"), and the job goes on for the asks after it. A client's
own running trials (``client_id``) come back first, with their leases extended.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

import torch
from sqlalchemy import Engine
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError

from localbo import idempotency, metrics
from localbo.config import Settings
from localbo.domain import Source, StudySpace, TrialState, iso, trial_out
from localbo.domain.identity import study_token
from localbo.errors import Busy, Conflict, InvalidInput, NotFound
from localbo.planning.fallback import fallback_points, mixed_seed
from localbo.planning.outcomes import ClaimedElsewhere, Failed, Gone, Outcome, Planned
from localbo.planning.planner import Planner
from localbo.safety import safe_fallback, same_point
from localbo.spaces import Spaces
from localbo.storage import finite_spaces, idempotency_records, plan_queue
from localbo.storage import outcomes as outcome_rows
from localbo.storage import repository as repo
from localbo.storage.models import utcnow
from localbo.study_handle import load_study
from localbo.transactions import Transactions

log = logging.getLogger("localbo.asking")

POLL_FIRST_SECONDS = 0.05  # while another process computes a study's plan, look again after this long...
POLL_MAX_SECONDS = 1.0  # ... doubling up to this
EXPIRY_CHECK_SECONDS = 1.0  # leases last minutes to hours; a second late is fine
LATE_SALT = 104_729
T = TypeVar("T")


class _PlanShort(Exception):
    """The plan holds too few points: roll the transaction back and run the policy."""

    def __init__(self, study_id: int, need: int) -> None:
        self.study_id, self.need = study_id, need


@dataclass(frozen=True)
class Unit(Generic[T]):
    """The request an ask is part of: what its idempotency key covers (``op`` and ``identity``: the operation,
    its path's trial number and its whole body), and what runs first in the ask's transaction."""

    op: str
    identity: dict[str, Any]
    first: Callable[[Connection], T] | None = None


def _first(unit: Unit[T] | None, conn: Connection) -> T | None:
    return unit.first(conn) if unit is not None and unit.first is not None else None


@dataclass(frozen=True)
class Short:
    study_id: int
    need: int  # how many points the ask takes from the plan (the plan may hold some of them)


class Asking:
    def __init__(self, settings: Settings, write: Engine, tx: Transactions, spaces: Spaces, planner: Planner) -> None:
        self.settings, self.write, self.tx, self.spaces, self.planner = settings, write, tx, spaces, planner
        self._expiry_checked: dict[int, float] = {}  # study id -> when its leases were last swept
        self._sqlite = write.dialect.name == "sqlite"
        self._recheck_keys = not self._sqlite  # see idempotency.replay
        # study id -> points the asks of this process waiting on it need in all (touched on the event loop only)
        self.waiting: dict[int, int] = {}

    async def ask(
        self,
        name: str,
        count: int = 1,
        client_id: str | None = None,
        key: str | None = None,
        wait_seconds: float | None = None,
        unit: Unit | None = None,
    ) -> dict:
        """Hand out ``count`` trials; when the plan is short, wait for the study's planning job, ``wait_seconds``
        (LOCALBO_ASK_WAIT_SECONDS when None, never more than LOCALBO_ASK_WAIT_MAX_SECONDS), then fall back.
        ``unit``: the request this ask belongs to, for its idempotency key (tell-and-ask)."""
        wait = self.settings.ask_wait_seconds if wait_seconds is None else wait_seconds
        deadline = time.monotonic() + min(wait, self.settings.ask_wait_max_seconds)
        pause, raced = POLL_FIRST_SECONDS, 0
        while True:  # until the plan serves this ask or its wait is over: losing a race is no reason to stop
            _, served = await self.tx.run_now(self.step, name, count, client_id, key, False, unit)
            if not isinstance(served, Short):
                return served
            with self._waiting(served):
                job = self.planner.start(served.study_id, self.waiting[served.study_id])
                outcome = await _wait(job, deadline - time.monotonic())
            if outcome is None:
                break  # the wait is over; the job goes on for the asks after this one
            if isinstance(outcome, Planned | Gone):
                # served next round (or a 404 there), unless another ask took the points first: then give that
                # ask's transaction a moment (the plan grows with the asks waiting, so this one gets the next)
                raced += 1
                if raced > 1:
                    await asyncio.sleep(min(POLL_FIRST_SECONDS, max(0.0, deadline - time.monotonic())))
                continue
            if isinstance(outcome, Failed):
                log.warning("study %s: planning failed (%s); the ask tries again", name, outcome.error)
            # another process computes the plan, or this job failed: wait on the loop (no thread held), backing
            # off, and look again
            await asyncio.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(POLL_MAX_SECONDS, pause * 2)
        _, served = await self.tx.run(self.step, name, count, client_id, key, True, unit)
        assert not isinstance(served, Short)  # an ask served with fallback points is never short of them
        return served

    @contextmanager
    def _waiting(self, short: Short) -> Iterator[None]:
        """Count this ask's need in its study's demand while it waits: the planning job plans for every ask of
        this process that waits, not only for the latest, so asks racing for one plan do not starve each other."""
        self.waiting[short.study_id] = self.waiting.get(short.study_id, 0) + short.need
        try:
            yield
        finally:
            self.waiting[short.study_id] -= short.need
            if self.waiting[short.study_id] <= 0:
                del self.waiting[short.study_id]

    def ask_blocking(
        self,
        name: str,
        count: int = 1,
        client_id: str | None = None,
        key: str | None = None,
        wait_seconds: float | None = None,
    ) -> dict:
        """``ask`` for callers without an event loop (the CLI, tests, benchmarks)."""
        return asyncio.run(self.ask(name, count, client_id, key, wait_seconds))

    def step(
        self,
        name: str,
        count: int,
        client_id: str | None,
        key: str | None,
        fallback: bool = False,
        unit: Unit[T] | None = None,
    ) -> tuple[T | None, dict | Short]:
        """One write transaction: serve from the plan, or say how many points the plan must hold.

        With ``fallback`` the points the plan lacks are made up at once (source "fallback"). With ``unit``,
        its ``first`` runs in the same transaction before the points are served (a tell): a short plan or any
        error rolls both back. Its answer comes first in the pair (None without a unit).
        """
        if not 1 <= count <= self.settings.max_ask_count:
            raise InvalidInput("count", f"expected 1..{self.settings.max_ask_count}, got {count}")
        op, body = (unit.op, unit.identity) if unit is not None else ("ask", {"count": count, "client_id": client_id})
        for attempt in range(2):
            try:
                with self.write.begin() as conn:
                    study = repo.study_for_ask(conn, name, key, client_id, lock=fallback)
                    if study is None:
                        raise NotFound(f"study {name!r} not found")
                    if study.idem_hash is not None:
                        if study.idem_hash != idempotency.request_hash(op, body):
                            raise InvalidInput("Idempotency-Key", f"{key!r} was already used for a different request")
                        return _first(unit, conn), study.idem_response
                    # a read that waited for the lock may have missed a duplicate's committed answer; an unlocked
                    # one cannot (a duplicate committing after it fails on the key's unique index, and retries)
                    recheck = fallback and self._recheck_keys
                    if recheck and (replay := idempotency.replay(conn, study.id, key, op, body)):
                        return _first(unit, conn), replay
                    first = _first(unit, conn)
                    response, sources = self._serve(conn, study, count, client_id, fallback)
                    idempotency.remember(conn, study.id, key, op, body, response)
                metrics.count_asked(sources)  # committed: a rolled-back or replayed ask counts nothing
                return first, response
            except _PlanShort as short:  # rolled back: the points it popped are in the plan again
                self._expiry_checked.pop(short.study_id, None)
                return None, Short(short.study_id, short.need)
            except IntegrityError:
                # the same key stored by a concurrent duplicate: the next attempt replays its answer
                if not key or attempt:
                    raise Busy("the study changed while asking; retry") from None
        raise AssertionError("unreachable")

    def _serve(
        self, conn: Connection, study: Row, count: int, client_id: str | None, fallback: bool
    ) -> tuple[dict, list[str]]:
        """Hand out ``count`` trials inside the caller's transaction, and the sources of the new ones;
        raises _PlanShort if the plan is short."""
        # the database's clock on Postgres (hosts' clocks may differ; every API process compares leases with it),
        # this host's on SQLite (every process using the file runs here, and SQLite's clock has whole seconds)
        now = utcnow() if self._sqlite else study.db_now.astimezone(UTC)
        space = self.spaces.of(conn, study)
        finite = space.candidates
        trial_count = study.trial_count
        if finite is not None and not finite.allow_repeats and not fallback:
            locked = repo.lock_trial_count(conn, study.id)  # which candidates are free is known under the lock
            if locked is None:
                raise NotFound(f"study {study.name!r} not found")
            trial_count = locked
        if self._expiry_due(study.id, now):
            sweep_expired(conn, study.id, now)
            idempotency_records.forget_idempotency(
                conn, study.id, now - timedelta(seconds=self.settings.idempotency_ttl_seconds)
            )
        lease = now + timedelta(seconds=self.settings.lease_seconds)
        mine = (
            repo.running_of_client(conn, study.id, client_id, count)
            if client_id is not None and study.client_running
            else []
        )
        need = count - len(mine)
        if finite is not None and not finite.allow_repeats and trial_count + need > finite.size:
            left = finite.size - len(finite_spaces.held_candidates(conn, study.id))
            if need > left:
                raise Conflict(f"count: {left} of the study's {finite.size} candidates are left to ask, not {need}")
        planned = self._pop_plan(conn, study, need, space) if need else []
        if len(planned) < need:
            if not fallback:
                raise _PlanShort(study.id, need)
            planned += self._late_points(conn, study, need - len(planned), space)
        repo.extend_leases(conn, [r.id for r in mine], lease)
        if planned:
            last = repo.number_trials(conn, study.id, len(planned))
            if last is None:
                raise NotFound(f"study {study.name!r} not found")
            trial_count = last - len(planned)
        new = [
            {
                "study_id": study.id,
                "number": trial_count + i + 1,
                "state": TrialState.RUNNING.value,
                "params": space.params(x, candidate),
                "x": x,
                "value": None,
                "reason": None,
                "source": source,
                "client_id": client_id,
                "lease_expires_at": lease,
                "created_at": now,
                "completed_at": None,
                "candidate": candidate,
                "candidate_id": space.candidate_id(candidate),
            }
            for i, (x, source, candidate) in enumerate(planned)
        ]
        repo.insert_trials(conn, new)
        token = study_token(study.id, study.created_at)
        out = [{**trial_out(r, token), "lease_expires_at": iso(lease)} for r in mine]
        return {"trials": out + [trial_out(r, token) for r in new]}, [r["source"] for r in new]

    def _pop_plan(self, conn: Connection, study: Row, need: int, space: StudySpace) -> list[plan_queue.PlanPoint]:
        """``need`` planned points or fewer; on a finite space without repeats, never a candidate a trial holds;
        in safe mode never a point a trial has shown unsafe (broke a limit there, or failed with failures avoided).

        A plan computed from an older snapshot may name a candidate that a fallback point took meanwhile:
        such points are dropped (and the plan job purges them for good before it plans).
        """
        points = [(p.x, p.source, p.candidate) for p in plan_queue.pop_plan(conn, study.id, need)]
        if study.safety is not None and points:  # a seed, stale retry or older plan's point shown unsafe since
            unsafe = outcome_rows.shown_unsafe(conn, study.id, study.failures == "avoid")
            points = [p for p in points if not any(same_point(p[0], u) for u in unsafe)]
        finite = space.candidates
        if finite is None or finite.allow_repeats:
            return points
        candidates = [c for _, _, c in points if c is not None]
        taken = finite_spaces.held_candidates(conn, study.id, candidates)
        if len(set(candidates)) == len(candidates) and not taken:
            return points
        out = []
        for x, source, c in points:
            if c is not None and c not in taken:
                out.append((x, source, c))
                taken.add(c)
        return out

    def _late_points(self, conn: Connection, study: Row, k: int, space: StudySpace) -> list[plan_queue.PlanPoint]:
        """``k`` seeded fallback points where the policy allows (its fallback box); the policy state is untouched."""
        generator = torch.Generator().manual_seed(mixed_seed(study.seed, LATE_SALT, study.trial_count))
        if space.candidates is not None:
            taken = set() if space.candidates.allow_repeats else finite_spaces.asked_candidates(conn, study.id)
            points = fallback_points(space, k, generator, None, taken)
        else:
            row = repo.get_study_by_id(conn, study.id)  # the whole row: the ask's read leaves the state out
            if row is None:
                raise NotFound(f"study {study.name!r} not found")
            handle = load_study(row, space)
            if handle.outcomes.safety is not None:  # never a random point: the safest known one again, or a 409
                done = repo.history(conn, study.id)[0]
                failed = outcome_rows.failed_points(conn, study.id) if handle.outcomes.failures == "avoid" else None
                return safe_fallback(handle.outcomes, done, handle.seeds(), k, study.name, handle.linear, failed)
            points = fallback_points(space, k, generator, handle.fallback_box(), polytope=handle.polytope())
            points = handle.keep_integral(points)
        log.warning("study %s: the policy was not ready within the ask's wait; %d fallback point(s)", study.name, k)
        return points

    def _expiry_due(self, study_id: int, now: datetime) -> bool:
        """Look for expired leases and old idempotency answers at most once per EXPIRY_CHECK_SECONDS per study."""
        last = self._expiry_checked.get(study_id)
        if last is not None and now.timestamp() - last < EXPIRY_CHECK_SECONDS:
            return False
        if len(self._expiry_checked) > 100_000:  # bounded: forgetting only means an early sweep
            self._expiry_checked.clear()
        self._expiry_checked[study_id] = now.timestamp()
        return True


def sweep_expired(conn: Connection, study_id: int, now: datetime) -> list[int]:
    """Running trials whose lease ran out become stale; their points are offered again, before new ones."""
    stale = repo.expire_leases(conn, study_id, now)
    if stale:
        metrics.lease_expiries.inc(len(stale))
        plan_queue.add_plan(conn, study_id, [(r.x, Source.STALE_RETRY.value, r.candidate) for r in stale], priority=1)
    return [r.number for r in stale]


async def _wait(job: Future, timeout: float) -> Outcome | None:
    """The job's outcome, waited for up to ``timeout`` seconds without holding a thread; None on timeout (the job
    goes on)."""
    if timeout <= 0 and not job.done():
        return None
    try:
        outcome = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(job)), max(0.0, timeout))
    except TimeoutError:
        return None
    except Exception as exc:  # the planner returns its failures; anything else is one too
        return Failed(f"{type(exc).__name__}: {exc}")
    return outcome if isinstance(outcome, Planned | Gone | ClaimedElsewhere | Failed) else Planned()
