"""The engine: studies and trials on top of storage, and the plan queue the policies fill.

An ask takes the study's write lock, hands out planned points and returns. When the plan
is short it leaves the lock and waits for a planning job (``plan_job``): one per study at
a time in this process (``planner.Jobs``) and across processes (a claim on the study row).
The job runs the policy on a snapshot of the data through the executor (inline or a celery
worker) and stores the new points and state if no one else planned meanwhile (the state's
version decides). A slow policy thus never holds the database lock, and several API
processes can share one database. An ask that waited ``ask_wait_seconds`` in vain gets
fallback points (source "fallback") and the job goes on for the asks after it.

Suggest-ahead: after a tell the engine starts a job at once, when the plan is empty and the
policy says a suggest now makes progress, so the next ask is served from the plan.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import math
import secrets
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

import anyio
import torch
from pydantic import ValidationError
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError

from localbo.config import Settings
from localbo.errors import Busy, Conflict, InvalidInput, NotFound
from localbo.finite_space import Candidates, is_finite_spec, parse_finite
from localbo.planner import Jobs
from localbo.policies import PolicyConfigError, SuggestRequest, get_policy, registry
from localbo.policies.base import FiniteSpace
from localbo.space import SearchSpace, SpaceError
from localbo.storage import repository as repo
from localbo.storage.db import make_engine, upgrade, writer
from localbo.storage.models import utcnow
from localbo.workers import make_executor, run_suggest

log = logging.getLogger("localbo.engine")
T = TypeVar("T")

MAX_PLAN_ROUNDS = 20
EXPIRY_CHECK_SECONDS = 1.0  # leases last minutes to hours; a second late is fine
FALLBACK = "fallback"
CLAIM_POLL_SECONDS = 0.05  # how often a job looks whether another process's plan has landed
CLAIM_SECONDS = 30.0  # a planning claim lasts this long unless renewed: a crashed holder's runs out soon


class _PlanShort(Exception):
    """The plan holds too few points: roll the transaction back and run the policy."""

    def __init__(self, need: int) -> None:
        self.need = need  # how many points the ask takes from the plan (the plan may hold some of them)


@dataclass
class Plan:
    version: int  # the state version the plan was computed from
    points: list[repo.PlanPoint]
    state: dict[str, Any]
    error: str | None


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def trial_dict(row: Row | dict) -> dict[str, Any]:
    r = row._mapping if isinstance(row, Row) else row
    return {
        "number": r["number"],
        "state": r["state"],
        "params": r["params"],
        "value": r["value"],
        "reason": r["reason"],
        "source": r["source"],
        "client_id": r["client_id"],
        "lease_expires_at": iso(r["lease_expires_at"]),
        "created_at": iso(r["created_at"]),
        "completed_at": iso(r["completed_at"]),
        "candidate": r.get("candidate_id"),
    }


def request_hash(op: str, body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([op, body], sort_keys=True).encode()).hexdigest()


def validate_policy(policy: str, config: dict[str, Any] | None, dim: int, kind: str = "continuous") -> dict[str, Any]:
    """The policy's config with its defaults filled in, or a 422 naming the field."""
    try:
        cls = get_policy(policy)
    except KeyError:
        raise InvalidInput("policy", f"unknown policy {policy!r}; expected one of {sorted(registry())}") from None
    try:
        parsed = cls.Config.model_validate(config or {})
        cls.check_space(kind)
        cls.check_study(dim, parsed)
        return parsed.model_dump(mode="json")
    except PolicyConfigError as exc:
        raise InvalidInput(exc.field, str(exc).split(": ", 1)[-1]) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise InvalidInput(f"policy_config.{where}" if where else "policy_config", err["msg"]) from None


class Engine:
    def __init__(self, settings: Settings, *, migrate: bool = True) -> None:
        self.settings = settings
        self.db = make_engine(settings.database_url, settings.sqlite_synchronous)
        self.write = writer(self.db)
        self.inline_writes = self.db.dialect.name == "sqlite"
        if migrate:
            upgrade(self.db)
        self.device = torch.device(
            "cuda"
            if settings.device == "auto" and torch.cuda.is_available()
            else ("cpu" if settings.device == "auto" else settings.device)
        )
        self._locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
        self._locks_guard = threading.Lock()
        self._expiry_checked: dict[str, datetime] = {}
        self._spaces: dict[tuple[int, datetime], SearchSpace] = {}
        self._candidates: dict[tuple[int, datetime], Candidates] = {}
        self.executor = make_executor(settings)
        self.jobs = Jobs(settings.plan_threads)

    def close(self, wait: bool = False) -> None:
        self.jobs.close(wait)
        self.executor.close()
        self.db.dispose()

    # -- studies -------------------------------------------------------------------------

    def create_study(
        self,
        name: str,
        direction: str,
        space: dict[str, Any],
        policy: str,
        policy_config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> dict[str, Any]:
        finite = None
        try:
            if is_finite_spec(space):
                finite = parse_finite(space)
                stored, dim, kind = finite.summary(), finite.dim, "finite"
            else:
                parsed = SearchSpace.parse(space)
                stored, dim, kind = parsed.spec(), parsed.dim, parsed.kind
        except SpaceError as exc:
            raise InvalidInput(exc.field, exc.message) from None
        if direction not in ("minimize", "maximize"):
            raise InvalidInput("direction", f"expected 'minimize' or 'maximize', got {direction!r}")
        config = validate_policy(policy, policy_config, dim, kind)
        values = {
            "name": name,
            "direction": direction,
            "space": stored,
            "policy": policy,
            "policy_config": config,
            "user_metadata": metadata or {},
            "seed": secrets.randbelow(2**31) if seed is None else seed,
            "policy_state": {},
            "policy_state_version": 0,
            "trial_count": 0,
            "created_at": utcnow(),
        }
        try:
            with self.write.begin() as conn:
                study_id = repo.insert_study(conn, values)
                if finite is not None:
                    kernel = finite.kernel.numpy().tobytes() if finite.kernel is not None else None
                    repo.insert_candidates(conn, study_id, finite.rows(), kernel)
        except IntegrityError:
            raise Conflict(f"name: a study named {name!r} already exists") from None
        return self.get_study(name)

    def get_study(self, name: str) -> dict[str, Any]:
        with self.db.begin() as conn:
            study = self._study(conn, name)
            summary = repo.summaries(conn, [study.id]).get(study.id)
        return study_dict(study, summary)

    def list_studies(self) -> list[dict[str, Any]]:
        with self.db.begin() as conn:
            rows = repo.list_studies(conn)
            summaries = repo.summaries(conn)
        return [study_dict(row, summaries.get(row.id)) for row in rows]

    def delete_study(self, name: str) -> None:
        with self.write.begin() as conn:
            repo.delete_study(conn, self._study(conn, name, lock=True).id)

    # -- ask -----------------------------------------------------------------------------

    def ask(self, name: str, count: int = 1, client_id: str | None = None, key: str | None = None) -> dict:
        """Hand out ``count`` trials; when the plan is short, wait for the study's planning job."""
        deadline = time.monotonic() + self.settings.ask_wait_seconds
        for _ in range(MAX_PLAN_ROUNDS):
            served = self.ask_step(name, count, client_id, key)
            if isinstance(served, dict):
                return served
            job = self.jobs.start(name, self.plan_job, name, served, False)
            try:
                job.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                break
        return self.ask_step(name, count, client_id, key, fallback=True)

    async def ask_async(self, name: str, count: int = 1, client_id: str | None = None, key: str | None = None) -> dict:
        """``ask`` for an event loop: the database step as ``run_write`` says; the wait blocks no thread."""
        deadline = time.monotonic() + self.settings.ask_wait_seconds
        for _ in range(MAX_PLAN_ROUNDS):
            served = await self.run_write(self.ask_step, name, count, client_id, key)
            if isinstance(served, dict):
                return served
            job = self.jobs.start(name, self.plan_job, name, served, False)
            if not await _wait(job, deadline - time.monotonic()):
                break
        return await self.run_write(self.ask_step, name, count, client_id, key, fallback=True)

    async def run_write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one short write transaction from an event loop.

        SQLite has one writer at a time, so a thread hop would only add latency (it costs
        more than the transaction): run it inline. On Postgres, transactions of different
        requests overlap on their own connections, so run it in a worker thread.
        """
        if self.inline_writes:
            return fn(*args, **kwargs)
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    def ask_step(
        self, name: str, count: int, client_id: str | None, key: str | None, fallback: bool = False
    ) -> dict | int:
        """One write transaction: serve from the plan, or return how many points it needs to hold.

        With ``fallback`` the points the plan lacks are made up at once (source "fallback").
        """
        if not 1 <= count <= self.settings.max_ask_count:
            raise InvalidInput("count", f"expected 1..{self.settings.max_ask_count}, got {count}")
        body = {"count": count, "client_id": client_id}
        try:
            with self.write.begin() as conn:
                study = repo.lock_study_for_ask(conn, name, key)
                if study is None:
                    raise NotFound(f"study {name!r} not found")
                if study.idem_hash is not None:
                    if study.idem_hash != request_hash("ask", body):
                        raise InvalidInput("Idempotency-Key", f"{key!r} was already used for a different request")
                    return study.idem_response
                response = self._serve(conn, study, count, client_id, fallback)
                if key:
                    repo.put_idempotency(conn, study.id, key, request_hash("ask", body), 200, response)
                return response
        except _PlanShort as short:  # rolled back: the points it popped are in the plan again
            self._expiry_checked.pop(name, None)
            return short.need

    def _serve(self, conn: Connection, study: Row, count: int, client_id: str | None, fallback: bool = False) -> dict:
        """Hand out ``count`` trials inside the caller's transaction; raises _PlanShort if the plan is short."""
        now = utcnow()
        finite = self._finite(conn, study)
        if self._expiry_due(study.name, now):
            stale = repo.expire_leases(conn, study.id, now)
            if stale:  # their points are offered again, before new ones
                repo.add_plan(conn, study.id, [(r.x, "stale-retry", r.candidate) for r in stale], priority=1)
            repo.forget_idempotency(conn, study.id, now - timedelta(seconds=self.settings.idempotency_ttl_seconds))
        lease = now + timedelta(seconds=self.settings.lease_seconds)
        mine = repo.running_of_client(conn, study.id, client_id, count) if client_id else []
        need = count - len(mine)
        if finite is not None and not finite.allow_repeats and study.trial_count + need > finite.size:
            left = finite.size - len(repo.held_candidates(conn, study.id))
            if need > left:
                raise Conflict(f"count: {left} of the study's {finite.size} candidates are left to ask, not {need}")
        planned = self._pop_plan(conn, study, need, finite) if need else []
        if len(planned) < need:
            if not fallback:
                raise _PlanShort(need)
            planned += self._late_points(conn, study, need - len(planned), finite)
        repo.extend_leases(conn, [r.id for r in mine], lease)
        new = [
            {
                "study_id": study.id,
                "number": study.trial_count + i + 1,
                "state": "running",
                "params": self._params(study, x, candidate, finite),
                "x": x,
                "value": None,
                "reason": None,
                "source": source,
                "client_id": client_id,
                "lease_expires_at": lease,
                "created_at": now,
                "completed_at": None,
                "candidate": candidate,
                "candidate_id": finite.ids[candidate] if finite is not None and candidate is not None else None,
            }
            for i, (x, source, candidate) in enumerate(planned)
        ]
        repo.insert_trials(conn, new)
        if new:
            repo.set_trial_count(conn, study.id, study.trial_count + len(new))
        out = [{**trial_dict(r), "lease_expires_at": iso(lease)} for r in mine]
        return {"trials": out + [trial_dict(r) for r in new]}

    def _pop_plan(self, conn: Connection, study: Row, need: int, finite: Candidates | None) -> list[repo.PlanPoint]:
        """``need`` planned points or fewer; on a finite space without repeats, never a candidate a trial holds.

        A plan computed from an older snapshot may name a candidate that a fallback point took meanwhile:
        such points are dropped (and the plan job purges them for good before it plans).
        """
        points = [(p.x, p.source, p.candidate) for p in repo.pop_plan(conn, study.id, need)]
        if finite is None or finite.allow_repeats:
            return points
        candidates = [c for _, _, c in points if c is not None]
        taken = repo.held_candidates(conn, study.id, candidates)
        if len(set(candidates)) == len(candidates) and not taken:
            return points
        out = []
        for x, source, c in points:
            if c is not None and c not in taken:
                out.append((x, source, c))
                taken.add(c)
        return out

    def _params(self, study: Row, x: list[float], candidate: int | None, finite: Candidates | None) -> dict:
        """A point's params in user units: a finite space's candidate, or the continuous point."""
        if finite is not None and candidate is not None:
            return finite.params[candidate]
        return self._space(study).from_unit(x)

    def _finite(self, conn: Connection, study: Row) -> Candidates | None:
        """The study's candidates (None for a continuous space), loaded once per process: they never change."""
        if not is_finite_spec(study.space):
            return None
        key = (study.id, study.created_at)
        cached = self._candidates.get(key)
        if cached is None:
            rows, kernel = repo.load_candidates(conn, study.id)
            cached = self._candidates[key] = Candidates(list(rows), kernel, study.space)
        return cached

    def _points(self, study: Row, X: torch.Tensor, source: str) -> list[repo.PlanPoint]:
        """Plan rows of a continuous study: each categorical's coordinates snapped to the one-hot of its choice,
        so pending and told points are the points evaluated."""
        space = self._space(study)
        return [(space.snap(row), source, None) for row in X.tolist()]

    def _dim(self, study: Row) -> int:
        """The coordinates of the study's points (a finite space: its parameters)."""
        return len(study.space["params"]) if is_finite_spec(study.space) else self._space(study).dim

    def _space(self, study: Row) -> SearchSpace:
        """The study's parsed space; spaces never change after creation."""
        cache_key = (study.id, study.created_at)
        space = self._spaces.get(cache_key)
        if space is None:
            space = self._spaces[cache_key] = SearchSpace.parse(study.space)
        return space

    def _late_points(
        self, conn: Connection, study: Row, k: int, finite: Candidates | None = None
    ) -> list[repo.PlanPoint]:
        """``k`` seeded random points where the policy allows (its fallback box); the policy state is untouched.

        On a finite space: ``k`` random candidates no trial holds nor the plan names (any, with repeats).
        """
        generator = torch.Generator().manual_seed(study.seed + 104_729 * (study.trial_count + 1))
        if finite is not None:
            free = torch.ones(finite.size, dtype=torch.bool)
            if not finite.allow_repeats:
                free[list(repo.asked_candidates(conn, study.id))] = False
            where = free.nonzero()[:, 0]
            if where.numel() < k:
                raise Conflict(f"count: {where.numel()} candidates of {finite.size} are left to ask, not {k}")
            chosen = where[torch.randperm(where.numel(), generator=generator)[:k]].tolist()
            log.warning("study %s: the policy was not ready; %d fallback candidate(s)", study.name, k)
            return [(finite.x[c], FALLBACK, c) for c in chosen]
        cls = get_policy(study.policy)
        saved = study.policy_state or {}
        state = saved.get("data", {}) if saved.get("schema") == cls.state_version else {}
        dim = self._dim(study)
        lo, hi = cls.fallback_box(state, cls.Config.model_validate(study.policy_config), dim)
        low, high = torch.tensor(lo, dtype=torch.float64), torch.tensor(hi, dtype=torch.float64)
        X = low + torch.rand(k, dim, generator=generator, dtype=torch.float64) * (high - low)
        log.warning(
            "study %s: the policy was not ready within %.1f s; %d fallback point(s)",
            study.name,
            self.settings.ask_wait_seconds,
            k,
        )
        return self._points(study, X, FALLBACK)

    def plan_ahead(self, name: str) -> Future | None:
        """Suggest-ahead: start the study's planning job now, if configured (it decides whether to compute)."""
        if not self.settings.suggest_ahead:
            return None
        return self.jobs.start(name, self.plan_job, name, 1, True, weak=True)

    def plan_job(self, name: str, need: int, ahead: bool) -> None:
        """Make the plan hold at least ``need`` points: compute the rest, or wait for the process computing it.

        Suggest-ahead leaves partial plans (one point after a tell), so an ask for several points may
        find some planned: the policy computes only the missing ones, conditioned on those.

        ``ahead`` (after a tell): only if the plan is empty and the policy says a suggest makes progress.
        """
        with self._study_lock(name):
            token = uuid.uuid4().hex
            give_up = time.monotonic() + self.settings.policy_timeout_seconds + 60
            while True:
                now = utcnow()
                until = now + timedelta(seconds=CLAIM_SECONDS)
                with self.write.begin() as conn:
                    repo.purge_asked_plan(conn, name)  # finite spaces: plan points a fallback took meanwhile
                    if repo.claim_planning(conn, name, token, now, until):
                        break
                    study = self._study(conn, name)
                    if repo.count_plan(conn, study.id) >= need:
                        return  # another process planned
                if ahead or time.monotonic() > give_up:
                    return  # another process is computing: it plans, not us
                time.sleep(CLAIM_POLL_SECONDS)
            try:
                with self.db.begin() as conn:
                    study = self._study(conn, name)
                    in_plan = repo.count_plan(conn, study.id)
                    if in_plan >= need or (ahead and in_plan):
                        return
                    cls = get_policy(study.policy)
                    finite = self._finite(conn, study)
                    history = cls.needs_history or finite is not None
                    done, pending = repo.history(conn, study.id) if history else ([], [])
                    failed = repo.failed_candidates(conn, study.id) if finite is not None else []
                if ahead:
                    saved = study.policy_state or {}
                    state = saved.get("data", {}) if saved.get("schema") == cls.state_version else {}
                    if not cls.plans_now(state, len(done), len(pending)):
                        return
                with self._renewing(name, token):
                    plan = self._run_policy(study, done, pending, need - in_plan, finite, failed)
                with self.write.begin() as conn:
                    current = self._study(conn, name, lock=True)
                    if current.policy_state_version == plan.version:
                        self._store_plan(conn, current, plan)
                    repo.release_planning(conn, name, token)
                    token = ""
            finally:
                if token:
                    with self.write.begin() as conn:
                        repo.release_planning(conn, name, token)

    @contextmanager
    def _renewing(self, name: str, token: str) -> Iterator[None]:
        """Keep the planning claim alive while the policy computes (a thread renews it every third of its life)."""
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(CLAIM_SECONDS / 3):
                try:
                    with self.write.begin() as conn:
                        repo.renew_planning(conn, name, token, utcnow() + timedelta(seconds=CLAIM_SECONDS))
                except Exception:  # the database blinked: the next renewal may work
                    log.exception("could not renew the planning claim on %s", name)

        renewer = threading.Thread(target=renew, name=f"localbo-claim-{name}", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()

    def queue_for(self, study: Row, n: int) -> str:
        """The worker queue: the study's config says, else its size (observations x parameters)."""
        queue = (study.policy_config or {}).get("queue", "auto")
        if queue != "auto":
            return queue
        size = n * self._dim(study)
        return "gpu" if self.settings.gpu_min_size and size >= self.settings.gpu_min_size else "cpu"

    def _run_policy(
        self,
        study: Row,
        done: list,
        pending: list,
        short: int,
        finite: Candidates | None = None,
        failed: list[int] | None = None,
    ) -> Plan:
        cls = get_policy(study.policy)
        dim = self._dim(study)
        saved = study.policy_state or {}
        state = saved.get("data", {}) if saved.get("schema") == cls.state_version else {}
        sign = 1.0 if study.direction == "minimize" else -1.0  # policies minimise

        def tensor(rows: list, n_cols: int) -> torch.Tensor:
            return torch.tensor(rows, dtype=torch.float64, device=self.device).reshape(-1, n_cols)

        request = SuggestRequest(
            dim=dim,
            X=tensor([r.x for r in done], dim),
            y=tensor([sign * r.value for r in done], 1).reshape(-1),
            X_pending=tensor([r.x for r in pending], dim),
            count=short,
            state=state,
            config=cls.Config.model_validate(study.policy_config),
            seed=study.seed,
            device=self.device,
            finite=self._finite_request(finite, done, pending, failed or []) if finite is not None else None,
        )
        try:
            if finite is not None:
                # in this process: the candidates are cached here, a worker would need them all sent along
                return self._finite_plan(study, cls.name, run_suggest(cls.name, request), request, short, finite)
            if cls.needs_history:
                suggestion = self.executor.run(cls.name, request, self.queue_for(study, len(done)))
            else:  # random, sobol: microseconds, not worth a trip to a worker
                suggestion = run_suggest(cls.name, request)
            X = suggestion.X.detach().to("cpu", torch.float64)
            if X.ndim != 2 or X.shape[1] != dim or X.shape[0] < short or not torch.isfinite(X).all():
                raise ValueError(f"policy returned points of shape {tuple(X.shape)}, need >= {short} x {dim}, finite")
            points = self._points(study, X.clamp(0.0, 1.0), cls.name)
            return Plan(
                study.policy_state_version, points, {"schema": cls.state_version, "data": suggestion.state}, None
            )
        except CancelledError:
            raise  # the server is shutting down: no fallback plan, no error on the study
        except Exception as exc:  # a failing policy never takes the study down
            log.exception("policy %s failed on study %s; handing out fallback points", cls.name, study.name)
            generator = torch.Generator().manual_seed(study.seed + 7919 * (study.policy_state_version + 1))
            error = f"{utcnow().isoformat()} {type(exc).__name__}: {exc}"
            if finite is not None:
                assert request.finite is not None
                free = torch.ones(finite.size, dtype=torch.bool)
                if not finite.allow_repeats:
                    for used in (request.finite.X_index, request.finite.pending_index, request.finite.blocked_index):
                        free[used.cpu()] = False
                where = free.nonzero()[:, 0]
                chosen = where[torch.randperm(where.numel(), generator=generator)[:short]].tolist()
                return Plan(study.policy_state_version, [(finite.x[c], FALLBACK, c) for c in chosen], saved, error)
            X = torch.rand(short, dim, generator=generator, dtype=torch.float64)
            return Plan(study.policy_state_version, self._points(study, X, FALLBACK), saved, error)

    def _finite_request(self, finite: Candidates, done: list, pending: list, failed: list[int]) -> FiniteSpace:
        """The policy's view of a finite space: candidates on the device, what was asked, the prior kernel."""

        def index(values: list) -> torch.Tensor:
            return torch.tensor([v for v in values if v is not None], dtype=torch.long, device=self.device)

        return FiniteSpace(
            candidates=finite.X.to(self.device),
            X_index=index([r.candidate for r in done]),
            pending_index=index([r.candidate for r in pending]),
            blocked_index=index(failed),
            allow_repeats=finite.allow_repeats,
            kernel=finite.kernel.to(self.device) if finite.kernel is not None else None,
            features=finite.features.to(self.device) if finite.features is not None else None,
        )

    def _finite_plan(
        self, study: Row, name: str, suggestion: Any, request: SuggestRequest, short: int, finite: Candidates
    ) -> Plan:
        """The plan from a finite-space policy's answer, checked: candidate indices, none asked (without repeats)."""
        index = suggestion.index
        if index is None or index.ndim != 1 or index.numel() < short:
            raise ValueError(f"{name} returned no candidate indices (need >= {short}) on a finite space")
        chosen = [int(i) for i in index.tolist()]
        if min(chosen) < 0 or max(chosen) >= finite.size:
            raise ValueError(f"{name} returned candidate indices outside 0..{finite.size - 1}")
        if not finite.allow_repeats:
            assert request.finite is not None
            used = set(request.finite.X_index.tolist()) | set(request.finite.pending_index.tolist())
            used |= set(request.finite.blocked_index.tolist())
            if used & set(chosen) or len(set(chosen)) != len(chosen):
                raise ValueError(f"{name} chose a candidate that was asked already")
        points = [(finite.x[c], name, c) for c in chosen]
        return Plan(
            study.policy_state_version,
            points,
            {"schema": get_policy(name).state_version, "data": suggestion.state},
            None,
        )

    def _store_plan(self, conn: Connection, study: Row, plan: Plan) -> None:
        repo.add_plan(conn, study.id, plan.points)
        extra = {"last_policy_error": plan.error} if plan.error else {}
        repo.update_study(
            conn,
            study.id,
            policy_state=plan.state,
            policy_state_version=study.policy_state_version + 1,
            **extra,
        )

    # -- tell, heartbeat, external trials ------------------------------------------------

    def tell(self, name: str, number: int, value: float | None = None, *, failed: str | None = None) -> dict[str, Any]:
        """Complete (``value``) or fail (``failed`` = reason) a trial.

        A tell is idempotent by itself: the same tell again changes nothing and returns
        the same answer, a different one is a 409. So a retried tell (with or without an
        Idempotency-Key) is stored once, without a table of keys.
        """
        if failed is None and (value is None or not math.isfinite(value)):
            raise InvalidInput("value", f"expected a finite number, got {value!r}")
        state, reason = ("complete", None) if failed is None else ("failed", failed)
        value = float(value) if failed is None else None
        with self.write.begin() as conn:
            # The common case in one statement: the trial is open, so finish it.
            done = repo.finish_open_trial(conn, name, number, state, value, reason, utcnow())
        if done is not None:
            self.plan_ahead(name)
            return trial_dict(done)
        with self.write.begin() as conn:
            trial = self._trial(conn, name, number)  # already finished (or missing): say how
            if trial.state in ("running", "stale"):
                raise Busy(f"trial {number} changed while being told; retry")
            if trial.state == state and trial.value == value and (failed is None or trial.reason == reason):
                return trial_dict(trial)  # the same tell again: nothing to do
            if trial.state == "complete":
                raise Conflict(
                    f"value: trial {number} was already told {trial.value}, not {value if failed is None else 'failed'}"
                )
            raise Conflict(f"state: trial {number} was already told failed ({trial.reason})")

    def heartbeat(self, name: str, number: int) -> dict[str, Any]:
        with self.write.begin() as conn:
            trial = self._trial(conn, name, number)
            if trial.state != "running":
                raise Conflict(f"trial {number} is {trial.state}; only a running trial has a lease to extend")
            lease = utcnow() + timedelta(seconds=self.settings.lease_seconds)
            repo.extend_leases(conn, [trial.id], lease)
            return trial_dict({**trial._mapping, "lease_expires_at": lease})

    def add_trial(self, name: str, params: dict[str, Any], value: float, key: str | None = None) -> dict:
        if value is None or not math.isfinite(value):
            raise InvalidInput("value", f"expected a finite number, got {value!r}")
        body = {"params": params, "value": value}
        with self.write.begin() as conn:
            study = self._study(conn, name, lock=True)
            if key and (replay := self._replay(conn, study.id, key, "add", body)) is not None:
                return replay
            finite = self._finite(conn, study)
            candidate = None
            try:
                if finite is not None:
                    candidate = finite.find(params)
                    x, params = finite.x[candidate], finite.params[candidate]
                else:
                    x = SearchSpace.parse(study.space).to_unit(params)
            except SpaceError as exc:
                raise InvalidInput(exc.field, exc.message) from None
            now = utcnow()
            row = {
                "study_id": study.id,
                "number": study.trial_count + 1,
                "state": "complete",
                "params": params,
                "x": x,
                "value": float(value),
                "reason": None,
                "source": "external",
                "client_id": None,
                "lease_expires_at": None,
                "created_at": now,
                "completed_at": now,
                "candidate": candidate,
                "candidate_id": finite.ids[candidate] if finite is not None and candidate is not None else None,
            }
            repo.insert_trials(conn, [row])
            repo.update_study(conn, study.id, trial_count=study.trial_count + 1)
            out = trial_dict(row)
            if key:
                repo.put_idempotency(conn, study.id, key, request_hash("add", body), 200, out)
        self.plan_ahead(name)
        return out

    # -- reads ---------------------------------------------------------------------------

    def list_trials(self, name: str, after: int = 0, limit: int = 100, state: str | None = None) -> dict:
        with self.db.begin() as conn:
            study = self._study(conn, name)
            rows = repo.list_trials(conn, study.id, after=after, limit=limit + 1, state=state)
        more = len(rows) > limit
        rows = rows[:limit]
        return {"trials": [trial_dict(r) for r in rows], "next_after": rows[-1].number if more else None}

    def best(self, name: str) -> dict[str, Any] | None:
        with self.db.begin() as conn:
            study = self._study(conn, name)
            row = repo.best_trial(conn, study.id, study.direction)
        return trial_dict(row) if row is not None else None

    def policy_view(self, name: str) -> dict[str, Any]:
        """The policy's persisted state and its plan queue (points in user units), for people and tests."""
        with self.db.begin() as conn:
            study = self._study(conn, name)
            planned = repo.list_plan(conn, study.id)
            finite = self._finite(conn, study)
        saved = study.policy_state or {}
        return {
            "policy": study.policy,
            "policy_state_version": study.policy_state_version,
            "state_schema": saved.get("schema"),
            "state": saved.get("data", {}),
            "last_policy_error": study.last_policy_error,
            "planned": [
                {"params": self._params(study, p.x, p.candidate, finite), "x": p.x, "source": p.source} for p in planned
            ],
        }

    def export(self, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        with self.db.begin() as conn:
            study = self._study(conn, name)
            summary = repo.summaries(conn, [study.id]).get(study.id)
            rows = repo.list_trials(conn, study.id)
        return study_dict(study, summary), [trial_dict(r) for r in rows]

    # -- helpers -------------------------------------------------------------------------

    def _study(self, conn: Connection, name: str, *, lock: bool = False) -> Row:
        study = repo.get_study(conn, name, for_update=lock)
        if study is None:
            raise NotFound(f"study {name!r} not found")
        return study

    def _trial(self, conn: Connection, name: str, number: int) -> Row:
        """The trial, locked for the rest of the transaction, with its study's id."""
        trial = repo.lock_trial(conn, name, number)
        if trial is None:
            study = self._study(conn, name)
            raise NotFound(f"number: study {name!r} has no trial {number} (it has {study.trial_count})")
        return trial

    def _replay(self, conn: Connection, study_id: int, key: str, op: str, body: dict) -> dict | None:
        record = repo.get_idempotency(conn, study_id, key)
        if record is None:
            return None
        if record.request_hash != request_hash(op, body):
            raise InvalidInput("Idempotency-Key", f"{key!r} was already used for a different request")
        return record.response

    def _expiry_due(self, name: str, now: datetime) -> bool:
        """Look for expired leases and old idempotency answers at most once per EXPIRY_CHECK_SECONDS per study."""
        last = self._expiry_checked.get(name)
        if last is not None and (now - last).total_seconds() < EXPIRY_CHECK_SECONDS:
            return False
        self._expiry_checked[name] = now
        return True

    def _study_lock(self, name: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks[name]


def last_activity(summary: dict[str, Any]) -> str | None:
    """When a trial of the study was last asked or finished."""
    return iso(max(filter(None, (summary.get("last_created_at"), summary.get("last_completed_at"))), default=None))


async def _wait(job: Future, timeout: float) -> bool:
    """Wait for ``job`` up to ``timeout`` seconds without holding a thread; False on timeout (the job goes on)."""
    try:
        await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(job)), max(0.0, timeout))
        return True
    except TimeoutError:
        return False


def study_dict(row: Row, summary: dict[str, Any] | None) -> dict[str, Any]:
    s = summary or {}
    best = s.get("min_value") if row.direction == "minimize" else s.get("max_value")
    return {
        "name": row.name,
        "direction": row.direction,
        "space": row.space,
        "policy": row.policy,
        "policy_config": row.policy_config,
        "metadata": row.user_metadata,
        "seed": row.seed,
        "created_at": iso(row.created_at),
        "policy_state_version": row.policy_state_version,
        "last_policy_error": row.last_policy_error,
        "summary": {
            "n_trials": int(s.get("n") or 0),
            "n_running": int(s.get("running") or 0),
            "n_complete": int(s.get("complete") or 0),
            "n_failed": int(s.get("failed") or 0),
            "n_stale": int(s.get("stale") or 0),
            "best_value": best,
            "last_activity": last_activity(s),
        },
    }
