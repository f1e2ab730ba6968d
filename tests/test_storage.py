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


def test_a_database_of_the_previous_release_upgrades_and_its_studies_keep_working(tmp_path) -> None:
    """A database at revision 0006 (before several objectives), holding a study with named metrics and a told
    trial, upgraded by the migrations: the study reads, asks and tells as before, and has no reference point."""
    from fastapi.testclient import TestClient
    from localbo.api import create_app
    from localbo.bootstrap import prepare_database
    from localbo.config import Settings

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    upgrade(engine, "0006")
    now = "2026-11-20 10:00:00.000000"
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO studies (name, direction, space, policy, policy_config, policy_config_version,"
                " user_metadata, seed, policy_state, policy_state_version, trial_count, created_at, objectives,"
                " constraints, failures) VALUES ('old', 'maximize', :space, 'random', :config, 1, '{}', 3, '{}', 0,"
                " 1, :now, :objectives, :constraints, 'ignore')"
            ),
            {
                "space": json.dumps({"a": {"type": "float", "low": 0.0, "high": 1.0}}),
                "config": json.dumps({"plan_ahead": 64}),
                "now": now,
                "objectives": json.dumps([{"metric": "yield", "direction": "maximize"}]),
                "constraints": json.dumps([{"metric": "purity", "op": ">=", "bound": 0.9}]),
            },
        )
        study_id = conn.execute(text("SELECT id FROM studies WHERE name = 'old'")).scalar_one()
        conn.execute(
            text(
                "INSERT INTO trials (study_id, number, state, x, params, value, metrics, feasible, source,"
                " created_at, completed_at) VALUES (:id, 1, 'complete', '[0.5]', :params, 0.8, :metrics, 1,"
                " 'random', :now, :now)"
            ),
            {"id": study_id, "params": json.dumps({"a": 0.5}), "metrics": json.dumps({"yield": 0.8, "purity": 0.95}),
             "now": now},
        )  # fmt: skip
    engine.dispose()
    settings = Settings(database_url=url)
    prepare_database(settings)  # the migrations up to head
    with TestClient(create_app(settings)) as api:
        study = api.get("/api/v1/studies/old").json()
        assert study["reference_point"] is None and study["summary"]["best_value"] == 0.8
        assert api.get("/api/v1/studies/old/best").json()["number"] == 1
        (trial,) = api.post("/api/v1/studies/old/ask", json={}).json()["trials"]
        told = api.post(f"/api/v1/studies/old/trials/{trial['number']}/tell",
                        json={"values": {"yield": 0.9, "purity": 0.99}})  # fmt: skip
        assert told.status_code == 200, told.text
        assert api.get("/api/v1/studies/old").json()["summary"]["best_value"] == 0.9
