"""Seconds per ``suggest`` of the local policies (``minucb``, ``la-minucb``, ...) at d = 25, 50, 100, n = 500.

What it times: one call of ``suggest`` that ends an iteration, i.e. the work the engine waits for
when the plan runs dry after a batch's results are in: the MAP refit of the GP on the data window
(N_max = 5 d by default), the step (minucb, la-minucb: the UCB step, multi-start L-BFGS-B; mpd: the
walk; gibo: the gradient step), and the batch of the next iteration: b = d points (minucb, gibo, mpd:
greedy exploration, one optimize_acqf each; la-minucb: the one-shot look-ahead of the minimum UCB).
Also a "top-up" call (one more point while results are out, no fit). The parts (fit, step, batch)
are timed inside that same call (wall seconds). The last column is the CPU seconds the process
spent in the suggest (all its threads): with one thread, what the suggest takes on one quiet core,
even when the machine is shared. ``--device cuda`` runs the policies on the GPU.

The data: 500 points in boxes x_c +- 0.2 whose centre moves from the middle of the cube towards
x*, with y = ||x - x*||^2 + 0.1 sum sin(6 x) + N(0, 0.01^2), in the order a local run makes them.
"warm" starts the fit from the hyperparameters of a fit on the data minus the last batch (as in a
run); "cold" starts from the priors' modes (the first fit of a study, or a lost state).

    .venv/bin/python benchmarks/policy_compute_time.py                  # minucb, la-minucb at d = 25, 50, 100
    .venv/bin/python benchmarks/policy_compute_time.py --dims 25 --n-max 500 --threads 1
    .venv/bin/python benchmarks/policy_compute_time.py --policies la-minucb --device cuda
    .venv/bin/python benchmarks/policy_compute_time.py --policies la-minucb \
        --policy-config '{"lookahead_maxiter": 100}'           # a config for every policy timed

Cost against n (issue 29.3), any policy: ``--ns`` times the suggest after n results for each n (the previous
suggest, after n - 1, leaves its state: warm hyperparameters, as in a run; ``harness/cost_n.py``), and
``--uncapped-up-to N`` also times the policies that bound their GP data (``max_data``) without the bound, for
n <= N (beyond, an exact GP on every result takes minutes a suggest here):

    nice .venv/bin/python benchmarks/policy_compute_time.py --policies minucb,la-minucb,turbo,ei --dims 25 \
        --ns 500 2000 5000 --uncapped-up-to 2000 --threads 1 --out benchmarks/results/policy_compute_time_n.md

Several objectives (``--objectives k``): DTLZ2 data, half of it on the front (``harness/cost_n.front_data``), the
bounds ``max_data`` and ``max_baseline`` together:

    nice .venv/bin/python benchmarks/policy_compute_time.py --policies qlognehvi --dims 5 --objectives 3 \
        --ns 150 300 600 1200 --uncapped-up-to 600 --threads 1 --out benchmarks/results/policy_compute_time_mo.md
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from harness.local_data import make_data
from localbo.policies import get_policy, gp
from localbo.policies import gibo as gibo_module
from localbo.policies import la_minucb as la_module
from localbo.policies import local as local_module
from localbo.policies import minucb as minucb_module
from localbo.policies import mpd as mpd_module
from localbo.policies.requests import make_request

# The functions timed as the parts of a suggest: (module, attribute, part).
PARTS = [
    (local_module.gp, "fit_model", "fit"),
    (local_module, "explore", "batch"),
    (la_module, "lookahead_batch", "batch"),
    (minucb_module, "minucb_step", "step"),
    (la_module, "minucb_step", "step"),
    (mpd_module, "mpd_walk", "step"),
    (gibo_module, "gibo_step", "step"),
]


@contextlib.contextmanager
def timed_parts(parts: dict[str, float]) -> Iterator[None]:
    """Time the fit, the step and the exploration inside suggest (patched only while timing)."""

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                parts[name] = parts.get(name, 0.0) + time.perf_counter() - start

        return timed

    saved = [getattr(module, attr) for module, attr, _ in PARTS]
    for (module, attr, name), fn in zip(PARTS, saved, strict=True):
        setattr(module, attr, wrap(name, fn))
    try:
        yield
    finally:
        for (module, attr, _), fn in zip(PARTS, saved, strict=True):
            setattr(module, attr, fn)


def time_suggest(
    policy: str, d: int, n: int, n_max: int | None, warm: bool, device: str = "cpu", config: dict | None = None
) -> dict[str, float]:
    """One iteration-ending suggest (and one top-up) of ``policy`` on n observations in d dimensions."""
    cls = get_policy(policy)
    config = cls.Config(**{**(config or {}), "n_max": n_max})
    X, y = make_data(d, n)
    window = n_max or 5 * d
    batch = cls().resamples(config) + (config.samples_per_iteration or d)
    x_t = X[n - batch]  # the iterate the last batch was built around
    hypers = gp.to_state(gp.fit_model(X[: n - batch], y[: n - batch], n_max=window)) if warm else None
    state = {"t": 5, "x_t": x_t.tolist(), "phase": "batch", "n_start": n - batch, "batch": batch, "extra": 0}
    request = make_request(cls, X, y, state={**state, "hypers": hypers}, config=config, seed=1, device=device)
    parts: dict[str, float] = {}
    with timed_parts(parts):
        start, cpu_start = time.perf_counter(), time.process_time()
        out = cls().suggest(request)
        synchronize(device)
        total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    assert out.state.t == 6 and out.state.phase == "batch" and out.X.shape[0] >= 1  # a step
    top_up = make_request(cls, X, y, pending=out.X[-1:], state=out.state, config=config, seed=1, device=device)
    start = time.perf_counter()
    assert cls().suggest(top_up).state.phase == "top-up"
    synchronize(device)
    top = time.perf_counter() - start
    # the iteration that refits to convergence (every full_fit_every-th): t = k - 1 -> k
    every = getattr(config, "full_fit_every", 1)
    full = make_request(
        cls, X, y, state={**state, "t": every - 1, "hypers": hypers}, config=config, seed=1, device=device
    )
    cpu_start = time.process_time()
    cls().suggest(full)
    synchronize(device)
    cpu_full = time.process_time() - cpu_start
    amortised = (cpu_full + (every - 1) * cpu) / every
    return {"total": total, "cpu": cpu, **parts, "top_up": top, "gp_points": min(window, n), "cpu_full": cpu_full,
            "every": every, "amortised": amortised}  # fmt: skip


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policies", default="minucb,la-minucb", help="comma-separated local policies")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--policy-config", default="{}", help="JSON config for every policy timed (n_max aside)")
    parser.add_argument("--dims", type=int, nargs="+", default=[25, 50, 100])
    parser.add_argument("--n", type=int, default=500, help="observations")
    parser.add_argument("--n-max", type=int, default=None, help="GP data window (default: 5 d)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--cold", action="store_true", help="also time a fit from the priors' modes")
    parser.add_argument("--out", type=str, default=None, help="also write the table to this markdown file")
    parser.add_argument("--ns", type=int, nargs="+", default=None, help="cost against n: these numbers of results")
    parser.add_argument("--uncapped-up-to", type=int, default=0, help="with --ns: also max_data None up to this n")
    parser.add_argument("--objectives", type=int, default=1, help="with --ns: several objectives (DTLZ2's data)")
    parser.add_argument("--smoke", action="store_true", help="tiny: d = 3, 30 observations")
    args = parser.parse_args()
    if args.smoke:
        args.dims, args.n = [3], 30
        args.ns = [40, 80] if args.ns else None
    if args.threads:
        torch.set_num_threads(args.threads)
    extra = json.loads(args.policy_config)
    where = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} with "
        f"{torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}"
    )
    if args.device.startswith("cuda"):
        where += f", {torch.cuda.get_device_name()}"
    if args.ns:
        return cost_against_n(args, extra, where)
    lines: list[str] = []
    for policy in [p.strip() for p in args.policies.split(",") if p.strip()]:
        section = [
            f"{policy} suggest on {args.device}, n = {args.n} observations, config {json.dumps(extra)}; {where}",
            "",
        ]
        header = (
            "| d | GP points | fit start | suggest (s) | fit | step | batch (b = d points) | top-up, 1 point "
            "| suggest, CPU s of this process | the same with a refit to convergence, CPU s | full refit every "
            "| CPU s per iteration, amortised |"
        )
        section += [header, "|---" * (header.count("|") - 1) + "|"]
        print("\n".join(section), flush=True)
        for d in args.dims:
            for warm in [True, False] if args.cold else [True]:
                r = time_suggest(policy, d, args.n, args.n_max, warm, args.device, extra)
                row = (
                    f"| {d} | {r['gp_points']} | {'warm' if warm else 'cold'} | {r['total']:.1f} | {r['fit']:.1f} "
                    f"| {r['step']:.2f} | {r['batch']:.1f} | {r['top_up']:.2f} | {r['cpu']:.1f} | {r['cpu_full']:.1f} "
                    f"| {r['every']} | {r['amortised']:.1f} |"
                )
                print(row, flush=True)
                section.append(row)
        print(flush=True)
        lines += [*section, ""]
    if args.out:
        with open(args.out, "w") as out:
            out.write("\n".join(lines) + "\n")


def cost_against_n(args: argparse.Namespace, extra: dict[str, Any], where: str) -> None:
    """The table of ``--ns``: one row per policy, d, n (and bound), CPU and wall seconds, and the ratio of the
    CPU seconds to those at the smallest n (the issue's goal: at most 2 at n = 5,000 against n = 500)."""
    from harness.cost_n import gp_points, suggest_cost
    from harness.runs import commit_of

    on_gpu = args.device != "cpu"
    ratio = "wall s" if on_gpu else "CPU s"  # on a GPU the process's CPU seconds are mostly launches and waits
    lines = [
        "# A suggest's cost against the number of results",
        "",
        f"Written whole by `benchmarks/policy_compute_time.py` at commit {commit_of(Path(__file__).parent)}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, on {platform.node()} ({where}); command: "
        f"`{' '.join(['benchmarks/policy_compute_time.py', *sys.argv[1:]])}`. One suggest after n results of "
        + ("DTLZ2's data" if args.objectives > 1 else "data shaped like a local run (`harness/local_data.py`)")
        + ", the state from the suggest after n - 1 (warm); the "
        "CPU seconds are this process's (one thread: one quiet core's work even on a shared machine). `max_data`: "
        "the policy's bound on its GP data (`-`: the policy has none; local policies fit a window of 5 d)"
        + (
            f". On {args.device}: the wall seconds wait for the device to finish, the ratio is of wall seconds, and "
            "a local policy's suggest runs once untimed first (the device's first kernels of a size compile)"
            if on_gpu
            else ""
        )
        + (
            f". {args.objectives} objectives: half the points on DTLZ2's front (`harness/cost_n.py`); `max_data` "
            "shows the GPs' bound / the baseline's (`max_baseline`), `front` the Pareto front's size at n."
            if args.objectives > 1
            else "."
        ),
        "",
        f"| policy | d | n | max_data | GP points | suggest, CPU s | wall s | {ratio} at n / at the first n |"
        + (" front |" if args.objectives > 1 else ""),
        "|---|---|---|---|---|---|---|---|" + ("---|" if args.objectives > 1 else ""),
    ]
    print("\n".join(lines), flush=True)
    for policy in [p.strip() for p in args.policies.split(",") if p.strip()]:
        bounded = "max_data" in get_policy(policy).Config.model_fields
        for d in args.dims:
            fields = get_policy(policy).Config.model_fields
            caps = [name for name in ("max_data", "max_baseline") if name in fields]
            base = {**{c: 30 for c in caps}, **extra} if args.smoke and bounded else dict(extra)  # smoke: bites
            variants = [base] + ([{**base, **{c: None for c in caps}}] if bounded and args.uncapped_up_to else [])
            for config in variants:
                first = None
                for n in args.ns:
                    if config.get("max_data", 0) is None and n > args.uncapped_up_to:
                        continue
                    r = suggest_cost(policy, d, n, config, args.objectives, args.device)
                    first = first or r["wall" if on_gpu else "cpu"]
                    dumped = get_policy(policy).Config(**config).model_dump()
                    cap = " / ".join(str(dumped.get(c)) for c in caps) if bounded else "-"
                    row = (f"| {policy} | {d} | {n} | {cap} | {gp_points(policy, d, n, config)} | {r['cpu']:.2f} "
                           f"| {r['wall']:.2f} | {r['wall' if on_gpu else 'cpu'] / first:.2f} |")  # fmt: skip
                    if args.objectives > 1:
                        row += f" {r['front']} |"
                    print(row, flush=True)
                    lines.append(row)
                    if args.out:  # row by row: a run stopped by a time limit keeps what it measured
                        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
