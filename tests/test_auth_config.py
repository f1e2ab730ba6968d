"""Auth configuration (issue 16, item 1): a LOCALBO_TOKENS that parses to no token is no auth everywhere, so a
non-loopback bind refuses it unless ``--insecure``; a malformed entry stops the start, never skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from harness.processes import ServerProcess
from localbo.cli import app, auth_refusal
from typer.testing import CliRunner

SECRET = "s3cr3t-value"  # must never be echoed in an error
NO_TOKEN = ["", ";", " ", " ; ; ", "\t;\n"]
MALFORMED = {
    f"{SECRET}=": "has no scope",
    f"{SECRET}= , ": "has no scope",
    f"{SECRET}=root": "unknown scope 'root'",
    f"{SECRET}=read": "unknown scope 'read'",
    f"{SECRET}=write:": "unknown scope 'write:'",
    f"{SECRET}=admin:beam-*": "unknown scope 'admin:beam-*'",
    f"{SECRET}=admin,": "unknown scope ''",
    f"a=admin;{SECRET}": "entry 2: no '='",
    "=admin": "no token before '='",
    f"{SECRET} x=admin": "whitespace",
    f"{SECRET}=admin;{SECRET}=read:x": "entry 2: the same token",
}


def serve(tmp_path: Path, tokens: str, *args: str) -> subprocess.CompletedProcess:
    """The real ``localbo serve`` in a child process (refused before it binds or touches the database)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALBO_HOST", "LOCALBO_PORT")}
    db = tmp_path / "refused.db"
    return subprocess.run(
        [sys.executable, "-m", "localbo.cli", "serve", "--port", "0", "--db", f"sqlite:///{db}", *args],
        env={**env, "LOCALBO_TOKENS": tokens},
        capture_output=True,
        text=True,
        timeout=60,
    )


def serve_in_process(tmp_path: Path, tokens: str, *args: str):  # noqa: ANN201
    db = tmp_path / "refused.db"
    result = CliRunner().invoke(
        app,
        ["serve", "--port", "0", "--db", f"sqlite:///{db}", *args],
        env={"LOCALBO_TOKENS": tokens, "LOCALBO_HOST": None},
    )
    assert not db.exists(), "refused before touching the database"
    return result


def test_a_tokens_setting_with_no_token_is_refused_on_a_public_bind(tmp_path: Path) -> None:
    proc = serve(tmp_path, ";", "--host", "0.0.0.0")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "refusing to bind 0.0.0.0 without tokens" in proc.stderr
    assert "LOCALBO_TOKENS holds no token (';')" in proc.stderr and "--insecure" in proc.stderr
    assert not (tmp_path / "refused.db").exists()


@pytest.mark.parametrize("tokens", NO_TOKEN)
def test_every_setting_that_parses_to_no_token_is_refused_on_a_public_bind(tmp_path: Path, tokens: str) -> None:
    result = serve_in_process(tmp_path, tokens, "--host", "0.0.0.0")
    assert result.exit_code == 2, result.output
    assert "refusing to bind 0.0.0.0 without tokens" in result.stderr
    assert auth_refusal(tokens, "::", insecure=False) is not None  # any non-loopback address
    assert auth_refusal(tokens, "127.0.0.1", insecure=False) is None  # loopback: no auth is allowed
    assert auth_refusal(tokens, "0.0.0.0", insecure=True) is None


@pytest.mark.parametrize(("tokens", "says"), MALFORMED.items())
def test_a_malformed_tokens_setting_stops_the_start_naming_the_entry(tmp_path: Path, tokens: str, says: str) -> None:
    for args in (("--host", "127.0.0.1"), ("--host", "0.0.0.0", "--insecure")):  # loopback or not, insecure or not
        result = serve_in_process(tmp_path, tokens, *args)
        assert result.exit_code == 2, result.output
        assert "refusing to start: LOCALBO_TOKENS entry" in result.stderr and says in result.stderr, result.stderr
        assert SECRET not in result.output


def test_valid_tokens_pass_the_check_on_a_public_bind() -> None:
    assert auth_refusal("adm=admin; rw=write:beam-*,read:*;", "0.0.0.0", insecure=False) is None


def test_the_app_reads_a_setting_with_no_token_as_no_auth(tmp_path: Path) -> None:
    from localbo.api import create_app
    from localbo.bootstrap import prepare_database
    from localbo.config import Settings

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'open.db'}", tokens=" ; ")
    prepare_database(settings)
    app = create_app(settings)
    with TestClient(app) as client:
        assert client.get("/api/v1/studies").status_code == 200  # the same "no auth" the CLI check assumed


def test_insecure_starts_a_public_server_without_tokens(tmp_path: Path) -> None:
    server = ServerProcess(
        f"sqlite:///{tmp_path / 'open.db'}", args=("--host", "0.0.0.0", "--insecure"), LOCALBO_TOKENS=";"
    )
    try:
        assert httpx.get(f"{server.url}/api/v1/studies", timeout=30).status_code == 200
    finally:
        server.stop()
