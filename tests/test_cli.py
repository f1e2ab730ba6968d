"""The command line as a newcomer meets it: read verbs that start fast (no torch), one-line errors,
the database URLs people paste (``postgres://``), and the start-up benchmark's smoke run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from localbo.api import ready_line
from localbo.config import Settings

from tests.conftest import run_benchmark

CLI = [sys.executable, "-m", "localbo.cli"]


def localbo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def assert_one_line_error(done: subprocess.CompletedProcess, says: str) -> None:
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()], done.stderr
    assert done.stderr.startswith("localbo: error: ") and says in done.stderr, done.stderr


def test_errors_a_user_can_act_on_are_one_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    assert_one_line_error(localbo("studies", "show", "nosuch", "--db", db), "study 'nosuch' not found")
    assert_one_line_error(localbo("studies", "export", "nosuch", "--db", db), "study 'nosuch' not found")
    assert_one_line_error(localbo("studies", "list", "--db", "not a url"), "database URL")
    refused = localbo("studies", "list", "--db", "postgresql://nobody@127.0.0.1:1/none")
    assert_one_line_error(refused, "database: ")
    bad_port = subprocess.run(
        [*CLI, "studies", "list", "--db", db], capture_output=True, text=True, env={"LOCALBO_PORT": "eighty"}
    )
    assert_one_line_error(bad_port, "setting PORT")


def test_the_read_verbs_import_no_torch(tmp_path: Path) -> None:
    """What makes them start in half a second here (torch and BoTorch take one to ten)."""
    db = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    for verb in (["studies", "list"], ["db", "upgrade"], ["studies", "show", "x"], ["studies", "export", "x"]):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "localbo.cli", *verb, "--db", db], capture_output=True, text=True
        )
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
        assert "localbo.bootstrap" in imported and "sqlalchemy" in imported, done.stderr[-500:]
        assert not {"torch", "botorch", "gpytorch"} & imported, verb


@pytest.mark.postgres
def test_postgres_urls_in_the_forms_people_paste(pg_url: str) -> None:
    assert Settings(database_url="postgres://u:p@db:5432/x").database_url == "postgresql+psycopg://u:p@db:5432/x"
    assert Settings(database_url="postgresql://u@db/x").database_url == "postgresql+psycopg://u@db/x"
    assert Settings(database_url="sqlite:///a.db").database_url == "sqlite:///a.db"
    plain = "postgres://" + pg_url.split("://", 1)[1]
    done = localbo("studies", "list", "--db", plain)
    assert done.returncode == 0 and done.stdout.startswith("name"), done.stderr


def test_the_ready_line_names_where_and_hides_the_password() -> None:
    line = ready_line(Settings(database_url="postgresql://me:secret@db/x", port=8123))
    assert line.startswith("localbo listening on http://127.0.0.1:8123, database postgresql+psycopg://me:***@db/x")
    assert "secret" not in line and "executor inline" in line


def test_startup_benchmark_smoke(tmp_path: Path) -> None:
    run_benchmark("startup.py", "--smoke", "--out", str(tmp_path))
    (run,) = json.loads((tmp_path / "startup.json").read_text())["runs"]
    assert run["ready_line_every_time"], "the server said it was up, in one line"
    assert 0 < run["serve"]["healthz_s"] <= run["serve"]["first_ask_s"]
    assert set(run["verbs"]) == {"db upgrade", "studies list", "studies show", "studies export"}
    assert "| current |" in (tmp_path / "startup.md").read_text()


def test_the_read_verbs_reach_a_running_server_and_say_what_they_read(tmp_path: Path) -> None:
    """Issue 28, item 11: --url (or LOCALBO_URL) with --token (LOCALBO_TOKEN) reads a running server over REST,
    and every read verb says on stderr which server or database it read (stdout stays the answer)."""
    import httpx
    from harness.processes import ServerProcess

    server = ServerProcess(f"sqlite:///{tmp_path / 'served.db'}", LOCALBO_TOKENS="secret=admin")
    try:
        auth = {"Authorization": "Bearer secret"}
        body = {"name": "kiln", "policy": "sobol", "space": {"temp": {"type": "float", "low": 300, "high": 900}}}
        assert httpx.post(f"{server.url}/api/v1/studies", json=body, headers=auth).status_code == 201
        (trial,) = httpx.post(f"{server.url}/api/v1/studies/kiln/ask", json={}, headers=auth).json()["trials"]
        told = httpx.post(f"{server.url}/api/v1/studies/kiln/trials/1/tell", json={"value": 0.5}, headers=auth)
        assert told.status_code == 200
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()

        def cli(*args: str, **env: str) -> subprocess.CompletedProcess:
            return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, cwd=elsewhere,
                                  env={**os.environ, **env})  # fmt: skip

        listed = cli("studies", "list", "--url", server.url, "--token", "secret")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("name") and "kiln" in listed.stdout and "0.5" in listed.stdout
        assert f"localbo: read server {server.url}" in listed.stderr
        shown = cli("studies", "show", "kiln", LOCALBO_URL=server.url, LOCALBO_TOKEN="secret")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["best"]["value"] == 0.5
        exported = cli("studies", "export", "kiln", "--url", server.url, LOCALBO_TOKEN="secret")
        assert exported.returncode == 0 and exported.stdout.splitlines()[0].startswith("number,"), exported.stderr
        assert len(exported.stdout.splitlines()) == 2
        assert not (elsewhere / "localbo.db").exists(), "reading a server creates no database"
        refused = cli("studies", "list", "--url", server.url)
        assert_one_line_error(refused, f"server {server.url}: 401")
        # without --url: the database, named (and a SQLite file that was not there is said to be new)
        local = cli("studies", "list")
        assert local.returncode == 0, local.stderr
        assert "localbo: read database sqlite:///./localbo.db (no file was there" in local.stderr
    finally:
        server.stop()
    unreachable = cli("studies", "list", "--url", "http://127.0.0.1:9")
    assert_one_line_error(unreachable, "server http://127.0.0.1:9")


def test_version_and_the_demo_port() -> None:
    done = localbo("--version")
    assert done.returncode == 0 and done.stdout.startswith("localbo 0."), done
    help_text = localbo("demo", "--help").stdout
    assert "LOCALBO_PORT" in help_text


def test_serve_says_listening_only_once_the_port_is_bound(tmp_path: Path) -> None:
    """Issue 28, item 11: a port already taken ends the server with uvicorn's error, and no "listening" line."""
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        done = subprocess.run(
            [*CLI, "serve", "--port", str(port), "--db", f"sqlite:///{tmp_path / 'x.db'}"],
            capture_output=True, text=True, timeout=240, env={**os.environ, "LOCALBO_TOKENS": ""},
        )  # fmt: skip
    finally:
        taken.close()
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-2000:]
    assert "listening on" not in output, output[-2000:]


def test_a_study_with_several_objectives_shows_its_front_from_the_server_and_the_database(tmp_path: Path) -> None:
    """No single best: ``studies show`` answers with the Pareto front (as GET .../pareto), ``studies list`` with
    the hypervolume, read from a server and from its database alike."""
    import httpx
    from harness.processes import ServerProcess

    db = f"sqlite:///{tmp_path / 'served.db'}"
    server = ServerProcess(db)
    objectives = [{"metric": "yield", "direction": "maximize"}, {"metric": "cost", "direction": "minimize"}]
    body = {"name": "blend", "policy": "sobol", "space": {"a": {"type": "float", "low": 0, "high": 1}},
            "objectives": objectives, "reference_point": {"yield": 0, "cost": 10}}  # fmt: skip
    try:
        assert httpx.post(f"{server.url}/api/v1/studies", json=body).status_code == 201
        for values in ({"yield": 1.0, "cost": 2.0}, {"yield": 2.0, "cost": 6.0}, {"yield": 0.5, "cost": 8.0}):
            (trial,) = httpx.post(f"{server.url}/api/v1/studies/blend/ask", json={}).json()["trials"]
            tell = f"{server.url}/api/v1/studies/blend/trials/{trial['number']}/tell"
            told = httpx.post(tell, json={"values": values})
            assert told.status_code == 200, told.text
        remote = localbo("studies", "show", "blend", "--url", server.url)
    finally:
        server.stop()
    local = localbo("studies", "show", "blend", "--db", db)
    for shown in (remote, local):
        assert shown.returncode == 0, shown.stderr
        answer = json.loads(shown.stdout)
        assert "best" not in answer and [t["number"] for t in answer["pareto"]["trials"]] == [1, 2]
        assert answer["pareto"]["hypervolume"] == 8 * 1 + 4 * 1  # (10 - 2) x 1, then (10 - 6) x (2 - 1)
    listed = localbo("studies", "list", "--db", db)
    assert listed.returncode == 0 and "hypervolume 12.0" in listed.stdout, listed
