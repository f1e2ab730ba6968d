"""The middle layer's contracts: plans tied to a study's identity, reads while waiting, bounded policy
time, expired leases, the same key twice at once, writes off the event loop, finite exports, caches."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import torch
from conftest import make_settings, unique
from harness.processes import ServerProcess
from local_service import LocalService
from localbo.caches import BoundedCache
from localbo.planning.claims import Claims
from localbo.policies import Policy, Suggestion, SuggestRequest, register
from localbo.storage import repository as repo
from localbo.storage.models import utcnow
from sqlalchemy import event, update

SPACE = {"x": {"type": "float", "low": 0, "high": 1}, "y": {"type": "float", "low": 0, "high": 1}}
FINITE = {
    "kind": "finite",
    "candidates": [{"id": f"c{i}", "params": {"a": float(i), "b": float(i % 3)}} for i in range(6)],
}


@register
class SleepingPolicy(Policy):
    """Computes for longer than any test's policy timeout (bounded: it wakes after 8 s)."""

    name = "test-sleeping"

    def suggest(self, request: SuggestRequest) -> Suggestion:
        time.sleep(8)
        return Suggestion(X=torch.full((request.count, request.dim), 0.5, dtype=torch.float64), state=request.state)


@pytest.fixture
def local(tmp_path: Path):  # noqa: ANN201
    made: list[LocalService] = []

    def make(**overrides: object) -> LocalService:
        service = LocalService(make_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", **overrides))
        made.append(service)
        return service

    yield make
    for service in made:
        service.close(wait=False)


def test_a_recreated_study_never_receives_its_predecessors_plan(local) -> None:
    service = local(suggest_ahead=False)
    service.create_study("twin", "minimize", SPACE, "sobol", {"plan_ahead": 4}, seed=1)
    old_id = service.study_id("twin")
    runner = service.service.runner
    compute = runner.run

    def recreated_meanwhile(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        plan = compute(*args, **kwargs)  # the old study's plan (2-d points) ...
        service.service.studies.delete("twin")  # ... while it computed, the study was deleted and made again
        service.create_study("twin", "minimize", {"z": {"type": "float", "low": 0, "high": 1}}, "sobol", seed=2)
        return plan

    runner.run = recreated_meanwhile
    service.service.planner.plan(old_id, 4, False)
    runner.run = compute
    view = service.policy_view("twin")
    assert view["planned"] == [] and view["policy_state_version"] == 0, "the old plan was dropped"
    (trial,) = service.ask("twin")["trials"]  # (had the 2-d plan landed, every ask would fail)
    assert set(trial["params"]) == {"z"} and trial["source"] == "sobol"


def test_waiting_for_another_process_plan_only_reads_and_holds_no_thread(local) -> None:
    from localbo.planning.outcomes import ClaimedElsewhere, Planned

    service = local()
    service.create_study("held", "minimize", SPACE, "sobol", seed=1)
    study_id = service.study_id("held")
    claims = Claims(service.db, service.write)
    assert claims.take(study_id, "another-process")
    writes: list[str] = []

    def count(conn, cursor, statement, *args) -> None:  # noqa: ANN001
        if statement.lstrip().split()[0].upper() in {"INSERT", "UPDATE", "DELETE", "BEGIN"} and "IMMEDIATE" in (
            statement.upper() if statement.upper().startswith("BEGIN") else "IMMEDIATE"
        ):
            writes.append(statement)

    event.listen(service.db, "before_cursor_execute", count)
    try:
        status = claims.peek(study_id)
        assert status is not None and status.claimed and status.planned == 0
        # the planning job returns at once (no pool thread held while the other process computes)
        assert isinstance(service.service.planner.plan(study_id, 1, False), ClaimedElsewhere)
    finally:
        event.remove(service.db, "before_cursor_execute", count)
    assert writes == []
    claims.release(study_id, "another-process")
    status = claims.peek(study_id)
    assert status is not None and not status.claimed
    assert isinstance(service.service.planner.plan(study_id, 1, False), Planned)


def test_a_policy_past_its_timeout_gives_fallback_points_and_frees_the_claim(local) -> None:
    service = local(policy_timeout_seconds=1.0, ask_wait_seconds=60, suggest_ahead=False)
    service.create_study("slow", "minimize", SPACE, "test-sleeping", seed=3)
    (trial,) = service.ask("slow")["trials"]
    assert trial["source"] == "fallback"
    study = service.get_study("slow")
    assert "PolicyTimeout" in study["last_policy_error"]
    with service.db.begin() as conn:
        row = repo.get_study(conn, "slow")
    assert row.plan_claim is None, "a timed-out computation ends its claim"


def test_a_heartbeat_after_the_lease_ran_out_finds_the_trial_stale(local) -> None:
    service = local(suggest_ahead=False)
    service.create_study("lease", "minimize", SPACE, "sobol", seed=4)
    (trial,) = service.ask("lease")["trials"]
    with service.write.begin() as conn:  # the lease ran out (no sweep has run: no ask came since)
        conn.execute(update(repo.trials).values(lease_expires_at=utcnow().replace(year=2000)))
    with pytest.raises(Exception, match="lease expired") as caught:
        service.heartbeat("lease", trial["number"])
    assert getattr(caught.value, "status_code", None) == 409
    assert service.service.studies.trials("lease")["trials"][0]["state"] == "stale"
    assert service.policy_view("lease")["planned"][0]["source"] == "stale-retry"
    assert service.tell("lease", trial["number"], 1.0)["state"] == "complete", "a late result still counts"


def test_the_finite_csv_export_has_parameter_columns_and_candidate_ids(api, tmp_path: Path) -> None:
    name = unique()
    r = api.post("/api/v1/studies", json={"name": name, "space": FINITE, "policy": "random", "seed": 1})
    assert r.status_code == 201, r.text
    trials = api.post(f"/api/v1/studies/{name}/ask", json={"count": 2}).json()["trials"]
    api.post(f"/api/v1/studies/{name}/trials/{trials[0]['number']}/tell", json={"value": 0.5})
    text = api.get(f"/api/v1/studies/{name}/export", params={"format": "csv"}).text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0])[:6] == ["number", "state", "value", "a", "b", "candidate"]
    assert [r["candidate"] for r in rows] == [t["candidate"] for t in trials]
    first = next(c for c in FINITE["candidates"] if c["id"] == rows[0]["candidate"])
    assert float(rows[0]["a"]) == first["params"]["a"] and float(rows[0]["b"]) == first["params"]["b"]
    assert rows[0]["value"] == "0.5" and rows[1]["value"] == ""
    url = str(api.app.state.service.db.url)
    cli = subprocess.run(
        [sys.executable, "-m", "localbo.cli", "studies", "export", name, "--db", url, "--format", "csv"],
        capture_output=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr.decode()
    assert cli.stdout.decode() == text, "the CLI writes the same CSV as the API"


@pytest.mark.postgres
@pytest.mark.live
def test_the_same_idempotency_key_twice_at_once_on_postgres_is_one_ask(pg_url: str) -> None:
    server = ServerProcess(pg_url, LOCALBO_SUGGEST_AHEAD="false")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            name = unique()
            assert (
                http.post("/api/v1/studies", json={"name": name, "space": SPACE, "policy": "sobol"}).status_code == 201
            )
            statuses: list[int] = []
            with ThreadPoolExecutor(2) as pool:
                for i in range(50):
                    barrier = threading.Barrier(2)

                    def one(key: str = f"dup-{i}", barrier: threading.Barrier = barrier) -> httpx.Response:
                        barrier.wait(timeout=30)
                        return http.post(f"/api/v1/studies/{name}/ask", json={}, headers={"Idempotency-Key": key})

                    a, b = pool.submit(one), pool.submit(one)
                    ra, rb = a.result(), b.result()
                    statuses += [ra.status_code, rb.status_code]
                    assert ra.status_code == rb.status_code == 200, (ra.text, rb.text)
                    assert ra.json() == rb.json(), "the duplicate gets the first answer"
            assert not [s for s in statuses if s >= 500]
            assert http.get(f"/api/v1/studies/{name}").json()["summary"]["n_trials"] == 50
    finally:
        server.stop()


@pytest.mark.live
def test_a_write_waiting_for_the_sqlite_lock_stalls_no_other_request(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    server = ServerProcess(f"sqlite:///{db}")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            name = unique()
            assert (
                http.post("/api/v1/studies", json={"name": name, "space": SPACE, "policy": "sobol"}).status_code == 201
            )
            holder = sqlite3.connect(db, timeout=30, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")  # another writer holds the database
            with ThreadPoolExecutor(1) as pool:
                blocked = pool.submit(lambda: http.post(f"/api/v1/studies/{name}/ask", json={}))
                time.sleep(0.5)  # let the ask reach the lock (it would block the event loop before the fix)
                assert not blocked.done(), "the ask waits for the lock"
                assert http.get("/healthz").status_code == 200, "health answers while a write waits"
                assert http.get(f"/api/v1/studies/{name}").status_code == 200, "reads answer too"
                assert not blocked.done()
                holder.execute("ROLLBACK")
                assert blocked.result(timeout=60).status_code == 200
            holder.close()
    finally:
        server.stop()


def test_the_per_process_caches_are_bounded() -> None:
    cache: BoundedCache[bytes] = BoundedCache(max_cost=100, cost=len)
    for i in range(50):
        assert cache.get(("study", i), lambda i=i: bytes(30)) == bytes(30)
    assert cache.total_cost <= 100 and len(cache) == 3
    assert cache.get(("study", 49), lambda: b"reloaded") == bytes(30), "the newest stay"
    assert cache.get(("study", 0), lambda: b"reloaded") == b"reloaded", "the oldest went"
    assert cache.get("too big", lambda: bytes(500)) == bytes(500) and "too big" not in cache._items


MINUCB_LIGHT = {"num_restarts": 2, "raw_samples": 16, "samples_per_iteration": 2}
DATA = [([0.2, 0.7], 0.9), ([0.5, 0.5], 0.4), ([0.8, 0.1], 1.3), ([0.3, 0.3], 0.2), ([0.6, 0.9], 1.1)]


def planned_points(api, name: str, count: int) -> list[dict]:  # noqa: ANN001
    r = api.post(f"/api/v1/studies/{name}/ask", json={"count": count})
    assert r.status_code == 200, r.text
    return [t["params"] for t in r.json()["trials"]]


def minucb_study(api, name: str) -> None:  # noqa: ANN001
    body = {"name": name, "space": SPACE, "policy": "minucb", "policy_config": MINUCB_LIGHT, "seed": 7}
    assert api.post("/api/v1/studies", json=body).status_code == 201
    for (x, y), value in DATA:
        r = api.post(f"/api/v1/studies/{name}/trials", json={"params": {"x": x, "y": y}, "value": value})
        assert r.status_code == 201, r.text


def test_two_studies_planning_at_once_get_the_points_each_gets_alone(make_client) -> None:
    # one API process, two policy computations at once (two inline workers), each study its own generator
    api = make_client(inline_workers=2, suggest_ahead=False, ask_wait_seconds=300)  # never a fallback here
    alone, twin_a, twin_b = unique("alone"), unique("twin"), unique("twin")
    for name in (alone, twin_a, twin_b):
        minucb_study(api, name)
    expected = planned_points(api, alone, 3)
    barrier = threading.Barrier(2)

    def ask_together(name: str) -> list[dict]:
        barrier.wait(timeout=30)
        return planned_points(api, name, 3)

    stop = threading.Event()

    def stir_the_global_rng() -> None:  # what another library in the process might do meanwhile
        k = 0
        while not stop.is_set() and k < 1_000_000:
            torch.manual_seed(k)
            k += 1
            time.sleep(0.0005)  # reseeds often, without starving the computations of the GIL

    stirrer = threading.Thread(target=stir_the_global_rng, daemon=True)
    stirrer.start()
    try:
        with ThreadPoolExecutor(2) as pool:
            a, b = pool.map(ask_together, (twin_a, twin_b))
    finally:
        stop.set()
        stirrer.join()
    assert a == expected and b == expected, "bit-identical to the study planned alone"


@pytest.mark.parametrize("key", ["lengthscale", "noise_std", "delta"])
def test_finite_only_keys_on_a_continuous_ucb_study_are_refused(api, key: str) -> None:
    name = unique()
    body = {"name": name, "space": SPACE, "policy": "ucb", "policy_config": {key: 0.5}}
    r = api.post("/api/v1/studies", json=body)
    assert r.status_code == 422 and f"policy_config.{key}" in r.json()["detail"], r.text
    assert api.get(f"/api/v1/studies/{name}").status_code == 404, "nothing was stored"


@pytest.mark.postgres
def test_a_dropped_database_connection_is_a_503_with_retry_after(pg_url: str) -> None:
    from fastapi.testclient import TestClient
    from localbo.api import create_app
    from localbo.bootstrap import prepare_database
    from sqlalchemy import create_engine, text

    settings = make_settings(pg_url)
    prepare_database(settings)
    app = create_app(settings)
    with TestClient(app, raise_server_exceptions=False) as api:
        assert api.get("/api/v1/studies").status_code == 200  # the pool now holds a connection
        admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:  # what a Postgres restart does to the pool's connections
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
        admin.dispose()
        r = api.get("/api/v1/studies")
        assert r.status_code == 503 and r.headers["Retry-After"] == "1", r.text
        assert api.get("/api/v1/studies").status_code == 200, "the next request gets a fresh connection"


def test_an_ask_may_wait_for_the_policy_instead_of_taking_a_fallback(local) -> None:
    """Issue 18, item 4: ``wait_seconds`` per ask (the server's default here: no wait at all)."""
    service = local(ask_wait_seconds=0, ask_wait_max_seconds=60, suggest_ahead=False)
    service.create_study("slow", "minimize", SPACE, "test-sleeping", seed=3)
    (hurried,) = service.ask("slow")["trials"]
    assert hurried["source"] == "fallback", "the server's default wait (0 s here) ran out"
    (patient,) = service.ask("slow", wait_seconds=30)["trials"]
    assert patient["source"] == "test-sleeping", "it waited for the policy's point"


def test_a_longer_wait_than_the_servers_maximum_is_cut_to_it(local) -> None:
    service = local(ask_wait_seconds=0, ask_wait_max_seconds=0, suggest_ahead=False)
    service.create_study("capped", "minimize", SPACE, "test-sleeping", seed=3)
    (trial,) = service.ask("capped", wait_seconds=600)["trials"]
    assert trial["source"] == "fallback", "cut to the maximum (0 s), it did not wait for the 8-s policy"


@pytest.mark.parametrize("wait", [-1, "5", float("inf"), True])
def test_a_wait_that_is_not_a_nonnegative_number_is_a_422_naming_it(api, wait) -> None:  # noqa: ANN001
    api.post("/api/v1/studies", json={"name": "w", "space": SPACE, "policy": "sobol"})
    body = '{"wait_seconds": ' + ("Infinity" if wait == float("inf") else json.dumps(wait)) + "}"
    answer = api.post("/api/v1/studies/w/ask", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 422 and "wait_seconds" in answer.json()["detail"], answer.text
