"""Chaining-UCB benchmark: Chaining-UCB, GP-UCB and random on finite spaces (Contal, Malherbe, Vayatis, sec. 4).

The paper's three tasks, maximised, |X| = 10^4 candidates, noise std 0.05, 10 initial points drawn uniformly
among the candidates (the same for every method of a run), delta = 0.05, simple regret
S_n = max f - max_{i <= n} f(x_i) (noise-free f) against the evaluation n:

    gp-se       f ~ GP(0, SE, bandwidth 1) on the uniform 100 x 100 grid of [0, 20]^2 (a fresh sample per run,
                exact: the kernel of a grid is a Kronecker product); the policies know the kernel (lengthscale
                1/20 in the unit square, outputscale 1, noise 0.05).
    himmelblau  f = -H(x, y)/100 + (x + y)/10 on the 100 x 100 grid of [-5, 5]^2 (Himmelblau's four maxima,
                tilted by a linear trend so that (3, 2) is the global one), scaled to mean 0 and std 1 over
                the grid; SE kernel (outputscale 1, noise 0.05) whose bandwidth maximises the marginal
                likelihood of 300 noisy values at random candidates (fitted once per run).
    graphs      10^4 random directed graphs with 5..19 nodes (edge probability 0.1..0.5, at least one edge);
                the shortest-path kernel with a delta kernel on path lengths, normalised so k(g, g) = 1, i.e.
                the cosine of the graphs' histograms of shortest-path lengths (Borgwardt and Kriegel; Floyd-
                Warshall by scipy); f ~ GP(0, k) (exact: f = F z, z ~ N(0, I), F the unit histograms).

Methods: the ``chaining-ucb`` policy (Algorithm 1 as printed), the ``ucb`` policy on a finite space
(beta_t = 2 log(|X| t^2 pi^2 / (6 delta)), Srinivas et al.), ``random`` without repeats; called directly
through the policy API (``SuggestRequest`` with ``FiniteSpace``) as the engine does, same process.

    .venv/bin/python benchmarks/chaining.py --smoke                    # seconds, into a temp dir
    .venv/bin/python benchmarks/chaining.py --runs 16 --iters 100 --device cuda --jobs 8
    .venv/bin/python benchmarks/chaining.py --timing-only --timing-sizes 10000,100000 --device cpu
    .venv/bin/python benchmarks/chaining.py --report-only              # redraw the tables and plots

Writes ``chaining.csv`` (one row per evaluation), ``chaining_timing_<label>.json`` (seconds per suggest),
``chaining.json`` (settings), ``chaining.md`` and ``chaining_<task>.png`` into ``--out``
(default ``benchmarks/results``; ``--smoke`` writes into a temp dir).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.sparse.csgraph import shortest_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))

from localbo.policies import get_policy  # noqa: E402
from localbo.policies.base import FiniteSpace  # noqa: E402
from localbo.policies.requests import make_request  # noqa: E402

TASKS = ["gp-se", "himmelblau", "graphs"]
METHODS = ["chaining-ucb", "ucb", "random"]
NOISE = 0.05
N_INIT = 10
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
COLUMNS = ["task", "method", "run", "n", "regret", "suggest_s"]


@dataclass
class Task:
    name: str
    candidates: torch.Tensor  # N x d in [0, 1]
    f: torch.Tensor  # N, to maximise
    config: dict[str, Any]  # the policies' GP hyperparameters
    features: torch.Tensor | None = None
    notes: dict[str, Any] = field(default_factory=dict)


def grid(side: int, low: float, high: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The uniform side x side design of [low, high]^2: (axis coordinates, N x 2 unit-square candidates)."""
    axis = torch.linspace(low, high, side, dtype=torch.float64)
    u = (axis - low) / (high - low)
    return axis, torch.cartesian_prod(u, u)


def task_gp_se(size: int, run: int) -> Task:
    side = round(math.sqrt(size))
    axis, candidates = grid(side, 0.0, 20.0)
    K1 = torch.exp(-0.5 * (axis[:, None] - axis[None, :]).square())
    values, vectors = torch.linalg.eigh(K1)
    root = vectors * values.clamp_min(0.0).sqrt()  # K1 = root root^T
    z = torch.randn(side, side, generator=torch.Generator().manual_seed(1000 + run), dtype=torch.float64)
    f = (root @ z @ root.T).reshape(-1)  # cov(f) = K1 (x) K1, the SE kernel of the grid
    return Task("gp-se", candidates, f, {"lengthscale": 1.0 / 20.0, "outputscale": 1.0, "noise_std": NOISE})


def himmelblau(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x.square() + y - 11).square() + (x + y.square() - 7).square()


def ml_bandwidth(X: torch.Tensor, y: torch.Tensor) -> float:
    """The bandwidth of an isotropic SE kernel (outputscale 1, noise NOISE) maximising the marginal likelihood."""
    r2 = torch.cdist(X, X).square()
    eye = torch.eye(X.shape[0], dtype=torch.float64)
    best, arg = -math.inf, 0.1
    for ls in torch.logspace(-2, 0, 81, dtype=torch.float64).tolist():
        L, info = torch.linalg.cholesky_ex(torch.exp(-0.5 * r2 / ls**2) + NOISE**2 * eye)
        if int(info):
            continue
        z = torch.linalg.solve_triangular(L, y.reshape(-1, 1), upper=False)
        ll = -0.5 * float(z.square().sum()) - float(L.diagonal().log().sum())
        if ll > best:
            best, arg = ll, ls
    return arg


def task_himmelblau(size: int, run: int) -> Task:
    side = round(math.sqrt(size))
    axis, candidates = grid(side, -5.0, 5.0)
    x, y = torch.cartesian_prod(axis, axis).unbind(-1)
    f = -himmelblau(x, y) / 100.0 + (x + y) / 10.0
    f = (f - f.mean()) / f.std()  # the scale of a unit-variance prior (Algorithm 1's eps_1 = 1 assumes it)
    generator = torch.Generator().manual_seed(2000 + run)
    subset = torch.randperm(f.shape[0], generator=generator)[:300]
    noisy = f[subset] + NOISE * torch.randn(300, generator=generator, dtype=torch.float64)
    ls = ml_bandwidth(candidates[subset], noisy)
    config = {"lengthscale": ls, "outputscale": 1.0, "noise_std": NOISE}
    return Task("himmelblau", candidates, f, config, notes={"ml_lengthscale": ls})


def path_length_histograms(count: int, seed: int, max_nodes: int = 19) -> torch.Tensor:
    """count random directed graphs (5..max_nodes nodes), each as its histogram of shortest-path lengths 1..18."""
    rng = np.random.default_rng(seed)
    rows = []
    while len(rows) < count:
        n = int(rng.integers(5, max_nodes + 1))
        p = float(rng.uniform(0.1, 0.5))
        adjacency = (rng.random((n, n)) < p) & ~np.eye(n, dtype=bool)
        if not adjacency.any():
            continue  # k(g, g) = 0: no normalised kernel
        lengths = shortest_path(adjacency.astype(float), method="FW", directed=True, unweighted=True)
        finite = lengths[np.isfinite(lengths) & (lengths > 0)].astype(int)
        rows.append(np.bincount(finite, minlength=max_nodes)[1:max_nodes])
    return torch.tensor(np.array(rows), dtype=torch.float64)


def task_graphs(size: int, run: int) -> Task:
    H = path_length_histograms(size, seed=3000)  # one set of graphs; a fresh GP sample per run
    F = H / H.norm(dim=1, keepdim=True)  # k(g, g') = <F_g, F_g'>: the normalised shortest-path kernel
    z = torch.randn(F.shape[1], generator=torch.Generator().manual_seed(4000 + run), dtype=torch.float64)
    distinct = int(torch.unique(H, dim=0).shape[0])
    config = {"outputscale": 1.0, "noise_std": NOISE}
    return Task("graphs", F.clone(), F @ z, config, features=F, notes={"distinct_histograms": distinct})


MAKERS = {"gp-se": task_gp_se, "himmelblau": task_himmelblau, "graphs": task_graphs}


def run_method(task: Task, method: str, run: int, iters: int, device: torch.device) -> list[dict[str, Any]]:
    """One run: the shared initial design, then ``iters`` suggestions; the regret after every evaluation."""
    cls = get_policy(method)
    config = cls.Config.model_validate({**task.config, "n_init": N_INIT} if method != "random" else {"plan_ahead": 1})
    candidates = task.candidates.to(device)
    features = task.features.to(device) if task.features is not None else None
    generator = torch.Generator().manual_seed(5000 + run)
    asked = torch.randperm(task.f.shape[0], generator=generator)[:N_INIT].tolist()
    noise = NOISE * torch.randn(N_INIT + iters, generator=generator, dtype=torch.float64)
    state = cls.State()
    seconds = [0.0] * N_INIT
    for _ in range(iters):
        done = torch.tensor(asked, dtype=torch.long)
        y = -(task.f[done] + noise[: len(asked)])  # policies minimise
        space = FiniteSpace(
            candidates, done.to(device), torch.zeros(0, dtype=torch.long, device=device), features=features
        )
        request = make_request(
            cls, candidates[done.to(device)], y.to(device), state=state, config=config, seed=run,
            rng_seed=len(asked), finite=space, device=device,
        )  # fmt: skip
        started = time.perf_counter()
        suggestion = cls().suggest(request)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - started)
        assert suggestion.index is not None
        asked.append(int(suggestion.index[0]))
        state = suggestion.state
    assert len(set(asked)) == len(asked), "a candidate was asked twice"
    best = task.f.max()
    so_far = torch.cummax(task.f[torch.tensor(asked)], 0).values
    return [
        {"task": task.name, "method": method, "run": run, "n": n + 1, "regret": float(best - so_far[n]),
         "suggest_s": seconds[n]}
        for n in range(len(asked))
    ]  # fmt: skip


def run_one(args: tuple[str, int, int, int, list[str], str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    task_name, run, size, iters, methods, device = args
    torch.set_num_threads(1)
    task = MAKERS[task_name](size, run)
    rows = []
    for method in methods:
        rows += run_method(task, method, run, iters, torch.device(device))
    return rows, {"task": task_name, "run": run, **task.notes}


def run_all(args: argparse.Namespace, out: Path) -> None:
    path = out / "chaining.csv"
    notes: list[dict[str, Any]] = []
    earlier_s = 0.0
    if args.first_run == 0:
        with path.open("w", newline="") as fh:
            csv.DictWriter(fh, fieldnames=COLUMNS).writeheader()
    else:  # more runs of the same settings, appended
        earlier = json.loads((out / "chaining.json").read_text())
        notes, earlier_s = earlier["notes"], earlier["wall_s"]
    # run by run, so that a run cut short leaves every task with the same number of runs
    runs = range(args.first_run, args.first_run + args.runs)
    jobs = [(t, r, args.size, args.iters, args.methods, args.device) for r in runs for t in args.tasks]
    started = time.perf_counter()

    def save_settings() -> None:
        settings = {
            "size": args.size, "iters": args.iters, "runs": args.first_run + args.runs, "tasks": args.tasks,
            "methods": args.methods,
            "noise": NOISE, "n_init": N_INIT, "delta": 0.05, "device": args.device, "machine": machine(args.device),
            "wall_s": earlier_s + time.perf_counter() - started, "notes": notes, "jobs": args.jobs,
            "commit": commit(),
        }  # fmt: skip
        (out / "chaining.json").write_text(json.dumps(settings, indent=1))

    save_settings()
    with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
        for k, (rows, note) in enumerate(pool.map(run_one, jobs), 1):
            with path.open("a", newline="") as fh:
                csv.DictWriter(fh, fieldnames=COLUMNS).writerows(rows)
            notes.append(note)
            save_settings()
            print(f"[{time.perf_counter() - started:.0f} s] {k}/{len(jobs)} {note}", file=sys.stderr, flush=True)


# -- time per suggest -----------------------------------------------------------------------------------------


def timing(sizes: list[int], device: str, observations: int, timeout: float, label: str, out: Path) -> None:
    """Seconds per suggest of chaining-ucb and ucb on the gp-se task at each size, after ``observations``."""
    results = []
    path = out / f"chaining_timing_{label}.json"
    for method in ("chaining-ucb", "ucb"):  # warm up: kernels compiled, CUDA initialised
        _timed_suggest(task_gp_se(400, 0), method, observations, torch.device(device), 0.0)
    for size in sizes:
        task = task_gp_se(size, 0)
        for method in ("chaining-ucb", "ucb"):
            started = time.perf_counter()
            try:
                rows = _timed_suggest(task, method, observations, torch.device(device), timeout)
            except torch.OutOfMemoryError as exc:
                rows = {"error": f"out of memory: {exc}"[:200]}
            results.append({"size": task.f.shape[0], "method": method, "observations": observations,
                            "device": device, **rows, "wall_s": time.perf_counter() - started})  # fmt: skip
            print(results[-1], file=sys.stderr, flush=True)
            timed = {"label": label, "machine": machine(device), "commit": commit(), "results": results}
            path.write_text(json.dumps(timed, indent=1))


def _timed_suggest(task: Task, method: str, n: int, device: torch.device, timeout: float) -> dict[str, Any]:
    """Median seconds of up to 3 suggests (fewer when one takes over ``timeout``/3), peak GPU memory."""
    cls = get_policy(method)
    config = cls.Config.model_validate({**task.config, "n_init": N_INIT})
    generator = torch.Generator().manual_seed(7)
    done = torch.randperm(task.f.shape[0], generator=generator)[:n]
    y = -(task.f[done] + NOISE * torch.randn(n, generator=generator, dtype=torch.float64))
    candidates = task.candidates.to(device)
    space = FiniteSpace(candidates, done.to(device), torch.zeros(0, dtype=torch.long, device=device))
    request = make_request(cls, candidates[done.to(device)], y.to(device), config=config, finite=space, device=device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    seconds, info = [], {}
    spent = 0.0
    while not seconds or (len(seconds) < 3 and spent < timeout / 3):
        started = time.perf_counter()
        cls().suggest(request)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - started)
        spent += seconds[-1]
        info = {}  # (the policy no longer reports its covers' levels: Suggestion.info is gone)
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None
    return {"seconds": seconds, "median_s": float(np.median(seconds)), "peak_gpu_gib": peak, **info}


def commit() -> str:
    """The code measured: the checkout's commit (timings of older files predate the covers' rewrite)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
        return head.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def machine(device: str) -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    gpu = f", {torch.cuda.get_device_name(0)}" if device == "cuda" and torch.cuda.is_available() else ""
    return f"{cpus} CPU core(s){gpu}, {platform.platform()}, torch {torch.__version__}"


# -- report ---------------------------------------------------------------------------------------------------


def report(out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = json.loads((out / "chaining.json").read_text())
    by: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    cost: dict[tuple[str, str], list[float]] = defaultdict(list)
    with (out / "chaining.csv").open() as fh:
        for row in csv.DictReader(fh):
            by[(row["task"], row["method"])][int(row["n"])].append(float(row["regret"]))
            if int(row["n"]) > N_INIT:
                cost[(row["task"], row["method"])].append(float(row["suggest_s"]))
    final_n = N_INIT + settings["iters"]
    runs = min((len(by[k][final_n]) for k in by), default=0)
    lines = [
        "# Chaining-UCB on finite spaces (Contal, Malherbe, Vayatis, sec. 4)",
        "",
        f"{runs} runs per task (of {settings['runs']} planned), |X| = {settings['size']}, "
        f"{N_INIT} initial points + {settings['iters']} "
        f"suggestions, noise std {NOISE}, delta = 0.05. Machine: {settings['machine']} "
        f"(device `{settings['device']}`), code {settings.get('commit', 'unknown')}; "
        f"wall time {settings['wall_s']:.0f} s. Simple regret S_n = max f - max_(i <= n) f(x_i), mean +- standard "
        "error over runs (lower is better). `benchmarks/chaining.py` says how each task is built.",
        "",
        "| task | method | S_20 | S_50 | S_final | runs where it is best at the end | s per suggest (mean) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for task in settings["tasks"]:
        finals = {m: np.array(by[(task, m)][final_n]) for m in settings["methods"]}
        for method in settings["methods"]:
            cells = []
            for n in (20, 50, final_n):
                values = np.array(by[(task, method)].get(n, [math.nan]))
                se = values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else 0.0
                cells.append(f"{values.mean():.4f} +- {se:.4f}")
            wins = int(sum(finals[method][r] <= min(finals[m][r] for m in finals) for r in range(len(finals[method]))))
            lines.append(f"| {task} | {method} | {' | '.join(cells)} | {wins} | {np.mean(cost[(task, method)]):.3f} |")
    lines += ["", "Plots: " + ", ".join(f"`chaining_{t}.png`" for t in settings["tasks"]), ""]
    for task in settings["tasks"]:
        fig, ax = plt.subplots(figsize=(6, 4))
        for method, colour in zip(settings["methods"], ["#0072B2", "#E69F00", "#999999"], strict=False):
            ns = sorted(by[(task, method)])
            mean = np.array([np.mean(by[(task, method)][n]) for n in ns])
            se = np.array([np.std(by[(task, method)][n], ddof=1) / math.sqrt(len(by[(task, method)][n])) for n in ns])
            ax.plot(ns, mean, label=method, color=colour)
            ax.fill_between(ns, np.maximum(mean - se, 0.0), mean + se, color=colour, alpha=0.2)
        ax.set_yscale("symlog", linthresh=1e-3)  # a regret of 0 (the optimum found) stays on the plot
        ax.set_xlabel("evaluation n")
        ax.set_ylabel("simple regret (mean, +- s.e.)")
        ax.set_title(f"{task}: |X| = {settings['size']}, {runs} runs")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / f"chaining_{task}.png", dpi=110)
        plt.close(fig)
    timings = sorted(out.glob("chaining_timing_*.json"))
    if timings:
        lines += ["## Seconds per suggest (gp-se task)", ""]
        lines += ["| where | machine | code | |X| | method | observations | median s | levels | peak GPU GiB |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
        for path in timings:
            data = json.loads(path.read_text())
            for r in data["results"]:
                median = f"{r['median_s']:.3f}" if "median_s" in r else r.get("error", "-")
                peak = f"{r['peak_gpu_gib']:.2f}" if r.get("peak_gpu_gib") is not None else "-"
                code = data.get("commit", "before d8b4fa1")  # the first covers, before their rewrite
                levels = r.get("levels", "-")
                lines.append(f"| {data['label']} ({r['device']}) | {data['machine']} | {code} | {r['size']} | "
                             f"{r['method']} | {r['observations']} | {median} | {levels} | {peak} |")  # fmt: skip
        lines.append("")
    md = out / "chaining.md"
    notes = out / "chaining_notes.md"  # hand-written findings, kept across report runs
    md.write_text("\n".join(lines) + ("\n" + notes.read_text() if notes.exists() else ""))
    return md


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--first-run", type=int, default=0, help="> 0: append runs first-run.. to the CSV")
    parser.add_argument("--iters", type=int, default=100, help="suggestions after the initial points")
    parser.add_argument("--size", type=int, default=10_000, help="|X|")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (processes)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--smoke", action="store_true", help="tiny: |X| = 400, 2 runs, 6 suggestions, temp dir")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--timing-only", action="store_true")
    parser.add_argument("--timing-sizes", default="10000,100000")
    parser.add_argument("--timing-observations", type=int, default=60)
    parser.add_argument("--timing-timeout", type=float, default=300.0, help="seconds per (size, method), roughly")
    parser.add_argument("--timing-label", default="local")
    args = parser.parse_args()
    args.tasks, args.methods = args.tasks.split(","), args.methods.split(",")
    if args.smoke:
        args.size, args.runs, args.iters, args.timing_sizes = 400, 2, 6, "400,900"
        args.timing_observations = 15
    out = args.out or (Path(tempfile.mkdtemp(prefix="chaining-")) if args.smoke else DEFAULT_OUT)
    out.mkdir(parents=True, exist_ok=True)
    if args.timing_only or args.smoke:
        sizes = [int(s) for s in args.timing_sizes.split(",")]
        timing(sizes, args.device, args.timing_observations, args.timing_timeout, args.timing_label, out)
    if not args.timing_only and not args.report_only:
        run_all(args, out)
    if not args.timing_only:
        md = report(out)
        print(md.read_text())
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
