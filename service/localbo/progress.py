"""What people watching a study read: its trials as compact columns, and a feed of what changed.

The series is one JSON object of columns (one entry per trial, by number) whose arrays the
database builds itself, so 50,000 trials answer in one quick request. A study's feed polls the
database (a few indexed queries every ``POLL_SECONDS``), so it sees writes of every API process
sharing the database; it remembers what it sent and returns only what changed since. The studies
list is built once per change for every viewer (``StudiesList``; ``broadcast`` fans it out).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine import Row

from localbo.errors import NotFound
from localbo.finite_space import is_finite_spec
from localbo.storage import feed
from localbo.storage import repository as repo
from localbo.storage.models import utcnow

POLL_SECONDS = 0.5
CLOCK_SLACK = timedelta(seconds=5)  # API processes may stamp completed_at a little ahead of ours
OPEN_STATES = ("running", "stale")


def columns_json(columns: dict[str, str], **extra: Any) -> str:
    """The JSON object of columns from the JSON arrays the database built (and ``extra`` fields)."""
    fields = [f'"{name}":{text}' for name, text in columns.items()]
    fields += [f"{json.dumps(name)}:{json.dumps(value)}" for name, value in extra.items()]
    return "{" + ",".join(fields) + "}"


def _study(db: Engine, name: str) -> Row:
    with db.begin() as conn:
        study = repo.get_study(conn, name)
    if study is None:
        raise NotFound(f"study {name!r} not found")
    return study


def series(db: Engine, name: str, after: int = 0) -> str:
    """The study's trials numbered above ``after`` as columns, with the time to pass to the feed as ``since``."""
    now = utcnow()
    with db.begin() as conn:
        study = repo.get_study(conn, name)
        if study is None:
            raise NotFound(f"study {name!r} not found")
        columns = feed.series_columns(conn, study.id, after=after)
    head = {
        "study": study.name,
        "direction": study.direction,
        "space": study.space["params"] if is_finite_spec(study.space) else study.space,  # finite: value ranges
        "policy": study.policy,
        "policy_state_version": study.policy_state_version,
        "as_of": now.isoformat(),
        "last": max(after, study.trial_count),
    }
    return json.dumps(head)[:-1] + ',"trials":' + columns_json(columns) + "}"


class Feed:
    """One viewer's change feed: trials above ``after``, open trials changing state, policy updates."""

    def __init__(self, db: Engine, name: str, after: int = 0, since: datetime | None = None) -> None:
        study = _study(db, name)
        self.db, self.name, self.study_id = db, name, study.id
        self.cursor = after
        self.since = since - CLOCK_SLACK if since is not None else None
        with db.begin() as conn:
            self.open = {n: "running" for n in feed.open_trial_numbers(conn, study.id, after)}
        self.study_key: tuple[Any, ...] | None = None

    def poll(self) -> list[tuple[str, str]]:
        """The (event, JSON data) pairs for what changed since the last poll."""
        events: list[tuple[str, str]] = []
        now = utcnow()
        with self.db.begin() as conn:
            study = repo.get_study(conn, self.name)
            if study is None or study.id != self.study_id:
                return [("gone", json.dumps({"study": self.name}))]
            first, since = self.since is not None, self.since
            self.since = None
            if study.trial_count > self.cursor or self.open or first:
                rows = feed.trial_states(
                    conn, study.id, after=self.cursor, numbers=sorted(self.open), completed_since=since
                )
                changed = [n for n, state in rows if first or n > self.cursor or self.open.get(n) != state]
                for n, state in rows:
                    if state in OPEN_STATES:
                        self.open[n] = state
                    else:
                        self.open.pop(n, None)
                if changed:
                    self.cursor = max(self.cursor, changed[-1])
                    columns = feed.series_columns(conn, study.id, after=None, numbers=changed)
                    events.append(("trials", columns_json(columns, as_of=now.isoformat())))
        key = (study.policy_state_version, study.last_policy_error, study.trial_count)
        if key != self.study_key:
            self.study_key = key
            info = {
                "policy_state_version": study.policy_state_version,
                "last_policy_error": study.last_policy_error,
                "trial_count": study.trial_count,
            }
            events.append(("study", json.dumps(info)))
        return events


@dataclass(frozen=True)
class StudiesSnapshot:
    """The studies list as of one poll, each study's JSON (as in ``GET /studies``) built once for every viewer."""

    version: int
    studies: tuple[tuple[str, str], ...]  # (name, JSON text)

    def view(self, readable: Callable[[str], bool]) -> str:
        """The ``studies`` event's data for a viewer who may read the studies ``readable`` allows."""
        return '{"studies": [' + ", ".join(text for name, text in self.studies if readable(name)) + "]}"


class StudiesList:
    """The studies list, rebuilt only when the cheap change marks say a summary may have changed;
    ``shown`` writes one study (a ``Studies.list`` entry) as ``GET /studies`` shows it."""

    def __init__(self, service: Any, shown: Callable[[dict], str]) -> None:
        self.service, self.shown = service, shown
        self.marks: list[tuple] | None = None
        self.version = 0

    def poll(self) -> StudiesSnapshot | None:
        """A new snapshot if a summary may have changed since the last poll (or after ``forget``), else None."""
        with self.service.db.begin() as conn:
            marks = feed.summary_marks(conn)  # a few ms where the summaries scan every trial
        if marks == self.marks:
            return None
        studies = self.service.studies.list()
        self.marks, self.version = marks, self.version + 1
        return StudiesSnapshot(self.version, tuple((s["name"], self.shown(s)) for s in studies))

    def forget(self) -> None:
        """The next poll builds the list again (versions keep counting up)."""
        self.marks = None
