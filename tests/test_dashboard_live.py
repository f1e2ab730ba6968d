"""The dashboard's routes on a live server with tokens: the public shell, the event streams, their load, shutdown."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import sqlalchemy
import uvicorn
from fastapi import FastAPI
from harness.processes import ServerProcess, free_port
from localbo.api import create_app
from localbo.bootstrap import prepare_database
from localbo.broadcast import LIST_POLL_SECONDS
from localbo.config import Settings

pytestmark = pytest.mark.live

TOKENS = "adm=admin;team=read:team-*"
ADM = {"Authorization": "Bearer adm"}
TEAM = {"Authorization": "Bearer team"}
SPACE = {"x": {"type": "float", "low": 0, "high": 1}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    db = tmp_path_factory.mktemp("dash") / "localbo.db"
    server = ServerProcess(f"sqlite:///{db}", LOCALBO_TOKENS=TOKENS)
    yield server
    server.stop()


def create(url: str, name: str) -> None:
    r = httpx.post(f"{url}/api/v1/studies", json={"name": name, "space": SPACE, "policy": "sobol"}, headers=ADM)
    assert r.status_code == 201, r.text


def events(response: httpx.Response, until: float) -> Iterator[tuple[str, dict]]:
    """(event, data) pairs from an event stream, until the deadline."""
    name = None
    for line in response.iter_lines():
        if time.monotonic() > until:
            return
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:") and name:
            yield name, json.loads(line[5:])


def test_the_page_shell_loads_without_a_token_but_its_data_do_not(server: ServerProcess) -> None:
    root = httpx.get(server.url + "/")
    assert root.status_code == 307 and root.headers["location"] == "/dashboard/"
    page = httpx.get(server.url + "/dashboard/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"] and "app.js" in page.text
    script = httpx.get(server.url + "/dashboard/static/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert httpx.get(server.url + "/dashboard/static/../../api/v1/studies").status_code in (401, 404)
    create(server.url, "secret-1")
    for path in ("/api/v1/studies/secret-1/series", "/api/v1/studies/secret-1/events", "/api/v1/events"):
        r = httpx.get(server.url + path)
        assert r.status_code == 401 and r.json()["detail"] == "Authorization: expected 'Bearer <token>'", path
        r = httpx.get(server.url + path, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401, path
    for path in ("/api/v1/studies/secret-1/series", "/api/v1/studies/secret-1/events"):
        r = httpx.get(server.url + path, headers=TEAM)
        assert r.status_code == 403 and "may not read study 'secret-1'" in r.json()["detail"], path


def stream_a_tell(server: ServerProcess, study: str, deadline_s: float) -> float:
    """Open the study's event stream, tell a trial, return how long the tell took to arrive on the stream."""
    create(server.url, study)
    asked = httpx.post(f"{server.url}/api/v1/studies/{study}/ask", json={"count": 2}, headers=ADM).json()["trials"]
    series = httpx.get(f"{server.url}/api/v1/studies/{study}/series", headers=TEAM).json()
    params = {"after": series["last"], "since": series["as_of"]}
    with httpx.stream(
        "GET", f"{server.url}/api/v1/studies/{study}/events", params=params, headers=TEAM, timeout=deadline_s
    ) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        stream = events(response, time.monotonic() + deadline_s)
        # at once: the trials still open when the series was read, then the policy version and trial count
        (first, opened), (second, _) = next(stream), next(stream)
        assert (first, second, opened["number"]) == ("trials", "study", [1, 2])
        told_at = time.monotonic()
        r = httpx.post(
            f"{server.url}/api/v1/studies/{study}/trials/{asked[1]['number']}/tell", json={"value": 0.5}, headers=ADM
        )
        assert r.status_code == 200, r.text
        for name, data in stream:
            if name == "trials" and data["state"] == ["complete"]:
                assert data["number"] == [asked[1]["number"]] and data["value"] == [0.5]
                return time.monotonic() - told_at
    pytest.fail("the tell did not arrive on the event stream")


def test_study_events_stream_a_tell(server: ServerProcess) -> None:
    stream_a_tell(server, "team-live", deadline_s=60)  # a generous deadline: a loaded machine is slow, not wrong


@pytest.mark.timing
def test_study_events_stream_a_tell_within_a_second(server: ServerProcess) -> None:
    assert stream_a_tell(server, "team-live-fast", deadline_s=8) < 1.5


def test_studies_events_list_only_what_the_token_may_read(server: ServerProcess) -> None:
    create(server.url, "team-a")
    create(server.url, "other-a")
    with httpx.stream("GET", f"{server.url}/api/v1/events", headers=TEAM, timeout=10) as response:
        stream = events(response, time.monotonic() + 8)
        name, data = next(stream)
        names = {s["name"] for s in data["studies"]}
        assert name == "studies" and "team-a" in names and not any(n.startswith(("other", "secret")) for n in names)
        create(server.url, "team-b")  # a new study appears on the open stream
        for _, data in stream:
            if "team-b" in {s["name"] for s in data["studies"]}:
                break
        else:
            pytest.fail("the new study did not arrive on the event stream")


def test_a_reader_hears_nothing_when_only_a_study_it_may_not_read_changes(server: ServerProcess) -> None:
    create(server.url, "team-quiet")
    create(server.url, "other-busy")
    with httpx.stream("GET", f"{server.url}/api/v1/events", headers=TEAM, timeout=60) as response:
        stream = events(response, time.monotonic() + 60)
        # the list as of the stream's last poll (up to a second old), then with the new study
        first = next(data for _, data in stream if "team-quiet" in {s["name"] for s in data["studies"]})
        busy = f"{server.url}/api/v1/studies/other-busy"
        for _ in range(3):  # activity the team may not see, over more than two of the list's polls
            asked = httpx.post(f"{busy}/ask", headers=ADM).json()["trials"][0]
            httpx.post(f"{busy}/trials/{asked['number']}/tell", json={"value": 1.0}, headers=ADM)
            time.sleep(1)
        assert httpx.post(f"{server.url}/api/v1/studies/team-quiet/ask", headers=ADM).status_code == 200
        name, data = next(stream)  # the first event since: the team's own study changed, nothing before it
        assert name == "studies" and data != first
        quiet = {s["name"]: s["summary"] for s in data["studies"]}["team-quiet"]
        assert quiet["n_running"] == 1


def test_one_poll_serves_every_open_list_stream(tmp_path: Path) -> None:
    """Twelve open list streams cost the database what one does: one poll of the change marks per interval."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'fan.db'}")
    prepare_database(settings)
    app = create_app(settings)
    marks_reads: list[float] = []

    def count(conn, cursor, statement: str, *args) -> None:  # noqa: ANN001
        if "GROUP BY trials.study_id, trials.state" in statement:
            marks_reads.append(time.monotonic())

    sqlalchemy.event.listen(app.state.service.db, "before_cursor_execute", count)
    viewers = 12
    with in_process_server(app) as url:
        create(url, "watched")
        opened = threading.Barrier(viewers + 1, timeout=60)
        done = threading.Event()

        def view() -> None:
            with httpx.stream("GET", f"{url}/api/v1/events", headers=ADM, timeout=60) as response:
                stream = events(response, time.monotonic() + 60)  # held: dropping it would close the response
                assert next(stream)[0] == "studies"
                opened.wait()
                done.wait(60)

        threads = [threading.Thread(target=view) for _ in range(viewers)]
        for thread in threads:
            thread.start()
        opened.wait()
        started, reads_before = time.monotonic(), len(marks_reads)
        time.sleep(4)
        held_s, reads = time.monotonic() - started, len(marks_reads) - reads_before
        done.set()
        for thread in threads:
            thread.join(60)
    # one poll per second per process, however many watch (before: one per viewer per second)
    assert 0 < reads <= held_s / LIST_POLL_SECONDS + 2, (reads, held_s)


@contextmanager
def in_process_server(app: FastAPI) -> Iterator[str]:
    """``app`` served by uvicorn in a thread of this process, so the test can watch its engine."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=5)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the in-process server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        app.state.service.close(wait=True)


def test_server_stops_promptly_with_an_event_stream_open(tmp_path: Path) -> None:
    server = ServerProcess(f"sqlite:///{tmp_path / 'stop.db'}")
    try:
        create(server.url, "held")
        with httpx.stream("GET", f"{server.url}/api/v1/studies/held/events", timeout=10) as response:
            lines = response.iter_lines()
            assert next(lines).startswith("retry:")
            started = time.monotonic()
            server.stop()
            assert time.monotonic() - started < 12  # not the 15 s kill: the stream ended on the signal
            assert server.proc.returncode == -signal.SIGTERM  # uvicorn re-raises the signal after a graceful stop
            list(lines)  # the stream ends cleanly
    finally:
        server.stop()
