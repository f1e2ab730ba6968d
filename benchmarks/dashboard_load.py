"""Dashboard load: ask/tell of one client with 0 open streams, then with many studies-list streams, then with as many
study-page streams, side by side.

What it measures, per storage backend, in one run against one ``localbo serve`` process (a subprocess
on a fresh database, tokens on): one client asks and tells as fast as it can on one study (policy
``random``, 3 floats, so nothing but the service's overhead is timed) over loopback HTTP with a
kept-alive connection, for ``--seconds`` per configuration; first with no dashboard open, then with
``--streams`` open streams of each kind (bare asyncio sockets in a child process, so the readers do
not share this process's interpreter lock with the timed client, and cost the shared cores as little
as they can: they count events in the raw bytes), each with a token of its own:

- ``list``: ``GET /api/v1/events``, the studies list. Half the tokens may read the busy study (they
  should get a ``studies`` event about once a second), half may read only a quiet study of their own
  (they should get the first list and nothing after). The database also holds 30 quiet studies of 5
  trials each, so the list has weight.
- ``study``: ``GET /api/v1/studies/load-busy/events?after=N&since=T``, the busy study's page, as the
  dashboard opens it after reading the series (``N`` and ``T`` from one ``GET .../series``). Each
  should get a ``trials`` event about every half second.

Reported per configuration: ask latency (p50, p95), tell p50, complete cycles per second, and
CPU seconds of the server, of this client and of the readers beside the wall seconds (the machine
may be shared and small: a CPU second spent by the server is the cost). The goals: with the list
streams open, the ask p50 at most twice the p50 without; with the study streams open, at least 80 %
of the cycles per second without (issue 26: they may cost at most a fifth of the cycles). "Without"
is the mean of two rows with no stream open, one before the loaded rows and one after them.

    .venv/bin/python benchmarks/dashboard_load.py                     # sqlite and postgres, 500 streams, 30 s each
    .venv/bin/python benchmarks/dashboard_load.py --backends sqlite
    .venv/bin/python benchmarks/dashboard_load.py --smoke             # ~40 s; writes to a temp dir
    .venv/bin/python benchmarks/dashboard_load.py --before HEAD~3     # adds rows served by that commit's service/
    .venv/bin/python benchmarks/dashboard_load.py --baseline /tmp/old/service   # ... or by another checkout's

``--before REV`` takes ``service/`` and ``migrations/`` of commit ``REV`` from this repository (``git
archive``, into the run's temporary folder) and serves them, with this tree's environment, in the
``baseline`` rows of the same run: the before and the after on the same machine, minutes apart.

The full run writes ``benchmarks/results/dashboard_load.{md,json}`` whole (or into ``--out``);
``--smoke`` never writes there. A full run is niced (``os.nice(10)``), children included; the smoke (a test) is
not. Postgres is reached through ``LOCALBO_BENCH_PG`` (default ``postgresql+psycopg://postgres@127.0.0.1:5432/test``),
on a fresh database dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import numpy as np
from harness.processes import ServerProcess, fresh_database
from harness.runs import commit_of, output_dir, run_meta

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parents[1]
GOAL_RATIO = 2.0  # list streams: ask p50 at most this times the p50 without
GOAL_CYCLES = 0.8  # study streams: at least this share of the cycles per second without
QUIET_STUDIES = 30
BUSY = "load-busy"
ADMIN = {"Authorization": "Bearer bench"}
SPACE = {k: {"type": "float", "low": 0.0, "high": 1.0} for k in ("a", "b", "c")}
KINDS = ("list", "study")
COUNTED = {"list": b"\nevent: studies\n", "study": b"\nevent: trials\n"}  # the event a reader counts


@dataclass
class Plan:
    backends: list[str]
    streams: list[int]  # 0 (no stream open) and the counts of each kind to open
    seconds: float
    smoke: bool
    baseline: str | None = None  # another service/ directory (a checkout's, or --before's), served in extra rows
    before: str | None = None  # the commit --before took it from


@dataclass
class Row:
    backend: str
    server: str  # "this tree", or "baseline" (the server from --baseline or --before)
    kind: str  # "none", "list" (GET /events) or "study" (GET /studies/load-busy/events)
    streams: int
    cycles: int
    wall_s: float
    cycles_per_s: float
    ask_p50_ms: float
    ask_p95_ms: float
    tell_p50_ms: float
    errors: int
    server_cpu_s: float
    client_cpu_s: float
    readers_cpu_s: float
    # per stream that may read the busy study, over the whole hold: list, ``studies`` events; study, ``trials``
    events_per_reader_of_busy: float
    events_max_per_reader_not_of_busy: int  # list: the first list only, 1; study: every reader is of the busy study
    stream_errors: int


def viewer_tokens(n: int, kind: str = "list") -> list[tuple[str, str]]:
    """(token, scope). List readers: odd ones may read the busy study, every one its own quiet one.
    Study readers: each may read the busy study (a page opens only on a study its token may read)."""
    if kind == "study":
        return [(f"p{i}", f"read:{BUSY}") for i in range(n)]
    return [(f"v{i}", f"read:quiet-{i % QUIET_STUDIES}" + (f",read:{BUSY}" if i % 2 else "")) for i in range(n)]


def tokens_setting(n: int) -> str:
    tokens = [t for kind in KINDS for t in viewer_tokens(n, kind)]
    return ";".join(["bench=admin"] + [f"{token}={scope}" for token, scope in tokens])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the readers (a child process) ------------------------------------------------------------------


def hold_streams(url: str, kind: str, tokens: list[str], ready: Any, stop: Any, results: Any) -> None:
    results.put(asyncio.run(_hold(url, kind, tokens, ready, stop)))


async def _hold(url: str, kind: str, tokens: list[str], ready: Any, stop: Any) -> dict:
    counts = [0] * len(tokens)
    errors: list[str] = []
    first = [asyncio.Event() for _ in tokens]
    counted = COUNTED[kind]
    target = "/api/v1/events"
    if kind == "study":  # as the page opens it: the series first, then the stream from where it ended
        async with httpx.AsyncClient(timeout=60) as client:
            r = await client.get(
                f"{url}/api/v1/studies/{BUSY}/series", headers={"Authorization": f"Bearer {tokens[0]}"}
            )
            r.raise_for_status()
        query = urlencode({"after": r.json()["last"], "since": r.json()["as_of"]})
        target = f"/api/v1/studies/{BUSY}/events?{query}"
    address = urlsplit(url)

    async def read(i: int, token: str) -> None:
        """One stream over a bare socket: the real readers are browsers on other machines, so these, which share
        the server's cores, do as little as they can (count the events in the raw bytes, parse nothing)."""
        writer = None
        try:
            reader, writer = await asyncio.open_connection(address.hostname, address.port)
            writer.write(
                f"GET {target} HTTP/1.1\r\nHost: {address.netloc}\r\nAuthorization: Bearer {token}\r\n"
                "Accept: text/event-stream\r\n\r\n".encode()
            )
            head = await reader.readuntil(b"\r\n\r\n")
            if head.split(b" ", 2)[1] != b"200":
                raise RuntimeError(head.split(b"\r\n", 1)[0].decode())
            tail = b""
            while chunk := await reader.read(65536):
                text = tail + chunk
                counts[i] += text.count(counted)
                if b"\nevent: " in text:
                    first[i].set()
                tail = text[-(len(counted) - 1) :]
            raise RuntimeError("the stream ended")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # counted and reported; the run goes on
            errors.append(f"{token}: {exc!r}")
            first[i].set()
        finally:
            if writer is not None:
                writer.close()

    tasks = [asyncio.create_task(read(i, token)) for i, token in enumerate(tokens)]
    try:
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in first)), timeout=120)
    except TimeoutError:
        errors.append("not every stream got its first event within 120 s")
    ready.set()
    while not stop.is_set():
        await asyncio.sleep(0.1)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"events": counts, "errors": errors, "cpu_s": time.process_time()}


# -- the timed client ------------------------------------------------------------------------------


def asktell(url: str, seconds: float, warmup_s: float) -> tuple[list[float], list[float], int, float]:
    """Ask/tell cycles for ``seconds`` after a warm-up: ask and tell latencies, errors, wall seconds."""
    asks: list[float] = []
    tells: list[float] = []
    errors = 0
    with httpx.Client(base_url=f"{url}/api/v1/studies/{BUSY}", headers=ADMIN, timeout=60) as http:
        started = time.perf_counter()
        measure_from = started + warmup_s
        while (now := time.perf_counter()) < measure_from + seconds:
            t0 = time.perf_counter()
            r = http.post("/ask", json={"count": 1})
            t1 = time.perf_counter()
            if r.status_code != 200:
                errors += 1
                continue
            trial = r.json()["trials"][0]
            value = sum((v - 0.3) ** 2 for v in trial["params"].values())
            r = http.post(f"/trials/{trial['number']}/tell", json={"value": value})
            t2 = time.perf_counter()
            if r.status_code != 200:
                errors += 1
            if now >= measure_from:
                asks.append(t1 - t0)
                tells.append(t2 - t1)
        return asks, tells, errors, time.perf_counter() - measure_from


def seed_studies(url: str) -> None:
    with httpx.Client(base_url=f"{url}/api/v1", headers=ADMIN, timeout=60) as http:
        for name in [BUSY] + [f"quiet-{j}" for j in range(QUIET_STUDIES)]:
            r = http.post("/studies", json={"name": name, "space": SPACE, "policy": "random", "seed": 1})
            r.raise_for_status()
            if name != BUSY:
                for k in range(5):
                    body = {"params": {"a": k / 5, "b": 0.5, "c": 0.5}, "value": float(k)}
                    http.post(f"/studies/{name}/trials", json=body).raise_for_status()


def measure(url: str, server: ServerProcess, label: str, backend: str, kind: str, streams: int, plan: Plan) -> Row:
    readers: dict = {"events": [], "errors": [], "cpu_s": 0.0}
    spawn = mp.get_context("spawn")
    ready, stop, results = spawn.Event(), spawn.Event(), spawn.Queue()
    child = None
    scopes = viewer_tokens(streams, kind)
    if streams:
        tokens = [token for token, _ in scopes]
        child = spawn.Process(target=hold_streams, args=(url, kind, tokens, ready, stop, results), daemon=True)
        child.start()
        if not ready.wait(180):
            raise RuntimeError("the readers did not open their streams within 180 s")
    server_cpu, client_cpu = cpu_seconds(server.proc.pid), time.process_time()
    asks, tells, errors, wall = asktell(url, plan.seconds, warmup_s=1.0 if plan.smoke else 3.0)
    server_cpu, client_cpu = cpu_seconds(server.proc.pid) - server_cpu, time.process_time() - client_cpu
    if child is not None:
        stop.set()
        readers = results.get(timeout=120)
        child.join(60)
    of_busy = [n for n, (_, scope) in zip(readers["events"], scopes, strict=True) if BUSY in scope]
    not_of_busy = [n for n, (_, scope) in zip(readers["events"], scopes, strict=True) if BUSY not in scope]
    ms = np.array(asks) * 1000
    row = Row(
        backend=backend,
        server=label,
        kind=kind,
        streams=streams,
        cycles=len(asks),
        wall_s=round(wall, 2),
        cycles_per_s=round(len(asks) / wall, 2),
        ask_p50_ms=round(float(np.percentile(ms, 50)), 2),
        ask_p95_ms=round(float(np.percentile(ms, 95)), 2),
        tell_p50_ms=round(float(np.percentile(np.array(tells) * 1000, 50)), 2),
        errors=errors,
        server_cpu_s=round(server_cpu, 2),
        client_cpu_s=round(client_cpu, 2),
        readers_cpu_s=round(readers["cpu_s"], 2),
        events_per_reader_of_busy=round(float(np.mean(of_busy)), 1) if of_busy else 0.0,
        events_max_per_reader_not_of_busy=max(not_of_busy, default=0),
        stream_errors=len(readers["errors"]),
    )
    print(
        f"  {backend:8} {label:9} {streams:4} {kind:5} streams: ask p50 {row.ask_p50_ms:7.1f} ms  "
        f"p95 {row.ask_p95_ms:7.1f} ms  {row.cycles_per_s:6.1f} cycles/s  "
        f"server CPU {row.server_cpu_s:5.1f} s of {row.wall_s:5.1f} s wall",
        flush=True,
    )
    for error in readers["errors"][:3]:
        print(f"    stream error: {error}", file=sys.stderr)
    return row


def run_backend(backend: str, plan: Plan, workdir: Path) -> list[Row]:
    """Every configuration on this tree's server and, with a baseline, on the baseline's right after it (each its own
    fresh database): the before and the after seconds apart, under the same load of a shared machine."""
    rows = []
    labels = ["this tree"] + (["baseline"] if plan.baseline else [])
    with ExitStack() as stack:
        servers = {}
        for label in labels:
            env = {"LOCALBO_TOKENS": tokens_setting(max(plan.streams))}
            if label == "baseline" and plan.baseline:
                env["PYTHONPATH"] = plan.baseline  # the server imports localbo from the other checkout
            url = stack.enter_context(fresh_database(backend, workdir, "dashload"))
            log = workdir / f"server-{backend}-{label.replace(' ', '-')}.log"
            server = servers[label] = ServerProcess(url, log_path=log, **env)
            stack.callback(server.stop)
            seed_studies(server.url)
        configurations = [(kind, streams) for streams in plan.streams for kind in (KINDS if streams else ("none",))]
        if 0 in plan.streams and len(plan.streams) > 1:
            configurations.append(("none", 0))  # again at the end: the reference brackets the loaded rows
        for kind, streams in configurations:
            for label, server in servers.items():
                rows.append(measure(server.url, server, label, backend, kind, streams, plan))
    return rows


def checkout_service(rev: str, into: Path) -> tuple[str, str]:
    """``service/`` and ``migrations/`` of commit ``rev``, under ``into``: the path to serve, and the commit."""
    git = ["git", "-C", str(REPO)]
    commit = subprocess.run([*git, "rev-parse", "--short", rev], check=True, capture_output=True, text=True)
    archive = subprocess.run(
        [*git, "archive", commit.stdout.strip(), "service", "migrations"], check=True, capture_output=True
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return str(into / "service"), commit.stdout.strip()


def verdicts(rows: list[Row]) -> list[dict]:
    out = []
    for backend, label in dict.fromkeys((r.backend, r.server) for r in rows):
        mine = [r for r in rows if (r.backend, r.server) == (backend, label)]
        quiet = [r for r in mine if r.streams == 0]  # before and after the loaded rows: their mean is the reference
        for kind in KINDS:
            loaded = max((r for r in mine if r.kind == kind), key=lambda r: r.streams, default=None)
            if not quiet or loaded is None:
                continue
            p50_ratio = loaded.ask_p50_ms / float(np.mean([r.ask_p50_ms for r in quiet]))
            cycles_ratio = loaded.cycles_per_s / float(np.mean([r.cycles_per_s for r in quiet]))
            met = p50_ratio <= GOAL_RATIO if kind == "list" else cycles_ratio >= GOAL_CYCLES
            out.append(
                {
                    "backend": backend,
                    "server": label,
                    "kind": kind,
                    "streams": loaded.streams,
                    "p50_ratio": round(p50_ratio, 2),
                    "cycles_ratio": round(cycles_ratio, 2),
                    "goal": f"ask p50 ratio <= {GOAL_RATIO}" if kind == "list" else f"cycles ratio >= {GOAL_CYCLES}",
                    "met": met,
                }
            )
    return out


def write(out: Path, plan: Plan, rows: list[Row], meta: dict) -> None:
    judged = verdicts(rows)
    data = {"meta": meta, "plan": asdict(plan), "rows": [asdict(r) for r in rows], "verdicts": judged}
    (out / "dashboard_load.json").write_text(json.dumps(data, indent=2) + "\n")
    lines = [
        "# Dashboard load: ask/tell with open studies-list and study-page streams",
        "",
        f"Written by `benchmarks/dashboard_load.py`{' (smoke run)' if plan.smoke else ''} at commit "
        f"{meta.get('commit')} on {meta['when']}, "
        f"{meta['machine']} ({meta['cpus']} CPUs, load average {meta['load_before']} before the run, "
        f"{meta.get('load_after')} after){'' if plan.smoke else ', niced'}. "
        f"One client asks and tells on one study ({plan.seconds:.0f} s per row, after a warm-up); the `list` streams "
        "are `GET /api/v1/events`, half of them allowed to read the busy study; the `study` streams are "
        f"`GET /api/v1/studies/{BUSY}/events` (the busy study's page). Each stream has a token of its own.",
        "",
        "| backend | server | streams | open streams | ask p50 ms | ask p95 ms | tell p50 ms | cycles/s | errors "
        "| server CPU s | wall s | client CPU s | readers CPU s | events per reader of the busy study | "
        "most events to a reader not of it |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.backend} | {r.server} | {r.kind} | {r.streams} | {r.ask_p50_ms:.1f} | {r.ask_p95_ms:.1f} | "
            f"{r.tell_p50_ms:.1f} | "
            f"{r.cycles_per_s:.1f} | {r.errors + r.stream_errors} | {r.server_cpu_s:.1f} | {r.wall_s:.1f} | "
            f"{r.client_cpu_s:.1f} | {r.readers_cpu_s:.1f} | {r.events_per_reader_of_busy:.1f} | "
            f"{r.events_max_per_reader_not_of_busy if r.kind == 'list' else '-'} |"
        )
    lines += [
        "",
        f"Goals: with the list streams open, the ask p50 at most {GOAL_RATIO:.0f}x the p50 without; with the study "
        f'streams open, at least {GOAL_CYCLES:.0%} of the cycles per second without. "Without" is the mean of the '
        "rows with no stream open, measured before and after the others (the machine's load drifts).",
        "",
    ]
    for v in judged:
        lines.append(
            f"- {v['backend']}, {v['server']}, {v['streams']} {v['kind']} streams: ask p50 ratio {v['p50_ratio']:.2f}, "
            f"cycles ratio {v['cycles_ratio']:.2f} ({'met' if v['met'] else 'NOT met'}: {v['goal']})"
        )
    if plan.baseline:
        source = f"commit {plan.before} (`--before`)" if plan.before else f"commit {meta.get('baseline_commit')}"
        lines += [
            "",
            f"The `baseline` rows: the same benchmark in the same run against the server of {source}, "
            "served from that commit's `service/` with this tree's environment; each configuration ran on this "
            "tree's server, then at once on the baseline's (two servers, two fresh databases).",
        ]
    lines += [
        "",
        "Events per reader: a list reader counts its `studies` events, a study reader its `trials` events, over",
        "the whole hold (the timed seconds, the warm-up and the readers' start). A list reader not allowed to read",
        "the busy study gets the first list and nothing after (1 event), however busy that study is; a reader of it",
        "gets about one a second (the list is polled once a second per process). A study reader gets a `trials`",
        "event whenever a poll of the study finds a change: about two a second while the client asks and tells.",
        "",
    ]
    (out / "dashboard_load.md").write_text("\n".join(lines))


def make_plan(args: argparse.Namespace, workdir: Path) -> Plan:
    backends = [b.strip() for b in (args.backends or ("sqlite" if args.smoke else "sqlite,postgres")).split(",")]
    streams = [int(s) for s in (args.streams or ("0,20" if args.smoke else "0,500")).split(",")]
    seconds = args.seconds or (4.0 if args.smoke else 30.0)
    baseline, before = (str(args.baseline.resolve()) if args.baseline else None), None
    if args.before:
        baseline, before = checkout_service(args.before, workdir / "before")
    return Plan(backends, streams, seconds, smoke=args.smoke, baseline=baseline, before=before)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="20 streams, 4 s, sqlite; never writes the results")
    parser.add_argument("--backends", help="comma-separated: sqlite,postgres (default both; smoke: sqlite)")
    parser.add_argument("--streams", help="comma-separated open stream counts (default 0,500; smoke 0,20)")
    parser.add_argument("--seconds", type=float, help="timed seconds per row (default 30; smoke 4)")
    before = parser.add_mutually_exclusive_group()
    before.add_argument("--before", help="a commit of this repository: also run its server (git archive), same run")
    before.add_argument(
        "--baseline", type=Path, help="another checkout's service/ dir: also run its server (e.g. before a change)"
    )
    parser.add_argument("--out", type=Path, help=f"where to write the results (default {RESULTS})")
    args = parser.parse_args(argv)
    out = output_dir(parser, args, RESULTS, "dashload")
    if not args.smoke:  # a full run on a shared machine yields to others (children inherit it); the smoke is a test:
        os.nice(10)  # niced, its servers starve beside a busy machine's work and miss their start-up bounds
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dashload-") as tmp:
        plan = make_plan(args, Path(tmp))
        meta = run_meta(__file__, plan.smoke)
        if plan.baseline:
            meta["baseline_commit"] = plan.before or commit_of(Path(plan.baseline))
        started, cpu = time.perf_counter(), os.times()
        for backend in plan.backends:
            print(f"{backend}:", flush=True)
            rows += run_backend(backend, plan, Path(tmp))
        meta["run_wall_s"] = round(time.perf_counter() - started, 1)
        done = os.times()
        # this process and its waited-for children (the servers, the readers): the whole run's CPU
        meta["run_cpu_s"] = round(sum(done[:4]) - sum(cpu[:4]), 1)
    meta["load_after"] = round(os.getloadavg()[0], 2)
    write(out, plan, rows, meta)
    print((out / "dashboard_load.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
