"""The dashboard's routes on a live server with tokens: the public shell, the event streams, shutdown."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from harness.processes import ServerProcess

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
