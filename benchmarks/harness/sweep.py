"""What the peer benchmarks (``constrained.py``, ``multiobjective.py``) share: a plan of (problem, method, seed,
evals) runs executed in order, ``jobs`` at a time in spawned processes of ``threads`` torch threads, none started
after a deadline, the results rewritten after each run (``run_and_report``); the package versions of the header;
per-method budgets from the command line; mean ± standard error; and Ax's loggers quietened."""

from __future__ import annotations

import argparse
import logging
import math
import resource
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from importlib import metadata
from multiprocessing import get_context
from pathlib import Path
from typing import Any

Key = tuple[str, str, int, int]  # problem, method, seed, evals
Outcome = tuple[dict[str, Any] | None, str | None]  # a run's summary, or why it failed


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def versions(packages: tuple[str, ...] = ("torch", "botorch", "gpytorch", "optuna", "ax-platform", "localbo")) -> str:
    out = []
    for package in packages:
        try:
            out.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            out.append(f"{package} -")
    return ", ".join(out)


def parse_per_method(items: list[str], flag: str, parser: argparse.ArgumentParser) -> dict[str, int]:
    """``METHOD=N`` items (``--evals-for``, ``--seeds-for``) as a dict, or the parser's error."""
    out = {}
    for item in items:
        method, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit() or int(value) < 1:
            parser.error(f"{flag} {item!r}: expected METHOD=N with N >= 1")
        out[method.strip()] = int(value)
    return out


def pick_only(keys: list[Key], only: str | None) -> tuple[list[Key], list[Key]]:
    """``--only METHOD@PROBLEM,...`` (``METHOD``, ``@PROBLEM`` or both per item): the planned runs it names, seed by
    seed in the items' order, and the rest (planned, not run now)."""
    if not only:
        return keys, []
    wanted = [item.strip().partition("@") for item in only.split(",") if item.strip()]

    def rank(key: Key) -> int | None:
        for i, (method, _, problem) in enumerate(wanted):
            if (not method or method == key[1]) and (not problem or problem == key[0]):
                return i
        return None

    later = [k for k in keys if rank(k) is None]
    picked = sorted((k for k in keys if rank(k) is not None), key=lambda k: (k[2], rank(k) or 0))
    say(f"--only: {len(picked)} of the {len(picked) + len(later)} run(s) still to go")
    return picked, later


def init_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def run_all(
    keys: list[Key], jobs: int, threads: int, deadline: float | None,
    on_done: Callable[[Key, dict[str, Any] | None, str | None], None], execute: Callable[[Key], Outcome],
) -> list[Key]:  # fmt: skip
    """Run ``keys`` in order (``jobs`` at a time) through ``execute`` (a module-level function: it is pickled to the
    worker processes); none starts after ``deadline``. Returns the runs not started."""
    if jobs <= 1:
        init_worker(threads)
        for i, key in enumerate(keys):
            if deadline is not None and time.time() > deadline:
                return keys[i:]
            on_done(key, *execute(key))
        return []
    todo = list(keys)
    pool = ProcessPoolExecutor(jobs, mp_context=get_context("spawn"), initializer=init_worker, initargs=(threads,))
    with pool:
        running: dict[Future, Key] = {}
        while todo or running:
            while todo and len(running) < jobs and (deadline is None or time.time() <= deadline):
                key = todo.pop(0)
                running[pool.submit(execute, key)] = key
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                on_done(running.pop(future), *future.result())
    return todo


def run_and_report(
    keys: list[Key], later: list[Key], args: argparse.Namespace, state: dict[str, Any], out: Path, name: str,
    write: Callable[[Path, dict[str, Any]], None], execute: Callable[[Key], Outcome],
    headline: Callable[[dict[str, Any]], str],
) -> int:  # fmt: skip
    """Run ``keys`` (``args.jobs`` at a time, none started after ``args.deadline_min`` minutes), each run's summary
    into ``state["runs"]`` (stamped with the run's commit) or its failure into ``state["failed"]``, the results
    rewritten whole after each (``write``), so a run cut short leaves a table of what ran; then the CPU seconds of
    every process and the runs not started (``later``: those ``--only`` left) in ``state["meta"]``, and the table
    printed. ``headline(summary)``: what the log says of a finished run. Returns 1 when a run failed, else 0."""
    meta = state["meta"]
    t0 = time.monotonic()
    deadline = time.time() + 60 * args.deadline_min if args.deadline_min else None

    def on_done(key: Key, summary: dict[str, Any] | None, error: str | None) -> None:
        label = f"{key[0]}/{key[1]}/seed {key[2]}"
        if summary is None:
            state["failed"].append({"key": label, "error": (error or "?").splitlines()[0]})
            say(f"FAILED {label}: {error}")
        else:
            state["runs"].append({**summary, "commit": meta["commit"]})
            say(
                f"[{time.monotonic() - t0:7.0f} s] {label}: {headline(summary)}, {summary['infeasible']} infeasible, "
                f"{summary['fallbacks']} fallbacks, {summary['wall_s']:.1f} s wall, {summary['cpu_s']:.1f} s CPU"
            )
        meta["wall_s"] = time.monotonic() - t0
        write(out, state)

    say(f"{len(keys)} runs, {args.jobs} at a time; writing {out}")
    left = run_all(keys, args.jobs, args.threads, deadline, on_done, execute)
    usage = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    meta["cpu_children_s"] = sum(u.ru_utime + u.ru_stime for u in usage)
    meta["wall_s"] = time.monotonic() - t0
    meta["not_run"] = [f"{p}/{m}/seed {s}" for p, m, s, _ in [*left, *later]]
    write(out, state)
    print((out / f"{name}.md").read_text())
    say(f"done in {meta['wall_s']:.0f} s; wrote {out / (name + '.md')} and {name}.json")
    return 1 if state["failed"] else 0


def runs_by_commit(
    runs: list[dict[str, Any]], problems: list[str], methods: list[str], rerun: str,
    rerun_note: str = "those methods' runs in the JSON were dropped and made again",
) -> list[str]:  # fmt: skip
    """The markdown line that says at which commits each method's runs were made (``--resume`` keeps earlier
    invocations' runs); none when they were all made at one and nothing was rerun."""
    made_at: dict[str, dict[str, int]] = {}
    for r in runs:
        if r["problem"] in problems and r["method"] in methods:
            at = made_at.setdefault(r["method"], {})
            at[r.get("commit", "not recorded")] = at.get(r.get("commit", "not recorded"), 0) + 1
    if not rerun and len({c for at in made_at.values() for c in at}) <= 1:
        return []
    return ["", "Runs by commit (`--resume` keeps earlier invocations' runs"
            + (f"; `--rerun {rerun}`: {rerun_note}" if rerun else "") + "): "
            + "; ".join(f"`{m}` " + ", ".join(f"{n} at {c}" for c, n in sorted(at.items()))
                        for m, at in made_at.items())
            + "."]  # fmt: skip


def run_timed(
    run: Any, method: str, kind: str, runners: dict[str, Callable[..., None]], args: tuple[Any, ...],
    config: dict[str, Any] | None = None,
) -> None:  # fmt: skip
    """``runners[kind](*args, run)`` (the ``direct`` runner of a localbo policy also gets ``config``, settings merged
    into its config: ``probe.py``), then the run's wall and CPU seconds (this process, all its threads: runs run one
    at a time in a process). The peers take no config."""
    if kind != "direct" and config:
        raise ValueError(f"{method} is not a localbo policy: it takes no policy config")
    t0, cpu0 = time.perf_counter(), time.process_time()
    runners[kind](*args, run, *((config,) if kind == "direct" else ()))
    run.wall_s, run.cpu_s = time.perf_counter() - t0, time.process_time() - cpu0


def mean_se(values: list[float]) -> tuple[float, float | None]:
    """Mean and standard error (None for one value)."""
    m = statistics.fmean(values)
    return m, (statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None)


def by_se(distance: float) -> str:
    """A goal's distance from its target in standard errors, as the tables and the README show it."""
    return f"{distance:.2g}" if distance < 10 else f"{distance:.0f}"


def fmt(m: float, se: float | None) -> str:
    return f"{m:.4g}" if se is None else f"{m:.4g} ± {se:.2g}"


def quiet_ax() -> None:
    """Ax sets INFO on each of its loggers as it makes them: set them to ERROR (call again after making a client)."""
    for name in list(logging.root.manager.loggerDict):
        if name == "ax" or name.startswith("ax."):
            logging.getLogger(name).setLevel(logging.ERROR)
