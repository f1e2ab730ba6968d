"""Schema through Alembic, and the CLI that applies and reads it, on SQLite and Postgres."""

from __future__ import annotations

import json
import subprocess
import sys

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from localbo.storage.db import make_engine, upgrade
from localbo.storage.models import Base
from sqlalchemy import create_engine, inspect, text


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localbo.cli", *args], capture_output=True, text=True, timeout=120)


def test_db_upgrade_builds_exactly_the_models_schema(db_url: str) -> None:
    result = run_cli("db", "upgrade", "--db", db_url)
    assert result.returncode == 0, result.stderr
    engine = make_engine(db_url)
    try:
        assert {"studies", "trials", "planned_points", "idempotency_keys", "alembic_version"} <= set(
            inspect(engine).get_table_names()
        )
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
            assert diff == [], diff
        upgrade(engine)  # a second upgrade is a no-op
    finally:
        engine.dispose()


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'w.db'}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 30000
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
    engine.dispose()


def test_cli_lists_shows_and_exports_studies(api, db_url: str) -> None:
    from conftest import unique

    name = unique("cli")
    api.post("/api/v1/studies", json={"name": name, "space": {"x": {"type": "float", "low": 0, "high": 1}}})
    number = api.post(f"/api/v1/studies/{name}/ask").json()["trials"][0]["number"]
    api.post(f"/api/v1/studies/{name}/trials/{number}/tell", json={"value": 0.5})
    listed = run_cli("studies", "list", "--db", db_url)
    assert listed.returncode == 0 and name in listed.stdout
    shown = json.loads(run_cli("studies", "show", name, "--db", db_url).stdout)
    assert shown["best"]["value"] == 0.5 and shown["study"]["summary"]["n_complete"] == 1
    exported = run_cli("studies", "export", name, "--db", db_url, "--format", "csv").stdout.splitlines()
    assert exported[0].startswith("number,state,value,x") and exported[1].startswith("1,complete,0.5,")


def test_server_serves_docs_and_health_on_loopback(live_server) -> None:
    import httpx

    assert live_server.url.startswith("http://127.0.0.1:")
    health = httpx.get(f"{live_server.url}/healthz").json()
    assert health["status"] == "ok" and health["database"] in ("sqlite", "postgresql")
    assert "swagger" in httpx.get(f"{live_server.url}/docs").text.lower()
    spec = httpx.get(f"{live_server.url}/openapi.json").json()
    assert "/api/v1/studies/{study}/ask" in spec["paths"]


def test_pg_url_reaches_a_real_postgres(pg_url: str) -> None:
    engine = create_engine(pg_url)
    with engine.connect() as conn:
        assert conn.execute(text("select version()")).scalar().startswith("PostgreSQL")
    engine.dispose()
