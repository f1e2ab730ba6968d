"""What torch's thread count costs a suggest: one thread (the service's default, ``Settings.torch_threads``) against
torch's own choice (one per core), on a quiet machine, beside another busy program, with two plans at once, and
called from a script's main thread.

Each (threads, condition) runs in a fresh child process, as a server or worker is one: the child sets its torch
threads the way ``create_app`` does (``torch.set_num_threads``; 0 keeps torch's), with no OMP/MKL thread variables
in its environment, then times ``--repeats`` suggests of each case (a policy on n results of a noise-free quadratic
at random points, seeds 0, 1, ...; after one untimed suggest that loads what the policy needs). The service runs
every suggest in a pool thread (the inline executor's, or a celery worker's ``--pool=threads``), so the child does
too, except in ``main-thread``. Conditions:

- ``quiet``: nothing else started (the load average before each child is in the table);
- ``busy``: one more process spinning at normal priority, started by this script (another program at work on one
  core: a simulator, a second study's worker, the lab's own software);
- ``two-plans``: two pool threads of the child run the suggests at once, as the inline executor plans two studies;
- ``main-thread``: busy as above, the suggests in the child's main thread, as a script or a test that calls a
  policy directly (``localbo.policies``) runs them.

Wall seconds per suggest (median) and CPU seconds per suggest (the child's user + system time over its suggests)
are written whole to ``results/torch_threads.{md,json}``.

    nice .venv/bin/python benchmarks/torch_threads.py                 # the full table (a few minutes here)
    .venv/bin/python benchmarks/torch_threads.py --smoke              # minucb at d = 3, one suggest, a temp folder
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness.runs import output_dir, run_meta

RESULTS = Path(__file__).resolve().parent / "results"
# (policy, d, n): a global GP on a small space, a local policy's window at d = 25, turbo's region
CASES = (("ei", 6, 60), ("minucb", 25, 125), ("turbo", 10, 100))
SMOKE_CASES = (("minucb", 3, 12),)
CONDITIONS = ("quiet", "busy", "two-plans", "main-thread")
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
CHILD_TIMEOUT_S = 1800


def child(threads: int, cases: list[list[Any]], repeats: int, concurrent: int) -> dict[str, Any]:
    """In the child process: time ``repeats`` suggests of each case, ``concurrent`` pool threads at once (0: in the
    main thread)."""
    import torch
    from localbo.policies import get_policy
    from localbo.policies.requests import make_request

    if threads:
        torch.set_num_threads(threads)
    out: dict[str, Any] = {"threads": torch.get_num_threads(), "cases": []}
    for name, d, n in cases:
        walls: list[float] = []

        def suggest(seed: int, name: str = name, d: int = d, n: int = n, walls: list[float] = walls) -> None:
            g = torch.Generator().manual_seed(seed)
            X = torch.rand(n, d, generator=g, dtype=torch.float64)
            y = (X - 0.3).pow(2).sum(-1)
            start = time.perf_counter()
            get_policy(name)().suggest(make_request(name, X, y, seed=seed))
            walls.append(time.perf_counter() - start)

        def at_once(seeds: list[int], suggest=suggest) -> None:  # noqa: ANN001
            """Suggest for these seeds at once in pool threads, or in turn in the main thread (``concurrent`` 0)."""
            if not concurrent:
                for seed in seeds:
                    suggest(seed)
                return
            workers = [threading.Thread(target=suggest, args=(seed,)) for seed in seeds]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()

        at_once([10_000])  # untimed: the first suggest of a process also loads and compiles what it needs
        walls.clear()
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        for seed in range(repeats):
            at_once([seed * max(concurrent, 1) + k for k in range(max(concurrent, 1))])
        used = resource.getrusage(resource.RUSAGE_SELF)
        cpu_s = (used.ru_utime - cpu.ru_utime) + (used.ru_stime - cpu.ru_stime)
        out["cases"].append(
            {"policy": name, "d": d, "n": n, "wall_s": statistics.median(walls), "cpu_s": cpu_s / len(walls)}
        )
    return out


def run_child(threads: int, condition: str, cases: tuple, repeats: int) -> dict[str, Any]:
    """One child process for this thread setting and condition (a spinning process beside it when ``busy``)."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    spinner = None
    if condition in ("busy", "main-thread"):
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(1.0)  # let it take its core
    load = os.getloadavg()[0]
    try:
        spec = {
            "threads": threads,
            "cases": [list(c) for c in cases],
            "repeats": repeats,
            "concurrent": {"two-plans": 2, "main-thread": 0}.get(condition, 1),
        }
        done = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(spec)],
            env=env,
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
        )
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    if done.returncode != 0:
        raise RuntimeError(f"child (threads {threads}, {condition}) failed: {done.stderr[-3000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return {"setting": threads, "condition": condition, "load_before": round(load, 2), **got}


def markdown(runs: list[dict[str, Any]], meta: dict[str, Any], repeats: int, seconds: float) -> str:
    base = {
        (c["policy"], c["d"], c["n"]): c["wall_s"]
        for r in runs
        if r["setting"] == 1 and r["condition"] == "quiet"
        for c in r["cases"]
    }
    lines = [
        "# torch threads: what a suggest costs with one thread and with torch's default",
        "",
        f"Written whole by `benchmarks/torch_threads.py` at commit {meta['commit']}, {meta['when']}, on "
        f"{meta['machine']} ({meta['cpus']} CPUs; load average {meta['load_before']} before the run); "
        f"{repeats} suggest(s) per case and thread on a noise-free quadratic at random points (seeds 0, 1, ...); "
        f"{seconds:.0f} s in all.",
        "",
        "`threads`: what the child asked for (`1`: the service's default; `torch's` = torch's own choice, one per",
        "core), and what torch reported. `busy`: a process spinning at normal priority beside the child.",
        "`two-plans`: two threads of the child suggest at once (two studies planning on the inline executor).",
        "`main-thread`: busy, and the suggests in the child's main thread (a script calling a policy directly);",
        "every other condition suggests in a pool thread, as the service does.",
        "Wall = median seconds of one suggest; CPU = the child's user + system seconds per suggest (all its",
        "threads); `x` = wall against one thread on the quiet machine.",
        "",
        "| policy | d | n | threads | condition | load before | wall s | CPU s | x |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        asked = "1" if r["setting"] == 1 else "torch's"
        for c in r["cases"]:
            x = c["wall_s"] / base[(c["policy"], c["d"], c["n"])] if (c["policy"], c["d"], c["n"]) in base else None
            lines.append(
                f"| {c['policy']} | {c['d']} | {c['n']} | {asked} ({r['threads']}) | {r['condition']} | "
                f"{r['load_before']} | {c['wall_s']:.3g} | {c['cpu_s']:.3g} | {'-' if x is None else f'{x:.3g}'} |"
            )
    lines += ["", "Findings, by hand: `torch_threads_findings.md`.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="suggests per case, thread setting and condition")
    parser.add_argument("--conditions", default=",".join(CONDITIONS), help="comma-separated, of " + str(CONDITIONS))
    parser.add_argument("--smoke", action="store_true", help="minucb at d = 3, one suggest, into a temporary folder")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(child(spec["threads"], spec["cases"], spec["repeats"], spec["concurrent"])))
        return
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    unknown = set(conditions) - set(CONDITIONS)
    if unknown:
        parser.error(f"--conditions: unknown {sorted(unknown)}; expected some of {list(CONDITIONS)}")
    out = output_dir(parser, args, RESULTS, "torch-threads")
    meta = run_meta(__file__, args.smoke)
    cases, repeats = (SMOKE_CASES, 1) if args.smoke else (CASES, args.repeats)
    started = time.monotonic()
    runs = []
    for condition in conditions:
        for threads in (1, 0):
            runs.append(run_child(threads, condition, cases, repeats))
            print(f"{condition}, threads {runs[-1]['threads']}: {runs[-1]['cases']}", flush=True)
    seconds = time.monotonic() - started
    record = {"meta": meta, "repeats": repeats, "seconds": round(seconds, 1), "runs": runs}
    (out / "torch_threads.json").write_text(json.dumps(record, indent=2))
    text = markdown(runs, meta, repeats, seconds)
    (out / "torch_threads.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
