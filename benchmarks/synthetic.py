"""Synthetic benchmark: localbo's policies against Optuna's TPE, Optuna's GPSampler and random search.

Objectives (``benchmarks/harness/objectives.py``): the GP-sampled functions of GIBO section 4.1
(``gp25``, ``gp50``, ``gp100``: one function instance per seed, evaluation noise variance 0.01),
and ``branin``, ``hartmann6``, ``ackley`` (10-D), ``rosenbrock`` (10-D) from botorch. All minimised.

Methods: any registered localbo policy (``minucb``, ``gibo``, ``random``, ``sobol``, ...), run
through the policy API emulating the engine (``--runner direct``) or end to end through a real
server and the thin client (``--runner http``; ``direct,http`` runs both); and the peers ``tpe``
(Optuna ``TPESampler(seed)``), ``gpsampler`` (Optuna ``GPSampler(seed)``) and ``optuna-random``,
which always run in process. Each (objective, method, runner, seed) is one run of ``--evals``
sequential evaluations; ``--jobs N`` runs N of them in parallel processes.

Run it from the repository root with the project's environment (``pip install -e ".[bench]"``)::

    .venv/bin/python benchmarks/synthetic.py --smoke                     # ~30 s, into a temp dir
    .venv/bin/python benchmarks/synthetic.py                              # the full benchmark:
        # gp25,gp50,gp100 x minucb,gibo,tpe,gpsampler,random x 5 seeds x 500 evaluations, direct runner
    .venv/bin/python benchmarks/synthetic.py --objectives gp25 --methods tpe,random --seeds 2 --evals 100 \\
        --out /tmp/synth --jobs 2
    .venv/bin/python benchmarks/synthetic.py --resume                     # go on after an interruption
    .venv/bin/python benchmarks/synthetic.py --report-only                # redraw the table and plots
    .venv/bin/python benchmarks/synthetic.py --merge /tmp/synth           # add (or replace) another folder's runs
    .venv/bin/python benchmarks/synthetic.py --policy-config 'gibo={"delta": 0.2}' --methods gibo

It writes ``benchmarks/results/synthetic.csv`` (one row per evaluation: objective, instance, method,
runner, seed, eval, y (noisy, told), f (noise-free at the point), best_so_far (noise-free),
incumbent (noise-free at the policy's x_t, or the best so far where the policy exposes none),
incumbent_from, source, elapsed_s), ``synthetic.json`` (settings, wall time and policy failures per
run), ``synthetic.md`` (final mean +- std per objective and method, wall time per run) and
``synthetic_<objective>.png`` (best so far, mean +- one std over seeds), or the same into ``--out``.
``synthetic_findings.md``, written by hand, is appended to ``synthetic.md`` on every rewrite.
``--smoke`` (branin and gp25, 8 evaluations, 1 seed, random, sobol and tpe, both runners) never
writes into ``benchmarks/results``: without ``--out`` it uses a temp dir.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import replace
from datetime import UTC, datetime
from importlib import metadata
from multiprocessing import get_context
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import numerics  # noqa: E402

numerics.pin()  # before numpy and torch load: a seed takes the same path on any AVX2 host (harness/numerics.py)

from harness.objectives import objective_spec  # noqa: E402
from harness.report import (  # noqa: E402
    append_csv,
    load_json,
    merge_results,
    print_tables,
    read_csv,
    run_summary,
    save_json,
    start_csv,
    write_report,
)
from harness.runners import OPTUNA_METHODS, RunResult, RunSpec, known_methods, run, runner_for  # noqa: E402
from harness.runs import commit_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results"
NAME = "synthetic"
FULL = {
    "objectives": "gp25,gp50,gp100",
    "methods": "minucb,gibo,tpe,gpsampler,random",
    "seeds": 5,
    "evals": 500,
    "runner": "direct",
}
SMOKE = {"objectives": "branin,gp25", "methods": "random,sobol,tpe", "seeds": 1, "evals": 8, "runner": "direct,http"}
RUNNERS = ("direct", "http")

_progress_queue: Any = None  # a worker's channel for per-evaluation progress


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def versions() -> str:
    out = [f"python {platform.python_version()}"]
    for package in ("torch", "botorch", "gpytorch", "optuna", "localbo"):
        try:
            out.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            out.append(f"{package} -")
    return ", ".join(out)


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    where = f"{cpus} CPU core(s), {numerics.cpu_model()}, {platform.platform()}"
    return f"{where}; {numerics.describe()}"


def quiet() -> None:
    import logging

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    logging.getLogger("httpx").setLevel(logging.WARNING)


# -- running ------------------------------------------------------------------------------------------


def _init_worker(threads: int, channel: Any) -> None:
    global _progress_queue
    import torch

    torch.set_num_threads(threads)
    quiet()
    _progress_queue = channel


def _report_progress(n: int) -> None:
    _progress_queue.put(n)


def execute(spec: RunSpec, report: Callable[[int], None] | None = None) -> tuple[RunResult | None, str | None]:
    """One run; a failure comes back as text, so that the other runs go on."""
    try:
        return run(spec, report or (_report_progress if _progress_queue is not None else None)), None
    except Exception as exc:  # first line: what went wrong, in one line; then the traceback
        summary = f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"
        return None, f"{summary}\n{traceback.format_exc(limit=8)}"


def run_all(specs: list[RunSpec], jobs: int, threads: int, on_done: Callable[[RunSpec, Any, Any], None]) -> None:
    """Run ``specs`` (inline for one job, else in ``jobs`` processes) with one progress bar over evaluations."""
    from tqdm import tqdm

    total = sum(s.evals for s in specs)
    with tqdm(total=total, unit="eval", desc=f"{len(specs)} runs", dynamic_ncols=True, file=sys.stderr) as bar:
        if jobs <= 1:
            for spec in specs:
                bar.set_postfix_str(f"{spec.objective} {spec.method} {spec.runner} s{spec.seed}")
                result, error = execute(spec, bar.update)
                on_done(spec, result, error)
            return
        ctx = get_context("spawn")
        with ctx.Manager() as manager:
            channel = manager.Queue()
            with ProcessPoolExecutor(
                jobs, mp_context=ctx, initializer=_init_worker, initargs=(threads, channel)
            ) as pool:
                futures: dict[Future, RunSpec] = {pool.submit(execute, spec): spec for spec in specs}
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                    try:
                        while True:
                            bar.update(channel.get_nowait())
                    except queue.Empty:
                        pass
                    for future in done:
                        result, error = future.result()
                        on_done(futures[future], result, error)
                    bar.set_postfix_str(f"{len(specs) - len(pending)}/{len(specs)} runs done")


# -- command line -----------------------------------------------------------------------------------------


def parse_policy_configs(items: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        method, sep, text = item.partition("=")
        if not sep:
            raise ValueError(f"--policy-config {item!r}: expected METHOD=JSON")
        config = json.loads(text)
        if not isinstance(config, dict):
            raise ValueError(f"--policy-config {item!r}: the JSON must be an object")
        out[method.strip()] = config
    return out


def check_policy_configs(
    parser: argparse.ArgumentParser, configs: dict[str, dict[str, Any]], methods: list[str]
) -> None:
    """Refuse a config for a method not run, or one its policy rejects, before hours of runs start."""
    from localbo.policies import get_policy
    from pydantic import ValidationError

    for method, config in configs.items():
        if method not in methods:
            parser.error(f"--policy-config for {method!r}, which is not among --methods {methods}")
        if method in OPTUNA_METHODS:
            parser.error(f"--policy-config: {method!r} is an Optuna peer and takes no policy config")
        try:
            get_policy(method).Config.model_validate(config)
        except ValidationError as exc:
            err = exc.errors()[0]
            parser.error(f"--policy-config {method}: {'.'.join(map(str, err['loc']))}: {err['msg']}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objectives", help=f"comma-separated (default {FULL['objectives']})")
    parser.add_argument("--methods", help=f"comma-separated (default {FULL['methods']})")
    parser.add_argument("--seeds", type=int, help=f"seeds per method, --seed0 .. (default {FULL['seeds']})")
    parser.add_argument("--seed0", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--evals", type=int, help=f"evaluations per run (default {FULL['evals']})")
    parser.add_argument("--runner", help="direct | http | direct,http, for localbo policies (default direct)")
    parser.add_argument("--out", type=Path, help=f"where to write the results (default {DEFAULT_OUT})")
    parser.add_argument("--name", default=NAME, help=f"base name of the result files (default {NAME})")
    parser.add_argument("--jobs", type=int, default=1, help="runs in parallel processes (default 1)")
    parser.add_argument("--threads", type=int, help="torch threads per run (default: CPU cores // jobs)")
    parser.add_argument(
        "--policy-config", action="append", default=[], metavar="METHOD=JSON", help="a policy's config (repeatable)"
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny run into a temp dir; never writes the results")
    parser.add_argument("--resume", action="store_true", help="keep the runs already in the CSV, run the rest")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the markdown and plots")
    parser.add_argument(
        "--merge", type=Path, metavar="DIR", help="add the runs of another results folder (replacing the same runs)"
    )
    parser.add_argument("--no-optimum", action="store_true", help="skip estimating f* of the GP functions")
    parser.add_argument(
        "--deadline-s",
        type=float,
        help="stop every run this many seconds after the start and keep it cut short (the report then cuts "
        "that method to its shortest run); for a machine lent for a fixed time",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    defaults = SMOKE if args.smoke else FULL
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.smoke:
        if args.out is not None and args.out.resolve() == DEFAULT_OUT.resolve():
            parser.error("--smoke does not write into benchmarks/results; pass another --out")
        out = args.out or Path(tempfile.mkdtemp(prefix="synthetic-smoke-"))
    else:
        out = args.out or DEFAULT_OUT
    csv_path, json_path = out / f"{args.name}.csv", out / f"{args.name}.json"
    if args.merge:
        meta = merge_results(out, args.merge, args.name)
        write_report(out, args.name, meta, estimate_optimum=not args.no_optimum)
        progress(f"merged the runs of {args.merge} into {out}")
        return 0
    if args.report_only:
        if not csv_path.exists():
            parser.error(f"--report-only: {csv_path} does not exist")
        write_report(out, args.name, load_json(json_path).get("meta", {}), estimate_optimum=not args.no_optimum)
        progress(f"wrote {out / (args.name + '.md')}")
        return 0

    objectives = [o.strip() for o in args.objectives.split(",") if o.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    runners = [r.strip() for r in args.runner.split(",") if r.strip()]
    for objective in objectives:
        try:
            objective_spec(objective)
        except KeyError as exc:
            parser.error(str(exc.args[0]))
    known = known_methods()
    missing = [m for m in methods if m not in known]
    if missing:
        parser.error(f"unknown method(s) {missing}; known: {known}")
    if bad := [r for r in runners if r not in RUNNERS]:
        parser.error(f"unknown runner(s) {bad}; expected {RUNNERS}")
    if args.seeds < 1 or args.evals < 1 or args.jobs < 1:
        parser.error("--seeds, --evals and --jobs must be >= 1")
    try:
        configs = parse_policy_configs(args.policy_config)
    except ValueError as exc:
        parser.error(str(exc))
    check_policy_configs(parser, configs, methods)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = args.threads or max(1, cores // args.jobs)

    specs: list[RunSpec] = []
    for objective in objectives:
        for method in methods:
            for runner in dict.fromkeys(runner_for(method, r) for r in runners):
                for seed in range(args.seed0, args.seed0 + args.seeds):
                    specs.append(RunSpec(objective, method, runner, seed, args.evals, configs.get(method)))
    if args.deadline_s is not None:
        specs = [replace(s, deadline=time.time() + args.deadline_s) for s in specs]

    state = load_json(json_path) if args.resume else {"meta": {}, "runs": [], "failed": []}
    if args.resume and csv_path.exists():
        done = {(r["objective"], r["method"], r["runner"], r["seed"]) for r in read_csv(csv_path)}
        skipped = [s for s in specs if s.key in done]
        specs = [s for s in specs if s.key not in done]
        progress(f"resume: {len(skipped)} run(s) already in {csv_path}, {len(specs)} to go")
    else:
        start_csv(csv_path)
    state["failed"] = []
    state["meta"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "command": "benchmarks/synthetic.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "commit": commit_of(Path(__file__).parent),
        "versions": versions(),
        "smoke": args.smoke,
        "jobs": args.jobs,
        "threads": threads,
        "evals": args.evals,
        "seeds": list(range(args.seed0, args.seed0 + args.seeds)),
        "policy_configs": configs,
        "optuna_methods": [m for m in methods if m in OPTUNA_METHODS],
    }
    save_json(json_path, state)
    quiet()
    if args.jobs <= 1 and args.threads:
        import torch

        torch.set_num_threads(threads)

    failures: list[str] = []

    def on_done(spec: RunSpec, result: RunResult | None, error: str | None) -> None:
        key = f"{spec.objective}/{spec.method}/{spec.runner}/seed {spec.seed}"
        if result is None:
            failures.append(key)
            state["failed"].append({"key": key, "error": (error or "?").splitlines()[0]})
            progress(f"\nFAILED {key}:\n{error}")
        elif not result.rows:  # cut by --deadline-s before its first evaluation: nothing to keep
            progress(f"\n{key}: no evaluation before the deadline, not recorded")
        else:
            append_csv(csv_path, result.rows)
            state["runs"] = [
                r for r in state["runs"] if (r["objective"], r["method"], r["runner"], r["seed"]) != spec.key
            ]
            state["runs"].append(run_summary(result))
            last = result.rows[-1]
            note = f", {len(result.errors)} policy failure(s)" if result.errors else ""
            from tqdm import tqdm

            tqdm.write(
                f"{key}: best {last['best_so_far']:.4g}, incumbent {last['incumbent']:.4g} "
                f"({last['incumbent_from']}), {result.wall_s:.1f} s{note}",
                file=sys.stderr,
            )
        save_json(json_path, state)

    t0 = time.monotonic()
    server = None
    tmp = tempfile.TemporaryDirectory(prefix="synthetic-http-")
    try:
        if any(s.runner == "http" for s in specs):
            from harness.processes import ServerProcess

            log_path = Path(tmp.name) / "server.log"
            server = ServerProcess(f"sqlite:///{Path(tmp.name) / 'synthetic.db'}", log_path=log_path)
            specs = [replace(s, url=server.url) if s.runner == "http" else s for s in specs]
            progress(f"localbo server at {server.url} (log {log_path})")
        run_all(specs, args.jobs, threads, on_done)
    finally:
        if server is not None:
            server.stop()
        tmp.cleanup()
    progress(f"done in {time.monotonic() - t0:.0f} s")
    if csv_path.exists() and len(read_csv(csv_path)):
        write_report(out, args.name, state["meta"], estimate_optimum=not args.no_optimum)
        print_tables(out / f"{args.name}.md")
        progress(f"wrote {out / (args.name + '.md')}, {csv_path.name}, {json_path.name} and the plots in {out}")
    if failures:
        progress(f"{len(failures)} run(s) failed: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
