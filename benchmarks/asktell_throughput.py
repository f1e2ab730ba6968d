"""Ask/tell throughput: localbo over HTTP against Optuna's RDBStorage, on SQLite and Postgres.

What it measures: complete ask/tell cycles per second for the ``random`` policy on 10
float parameters in [0, 1] with a trivial objective (sum of squares), so nothing but
the overhead of handing out and storing trials is timed.

* localbo: ``python -m localbo.cli serve`` runs as a subprocess on a fresh database;
  the thin client (``localbo_client.Client``, ``study.ask()``, ``study.tell()``) drives
  it over loopback HTTP with 1 client, and with 8 threads (each its own ``Client`` and
  ``client_id``) on one study. Afterwards the stored trials are read back and checked:
  numbers 1..N without gaps, all complete, each value matching its parameters.
* Optuna: ``RDBStorage`` in this process on a fresh database of the same kind (SQLite
  in WAL mode with ``synchronous=NORMAL``, as localbo uses; Postgres), ``RandomSampler``,
  each trial = ``study.ask()`` + 10 x ``trial.suggest_float`` + ``study.tell()``, with
  1 thread and with 8 threads sharing the study.

Run it from the repository root with the project's environment::

    .venv/bin/python benchmarks/asktell_throughput.py                  # full run, ~3-5 min
    .venv/bin/python benchmarks/asktell_throughput.py --backends sqlite
    .venv/bin/python benchmarks/asktell_throughput.py --smoke          # seconds; writes to a temp dir
    .venv/bin/python benchmarks/asktell_throughput.py --smoke --out /tmp/bench

The full run writes ``benchmarks/results/asktell_throughput.{md,json}`` (or into
``--out``). ``--smoke`` never writes there: without ``--out`` it uses a temp dir.
Postgres is reached through ``LOCALBO_BENCH_PG`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``); a fresh database is created
for each system and dropped afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import platform
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
from harness.processes import PG_ADMIN_URL, ServerProcess, free_port, fresh_database
from harness.runs import commit_of

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results"
RESULT_NAME = "asktell_throughput"
LOCALBO = "localbo over HTTP"
LOCALBO_CYCLE = "localbo over HTTP, tell-and-ask"  # one round trip per cycle (POST .../tell-and-ask)
OPTUNA = "optuna RDB in-process"
OPTUNA_GRPC = "optuna gRPC proxy"  # optuna.storages.run_grpc_proxy_server + GrpcStorageProxy: Optuna as a service
OPTUNA_DEFAULTS = "optuna RDB in-process, SQLite defaults"
FLOORS = {  # system -> uvicorn app: the same request and answer shapes as tell-and-ask, no database
    "HTTP floor: bare ASGI app": "harness.floor_apps:bare",
    "HTTP floor: bare FastAPI route": "harness.floor_apps:fastapi_app",
}
DIM = 10
GOAL_RATIO = 10.0
GRPC_GOAL_RATIO = 5.0  # against Optuna's own service (its gRPC storage proxy)
MAX_ERRORS = 10  # per configuration; past this it stops (each error already took the client's ~6 s of retries)
WARMUP = 10  # untimed cycles per server / storage before the first timed configuration


# -- results ------------------------------------------------------------------------------


@dataclass
class Row:
    backend: str
    system: str
    clients: int
    trials: int  # cycles asked for
    done: int  # cycles that completed (ask and tell both returned)
    seconds: float
    trials_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int  # exceptions raised to the caller
    retries: int  # 5xx answers / connection errors the localbo client retried (0 for optuna)
    verified: bool
    check: str  # what the read-back found
    client_cpu_s: float  # CPU of this process during the run
    server_cpu_s: float | None  # CPU of the localbo server process during the run
    error_samples: list[str] = field(default_factory=list)


def measured_row(
    backend: str, system: str, clients: int, trials: int, timing: tuple[float, list[float], int], **rest: Any
) -> Row:
    """A Row from a run's (wall seconds, latencies, cycles done): rate and percentiles computed here."""
    wall, latencies, done = timing
    p50, p99 = summarize(latencies)
    rate = done / wall if wall > 0 else 0.0
    return Row(backend, system, clients, trials, done, wall, rate, p50, p99, **rest)


def summarize(latencies: list[float]) -> tuple[float, float]:
    if not latencies:
        return math.nan, math.nan
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
    return statistics.median(ordered) * 1000, p99 * 1000


def objective(params: dict[str, float]) -> float:
    return sum(v * v for v in params.values())


def space() -> dict[str, dict[str, Any]]:
    return {f"x{i}": {"type": "float", "low": 0.0, "high": 1.0} for i in range(DIM)}


def split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


class ErrorLog:
    """Exceptions seen by the worker threads: a count and the first few messages."""

    def __init__(self) -> None:
        self.count = 0
        self.samples: list[str] = []
        self._lock = threading.Lock()

    def add(self, exc: BaseException) -> None:
        with self._lock:
            self.count += 1
            if len(self.samples) < 5:
                self.samples.append(f"{type(exc).__name__}: {str(exc)[:300]}")

    @property
    def too_many(self) -> bool:
        return self.count >= MAX_ERRORS


def run_threads(
    states: list[Any], counts: list[int], cycle: Callable[[Any, int], bool]
) -> tuple[float, list[float], int]:
    """Run ``cycle(states[i], i)`` ``counts[i]`` times in thread i, all threads starting together.

    Returns the wall time, the latencies of the cycles that succeeded (``cycle`` returned
    True) and how many there were.
    """
    barrier = threading.Barrier(len(counts) + 1)
    latencies: list[list[float]] = [[] for _ in counts]

    def work(i: int) -> None:
        barrier.wait()
        for _ in range(counts[i]):
            t0 = time.perf_counter()
            if cycle(states[i], i):
                latencies[i].append(time.perf_counter() - t0)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(counts))]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    flat = [x for lat in latencies for x in lat]
    return wall, flat, len(flat)


# -- databases ----------------------------------------------------------------------------


def pg_available() -> bool:
    from sqlalchemy.engine import make_url

    url = make_url(PG_ADMIN_URL)
    try:
        with socket.create_connection((url.host or "127.0.0.1", url.port or 5432), timeout=2):
            return True
    except OSError:
        return False


# -- localbo over HTTP --------------------------------------------------------------------


class CountingTransport(httpx.HTTPTransport):
    """Counts the answers the client will retry (5xx) and the transport errors."""

    def __init__(self, counter: list[int]) -> None:
        super().__init__()
        self.counter = counter

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = super().handle_request(request)
        except httpx.TransportError:
            self.counter[0] += 1
            raise
        if response.status_code >= 500:
            self.counter[0] += 1
        return response


def proc_cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process, from /proc (Linux); None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float | None:
    """``proc_cpu_seconds`` of a process and its live descendants (uvicorn's worker processes)."""
    own = proc_cpu_seconds(pid)
    if own is None:
        return None
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            children += [int(c) for c in task.read_text().split()]
    return own + sum(tree_cpu_seconds(c) or 0.0 for c in children)


GRPC_SERVER = """
import sys
from asktell_throughput import optuna_storage
from optuna.storages import run_grpc_proxy_server
run_grpc_proxy_server(optuna_storage(sys.argv[1]), host="127.0.0.1", port=int(sys.argv[2]))
"""


@contextlib.contextmanager
def grpc_proxy(url: str, log: Path) -> Any:
    """Optuna's storage service: ``run_grpc_proxy_server`` over an RDBStorage (the same settings as the
    in-process rows) in its own process, and a ``GrpcStorageProxy`` to it here; yields (proxy, server pid)."""
    from optuna.storages import GrpcStorageProxy

    port = free_port()
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", GRPC_SERVER, url, str(port)], cwd=Path(__file__).parent, stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the gRPC proxy did not start: {log.read_text()[-2000:]}")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield GrpcStorageProxy(host="127.0.0.1", port=port), proc.pid
    finally:
        proc.terminate()
        proc.wait(30)


EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*")


class Server(ServerProcess):
    """The server under test, with its CPU time read from /proc."""

    def cpu(self) -> float | None:
        return tree_cpu_seconds(self.proc.pid)

    def log_errors(self) -> dict[str, int]:
        """The exception lines (``module.SomeError: message``) and ERROR lines of the log, counted."""
        found: Counter[str] = Counter()
        for line in self.log_path.read_text(errors="replace").splitlines():
            if EXCEPTION_LINE.match(line) or "ERROR" in line:
                found[line.strip()[:300]] += 1
        return dict(found.most_common(10))


def verify_localbo(url: str, name: str, expected: int) -> tuple[bool, str]:
    """Read the study back: numbers 1..expected without gaps, all complete, values right."""
    from localbo_client import Client

    with Client(url) as client:
        trials = client.get_study(name).trials(page_size=1000)
    numbers = [t.number for t in trials]
    complete = [t for t in trials if t.state == "complete"]
    wrong = [t.number for t in complete if not math.isclose(t.value, objective(t.params), rel_tol=1e-9)]
    problems = []
    if numbers != list(range(1, len(numbers) + 1)):
        missing = sorted(set(range(1, max(numbers, default=0) + 1)) - set(numbers))
        problems.append(f"gaps or disorder in numbers (missing {missing[:10]})")
    if len(trials) != expected:
        problems.append(f"{len(trials)} trials stored, expected {expected}")
    if len(complete) != expected:
        states: dict[str, int] = {}
        for t in trials:
            states[t.state] = states.get(t.state, 0) + 1
        problems.append(f"{len(complete)} complete, expected {expected} (states {states})")
    if wrong:
        problems.append(f"values not matching params for trials {wrong[:10]}")
    if problems:
        return False, "; ".join(problems)
    return True, f"{expected} complete trials, numbers 1..{expected}, no gaps"


def bench_localbo(server: Server, backend: str, clients: int, trials: int, one_trip: bool = False) -> Row:
    """``clients`` threads cycling ``trials`` times in all: ask then tell (two round trips), or with
    ``one_trip`` each tell asking for the next trial (``tell_and_ask``: one round trip a cycle)."""
    from localbo_client import Client

    name = f"bench-{clients}c-{uuid.uuid4().hex[:8]}"
    retries = [0]
    errors = ErrorLog()
    with Client(server.url) as admin:
        admin.create_study(name, space(), policy="random", seed=12345)
    shares = split(trials, clients)

    def cycle(state: dict[str, Any], _: int) -> bool:
        if errors.too_many:
            return False
        study, client_id = state["study"], state["client_id"]
        state["left"] -= 1
        try:
            trial = state.pop("next", None) or study.ask(client_id=client_id)
            value = objective(trial.params)
            if one_trip and state["left"] > 0:  # the thread's last cycle tells alone: no trial left over
                state["next"] = study.tell_and_ask(trial, value, client_id=client_id)
            else:
                study.tell(trial, value)
        except Exception as exc:  # noqa: BLE001 - counted and reported
            errors.add(exc)
            return False
        return True

    with contextlib.ExitStack() as stack:
        made = [stack.enter_context(Client(server.url, transport=CountingTransport(retries))) for _ in range(clients)]
        states = [
            {"study": client.get_study(name), "client_id": f"bench-{clients}c-{i}", "left": shares[i]}
            for i, client in enumerate(made)
        ]
        cpu0, server0 = time.process_time(), server.cpu()
        timing = run_threads(states, shares, cycle)
        cpu, server1 = time.process_time() - cpu0, server.cpu()
    verified, check = verify_localbo(server.url, name, trials)
    return measured_row(
        backend,
        LOCALBO_CYCLE if one_trip else LOCALBO,
        clients,
        trials,
        timing,
        errors=errors.count,
        retries=retries[0],
        verified=verified,
        check=check,
        client_cpu_s=cpu,
        server_cpu_s=None if server0 is None or server1 is None else server1 - server0,
        error_samples=errors.samples,
    )


def warm_localbo(server: Server) -> None:
    """A few untimed cycles: imports, connection pools and the first policy call."""
    from localbo_client import Client

    with Client(server.url) as client:
        study = client.create_study(f"warmup-{uuid.uuid4().hex[:8]}", space(), policy="random", seed=1)
        for _ in range(WARMUP):
            trial = study.ask(client_id="warmup")
            study.tell(trial, objective(trial.params))


def bench_floor(system: str, workdir: Path, trials: int) -> Row:
    """One httpx client posting a tell-and-ask-shaped body to a server that touches no database: what
    uvicorn, httpx (and FastAPI) cost by themselves, on the same loopback and in the same run."""
    port = free_port()
    log = open(workdir / f"floor-{port}.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", FLOORS[system], "--port", str(port), "--log-level", "warning"],
        cwd=Path(__file__).parent,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    body = {"tell": {"value": 0.5}, "ask": {"count": 1, "client_id": "floor"}}
    errors = ErrorLog()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(300):  # until it answers (bounded: ~30 s)
                try:
                    client.post("/cycle", json=body)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            for _ in range(WARMUP):
                client.post("/cycle", json=body)

            def cycle(_: None, __: int) -> bool:
                try:
                    answer = client.post("/cycle", json=body)
                    answer.raise_for_status()
                    return answer.json()["trials"][0]["number"] == 1
                except Exception as exc:  # noqa: BLE001 - counted and reported
                    errors.add(exc)
                    return False

            before, cpu0 = proc_cpu_seconds(proc.pid), time.process_time()
            timing = run_threads([None], [trials], cycle)
            after, cpu = proc_cpu_seconds(proc.pid), time.process_time() - cpu0
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()
    return measured_row(
        "none",
        system,
        1,
        trials,
        timing,
        errors=errors.count,
        retries=0,
        verified=timing[2] == trials,
        check=f"{timing[2]} of {trials} answered",
        client_cpu_s=cpu,
        server_cpu_s=None if before is None or after is None else after - before,
        error_samples=errors.samples,
    )


# -- Optuna in process --------------------------------------------------------------------


def optuna_storage(url: str, *, sqlite_defaults: bool = False) -> Any:
    """Optuna's RDBStorage; on SQLite tuned like localbo's server unless ``sqlite_defaults``."""
    import optuna

    if url.startswith("sqlite") and not sqlite_defaults:
        path = url.removeprefix("sqlite:///")

        def connect() -> sqlite3.Connection:
            # WAL and synchronous=NORMAL as localbo's server uses, and the same busy timeout.
            conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            return conn

        return optuna.storages.RDBStorage(url, engine_kwargs={"creator": connect})
    return optuna.storages.RDBStorage(url)


def bench_optuna(storage: Any, backend: str, threads: int, trials: int, system: str = OPTUNA) -> Row:
    import optuna

    name = f"bench-{threads}t-{uuid.uuid4().hex[:8]}"
    study = optuna.create_study(study_name=name, storage=storage, sampler=optuna.samplers.RandomSampler(seed=12345))
    errors = ErrorLog()

    def cycle(_: None, __: int) -> bool:
        if errors.too_many:
            return False
        try:
            trial = study.ask()
            params = {f"x{i}": trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(DIM)}
            study.tell(trial, objective(params))
        except Exception as exc:  # noqa: BLE001 - counted and reported
            errors.add(exc)
            return False
        return True

    cpu0 = time.process_time()
    timing = run_threads([None] * threads, split(trials, threads), cycle)
    cpu = time.process_time() - cpu0
    stored = study.get_trials(deepcopy=False)
    complete = sum(1 for t in stored if t.state == optuna.trial.TrialState.COMPLETE)
    verified = complete == trials and len(stored) == trials
    check = f"{complete} complete of {len(stored)} stored, expected {trials}"
    return measured_row(
        backend,
        system,
        threads,
        trials,
        timing,
        errors=errors.count,
        retries=0,
        verified=verified,
        check=check,
        client_cpu_s=cpu,
        server_cpu_s=None,
        error_samples=errors.samples,
    )


def warm_optuna(storage: Any) -> None:
    import optuna

    study = optuna.create_study(study_name=f"warmup-{uuid.uuid4().hex[:8]}", storage=storage)
    for _ in range(WARMUP):
        trial = study.ask()
        study.tell(trial, sum(trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(DIM)))


# -- the run ------------------------------------------------------------------------------


@dataclass
class Plan:
    backends: list[str]
    localbo: list[tuple[int, int]]  # (clients, total trials)
    optuna: list[tuple[int, int]]  # (threads, total trials)
    smoke: bool
    optuna_defaults: int = 0  # trials for the reference row: Optuna on SQLite without WAL (0: none)
    api_processes: int = 1  # on Postgres, also the most clients on a server with this many API processes


def make_plan(args: argparse.Namespace) -> Plan:
    backends = [b.strip() for b in (args.backends or ("sqlite" if args.smoke else "sqlite,postgres")).split(",")]
    unknown = set(backends) - {"sqlite", "postgres"}
    if unknown or not backends:
        raise SystemExit(f"--backends: expected a comma-separated subset of sqlite,postgres, got {args.backends!r}")
    if args.smoke:
        n = args.trials or 20
        return Plan(backends, [(1, n), (2, n)], [(1, n)], smoke=True)
    n = args.trials or 1000
    m = args.optuna_trials or 300
    return Plan(backends, [(1, n), (8, n)], [(1, m), (8, m)], smoke=False, optuna_defaults=m, api_processes=2)


def progress(message: str) -> None:
    print(message, flush=True)


def describe(row: Row) -> str:
    flag = "" if row.verified else "  CHECK FAILED: " + row.check
    return (
        f"  -> {row.done}/{row.trials} cycles in {row.seconds:.2f} s = {row.trials_per_s:.1f}/s "
        f"(p50 {row.p50_ms:.1f} ms, p99 {row.p99_ms:.1f} ms, errors {row.errors}, retries {row.retries}){flag}"
    )


def run(plan: Plan, workdir: Path) -> tuple[list[Row], dict[str, dict[str, int]]]:
    rows: list[Row] = []
    server_errors: dict[str, dict[str, int]] = {}
    for system in FLOORS:
        trials = max(n for _, n in plan.localbo)
        progress(f"[none] {system}, 1 client, {trials} cycles ...")
        rows.append(bench_floor(system, workdir, trials))
        progress(describe(rows[-1]))
    for backend in plan.backends:
        with fresh_database(backend, workdir, "localbo") as url:
            progress(f"[{backend}] starting localbo server ...")
            server = Server(url, workdir / f"server-{backend}.log")
            try:
                warm_localbo(server)
                for clients, trials in plan.localbo:
                    for one_trip in (False, True):
                        mode = "tell-and-ask" if one_trip else "ask + tell"
                        progress(f"[{backend}] localbo over HTTP ({mode}), {clients} client(s), {trials} trials ...")
                        rows.append(bench_localbo(server, backend, clients, trials, one_trip))
                        progress(describe(rows[-1]))
            finally:
                server.stop()
                server_errors[backend] = server.log_errors()
                for line, n in server_errors[backend].items():
                    progress(f"  server log ({n}x): {line}")
            if backend == "postgres" and plan.api_processes > 1:
                clients, trials = plan.localbo[-1]
                progress(f"[{backend}] localbo, {plan.api_processes} API processes, {clients} clients ...")
                server = Server(
                    url, workdir / f"server-{backend}-workers.log", args=("--workers", str(plan.api_processes))
                )
                try:
                    warm_localbo(server)
                    row = bench_localbo(server, backend, clients, trials, one_trip=True)
                    row.system = f"{LOCALBO_CYCLE}, {plan.api_processes} API processes"
                    rows.append(row)
                    progress(describe(rows[-1]))
                finally:
                    server.stop()
        with fresh_database(backend, workdir, "optuna") as url:
            storage = optuna_storage(url)
            try:
                warm_optuna(storage)
                for threads, trials in plan.optuna:
                    progress(f"[{backend}] optuna RDB in-process, {threads} thread(s), {trials} trials ...")
                    rows.append(bench_optuna(storage, backend, threads, trials))
                    progress(describe(rows[-1]))
            finally:
                storage.engine.dispose()
        with (
            fresh_database(backend, workdir, "optuna-grpc") as url,
            grpc_proxy(url, workdir / "grpc.log") as (proxy, pid),
        ):
            warm_optuna(proxy)
            for threads, trials in plan.optuna:
                progress(f"[{backend}] {OPTUNA_GRPC}, {threads} thread(s), {trials} trials ...")
                before = proc_cpu_seconds(pid)
                row = bench_optuna(proxy, backend, threads, trials, OPTUNA_GRPC)
                after = proc_cpu_seconds(pid)
                row.server_cpu_s = None if before is None or after is None else after - before
                rows.append(row)
                progress(describe(rows[-1]))
        if backend == "sqlite" and plan.optuna_defaults:
            # Reference only: Optuna as most people run it (rollback journal, synchronous=FULL).
            with fresh_database(backend, workdir, "optuna-defaults") as url:
                storage = optuna_storage(url, sqlite_defaults=True)
                try:
                    warm_optuna(storage)
                    progress(f"[{backend}] {OPTUNA_DEFAULTS}, 1 thread, {plan.optuna_defaults} trials ...")
                    rows.append(bench_optuna(storage, backend, 1, plan.optuna_defaults, OPTUNA_DEFAULTS))
                    progress(describe(rows[-1]))
                finally:
                    storage.engine.dispose()
    return rows, server_errors


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("localbo", "optuna", "sqlalchemy", "psycopg", "fastapi", "uvicorn", "httpx", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def postgres_version() -> str | None:
    from sqlalchemy import create_engine, text

    engine = create_engine(PG_ADMIN_URL)
    try:
        with engine.connect() as conn:
            return str(conn.execute(text("SHOW server_version")).scalar())
    except Exception:  # noqa: BLE001 - only for the report
        return None
    finally:
        engine.dispose()


def ratios(rows: list[Row]) -> dict[str, dict[str, float]]:
    """localbo / optuna trials per second, per backend and client count."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        o = find(rows, r.backend, OPTUNA, r.clients)
        if r.system == LOCALBO and o is not None and o.trials_per_s > 0:
            out.setdefault(r.backend, {})[str(r.clients)] = r.trials_per_s / o.trials_per_s
    return out


def goals(rows: list[Row], plan: Plan) -> list[dict[str, Any]]:
    """Issue 19's targets, each measured from the rows: localbo's faster mode with one client against Optuna's
    RDB (>= 10x) and its gRPC proxy (>= 5x); 8 clients on 2 API processes against one client (Postgres)."""
    out = []
    for backend in plan.backends:
        ours = [r for s in (LOCALBO, LOCALBO_CYCLE) if (r := find(rows, backend, s, 1)) is not None]
        if not ours:
            continue
        best = max(ours, key=lambda r: r.trials_per_s)
        for system, target in ((OPTUNA, GOAL_RATIO), (OPTUNA_GRPC, GRPC_GOAL_RATIO)):
            peer = find(rows, backend, system, 1)
            if peer is not None and peer.trials_per_s > 0:
                ratio = best.trials_per_s / peer.trials_per_s
                out.append({"backend": backend, "goal": f"1 client: {best.system} >= {target:.0f}x {system}",
                            "measured": f"{best.trials_per_s:.0f}/s vs {peer.trials_per_s:.0f}/s = {ratio:.1f}x",
                            "met": ratio >= target})  # fmt: skip
    many = next((r for r in rows if r.backend == "postgres" and "API processes" in r.system), None)
    one = find(rows, "postgres", LOCALBO_CYCLE, 1)
    if many is not None and one is not None and one.trials_per_s > 0:
        ratio = many.trials_per_s / one.trials_per_s
        goal = f"{many.clients} clients on {plan.api_processes} API processes >= 2x one client"
        measured = f"{many.trials_per_s:.0f}/s vs {one.trials_per_s:.0f}/s = {ratio:.2f}x"
        out.append({"backend": "postgres", "goal": goal, "measured": measured, "met": ratio >= 2.0})
    return out


def table(rows: list[Row]) -> str:
    head = (
        "| backend | system | clients | trials | seconds | trials/s | p50 ms | p99 ms | errors | retries "
        "| server CPU ms/trial | client CPU ms/trial | check |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        server_cpu = f"{1000 * r.server_cpu_s / r.done:.2f}" if r.server_cpu_s is not None and r.done else "-"
        client_cpu = f"{1000 * r.client_cpu_s / r.done:.2f}" if r.done else "-"
        lines.append(
            f"| {r.backend} | {r.system} | {r.clients} | {r.done}/{r.trials} | {r.seconds:.2f} | "
            f"{r.trials_per_s:.1f} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | {r.errors} | {r.retries} | "
            f"{server_cpu} | {client_cpu} | {'ok' if r.verified else 'FAILED: ' + r.check} |"
        )
    return "\n".join(lines)


def find(rows: list[Row], backend: str, system: str, clients: int) -> Row | None:
    return next((r for r in rows if (r.backend, r.system, r.clients) == (backend, system, clients)), None)


def http_floor(rows: list[Row]) -> str | None:
    """What the floor rows say about the 10x goal on SQLite: the budget a cycle has beyond HTTP alone."""
    floors = [r for r in rows if r.system in FLOORS and r.done]
    cycle, optuna = find(rows, "sqlite", LOCALBO_CYCLE, 1), find(rows, "sqlite", OPTUNA, 1)
    if not floors or cycle is None or optuna is None or not cycle.done or optuna.trials_per_s <= 0:
        return None
    goal_ms = 1000 / (GOAL_RATIO * optuna.trials_per_s)
    parts = [
        f"{r.system.split(': ')[1]} {1000 * r.seconds / r.done:.2f} ms a cycle ({r.trials_per_s:.0f}/s, client CPU "
        f"{1000 * r.client_cpu_s / r.done:.2f} ms)"
        for r in floors
    ]
    slowest = max(1000 * r.seconds / r.done for r in floors)
    return (
        "**The HTTP floor** (one httpx client, the same request and answer shapes, no database): "
        + "; ".join(parts)
        + f". localbo's tell-and-ask on SQLite takes {1000 * cycle.seconds / cycle.done:.2f} ms a cycle; 10x Optuna "
        f"needs {goal_ms:.2f} ms, which leaves {goal_ms - slowest:.2f} ms beyond the bare FastAPI route for the "
        "tell's and the ask's durable transactions (two, of six statements in all)."
    )


def findings(rows: list[Row], plan: Plan, cpus: int) -> list[str]:
    """The 'what this shows' paragraphs, computed from the numbers."""
    out: list[str] = []
    multi = max(c for c, _ in plan.localbo)
    locks = {"sqlite": "SQLite's single write lock (BEGIN IMMEDIATE)", "postgres": "a row lock on the study"}
    # transactions.py: SQLite's hot-path transactions run on the event loop, Postgres ones in worker threads.
    serving = {
        "sqlite": "one event loop that runs each short transaction inline (one writer at a time anyway)",
        "postgres": "worker threads whose transactions overlap only where they do not wait on that lock",
    }
    for backend in plan.backends:
        lb1 = find(rows, backend, LOCALBO, 1)
        op1 = find(rows, backend, OPTUNA, 1)
        if lb1 is None or op1 is None or op1.trials_per_s <= 0 or not lb1.done:
            continue
        ratio = lb1.trials_per_s / op1.trials_per_s
        verdict = "reaches" if ratio >= GOAL_RATIO else "does NOT reach"
        text = (
            f"**{backend}**: one localbo client over HTTP completes {lb1.trials_per_s:.0f} ask/tell cycles/s, "
            f"Optuna in-process {op1.trials_per_s:.0f}/s: {ratio:.1f}x, so localbo {verdict} the "
            f"{GOAL_RATIO:.0f}x goal with one client."
        )
        wall_ms = 1000 * lb1.seconds / lb1.done
        client_ms = 1000 * lb1.client_cpu_s / lb1.done
        goal_ms = 1000 / (GOAL_RATIO * op1.trials_per_s)
        if lb1.server_cpu_s is not None:
            server_ms = 1000 * lb1.server_cpu_s / lb1.done
            cpu_ms = server_ms + client_ms
            share = "already above" if cpu_ms > goal_ms else f"{100 * cpu_ms / goal_ms:.0f}% of"
            text += (
                f" A cycle (two HTTP requests, one write transaction each) takes {wall_ms:.2f} ms of wall time; "
                f"the server process burns {server_ms:.2f} ms of CPU in it and the client {client_ms:.2f} ms, "
                f"the rest is waiting (database, loopback, scheduling). The goal needs the whole cycle in "
                f"{goal_ms:.2f} ms; the CPU alone ({cpu_ms:.2f} ms, server + client, one after the other) is "
                f"{share} that budget before any database wait."
            )
        lbm = find(rows, backend, LOCALBO, multi)
        if lbm is not None and multi > 1:
            text += (
                f" With {multi} clients on one study localbo does {lbm.trials_per_s:.0f}/s "
                f"({lbm.trials_per_s / lb1.trials_per_s:.2f}x one client): each ask and tell takes "
                f"{locks.get(backend, 'the study lock')}, the server is one process serving ask/tell from "
                f"{serving.get(backend, 'one event loop')}, "
                f"and here the {multi} client threads, the server and the database share {cpus} "
                "CPU core(s)."
            )
        opm = find(rows, backend, OPTUNA, multi)
        if opm is not None and multi > 1:
            text += (
                f" Optuna with {multi} threads: {opm.trials_per_s:.0f}/s "
                f"({opm.trials_per_s / op1.trials_per_s:.2f}x one thread), {opm.errors} error(s)."
            )
        ref = find(rows, backend, OPTUNA_DEFAULTS, 1)
        if ref is not None:
            text += (
                f" For reference, Optuna on SQLite with its defaults (rollback journal, synchronous=FULL) does "
                f"{ref.trials_per_s:.0f}/s; localbo is {lb1.trials_per_s / max(ref.trials_per_s, 1e-9):.1f}x that, "
                "but the fair comparison is the WAL row above."
            )
        out.append(text)
    floor = http_floor(rows)
    if floor:
        out.append(floor)
    bad = [r for r in rows if r.errors or not r.verified]
    if bad:
        out.append(
            "**Problems seen**: "
            + "; ".join(f"{r.backend} / {r.system} / {r.clients}: {r.errors} error(s), {r.check}" for r in bad)
            + "."
        )
    else:
        out.append("No configuration raised an error, and every localbo study read back complete and gap-free.")
    out.append(
        "Caveats: clients, server and database share this one machine, so these are the service's costs on "
        "loopback, not over a network; Optuna runs without any HTTP layer (in-process RDBStorage), which favours "
        "it; the objective is trivial, so this is the ceiling of the ask/tell rate, not what a real objective "
        "sees; each configuration ran once, and on a small shared machine rates move by tens of percent "
        "between runs."
    )
    return out


def write_results(
    rows: list[Row], plan: Plan, out: Path, server_errors: dict[str, dict[str, int]], started: str
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cpus = os.cpu_count() or 1
    meta = {
        "date": started,
        "commit": commit_of(ROOT),
        "smoke": plan.smoke,
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cpus,
        "machine": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "versions": versions(),
        "postgres_server": postgres_version() if "postgres" in plan.backends else None,
        "dim": DIM,
        "policy": "random (localbo), RandomSampler (optuna)",
        "warmup_cycles": WARMUP,
    }
    found = findings(rows, plan, meta["nproc"])
    data = {
        "meta": meta,
        "rows": [asdict(r) for r in rows],
        "ratio_localbo_over_optuna": ratios(rows),
        "goal_ratio_one_client": GOAL_RATIO,
        "server_log_errors": server_errors,
        "findings": found,
        "goals": goals(rows, plan),
    }
    (out / f"{RESULT_NAME}.json").write_text(json.dumps(data, indent=2, allow_nan=True) + "\n")
    v = meta["versions"]
    ratio_lines = []
    for backend in plan.backends:
        lb1, op1 = find(rows, backend, LOCALBO, 1), find(rows, backend, OPTUNA, 1)
        if lb1 is not None and op1 is not None and op1.trials_per_s > 0:
            ratio = lb1.trials_per_s / op1.trials_per_s
            ok = "yes" if ratio >= GOAL_RATIO else "**no**"
            ratio_lines.append(f"| {backend} | {lb1.trials_per_s:.1f} | {op1.trials_per_s:.1f} | {ratio:.1f}x | {ok} |")
    md = [
        "# Ask/tell throughput: localbo over HTTP vs Optuna RDBStorage",
        "",
        "Written by `benchmarks/asktell_throughput.py`" + (" (smoke run)" if plan.smoke else "") + ".",
        "",
        f"- date: {started}; commit {meta['commit']}",
        f"- machine: {meta['nproc']} CPU core(s) (nproc), {meta['processor']}, {meta['machine']}",
        f"- python {v['python']}; localbo {v['localbo']}, optuna {v['optuna']}, sqlalchemy {v['sqlalchemy']}, "
        f"psycopg {v['psycopg']}, fastapi {v['fastapi']}, uvicorn {v['uvicorn']}, httpx {v['httpx']}",
        f"- postgres server: {meta['postgres_server'] or 'not used'}",
        "- workload: 10 float parameters in [0, 1], objective = sum of squares; localbo policy `random`, "
        "Optuna `RandomSampler`; a fresh database per system and backend; "
        f"{WARMUP} untimed warm-up cycles on a separate study first",
        "- localbo: `python -m localbo.cli serve` (1 process) on loopback, thin client "
        "`localbo_client` (`study.ask(client_id=...)` + `study.tell(trial, value)`); N clients = N threads, "
        "each its own `Client` and `client_id`, on one study",
        "- optuna: `RDBStorage` in the benchmark process (SQLite in WAL mode, synchronous=NORMAL, like "
        "localbo), each trial = `study.ask()` + 10 x `suggest_float` + `study.tell()`; N threads share the study",
        "",
        "## Results",
        "",
        table(rows),
        "",
        "`errors` = exceptions raised to the caller; `retries` = 5xx answers / connection errors the localbo "
        "client retried by itself; `check` = localbo: the trials read back over the API are exactly numbers "
        "1..N, all complete, each value matching its parameters; optuna: the number of complete trials stored. "
        "Server CPU is the localbo server process's CPU time (from /proc) over the run; client CPU is the "
        "benchmark process's (for Optuna that is all of Optuna's work).",
        "",
        "## Goals (issue 19)",
        "",
        "| backend | goal | measured | met |",
        "|---|---|---|---|",
        *(
            f"| {g['backend']} | {g['goal']} | {g['measured']} | {'yes' if g['met'] else '**no**'} |"
            for g in goals(rows, plan)
        ),
        "",
        "## localbo / optuna, one client",
        "",
        f"| backend | localbo trials/s | optuna trials/s | ratio | >= {GOAL_RATIO:.0f}x |",
        "|---|---|---|---|---|",
        *ratio_lines,
        "",
        "## What this shows",
        "",
        *(line for paragraph in found for line in (paragraph, "")),
    ]
    if any(server_errors.values()):
        md += ["## Errors in the localbo server log", ""]
        for backend, lines in server_errors.items():
            md += [f"- {backend}: {n}x `{line[:200]}`" for line, n in lines.items()]
        md.append("")
    (out / f"{RESULT_NAME}.md").write_text("\n".join(md))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--trials", type=int, help="localbo trials per configuration (default 1000; smoke 20)")
    parser.add_argument("--optuna-trials", type=int, help="optuna trials per configuration (default 300)")
    parser.add_argument("--smoke", action="store_true", help="tiny run (1 and 2 clients); never writes the results")
    parser.add_argument("--backends", help="comma-separated: sqlite,postgres (default both; smoke: sqlite)")
    parser.add_argument("--out", type=Path, help=f"where to write the results (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    plan = make_plan(args)
    if args.smoke:
        if args.out is not None and args.out.resolve() == DEFAULT_OUT.resolve():
            parser.error("--smoke does not write into benchmarks/results; pass another --out")
        out = args.out or Path(tempfile.mkdtemp(prefix="asktell-smoke-"))
    else:
        out = args.out or DEFAULT_OUT
    if "postgres" in plan.backends and not pg_available():
        print(f"Postgres is not reachable at {PG_ADMIN_URL} (set LOCALBO_BENCH_PG)", file=sys.stderr)
        return 2

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    logging.getLogger("httpx").setLevel(logging.WARNING)

    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="asktell-bench-") as tmp:
        rows, server_errors = run(plan, Path(tmp))
    progress(f"\ndone in {time.monotonic() - t0:.0f} s\n")
    progress(table(rows))
    for backend, by_clients in ratios(rows).items():
        progress(f"localbo/optuna on {backend}: " + ", ".join(f"{c} client(s) {r:.1f}x" for c, r in by_clients.items()))
    write_results(rows, plan, out, server_errors, started)
    progress(f"\nwrote {out / (RESULT_NAME + '.md')} and {out / (RESULT_NAME + '.json')}")
    # Optuna's own errors (e.g. "database is locked" with threads) are a finding, not a failed run.
    failed = [r for r in rows if r.done == 0 or (r.system == LOCALBO and (r.errors or not r.verified))]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
