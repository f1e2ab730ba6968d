"""A study's page streams share one poll of the study per process, each stream sending only what it has not seen.

The counts here are exact, not rates: the broadcast's pause between polls is replaced by a gate the
test opens one poll at a time, and every wait is for an event, with a generous deadline (a loaded
machine is slow, not wrong).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from conftest import unique
from fastapi import FastAPI
from localbo import broadcast
from localbo.api import create_app
from localbo.api.progress import study_json
from localbo.bootstrap import prepare_database
from localbo.broadcast import StudyBroadcast
from localbo.config import Settings
from localbo.progress import Feed, StudiesList
from localbo.storage import feed
from test_dashboard_live import events, in_process_server

ADM = {"Authorization": "Bearer adm"}
TEAM = {"Authorization": "Bearer team"}
SPACE = {"x": {"type": "float", "low": 0, "high": 1}}
API = "/api/v1/studies"
DEADLINE_S = 60.0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"waited {DEADLINE_S:.0f} s for {what}"
        time.sleep(0.02)


class Gate:
    """Stands in for ``StudyBroadcast._pause``: a poll follows each ``open()``, none otherwise."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.paused = 0  # pauses begun: the polls done so far (a poll comes first, then a pause)
        self.opened = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        gate = self

        async def pause(broadcast: StudyBroadcast) -> None:
            with gate.lock:
                gate.paused += 1
                ticket = gate.paused
            while gate.opened < ticket and broadcast._viewers and not broadcast.closing.is_set():
                await anyio.sleep(0.01)

        monkeypatch.setattr(StudyBroadcast, "_pause", pause)

    def open(self) -> None:
        """Let one more poll through and wait until it is done (the poller paused again)."""
        with self.lock:
            self.opened += 1
            want = self.opened + 1
        wait_for(lambda: self.paused >= want, "the study's poll")


class Viewer(threading.Thread):
    """One open study page: its stream's (event, data) pairs, as they come."""

    def __init__(self, url: str, study: str, headers: dict[str, str], **params: Any) -> None:
        super().__init__(daemon=True)
        self.url, self.study, self.headers, self.params = url, study, headers, params
        self.got: list[tuple[str, dict]] = []
        self.status: int | None = None
        self.ended = threading.Event()
        self.leave = threading.Event()

    def run(self) -> None:
        try:
            url = f"{self.url}{API}/{self.study}/events"
            with httpx.stream("GET", url, params=self.params, headers=self.headers, timeout=DEADLINE_S) as response:
                self.status = response.status_code
                if response.status_code == 200:
                    for pair in events(response, time.monotonic() + 4 * DEADLINE_S):
                        self.got.append(pair)
                        if self.leave.is_set():
                            break
        finally:
            self.ended.set()

    def trials(self) -> list[dict]:
        return [data for name, data in self.got if name == "trials"]

    def values(self) -> dict[int, float | None]:
        """Trial number -> value, as the dashboard merges the trials events."""
        merged: dict[int, float | None] = {}
        for cols in self.trials():
            merged.update(zip(cols["number"], cols["value"], strict=True))
        return merged


@pytest.fixture
def app(tmp_path: Path) -> FastAPI:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'streams.db'}", tokens="adm=admin;team=read:team-*")
    prepare_database(settings)
    return create_app(settings)


@pytest.fixture
def url(app: FastAPI) -> Iterator[str]:
    with in_process_server(app) as url:
        yield url


def create(url: str, name: str) -> None:
    r = httpx.post(f"{url}{API}", json={"name": name, "space": SPACE, "policy": "sobol"}, headers=ADM)
    assert r.status_code == 201, r.text


def ask(url: str, name: str, count: int = 1) -> list[int]:
    r = httpx.post(f"{url}{API}/{name}/ask", json={"count": count}, headers=ADM)
    assert r.status_code == 200, r.text
    return [t["number"] for t in r.json()["trials"]]


def tell(url: str, name: str, number: int, value: float) -> None:
    r = httpx.post(f"{url}{API}/{name}/trials/{number}/tell", json={"value": value}, headers=ADM)
    assert r.status_code == 200, r.text


def opened(viewers: list[Viewer]) -> None:
    """Start the viewers and wait until each has its first events (its own catch-up read ends with ``study``)."""
    for viewer in viewers:
        viewer.start()
    wait_for(lambda: all(any(n == "study" for n, _ in v.got) or v.ended.is_set() for v in viewers), "first events")
    assert all(v.status == 200 for v in viewers), [v.status for v in viewers]


def leave(viewers: list[Viewer], nudge: Callable[[], None]) -> None:
    """Each viewer leaves at its next event; ``nudge`` makes one."""
    for viewer in viewers:
        viewer.leave.set()
    nudge()
    wait_for(lambda: all(v.ended.is_set() for v in viewers), "the viewers to leave")


@pytest.mark.live
def test_many_study_pages_cost_one_read_of_the_study_per_poll(
    app: FastAPI, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twelve open pages of one study: each poll reads the study once for all of them (it was once each)."""
    gate = Gate()
    gate.install(monkeypatch)
    reads: list[int] = []
    trial_states = feed.trial_states

    def counted(conn: Any, study_id: int, **kw: Any) -> Any:
        reads.append(study_id)
        return trial_states(conn, study_id, **kw)

    monkeypatch.setattr(feed, "trial_states", counted)
    create(url, "watched")
    ask(url, "watched", 3)  # open trials: every poll reads their states
    viewers = [Viewer(url, "watched", ADM, after=0) for _ in range(12)]
    opened(viewers)
    wait_for(lambda: gate.paused >= 1, "the first poll")
    hub = app.state.live
    assert len(hub.watched) == 1  # one broadcast for the study, however many watch
    broadcast = next(iter(hub.watched.values()))
    polls_before, reads_before = broadcast.polls, len(reads)

    tell(url, "watched", 2, value=0.25)
    gate.open()
    wait_for(lambda: all(v.values().get(2) == 0.25 for v in viewers), "the tell on every stream")
    gate.open()
    gate.open()
    assert broadcast.polls - polls_before == 3
    # one read per poll however many watch; each stream reading for itself would have read 12 times to hear the tell
    assert len(reads) - reads_before == 3
    for viewer in viewers:
        assert viewer.values() == {1: None, 2: 0.25, 3: None}
        assert [cols["number"] for cols in viewer.trials()] == [[1, 2, 3], [2]]  # each trial once per change

    def a_change() -> None:
        tell(url, "watched", 3, value=0.5)
        gate.open()

    leave(viewers, a_change)
    wait_for(lambda: not hub.watched, "the broadcast to end with its last viewer")
    assert broadcast._task is None


@pytest.mark.live
def test_each_page_hears_only_its_study_from_its_own_cursor(app: FastAPI, url: str) -> None:
    """Streams of two studies, from different cursors and tokens: each hears its own study's trials
    above its own ``after`` and nothing else; a token sees no study it may not read."""
    create(url, "team-a")
    create(url, "other-b")
    ask(url, "team-a", 2)
    ask(url, "other-b", 2)
    tell(url, "team-a", 1, value=1.0)
    tell(url, "other-b", 1, value=-1.0)
    forbidden = Viewer(url, "other-b", TEAM)
    forbidden.run()
    assert forbidden.status == 403 and forbidden.got == []
    a_all, a_new = Viewer(url, "team-a", TEAM, after=0), Viewer(url, "team-a", TEAM, after=2)
    b_all = Viewer(url, "other-b", ADM, after=0)
    viewers = [a_all, a_new, b_all]
    opened(viewers)
    assert len(app.state.live.watched) == 2  # a broadcast per study

    tell(url, "team-a", 2, value=2.0)
    tell(url, "other-b", 2, value=-2.0)
    ask(url, "team-a")
    ask(url, "other-b")
    wait_for(lambda: {2, 3} <= set(a_new.values()) and {2, 3} <= set(b_all.values()), "the changes")
    wait_for(lambda: {2, 3} <= set(a_all.values()), "the changes")
    assert a_all.values() == {1: 1.0, 2: 2.0, 3: None}
    assert a_new.values() == {2: 2.0, 3: None}  # trial 2 was open when it connected: followed; 1 was not
    assert b_all.values() == {1: -1.0, 2: -2.0, 3: None}
    for viewer in viewers:
        counts = [data["trial_count"] for name, data in viewer.got if name == "study"]
        assert counts[-1] == 3 and counts == sorted(counts)

    def a_change() -> None:
        tell(url, "team-a", 3, value=3.0)
        tell(url, "other-b", 3, value=-3.0)

    leave(viewers, a_change)


@pytest.mark.live
def test_a_deleted_study_ends_its_streams_and_its_new_namesake_is_another(app: FastAPI, url: str) -> None:
    create(url, "team-gone")
    ask(url, "team-gone")
    old = [Viewer(url, "team-gone", TEAM) for _ in range(3)]
    opened(old)
    assert httpx.delete(f"{url}{API}/team-gone", headers=ADM).status_code == 204
    create(url, "team-gone")  # the same name, another study
    tell_value = 7.0
    ask(url, "team-gone")
    tell(url, "team-gone", 1, value=tell_value)
    wait_for(lambda: all(v.ended.is_set() for v in old), "the old study's streams to end")
    for viewer in old:
        assert viewer.got[-1] == ("gone", {"study": "team-gone"})
        assert all(tell_value not in cols["value"] for cols in viewer.trials())  # nothing of the namesake
    new = Viewer(url, "team-gone", TEAM)
    opened([new])
    assert new.values() == {1: tell_value}
    leave([new], lambda: ask(url, "team-gone"))


@pytest.mark.parametrize("since", ["0.5", "1700000000", "2026-01-31", "yesterday", ""])
def test_events_since_is_an_iso_date_time(api: Any, since: str) -> None:
    """``since`` is documented as a date-time: a number of seconds or a bare date is a 422 naming it."""
    name = unique()
    r = api.post(API, json={"name": name, "space": SPACE, "policy": "random"})
    assert r.status_code == 201, r.text
    r = api.get(f"{API}/{name}/events", params={"since": since})
    assert r.status_code == 422 and r.json()["detail"].startswith("since: expected an ISO 8601 date-time"), r.text
    assert r.json()["errors"] == [{"field": "since", "message": r.json()["detail"].removeprefix("since: ")}]


def test_a_stream_that_fell_behind_the_kept_changes_reads_for_itself(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The broadcast keeps its last few changes; a stream further behind reads the study itself and misses nothing."""
    monkeypatch.setattr(broadcast, "KEPT_CHANGES", 2)
    monkeypatch.setattr(broadcast, "STUDY_POLL_SECONDS", 3600.0)  # the poller's first poll only; the test polls
    name = unique()
    assert api.post(API, json={"name": name, "space": SPACE, "policy": "random"}).status_code == 201
    db = api.app.state.service.db

    def asked() -> int:
        r = api.post(f"{API}/{name}/ask", json={"count": 1})
        assert r.status_code == 200, r.text
        return r.json()["trials"][0]["number"]

    async def scenario() -> None:
        hub = broadcast.Live(StudiesList(api.app.state.service, study_json), anyio.Event())
        slow, quick = Feed(db, name, after=0), Feed(db, name, after=0)
        async with hub.watching(slow) as study, hub.watching(quick):
            assert len(hub.watched) == 1
            seen_slow, _ = await study.catch_up(slow)
            seen_quick, _ = await study.catch_up(quick)
            with anyio.fail_after(DEADLINE_S):
                while not study.polls:  # the poller's own first poll, then it waits an hour
                    await anyio.sleep(0.01)
            reads = study.polls
            for _ in range(4):  # four changes, one poll each; only the quick stream keeps up
                number = asked()
                await study._poll()
                seen_quick, events = await study.next(quick, seen_quick, timeout=0)
                assert [json.loads(data)["number"] for event, data in events if event == "trials"] == [[number]]
            assert study.polls - reads == 4 and len(study.changes) == 2
            seen_slow, events = await study.next(slow, seen_slow, timeout=0)  # its oldest change is gone
            assert seen_slow == study.published
            assert [json.loads(data)["number"] for event, data in events if event == "trials"] == [[1, 2, 3, 4]]
            assert await study.next(slow, seen_slow, timeout=0) == (seen_slow, [])  # and nothing twice

    anyio.run(scenario)
