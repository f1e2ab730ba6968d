"""Telling: complete or fail a trial, keep its lease alive, add a trial measured elsewhere.

A tell is idempotent by itself: the same tell again changes nothing and returns the same answer, a
different one is a 409, so a retried tell is stored once without a table of keys. Every change of
the data starts the study's planning job (suggest-ahead), so the next ask is served from the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine import Connection, Row

from localbo import idempotency
from localbo.asking import sweep_expired
from localbo.config import Settings
from localbo.domain import Source, TrialState, trial_out
from localbo.domain.identity import study_token
from localbo.domain.outcomes import Outcomes, finite
from localbo.domain.records import TrialRecord
from localbo.errors import Busy, Conflict, InvalidInput, NotFound
from localbo.planning.planner import Planner
from localbo.space import SpaceError
from localbo.spaces import Spaces
from localbo.storage import outcomes as outcome_rows
from localbo.storage import repository as repo
from localbo.storage.db import db_now
from localbo.storage.models import utcnow
from localbo.studies import get_row


def locked_trial(conn: Connection, name: str, number: int) -> Row:
    """The trial, locked for the rest of the transaction, with its study's id."""
    trial = repo.lock_trial(conn, name, number)
    if trial is None:
        study = get_row(conn, name)
        raise NotFound(f"number: study {name!r} has no trial {number} (it has {study.trial_count})")
    return trial


def check_token(trial: Row, name: str, token: str | None) -> None:
    """A tell that names its trial's study (``token``) reaches that study or none: after the name was deleted
    and created again, a rig still holding an old trial must not complete the new study's trial of that number."""
    if token is not None and token != study_token(trial.study_id, trial.study_created_at):
        raise Conflict(
            f"token: trial {trial.number} was asked from another study than the one now named {name!r} (was the "
            "study deleted and created again?); this study's trial of that number is another point, so the tell "
            "was not stored"
        )


@dataclass(frozen=True)
class Told:
    trial: TrialRecord
    study_id: int
    plan_ahead: bool  # the tell finished an open trial and the plan is empty: plan once it commits


class Telling:
    def __init__(self, settings: Settings, write: Engine, spaces: Spaces, planner: Planner) -> None:
        self.settings, self.write, self.spaces, self.planner = settings, write, spaces, planner

    def tell(
        self,
        name: str,
        number: int,
        value: float | None = None,
        *,
        failed: str | None = None,
        token: str | None = None,
        values: dict[str, float] | None = None,
    ) -> TrialRecord:
        """Complete (``value``) or fail (``failed`` = reason) a running or stale trial, in a transaction of its own."""
        with self.write.begin() as conn:
            told = self.tell_in(conn, name, number, value, failed=failed, token=token, values=values)
        self.after(told)
        return told.trial

    def tell_in(
        self,
        conn: Connection,
        name: str,
        number: int,
        value: float | None = None,
        *,
        failed: str | None = None,
        token: str | None = None,
        values: dict[str, float] | None = None,
    ) -> Told:
        """The tell inside the caller's transaction; ``after`` it commits, ``after(told)`` plans ahead.

        ``token`` (the trial's, as its ask answered): the tell reaches that study's trial or none.
        """
        state, reason = (TrialState.COMPLETE, None) if failed is None else (TrialState.FAILED, failed or None)
        told, metrics, feasible = None, None, None
        if failed is not None:
            if values is not None:
                raise InvalidInput("values", "a failed trial carries no metrics: leave values out")
        elif values is not None or value is None:  # named metrics: the study says which, and what is feasible
            outcomes = self.outcomes(conn, name)
            told, metrics = outcomes.read(values, value)
            feasible = outcomes.feasible(metrics)
        else:
            told = finite("value", value)
        # The common case in one statement: the trial is open, so finish it.
        at = utcnow()
        done = repo.finish_open_trial(conn, name, number, state.value, told, reason, at, metrics, feasible)
        if done is not None:
            check_token(done, name, token)  # raises: the caller's transaction rolls the update back
            record = trial_out(done)
            if done.study_named and failed is None and metrics is None:  # a bare value told to a study naming metrics
                outcomes = self.outcomes(conn, name)
                told, metrics = outcomes.read(None, told)  # a 422 when constraints need values: rolled back
                feasible = outcomes.feasible(metrics)
                outcome_rows.set_trial_metrics(conn, done.id, metrics, feasible)
                record = {**record, "values": metrics, "feasible": feasible}
            return Told(record, done.study_id, not done.plan_holds)  # suggest-ahead fills only an empty plan
        trial = locked_trial(conn, name, number)  # already finished (or missing): say how
        check_token(trial, name, token)
        if trial.state in TrialState.open():
            raise Busy(f"trial {number} changed while being told; retry")
        same_metrics = metrics is None or trial.metrics == metrics
        same_reason = failed is None or (trial.reason or None) == reason
        if trial.state == state and trial.value == told and same_metrics and same_reason:
            return Told(trial_out(trial), trial.study_id, False)  # the same tell again: nothing to do
        if trial.state == TrialState.COMPLETE:
            stored, asked = trial.metrics or {}, metrics or {}
            differs = [k for k in asked if stored.get(k) != asked[k]]
            if failed is None and trial.value == told and differs:  # the objective agrees, another metric not
                k = differs[0]
                raise Conflict(f"values.{k}: trial {number} was already told {stored.get(k)}, not {asked[k]}")
            raise Conflict(
                f"value: trial {number} was already told {trial.value}, not {told if failed is None else 'failed'}"
            )
        raise Conflict(f"state: trial {number} was already told failed ({trial.reason or 'no reason given'})")

    @staticmethod
    def outcomes(conn: Connection, name: str) -> Outcomes:
        """The study's metrics, objective and outcome constraints (what a tell of named values needs)."""
        study = outcome_rows.study_outcomes(conn, name)
        if study is None:
            raise NotFound(f"study {name!r} not found")
        return Outcomes.from_stored(study)

    def after(self, told: Told) -> None:
        """What a committed tell starts: the study's planning job, when its plan is empty."""
        if told.plan_ahead:
            self.planner.plan_ahead(told.study_id)

    def heartbeat(self, name: str, number: int) -> TrialRecord:
        """Extend a running trial's lease; a lease that already ran out stays expired (409), whatever the traffic."""
        with self.write.begin() as conn:
            trial = locked_trial(conn, name, number)
            now = db_now(conn)  # leases in the database's time, as asks set them
            # every heartbeat sweeps the study's expired leases (one statement): expired is expired,
            # whatever the traffic, and their points are offered again at once
            expired = trial.number in sweep_expired(conn, trial.study_id, now)
            if not expired and trial.state == TrialState.RUNNING:
                lease = now + timedelta(seconds=self.settings.lease_seconds)
                repo.extend_leases(conn, [trial.id], lease)
                return trial_out({**trial._mapping, "lease_expires_at": lease})
        if expired:
            raise Conflict(
                f"trial {number}'s lease expired at {trial.lease_expires_at.isoformat()}; it is stale now "
                "(its point is offered again; a tell still counts)"
            )
        raise Conflict(f"trial {number} is {trial.state}; only a running trial has a lease to extend")

    def add_trial(
        self,
        name: str,
        params: dict[str, Any],
        value: float | None = None,
        key: str | None = None,
        values: dict[str, float] | None = None,
    ) -> Any:
        """Store a trial measured outside the service (source "external"), complete with its value (or, when the
        study names metrics, its ``values``)."""
        body: dict[str, Any] = {"params": params, "value": value} | ({"values": values} if values is not None else {})
        with self.write.begin() as conn:
            study = get_row(conn, name, lock=True)
            if (replay := idempotency.replay(conn, study.id, key, "add", body)) is not None:
                return replay
            outcomes = Outcomes.from_stored(study)
            told, metrics = outcomes.read(values, value)
            space = self.spaces.of(conn, study)
            try:
                x, candidate = space.to_unit(params)
            except SpaceError as exc:
                raise InvalidInput(exc.field, exc.message) from None
            now = utcnow()
            row = {
                "study_id": study.id,
                "number": study.trial_count + 1,
                "state": TrialState.COMPLETE.value,
                "params": space.params(x, candidate) if candidate is not None else params,
                "x": x,
                "value": told,
                "metrics": metrics,
                "feasible": outcomes.feasible(metrics),
                "reason": None,
                "source": Source.EXTERNAL.value,
                "client_id": None,
                "lease_expires_at": None,
                "created_at": now,
                "completed_at": now,
                "candidate": candidate,
                "candidate_id": space.candidate_id(candidate),
            }
            repo.insert_trials(conn, [row])
            repo.update_study(conn, study.id, trial_count=study.trial_count + 1)
            out = trial_out(row, study_token(study.id, study.created_at))
            idempotency.remember(conn, study.id, key, "add", body, out)
        self.planner.plan_ahead(study.id)
        return out
