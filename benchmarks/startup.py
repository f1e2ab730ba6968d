"""Start-up times: ``localbo serve`` until ``/healthz`` answers, until the first ask is served, and each
CLI verb that needs no policy, wall and CPU seconds (median of ``--repeats``).

Each run is added to ``results/startup.json`` under its ``--label`` (a label run again replaces its
row), and ``startup.md`` is written whole from every run in the json, so a before/after pair stays
side by side.

    python benchmarks/startup.py --label after [--repeats 5]
    python benchmarks/startup.py --smoke          # one repeat, into a temporary folder
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from harness.processes import free_port
from harness.runs import output_dir, run_meta

RESULTS = Path(__file__).resolve().parent / "results"
CLI = [sys.executable, "-m", "localbo.cli"]
SPACE = {"x": {"type": "float", "low": 0, "high": 1}, "y": {"type": "float", "low": 0, "high": 1}}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_serve(db: str, log: Path) -> dict[str, float]:
    """Seconds from spawning ``localbo serve`` to the first 200 of /healthz, and to a first ask served."""
    port = free_port()
    env = {**os.environ, "LOCALBO_DATABASE_URL": db}
    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen([*CLI, "serve", "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        health = _poll(lambda: httpx.get(f"{url}/healthz", timeout=1).status_code == 200, start, proc, log)
        name = f"startup-{port}-{time.time_ns()}"
        httpx.post(f"{url}/api/v1/studies", json={"name": name, "space": SPACE, "policy": "sobol"}, timeout=60)
        httpx.post(f"{url}/api/v1/studies/{name}/ask", json={}, timeout=120).raise_for_status()
        first_ask = time.perf_counter() - start
        said_ready = "localbo listening on http://127.0.0.1:" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(30)
    return {"healthz_s": health, "first_ask_s": first_ask, "study": name, "said_ready": said_ready}


def _poll(ready, start: float, proc: subprocess.Popen, log: Path, limit: float = 120.0) -> float:  # noqa: ANN001
    while time.perf_counter() - start < limit:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if ready():
                return time.perf_counter() - start
        except httpx.HTTPError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"serve not ready within {limit} s")


def time_verb(args: list[str], db: str) -> tuple[float, float]:
    """Wall and CPU seconds of one CLI call."""
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run([*CLI, *args], env={**os.environ, "LOCALBO_DATABASE_URL": db}, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"localbo {' '.join(args)} failed: {done.stderr[-2000:]}")
    return wall, children_cpu() - cpu


def measure(repeats: int, folder: Path) -> dict:
    db = f"sqlite:///{folder / 'startup.sqlite'}"
    serves = [time_serve(db, folder / f"serve-{i}.log") for i in range(repeats)]
    name = serves[0]["study"]  # a study with one trial, for show and export
    verbs = {
        "db upgrade": ["db", "upgrade"],
        "studies list": ["studies", "list"],
        "studies show": ["studies", "show", name],
        "studies export": ["studies", "export", name],
    }
    rows = {}
    for label, args in verbs.items():
        runs = [time_verb(args, db) for _ in range(repeats)]
        rows[label] = {"wall_s": statistics.median(w for w, _ in runs), "cpu_s": statistics.median(c for _, c in runs)}
    return {
        "serve": {k: statistics.median(s[k] for s in serves) for k in ("healthz_s", "first_ask_s")},
        "ready_line_every_time": all(s["said_ready"] for s in serves),
        "verbs": rows,
        "repeats": repeats,
    }


def markdown(runs: list[dict]) -> str:
    lines = [
        "# Start-up: serve until /healthz, and the CLI verbs",
        "",
        "Written whole by `benchmarks/startup.py` from `startup.json` (every labelled run). Medians of",
        "the repeats; CPU = user + system seconds of the child process. Targets (issue 19): `/healthz`",
        "within 3 s of `localbo serve`, the verbs that need no policy under 1.5 s.",
        "",
        "| run | commit | when | load before | /healthz s | first ask s | "
        + " | ".join(f"{v} s (CPU)" for v in runs[0]["verbs"])
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(runs[0]["verbs"]),
    ]
    for r in runs:
        verbs = " | ".join(f"{v['wall_s']:.2f} ({v['cpu_s']:.2f})" for v in r["verbs"].values())
        meta = r["meta"]
        lines.append(
            f"| {r['label']} | {meta['commit']} | {meta['when']} | {meta['load_before']} | "
            f"{r['serve']['healthz_s']:.2f} | {r['serve']['first_ask_s']:.2f} | {verbs} |"
        )
    meta = runs[-1]["meta"]
    lines += ["", f"Machine: {meta['machine']}, {meta['cpus']} CPUs, python {meta['python']}; SQLite database.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default="current", help="the row's name (before, after...)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one repeat, into a temporary folder")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = output_dir(parser, args, RESULTS, "startup")
    repeats = 1 if args.smoke else args.repeats
    meta = run_meta(__file__, args.smoke)
    with tempfile.TemporaryDirectory() as folder:
        run = {"label": args.label, "meta": meta, **measure(repeats, Path(folder))}
    store = out / "startup.json"
    runs = [r for r in (json.loads(store.read_text())["runs"] if store.exists() else []) if r["label"] != args.label]
    runs.append(run)
    store.write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    text = markdown(runs)
    (out / "startup.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
