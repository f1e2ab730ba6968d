"""What people watching a study read: its trials as compact columns, and a feed of what changed.

The series is one JSON object of columns (one entry per trial, by number) whose arrays the
database builds itself, so 50,000 trials answer in one quick request. A study's feed polls the
database (a few indexed queries every ``POLL_SECONDS``), so it sees writes of every API process
sharing the database; it remembers what it sent and returns only what changed since. One read of a
study's feed serves all its viewers in a process (``Change``, ``Feed.apply``), and the studies list is
built once per change for every viewer (``StudiesList``); ``broadcast`` fans both out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from sqlalchemy import Engine

from localbo.domain.identity import study_token
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


Events = list[tuple[str, str]]


@dataclass(frozen=True, eq=False)
class Seen:
    """What a viewer has been sent: every trial up to ``cursor``, the states of those of them still open, the
    study's head. Never changed once made, and told apart by identity: viewers in step share one, so a change
    is worked out once for all of them (``Change.applied``)."""

    cursor: int
    open: Mapping[int, str]
    head: dict[str, Any] | None = None

    @cached_property
    def value(self) -> tuple[Any, ...]:
        """What it holds, to find a viewer that has seen the same after its own read (``Feed.apply``'s ``same``)."""
        return self.cursor, frozenset(self.open.items()), tuple((self.head or {}).items())

    def track(self, rows: Iterable[tuple[int, str]], first: bool = False) -> tuple[list[tuple[int, str]], Seen]:
        """The trials among ``rows`` (number, state, by number) not seen in that state (every one on a first read
        with ``since``), and what is seen after them; rows of trials not followed (at or below the cursor and
        finished when last heard of) are left out."""
        changed: list[tuple[int, str]] = []
        still_open: dict[int, str] | None = None  # copied at the first difference
        for n, state in rows:
            new, known = n > self.cursor, self.open.get(n)
            if not (first or new or known is not None):
                continue
            if first or new or known != state:
                changed.append((n, state))
            if (state in OPEN_STATES) != (known is not None) or (known is not None and known != state):
                still_open = dict(self.open) if still_open is None else still_open
                if state in OPEN_STATES:
                    still_open[n] = state
                else:
                    del still_open[n]
        if not changed and still_open is None:
            return changed, self
        cursor = max(self.cursor, changed[-1][0]) if changed else self.cursor
        return changed, Seen(cursor, self.open if still_open is None else still_open, self.head)

    def told(self, change: Change) -> tuple[Events, Seen]:
        """The events that tell a viewer who has seen this (trials of ``change`` already chosen) about it."""
        events = [("trials", change.columns)] if change.columns else []
        if change.study == self.head:
            return events, self
        return events + [("study", change.study_json)], replace(self, head=change.study)


@dataclass(frozen=True)
class Change:
    """What one read of a study's feed found: its trials that changed (with their columns) and its head.

    A study's broadcast reads one feed for all of its viewers and hands each the same change; a viewer
    keeps only what it has not seen (``Feed.apply``), as if it had read the database itself.
    """

    as_of: str  # the time the read began: what to pass as ``since`` on a reconnect
    study: dict[str, Any] | None  # policy_state_version, last_policy_error, trial_count; None: the study is gone
    states: tuple[tuple[int, str], ...] = ()  # (number, state) of the trials that changed, by number
    columns: str = ""  # those trials' columns as ``series`` gives them, with ``as_of``; "" when none changed

    def only(self, numbers: list[int]) -> Change:
        """The change narrowed to the trials ``numbers`` (a subset of its own, by number); itself when all."""
        if len(numbers) == len(self.states):
            return self
        if not numbers:
            return replace(self, states=(), columns="")
        kept = set(numbers)
        cols = self._parsed
        rows = [i for i, n in enumerate(cols["number"]) if n in kept]
        narrowed: dict[str, Any] = {name: [cols[name][i] for i in rows] for name in feed.SERIES_COLUMNS}
        narrowed["reasons"] = {k: v for k, v in cols["reasons"].items() if int(k) in kept}
        narrowed["as_of"] = cols["as_of"]
        states = tuple(s for s in self.states if s[0] in kept)
        return replace(self, states=states, columns=json.dumps(narrowed, separators=(",", ":")))

    @cached_property
    def study_json(self) -> str:
        """The ``study`` event's data, built once for every viewer."""
        return json.dumps(self.study)

    @cached_property
    def applied(self) -> dict[Seen, tuple[Events, Seen]]:
        """What this change told the viewers who had seen a given ``Seen``, and what they have seen after it."""
        return {}

    @cached_property
    def _parsed(self) -> dict[str, Any]:  # only for a viewer that is not in step with the broadcast: rare
        parsed: dict[str, Any] = json.loads(self.columns)
        return parsed


class Feed:
    """One viewer's change feed: trials above ``after``, open trials changing state, policy updates.

    ``poll`` reads the database for this viewer alone; ``apply`` takes what another feed of the study
    read (``read``: the study's broadcast, one read for every viewer) and keeps what this one has not seen.
    ``after=None``: only what changes from now on (the broadcast's own feed).
    """

    def __init__(self, db: Engine, name: str, after: int | None = 0, since: datetime | None = None) -> None:
        with db.begin() as conn:
            study = repo.get_study(conn, name)
            if study is None:
                raise NotFound(f"study {name!r} not found")
            cursor = study.trial_count if after is None else after
            self.seen = Seen(cursor, {n: "running" for n in feed.open_trial_numbers(conn, study.id, cursor)})
        self.db, self.name, self.study_id = db, name, study.id
        self.study = study_token(study.id, study.created_at)  # this study for good: SQLite may reuse its id
        self.since = since - CLOCK_SLACK if since is not None else None

    @property
    def cursor(self) -> int:
        return self.seen.cursor

    @property
    def open(self) -> Mapping[int, str]:
        return self.seen.open

    def poll(self) -> Events:
        """The (event, JSON data) pairs for what changed since the last poll."""
        change = self.read()
        if change.study is None:
            return self._gone()
        events, self.seen = self.seen.told(change)
        return events

    def apply(self, change: Change, same: MutableMapping[tuple[Any, ...], Seen] | None = None) -> Events:
        """The events for what ``change`` (another feed's read of this study) holds that this viewer has not
        seen: trials above its cursor, or open when it last heard of them and now in another state. Viewers
        that had seen the same (``Seen``) share the answer: it is worked out once. ``same``: the states of
        the study's viewers by value, so that one that caught up by itself joins those it now equals."""
        if change.study is None:
            return self._gone()
        done = change.applied.get(self.seen)
        if done is None:
            if same is not None:
                self.join(same)
                done = change.applied.get(self.seen)
        if done is None:
            mine, seen = self.seen.track(change.states)
            events, seen = seen.told(change.only([n for n, _ in mine]))
            done = change.applied[self.seen] = events, seen if same is None else same.setdefault(seen.value, seen)
        events, self.seen = done
        return events

    def join(self, same: MutableMapping[tuple[Any, ...], Seen]) -> None:
        """Share the ``Seen`` of the viewers that have seen what this one has (by value), if any."""
        self.seen = same.setdefault(self.seen.value, self.seen)

    def read(self) -> Change:
        """What changed since the last read, from the database; this feed counts its trials as seen."""
        as_of = utcnow().isoformat()
        with self.db.begin() as conn:
            study = repo.get_study(conn, self.name)
            if study is None or study_token(study.id, study.created_at) != self.study:  # deleted (and made again)
                return Change(as_of, None)
            first, since = self.since is not None, self.since
            self.since = None
            states: list[tuple[int, str]] = []
            columns = ""
            if study.trial_count > self.cursor or self.open or first:
                rows = feed.trial_states(
                    conn, study.id, after=self.cursor, numbers=sorted(self.open), completed_since=since
                )
                states, self.seen = self.seen.track(rows, first)
                if states:
                    cols = feed.series_columns(conn, study.id, after=None, numbers=[n for n, _ in states])
                    columns = columns_json(cols, as_of=as_of)
        info = {
            "policy_state_version": study.policy_state_version,
            "last_policy_error": study.last_policy_error,
            "trial_count": study.trial_count,
            "notes_version": study.notes_version,  # a note written: viewers read GET .../notes again
        }
        return Change(as_of, info, tuple(states), columns)

    def _gone(self) -> Events:
        return [("gone", json.dumps({"study": self.name}))]


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
