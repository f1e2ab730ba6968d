"""The command line as a newcomer meets it: read verbs that start fast (no torch), one-line errors,
the database URLs people paste (``postgres://``), and the start-up benchmark's smoke run."""

from __future__ import annotations

import json
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
