"""The celery executor with a real worker process on the real Redis: end to end, a SIGKILLed worker, an outage."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import torch
from harness.processes import ServerProcess, WorkerProcess, free_port
from local_service import LocalService as Engine
from localbo.policies import get_policy
from localbo.storage import plan_queue
from localbo.storage import repository as repo
from localbo.workers import run_suggest
from localbo.workers.celery_app import suggest
from localbo.workers.celery_executor import RETRY_BROKER_AFTER_S
from localbo.workers.liveness import Liveness
from localbo.workers.wire import request_from_wire, request_to_wire, suggestion_from_wire
from localbo_client import Client
from policy_requests import make_request

from tests.conftest import make_settings, unique

pytestmark = pytest.mark.live


# batches of 1 + 5 points (fewer GP fits than b2 = d) and small acquisition searches: a quick test
LIGHT = {"samples_per_iteration": 5, "num_restarts": 1, "raw_samples": 16, "step_restarts": 2}


def sphere(params: dict[str, float]) -> float:
    return sum((v - 0.3) ** 2 for v in params.values())


def space(d: int) -> dict:
    return {f"x{i}": {"type": "float", "low": -1.0, "high": 1.0} for i in range(d)}


def settings(env: dict[str, str]) -> dict[str, str]:
    return {"redis_url": env["LOCALBO_REDIS_URL"], "celery_queue_prefix": env["LOCALBO_CELERY_QUEUE_PREFIX"]}


def start_both(tmp_path: Path, worker_log: str, env: dict[str, str]) -> tuple[WorkerProcess, ServerProcess]:
    """A worker and a server with the celery executor, started at once (each takes seconds)."""
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with ThreadPoolExecutor(2) as pool:
        worker = pool.submit(WorkerProcess, tmp_path / worker_log, **env)
        server = pool.submit(
            ServerProcess,
            db,
            log_path=tmp_path / "server.log",
            LOCALBO_EXECUTOR="celery",
            LOCALBO_ASK_WAIT_SECONDS="120",  # a slow machine must not turn a late plan into a fallback here
            **env,
        )
        return worker.result(), server.result()


def all_trials(url: str, name: str) -> list[dict]:
    return httpx.get(f"{url}/api/v1/studies/{name}/trials", params={"limit": 1000}, timeout=10).json()["trials"]


def assert_each_tell_stored_once(trials: list[dict], n: int) -> None:
    assert [t["number"] for t in trials] == list(range(1, n + 1))
    assert all(t["state"] == "complete" for t in trials)
    for t in trials:  # the stored value is the one told for these very params
        assert t["value"] == pytest.approx(sphere(t["params"]), abs=1e-12)


def test_request_survives_the_trip_to_a_worker_and_gives_the_same_points() -> None:
    cls = get_policy("minucb")
    g = torch.Generator().manual_seed(0)
    X = torch.rand(6, 2, generator=g, dtype=torch.float64)
    y = (X - 0.3).pow(2).sum(-1)
    config = {"num_restarts": 2, "raw_samples": 16}
    first = run_suggest("minucb", make_request(cls, X[:3], y[:3], config=config, seed=5))
    request = make_request(cls, X, y, state=first.state, config=config, seed=5, rng_seed=99)
    name, back = request_from_wire(json.loads(json.dumps(request_to_wire("minucb", request))), torch.device("cpu"))
    assert name == "minucb" and back.config == request.config and back.state == request.state
    assert torch.equal(back.X, request.X) and torch.equal(back.y, request.y)
    assert torch.equal(back.numbers, request.numbers) and back.space == request.space
    assert (back.seed, back.rng_seed) == (5, 99)
    assert torch.equal(torch.rand(3, generator=back.generator), torch.rand(3, generator=request.generator))
    here = run_suggest("minucb", request)
    there = suggestion_from_wire(json.loads(json.dumps(suggest(request_to_wire("minucb", request)))), "minucb")
    assert torch.equal(there.X, here.X) and there.state == here.state


def test_minucb_runs_60_evaluations_through_a_celery_worker(tmp_path: Path, redis_env: dict[str, str]) -> None:
    metrics_port = free_port()
    worker, server = start_both(tmp_path, "worker.log", {**redis_env, "LOCALBO_WORKER_METRICS_PORT": str(metrics_port)})
    try:
        study = Client(server.url, timeout=180).create_study(
            unique("celery"), space=space(2), policy="minucb", seed=3, policy_config=LIGHT
        )
        study.optimize(sphere, n_trials=60)
        trials = all_trials(server.url, study.name)
        assert_each_tell_stored_once(trials, 60)
        assert {t["source"] for t in trials} == {"minucb"}, "no fallback point: every plan came from the policy"
        info = httpx.get(f"{server.url}/api/v1/studies/{study.name}/policy", timeout=10).json()
        assert info["last_policy_error"] is None and info["state"]["t"] >= 8  # it stepped, batch after batch
        # every plan was computed on the worker, none inline
        assert len(re.findall(r"localbo\.suggest\[\S+\] succeeded", worker.log())) >= info["policy_state_version"]
        assert "computing inline" not in (tmp_path / "server.log").read_text()
        # the worker's own metrics (LOCALBO_WORKER_METRICS_PORT) count the computations it ran
        scraped = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
        computed = re.search(r'localbo_policy_compute_seconds_count\{device="cpu",policy="minucb"\} (\S+)', scraped)
        assert computed is not None and float(computed.group(1)) >= info["policy_state_version"], scraped[-2000:]

        # a policy that raises on the worker: the study gets a fallback point and the error, and goes on
        engine = Engine(make_settings(f"sqlite:///{tmp_path / 'own.sqlite'}", executor="celery", **settings(redis_env)))
        try:
            engine.create_study("breaks", "minimize", space(2), "minucb", LIGHT, seed=5)
            (first,) = engine.ask("breaks")["trials"]
            assert first["source"] == "minucb"
            with engine.write.begin() as conn:  # an iterate of the wrong size: the next suggest cannot run
                row = repo.get_study(conn, "breaks")
                broken = {**row.policy_state, "data": {**row.policy_state["data"], "x_t": [0.5] * 5}}
                repo.update_study(conn, row.id, policy_state=broken)
                plan_queue.pop_plan(conn, row.id, 100)
            (trial,) = engine.ask("breaks")["trials"]
            assert trial["source"] == "fallback"
            error = engine.get_study("breaks")["last_policy_error"]
            assert error is not None and "size" in error, error
            assert re.search(r"localbo\.suggest\[\S+\] raised", worker.log()), "it failed on the worker"
            assert engine.tell("breaks", trial["number"], 1.0)["state"] == "complete", "the study goes on"
        finally:
            engine.close()
    finally:
        server.stop()
        worker.stop()


def test_a_worker_killed_mid_computation_costs_seconds_not_the_visibility_timeout(
    tmp_path: Path, redis_env: dict[str, str]
) -> None:
    """Issue 16, item 6: the killed computation's heartbeat lapses, the API sends it again and a new worker
    computes it within 60 s; Redis's own redelivery (after the 900 s visibility timeout) is never waited for."""
    env = {**redis_env, "LOCALBO_CELERY_VISIBILITY_TIMEOUT": "900"}
    first, server = start_both(tmp_path, "worker1.log", env)
    second = None
    n = 12  # two batches of 1 + 5
    try:
        # a heavier exploration than the defaults, so that a computation lasts long enough to be hit
        config = {"samples_per_iteration": 5, "num_restarts": 8, "raw_samples": 256}
        study = Client(server.url, timeout=180).create_study(
            unique("kill"), space=space(3), policy="minucb", seed=4, policy_config=config
        )
        errors: list[BaseException] = []

        def evaluate() -> None:
            try:
                study.optimize(sphere, n_trials=n)
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        runner = threading.Thread(target=evaluate)
        runner.start()
        killed = None
        deadline = time.monotonic() + 120
        while killed is None and time.monotonic() < deadline and runner.is_alive():
            log = first.log()
            received = re.findall(r"localbo\.suggest\[(\S+)\] received", log)
            done = set(re.findall(r"localbo\.suggest\[(\S+)\] succeeded", log))
            busy = [task for task in received if task not in done]
            if busy:
                first.kill()
                killed, killed_at = busy[0], time.monotonic()
            time.sleep(0.02)
        assert killed is not None, "never caught the worker mid-computation"
        assert f"localbo.suggest[{killed}] succeeded" not in first.log()
        second = WorkerProcess(tmp_path / "worker2.log", **env)
        deadline = killed_at + 90  # bounded; the expectation is 60 s
        while time.monotonic() < deadline and not re.search(r"localbo\.suggest\[\S+\] succeeded", second.log()):
            time.sleep(0.1)
        replanned = time.monotonic() - killed_at
        assert replanned < 60, f"the lost computation was redone {replanned:.0f} s after the kill"
        assert "lost its worker (heartbeat lapsed); trying again" in (tmp_path / "server.log").read_text()
        runner.join(timeout=180)
        assert not runner.is_alive() and not errors, errors
        assert killed not in second.log(), "the new worker computed the re-sent task, not the killed one"
        trials = all_trials(server.url, study.name)
        assert_each_tell_stored_once(trials, n)
        assert {t["source"] for t in trials} == {"minucb"}, "no ask waited long enough to get a fallback point"
    finally:
        server.stop()
        first.stop()
        if second is not None:
            second.stop()


def test_without_a_live_worker_the_api_computes_and_a_later_worker_drops_what_it_gave_up(
    tmp_path: Path, redis_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    overrides = {**settings(redis_env), "task_pickup_seconds": 3.0}
    engine = Engine(make_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", executor="celery", **overrides))
    client = engine.executor.app.backend.client
    serving = Liveness.of(engine.settings).serving(f"{redis_env['LOCALBO_CELERY_QUEUE_PREFIX']}cpu")
    client.delete(serving)  # the workers of earlier tests (same queues) are stopped; their presence may linger
    try:
        engine.create_study("nobody", "minimize", space(2), "minucb", LIGHT, seed=2)
        with caplog.at_level(logging.WARNING, logger="localbo.workers"):
            for _ in range(2):  # no worker at all: computed here at once, nothing is sent
                (trial,) = engine.ask("nobody")["trials"]
                engine.tell("nobody", trial["number"], sphere(trial["params"]))
        assert trial["source"] == "minucb"
        assert [r.getMessage() for r in caplog.records if "no live worker" in r.getMessage()] == [
            f"no live worker serves {serving.removesuffix(':workers')!r}; computing in the API process until one does"
        ], "said once"
        assert client.llen(serving.removesuffix(":workers")) == 0

        # a worker that seems alive when the task is sent, then dies before it takes it: after the pickup time
        # the API gives the task up and computes it here
        with engine.write.begin() as conn:  # the plan emptied: the next ask needs a computation
            plan_queue.pop_plan(conn, repo.get_study(conn, "nobody").id, 100)
        client.set(serving, "a worker about to die", px=2000)
        started = time.monotonic()
        (trial,) = engine.ask("nobody")["trials"]
        assert trial["source"] == "minucb" and time.monotonic() - started >= 3.0
        assert engine.get_study("nobody")["last_policy_error"] is None
        assert client.llen(serving.removesuffix(":workers")) == 1, "the given-up task is still queued"
    finally:
        engine.close()
    # a worker that comes later acknowledges the abandoned task and does not run it
    worker = WorkerProcess(tmp_path / "late.log", **redis_env)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "was abandoned by the API" not in worker.log():
            time.sleep(0.1)
        assert "was abandoned by the API" in worker.log()
        assert not re.search(r"localbo\.suggest\[\S+\] succeeded", worker.log())
    finally:
        worker.stop()


def test_a_task_taken_by_a_worker_that_dies_before_marking_it_is_sent_again(
    tmp_path: Path, redis_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """A worker fetched the task (it left the queue) and died before it marked it received: no heartbeat ever
    lapses, and Redis hands the message out again only after the visibility timeout (an hour). The API calls it
    lost after the heartbeat's lapse time and sends it again."""
    overrides = {**settings(redis_env), "task_pickup_seconds": 3.0, "task_heartbeat_seconds": 1.0}
    engine = Engine(make_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", executor="celery", **overrides))
    client = engine.executor.app.backend.client
    serving = Liveness.of(engine.settings).serving(f"{redis_env['LOCALBO_CELERY_QUEUE_PREFIX']}cpu")
    queue = serving.removesuffix(":workers")
    client.delete(serving)  # the workers of earlier tests (same queues) are stopped; their presence may linger
    seen: list[str] = []

    def dying_worker() -> None:
        """Takes the first message and vanishes; once the task comes again, no worker is left (the API computes)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(seen) < 2:
            client.set(serving, "a worker", px=3000)
            message = client.rpop(queue) if not seen else client.lindex(queue, -1)
            if message is not None:
                seen.append(json.loads(message)["headers"]["id"])
            time.sleep(0.05)
        client.delete(serving)

    try:
        engine.create_study("taken", "minimize", space(2), "minucb", LIGHT, seed=3)
        for _ in range(2):  # the initial design: no computation to send
            (trial,) = engine.ask("taken")["trials"]
            engine.tell("taken", trial["number"], sphere(trial["params"]))
        with engine.write.begin() as conn:  # the plan emptied: the next ask needs a computation
            plan_queue.pop_plan(conn, repo.get_study(conn, "taken").id, 100)
        client.delete(queue)  # only the task of the next ask in it
        thread = threading.Thread(target=dying_worker, daemon=True)
        thread.start()
        with caplog.at_level(logging.WARNING, logger="localbo.workers"):
            (trial,) = engine.ask("taken")["trials"]
        thread.join(70)
        assert len(seen) == 2 and seen[0] != seen[1], "the task was sent again, as a new task"
        assert any("lost its worker" in r.getMessage() for r in caplog.records)
        assert trial["source"] == "minucb"
        assert engine.get_study("taken")["last_policy_error"] is None
    finally:
        client.delete(serving, queue)
        engine.close()


def test_a_redis_outage_computes_inline_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    engine = Engine(make_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", executor="celery", redis_url=dead))
    try:
        engine.create_study("outage", "minimize", space(2), "minucb", {"num_restarts": 2}, seed=1)
        with caplog.at_level(logging.WARNING, logger="localbo.workers"):
            started = time.monotonic()
            for _ in range(4):
                (trial,) = engine.ask("outage")["trials"]
                engine.tell("outage", trial["number"], sphere(trial["params"]))
            elapsed = time.monotonic() - started
        assert trial["source"] == "minucb"
        assert engine.get_study("outage")["last_policy_error"] is None
        warnings = [r for r in caplog.records if "unreachable" in r.getMessage()]
        tries = 1 + int(elapsed / RETRY_BROKER_AFTER_S)
        assert 1 <= len(warnings) <= tries, "one warning, then the broker is left alone for a while"
        assert elapsed < 30
    finally:
        engine.close()


def test_studies_go_to_the_gpu_queue_by_their_config_or_their_size(tmp_path: Path) -> None:
    engine = Engine(make_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", gpu_min_size=100))
    try:
        for name, config in [("auto", {}), ("cpu", {"queue": "cpu"}), ("gpu", {"queue": "gpu"})]:
            engine.create_study(name, "minimize", space(10), "minucb", config)
        with engine.db.begin() as conn:
            auto, cpu, gpu = (repo.get_study(conn, n) for n in ("auto", "cpu", "gpu"))
        assert [engine.queue_for(auto, n) for n in (9, 10)] == ["cpu", "gpu"]  # 10 x 10 >= 100
        assert engine.queue_for(cpu, 1000) == "cpu" and engine.queue_for(gpu, 0) == "gpu"
    finally:
        engine.close()


def test_the_size_that_routes_to_the_gpu_is_the_data_the_policys_gp_fits(tmp_path: Path) -> None:
    """A local policy fits a window of 5 d results, a global one its max_data: past them a study grows no bigger
    for a GPU (benchmarks/results/gpu/gpu_findings.md: one CPU thread beats an H200 on minucb's window)."""
    engine = Engine(make_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", gpu_min_size=1000))
    try:
        engine.create_study("local", "minimize", space(10), "minucb", {})
        engine.create_study("window", "minimize", space(10), "minucb", {"n_max": 200})
        engine.create_study("bounded", "minimize", space(10), "ei", {"max_data": 50})
        engine.create_study("all", "minimize", space(10), "ei", {"max_data": None})
        with engine.db.begin() as conn:
            local, window, bounded, everything = (
                repo.get_study(conn, n) for n in ("local", "window", "bounded", "all")
            )
        assert engine.queue_for(local, 10_000) == "cpu"  # a window of 50 results x 10 parameters < 1000
        assert [engine.queue_for(window, n) for n in (99, 100, 10_000)] == ["cpu", "gpu", "gpu"]
        assert engine.queue_for(bounded, 10_000) == "cpu"  # 50 x 10
        assert [engine.queue_for(everything, n) for n in (99, 100)] == ["cpu", "gpu"]
    finally:
        engine.close()
