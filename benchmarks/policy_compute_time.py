"""Seconds per ``suggest`` of the ``minucb`` policy at d = 25, 50, 100 with 500 observations.

What it times: one call of ``MinUCB().suggest`` that ends an iteration, i.e. the work the engine
waits for when the plan runs dry after a batch's results are in: the MAP refit of the GP on the
data window (N_max = 5 d by default), the UCB step (multi-start L-BFGS-B), and the exploration
batch of the next iteration (b2 = d points, greedy, one optimize_acqf each). Also a "top-up" call
(one more exploration point while results are out, no fit). Its parts (fit, step, exploration)
are timed inside that same call.

The data: 500 points in boxes x_c +- 0.2 whose centre moves from the middle of the cube towards
x*, with y = ||x - x*||^2 + 0.1 sum sin(6 x) + N(0, 0.01^2), in the order a local run makes them.
"warm" starts the fit from the hyperparameters of a fit on the data minus the last batch (as in a
run); "cold" starts from the priors' modes (the first fit of a study, or a lost state).

    .venv/bin/python benchmarks/policy_compute_time.py                  # d = 25, 50, 100; ~5 min on 2 cores
    .venv/bin/python benchmarks/policy_compute_time.py --dims 25 --n-max 500 --threads 1
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from localbo.policies import SuggestRequest, get_policy, gp
from localbo.policies import local as local_module
from localbo.policies import minucb as minucb_module


def make_data(d: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """X: n x d along a local run's path, y: n (to minimise)."""
    g = torch.Generator().manual_seed(seed)
    x_star = 0.5 + 0.3 * (2 * torch.rand(d, generator=g, dtype=torch.float64) - 1)
    centre = 0.5 + torch.linspace(0, 1, n, dtype=torch.float64).unsqueeze(-1) * (x_star - 0.5)
    X = (centre + 0.2 * (2 * torch.rand(n, d, generator=g, dtype=torch.float64) - 1)).clamp(0, 1)
    y = (X - x_star).pow(2).sum(-1) + 0.1 * torch.sin(6 * X).sum(-1) + 0.01 * torch.randn(n, generator=g).double()
    return X, y


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

    saved = (local_module.gp.fit_model, local_module.explore, minucb_module.minucb_step)
    local_module.gp.fit_model = wrap("fit", saved[0])  # type: ignore[attr-defined]
    local_module.explore = wrap("explore", saved[1])  # type: ignore[attr-defined]
    minucb_module.minucb_step = wrap("step", saved[2])  # type: ignore[attr-defined]
    try:
        yield
    finally:
        local_module.gp.fit_model, local_module.explore, minucb_module.minucb_step = saved  # type: ignore[misc]


def time_suggest(d: int, n: int, n_max: int | None, warm: bool) -> dict[str, float]:
    """One iteration-ending suggest (and one top-up) of minucb on n observations in d dimensions."""
    cls = get_policy("minucb")
    config = cls.Config(n_max=n_max)
    X, y = make_data(d, n)
    window = n_max or 5 * d
    batch = 1 + (config.samples_per_iteration or d)
    x_t = X[n - batch]  # the iterate the last batch was built around
    hypers = gp.to_state(gp.fit_model(X[: n - batch], y[: n - batch], n_max=window)) if warm else {}
    state = {"t": 5, "x_t": x_t.tolist(), "phase": "batch", "n_start": n - batch, "batch": batch, "extra": 0}
    empty = torch.empty(0, d, dtype=torch.float64)
    request = SuggestRequest(
        dim=d, X=X, y=y, X_pending=empty, count=1, state={**state, "hypers": hypers}, config=config, seed=1
    )
    parts: dict[str, float] = {}
    with timed_parts(parts):
        start = time.perf_counter()
        out = cls().suggest(request)
        total = time.perf_counter() - start
    assert out.info["event"] == "step" and out.X.shape[0] == batch
    top_up = SuggestRequest(**{**request.__dict__, "state": out.state, "X_pending": out.X[-1:]})
    start = time.perf_counter()
    assert cls().suggest(top_up).info["event"] == "top-up"
    return {"total": total, **parts, "top_up": time.perf_counter() - start, "gp_points": min(window, n)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dims", type=int, nargs="+", default=[25, 50, 100])
    parser.add_argument("--n", type=int, default=500, help="observations")
    parser.add_argument("--n-max", type=int, default=None, help="GP data window (default: 5 d)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--cold", action="store_true", help="also time a fit from the priors' modes")
    parser.add_argument("--out", type=str, default=None, help="also write the table to this markdown file")
    parser.add_argument("--smoke", action="store_true", help="tiny: d = 3, 30 observations")
    args = parser.parse_args()
    if args.smoke:
        args.dims, args.n = [3], 30
    if args.threads:
        torch.set_num_threads(args.threads)
    lines = [
        f"minucb suggest, n = {args.n} observations; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, torch {torch.__version__} with {torch.get_num_threads()} threads, "
        f"load average {os.getloadavg()[0]:.1f}",
        "",
    ]
    header = "| d | GP points | fit start | suggest (s) | fit | UCB step | explore (d points) | top-up, 1 point |"
    lines += [header, "|---" * (header.count("|") - 1) + "|"]
    print("\n".join(lines), flush=True)
    for d in args.dims:
        for warm in [True, False] if args.cold else [True]:
            r = time_suggest(d, args.n, args.n_max, warm)
            row = (
                f"| {d} | {r['gp_points']} | {'warm' if warm else 'cold'} | {r['total']:.1f} | {r['fit']:.1f} "
                f"| {r['step']:.2f} | {r['explore']:.1f} | {r['top_up']:.2f} |"
            )
            print(row, flush=True)
            lines.append(row)
    if args.out:
        with open(args.out, "w") as out:
            out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
