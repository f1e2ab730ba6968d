"""Lipschitz BO benchmark: UCB/EI/PI/TS beside AR-UCB/TEI/TPI/AR-TS (Ahmed, Vaswani, Schmidt, sec. 4).

Objectives (``benchmarks/harness/objectives.py``), minimised, evaluated without noise as in the paper
(``--noise`` changes that): Branin, Six-hump Camel, Goldstein-Price, Hartmann-3, Hartmann-6,
Michalewicz-2/5/10, Rosenbrock-2..5. Methods: the policies ``ucb``, ``ar-ucb``, ``ei``, ``tei``, ``pi``,
``tpi``, ``ts``, ``ar-ts`` with their defaults (the paper's protocol: y standardised, kappa = 10,
every 4th point random), ``random``, and the paper's "beta too large" case ``ucb-beta1e16`` /
``ar-ucb-beta1e16`` (beta = 1e16, i.e. sigma times 1e8). The metric is the absolute error to the known
optimum, best noise-free value so far minus f*, versus evaluations. Each (objective, method, seed) is a
run through the policy API emulating the engine (``harness.runners``, ``direct``).

    .venv/bin/python benchmarks/lipschitz.py --smoke                   # ~1 min, into a temp dir
    .venv/bin/python benchmarks/lipschitz.py                            # the full grid: 12 functions x
        # 11 methods x 10 seeds x 100 evaluations (many CPU-hours on 2 cores), then the timing table
    .venv/bin/python benchmarks/lipschitz.py --objectives michalewicz5 --methods ts,ar-ts --seeds 3 --jobs 2
    .venv/bin/python benchmarks/lipschitz.py --resume                   # go on: runs in the CSV are kept
    .venv/bin/python benchmarks/lipschitz.py --report-only              # redraw the tables and plots
    .venv/bin/python benchmarks/lipschitz.py --timing-only              # only the per-suggest compute time

It writes ``benchmarks/results/lipschitz.csv`` (one row per evaluation), ``lipschitz.json`` (settings,
runs, failures, timings), ``lipschitz.md`` and ``lipschitz_<objective>.png`` (one panel per acquisition:
BO beside LBO and random, median absolute error with its 25-75 % band, log scale), or into ``--out``.
The timing table: seconds per ``suggest`` of every policy at n = 100 and 500 observations, d = 2 and 6
(an acquisition point; warm-started GP fit included). ``--smoke`` never writes into ``benchmarks/results``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

# One BLAS thread per process (inherited by the spawned runs): with OpenBLAS's own pool, each small
# L-BFGS-B step (scipy's setulb) waited on idle threads and a run took 1.5x the CPU on a busy machine.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import numerics  # noqa: E402

numerics.pin()  # before numpy and torch load: a seed takes the same path on any AVX2 host (harness/numerics.py)

import numpy as np  # noqa: E402
from harness.objectives import best_known, get_objective, objective_spec  # noqa: E402
from harness.report import (  # noqa: E402
    Group,
    append_csv,
    groups,
    load_json,
    print_tables,
    read_csv,
    run_summary,
    save_json,
    start_csv,
)
from harness.runners import RunResult, RunSpec  # noqa: E402
from synthetic import machine, progress, quiet, run_all, versions  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results"
NAME = "lipschitz"
OBJECTIVES = (
    "branin,sixhumpcamel,goldsteinprice,hartmann3,hartmann6,michalewicz2,michalewicz5,michalewicz10,"
    "rosenbrock2,rosenbrock3,rosenbrock4,rosenbrock5"
)
PAIRS = (("ucb", "ar-ucb"), ("ei", "tei"), ("pi", "tpi"), ("ts", "ar-ts"))  # (BO, its LBO variant)
WEIGHT_SPACE = {"sampler": "weight-space", "features": 100}  # pybo's Thompson sampler, which the paper used
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {  # method label -> (policy, config)
    "ucb-beta1e16": ("ucb", {"beta": 1e16}),
    "ar-ucb-beta1e16": ("ar-ucb", {"beta": 1e16}),
    "ts-ws100": ("ts", WEIGHT_SPACE),
    "ar-ts-ws100": ("ar-ts", WEIGHT_SPACE),
}
VARIANT_PAIRS = (("ucb-beta1e16", "ar-ucb-beta1e16"), ("ts-ws100", "ar-ts-ws100"))
TRUE_L = {"ar-ts-trueL": "ar-ts", "tei-trueL": "tei", "ar-ucb-trueL": "ar-ucb", "tpi-trueL": "tpi"}
TRUE_L_POINTS = 2**16
METHODS = ",".join([m for pair in PAIRS for m in pair] + ["random", *VARIANTS])
FULL = {"objectives": OBJECTIVES, "methods": METHODS, "seeds": 10, "evals": 100}
SMOKE = {"objectives": "branin", "methods": "ei,tei,ts,ar-ts,random", "seeds": 1, "evals": 10}
TIMING_POLICIES = ("ucb", "ar-ucb", "tucb", "ei", "tei", "pi", "tpi", "ts", "ar-ts")
TIMING_GRID = ((100, 2), (100, 6), (500, 2), (500, 6))
SMOKE_TIMING_GRID = ((20, 2),)
CHECKPOINTS = (10, 25, 50, 100, 200)
ACCEPT_CASES = tuple(
    (objective, method)
    for objective in ("michalewicz5", "rosenbrock3")
    for method in ("ar-ts", "ar-ts-trueL", "ar-ts-ws100", "ar-ucb", "tei")
)
SMOKE_ACCEPT_CASES = (("branin", "ar-ts"),)


def all_pairs() -> list[tuple[str, str]]:
    """(BO, LBO) method pairs: the four acquisitions, the configured variants, LBO with the true L."""
    bo_of = {lbo: bo for bo, lbo in PAIRS}
    return [*PAIRS, *VARIANT_PAIRS, *((bo_of[policy], label) for label, policy in TRUE_L.items())]


def spec_for(objective: str, method: str, seed: int, evals: int, noise: float) -> RunSpec:
    if method in TRUE_L:
        policy, config = TRUE_L[method], {"lipschitz_constant": true_lipschitz(objective)}
    else:
        policy, config = VARIANTS.get(method, (method, None))
    from localbo.policies import get_policy

    if "n_init" in get_policy(policy).Config.model_fields:  # the protocol's design, d + 1 points (the default is
        config = {"n_init": get_objective(objective).dim + 1, **(config or {})}  # max(d + 1, 5) now)
    return RunSpec(objective, method, "direct", seed, evals, config, policy=policy, noise_std=noise)


@cache
def true_lipschitz(objective: str) -> float:
    """The paper's "true L", estimated offline: the largest gradient norm at 2^16 Sobol points, in unit-cube units."""
    import torch

    obj = get_objective(objective)
    U = torch.quasirandom.SobolEngine(obj.dim, scramble=True, seed=0).draw(TRUE_L_POINTS, dtype=torch.float64)
    U.requires_grad_(True)
    (grad,) = torch.autograd.grad(obj(obj.to_user(U)).sum(), U)
    return float(grad.norm(dim=-1).max())


# -- per-suggest compute time --------------------------------------------------------------------------


def timing(grid: tuple[tuple[int, int], ...], repeats: int) -> list[dict[str, Any]]:
    """Seconds per suggest (an acquisition point, GP refit warm-started) of each policy at (n, d)."""
    import torch
    from localbo.policies import get_policy, gp
    from localbo.policies.requests import make_request

    rows = []
    for n, d in grid:
        g = torch.Generator().manual_seed(n * 100 + d)
        X = torch.rand(n, d, generator=g, dtype=torch.float64)
        y = (X - 0.3).pow(2).sum(-1) + 0.2 * torch.sin(8 * X).sum(-1)  # smooth, a few local minima
        hypers = gp.to_state(gp.fit_model(X, y, "matern52"))
        for name in TIMING_POLICIES:
            cls = get_policy(name)
            request = make_request(cls, X, y, state={"hypers": hypers}, seed=1)
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                suggestion = cls().suggest(request)
                times.append(time.perf_counter() - start)
            how = suggestion.state.points[0].how
            load = os.getloadavg()[0]
            rows.append(
                {"policy": name, "n": n, "d": d, "median_s": statistics.median(times), "how": how, "load": load}
            )
            progress(f"timing {name} n={n} d={d}: {statistics.median(times):.3f} s ({how})")
    return rows


def acceptance(objective: str, method: str, evals: int, seed: int = 0) -> dict[str, Any]:
    """How much the Lipschitz check prunes: the fraction of candidates it accepts at each acquisition point."""
    import json

    import torch
    from localbo.policies import get_policy
    from localbo.policies.requests import make_request

    spec = spec_for(objective, method, seed, evals, 0.0)
    obj = get_objective(objective)
    cls = get_policy(spec.policy_name)
    config = cls.Config.model_validate(spec.policy_config or {})
    X, y, fractions = torch.empty(0, obj.dim, dtype=torch.float64), torch.empty(0, dtype=torch.float64), []
    state = cls.State()
    suggestion = None
    while X.shape[0] < evals:
        request = make_request(cls, X, y, state=state, config=config, seed=seed, rng_seed=X.shape[0])
        suggestion = cls().suggest(request)
        state, _ = cls.load_state(json.loads(json.dumps(cls.dump_state(suggestion.state))))  # as stored
        point = suggestion.state.points[0]
        if point.how in ("acquisition", "fallback"):
            fractions.append(point.accepted or 0.0)
        X, y = torch.cat([X, suggestion.X[:1]]), torch.cat([y, obj(obj.to_user(suggestion.X[:1]))])
    lipschitz = suggestion.state.lipschitz if suggestion else None
    L = lipschitz.L if lipschitz is not None else None
    row = {"objective": objective, "method": method, "evals": evals, "L_final": L, "L_true": true_lipschitz(objective)}
    row |= {"accepted_min": min(fractions, default=1.0), "accepted_mean": statistics.fmean(fractions or [1.0])}
    progress(f"acceptance {objective} {method}: min {row['accepted_min']:.3f}, L {L}")
    return row


# -- report ------------------------------------------------------------------------------------------


def errors_of(g: Group) -> np.ndarray:
    """seeds x evals: best so far minus f*, floored at 1e-12 for the log scale."""
    fstar, _ = best_known(g.objective, 0)
    return np.maximum(g.best - fstar, 1e-12)


def at(errors: np.ndarray, k: int) -> np.ndarray:
    return errors[:, min(k, errors.shape[1]) - 1]


def fmt(values: np.ndarray) -> str:
    return f"{np.median(values):.3g} [{np.quantile(values, 0.25):.2g}, {np.quantile(values, 0.75):.2g}]"


def paired(a: Group, b: Group) -> tuple[np.ndarray, np.ndarray]:
    """Final errors of a and b on the seeds both ran (same seed: same initial design and random points)."""
    seeds = sorted(set(a.seeds) & set(b.seeds))
    ea, eb = errors_of(a)[:, -1], errors_of(b)[:, -1]
    return np.array([ea[a.seeds.index(s)] for s in seeds]), np.array([eb[b.seeds.index(s)] for s in seeds])


def category(bo: np.ndarray, lbo: np.ndarray) -> str:
    """By the mean of log10 final error: within a factor of 2 (0.3 dex) either way is similar."""
    diff = float(np.mean(np.log10(lbo)) - np.mean(np.log10(bo)))
    return "much better" if diff < -1 else "better" if diff < -0.3 else "worse" if diff > 0.3 else "similar"


def verdict(bo: np.ndarray, lbo: np.ndarray, second: str = "BO") -> str:
    diff = float(np.mean(np.log10(lbo)) - np.mean(np.log10(bo)))
    wins = int((lbo < bo).sum())
    word = category(bo, lbo)
    head = f"LBO {word}" if word != "similar" else "similar"
    return f"{head} ({diff:+.2f} dex; lower in {wins}/{len(bo)} seeds than {second})"


def headline(by: dict[tuple[str, str], Group], objectives: list[str]) -> list[str]:
    """The paper's claims, checked on the runs present (paired by seed)."""
    lines = ["## The paper's claims on what ran", ""]
    for objective in objectives:
        for ts_name, label in (("ts", "ar-ts"), ("ts", "ar-ts-trueL"), ("ts-ws100", "ar-ts-ws100")):
            ts, ar = by.get((objective, ts_name)), by.get((objective, label))
            if ts is not None and ar is not None and objective.startswith(("michalewicz", "rosenbrock")):
                bo, lbo = paired(ts, ar)
                lines.append(
                    f"- {label} against {ts_name} on {objective}: {verdict(bo, lbo, ts_name)}; final error median "
                    f"{np.median(bo):.3g} ({ts_name}) and {np.median(lbo):.3g} ({label})."
                )
    counts: dict[str, int] = {}
    for objective in objectives:
        for bo_name, lbo_name in PAIRS:
            if (objective, bo_name) in by and (objective, lbo_name) in by:
                word = category(*paired(by[(objective, bo_name)], by[(objective, lbo_name)]))
                counts[word] = counts.get(word, 0) + 1
    if counts:
        total = sum(counts.values())
        summary = ", ".join(f"{word} {counts.get(word, 0)}" for word in ("much better", "better", "similar", "worse"))
        lines.append(
            f"- LBO against its BO method over all {total} (objective, acquisition) pairs that ran: {summary}."
        )
    for objective in objectives:
        big, big_ar, rnd = (by.get((objective, m)) for m in ("ucb-beta1e16", "ar-ucb-beta1e16", "random"))
        if big is not None and big_ar is not None and rnd is not None:
            r_big, ar_big = paired(rnd, big)[0], paired(rnd, big_ar)[1]
            lines.append(
                f"- beta = 1e16 on {objective}: UCB {np.median(paired(rnd, big)[1]):.3g}, AR-UCB "
                f"{np.median(ar_big):.3g}, random {np.median(r_big):.3g} (median final error); AR-UCB against "
                f"random: {verdict(paired(rnd, big_ar)[0], ar_big, 'random').replace('LBO', 'AR-UCB')}; UCB against "
                f"random: {verdict(*paired(rnd, big), 'random').replace('LBO', 'UCB')}."
            )
    return [*lines, ""]


DIFFERENCES = [
    "## Where this differs from the paper's protocol",
    "",
    "- GP: one MAP fit per suggest (BoTorch priors, Matérn-5/2 ARD) instead of Spearmint's MCMC over hyperparameters.",
    "- Acquisition optimiser: 2048 scrambled Sobol + 256 local candidates and 5 L-BFGS-B refinements instead of "
    "DIRECT.",
    "- Thompson sampling: BoTorch's pathwise sampler (1024 prior features plus the exact data update) by default; "
    "the paper's pybo draws a weight-space posterior on 100 random Fourier features, run here as `ts-ws100` / "
    "`ar-ts-ws100`.",
    "- UCB: beta_t = 0.2 d log(2t) (Kandasamy et al. 2017 as the paper cites it; the exact form is unverified).",
    "- Domains: botorch's (Rosenbrock [-5, 10]^d, Michalewicz [0, pi]^d, Six-hump Camel [-3, 3] x [-2, 2]); "
    "the paper takes Jamil and Yang's.",
    "- Budget: the evaluations per run stated above; n_init = d + 1 Sobol points count towards it.",
    "",
]


def write_report(out: Path, meta: dict[str, Any], timings: list[dict[str, Any]]) -> None:
    csv_path = out / f"{NAME}.csv"
    all_groups = groups(read_csv(csv_path)) if csv_path.exists() else []
    by = {(g.objective, g.method): g for g in all_groups}
    objectives = list(dict.fromkeys(g.objective for g in all_groups))
    state = load_json(out / f"{NAME}.json")
    md = [
        "# Lipschitz BO: UCB/EI/PI/TS beside AR-UCB/TEI/TPI/AR-TS",
        "",
        f"Written by `benchmarks/lipschitz.py`{' (smoke run)' if meta.get('smoke') else ''}. Every objective is "
        "minimised and evaluated without noise unless said otherwise; the error is the best noise-free value "
        "so far minus the known optimum. Cells: median [25 %, 75 %] over seeds.",
        "",
        f"- date: {meta.get('date', '?')}",
        f"- command: `{meta.get('command', '?')}`",
        f"- machine: {meta.get('machine', '?')}",
        f"- versions: {meta.get('versions', '?')}",
        f"- evaluation noise std: {meta.get('noise', 0)}; evaluations per run: {meta.get('evals', '?')}; "
        f"runs in parallel: {meta.get('jobs', 1)}, torch threads each: {meta.get('threads', '?')}",
        "- policies at their defaults but n_init: Matérn-5/2 ARD GP (gp.py priors, MAP), n_init = d + 1 Sobol "
        "points (set: the default is max(d + 1, 5)), every "
        "4th point random (Lipschitz-checked for LBO), kappa = 10, UCB beta_t = 0.2 d log(2t); "
        "`*-beta1e16`: beta = 1e16",
        *[f"- runs joined from: {c}" for c in meta.get("previous_commands", [])],
        "",
    ]
    md += coverage(meta, all_groups)
    md += headline(by, objectives)
    md += DIFFERENCES
    if all_groups:
        md += ["## LBO against BO, final error", ""]
        md += ["| objective | d | acquisition | BO | LBO | random | verdict (mean log10 error, LBO - BO) |"]
        md += ["|---|---|---|---|---|---|---|"]
        for objective in objectives:
            rnd = by.get((objective, "random"))
            for bo_name, lbo_name in all_pairs():
                bo, lbo = by.get((objective, bo_name)), by.get((objective, lbo_name))
                if bo is None or lbo is None:
                    continue
                e_bo, e_lbo = paired(bo, lbo)
                r = fmt(errors_of(rnd)[:, -1]) if rnd else "-"
                md.append(
                    f"| {objective} | {objective_spec(objective).dim} | {bo_name} / {lbo_name} | {fmt(e_bo)} | "
                    f"{fmt(e_lbo)} | {r} | {verdict(e_bo, e_lbo)} |"
                )
        md += [""]
    for objective in objectives:
        mine = [g for g in all_groups if g.objective == objective]
        checkpoints = [k for k in CHECKPOINTS if k <= max(g.best.shape[1] for g in mine)]
        head = " | ".join(f"error at {k}" for k in checkpoints)
        md += [f"## {objective} (d = {objective_spec(objective).dim}, f* = {best_known(objective, 0)[0]:.6g})", ""]
        md += [
            f"| method | seeds | {head} | wall s / run | fallbacks |",
            "|---|---|" + "---|" * len(checkpoints) + "---|---|",
        ]
        for g in sorted(mine, key=lambda g: float(np.median(errors_of(g)[:, -1]))):
            cells = " | ".join(fmt(at(errors_of(g), k)) for k in checkpoints)
            md.append(f"| {g.method} | {len(g.seeds)} | {cells} | {statistics.fmean(g.wall_s):.1f} | {g.fallbacks} |")
        png = out / f"{NAME}_{objective}.png"
        plot(png, objective, by)
        md += ["", f"![absolute error on {objective}]({png.name})", ""]
    if timings:
        md += timing_table(timings)
    if state.get("acceptance"):
        md += acceptance_table(state["acceptance"])
    failed = state.get("failed", [])
    problems = [r for r in state.get("runs", []) if r.get("n_errors")]
    if failed or problems:
        md += ["## Problems", ""]
        md += [f"- run failed: {f['key']}: {f['error']}" for f in failed]
        md += [
            f"- {r['objective']} / {r['method']} / seed {r['seed']}: {r['n_errors']} policy failure(s) answered "
            f"with fallback points; first: {r['errors'][0] if r['errors'] else '?'}"
            for r in problems
        ]
        md.append("")
    findings = out / f"{NAME}_findings.md"  # hand-written, kept across rewrites of the report
    if findings.exists():
        md += ["", findings.read_text().rstrip()]
    (out / f"{NAME}.md").write_text("\n".join(md) + "\n")


def coverage(meta: dict[str, Any], all_groups: list[Group]) -> list[str]:
    """What ran, what of the full grid did not, and the command that continues."""
    done = {(g.objective, g.method): len(g.seeds) for g in all_groups}
    full_obj, full_methods = FULL["objectives"].split(","), FULL["methods"].split(",")
    missing = [(o, m) for o in full_obj for m in full_methods if done.get((o, m), 0) < FULL["seeds"]]
    lines = ["## What ran", ""]
    for objective in dict.fromkeys(g.objective for g in all_groups):
        ran = [f"{m} ({n})" for (o, m), n in done.items() if o == objective]
        lines.append(f"- {objective}: {', '.join(ran)} (seeds per method)")
    if missing and not meta.get("smoke"):
        skipped_obj = [o for o in full_obj if not any(k[0] == o for k in done)]
        lines += [
            "",
            f"Not run: {len(missing)} of the full grid's {len(full_obj) * len(full_methods)} (objective, method) "
            f"cells have fewer than {FULL['seeds']} seeds; objectives not run at all: "
            f"{', '.join(skipped_obj) or 'none'}. To continue to the full grid (10 seeds, {meta.get('evals')} "
            "evaluations; runs already in the CSV are kept):",
            "",
            f"    nice -n 15 .venv/bin/python benchmarks/lipschitz.py --resume --evals {meta.get('evals')} --jobs 2",
        ]
    return [*lines, ""]


def timing_table(timings: list[dict[str, Any]]) -> list[str]:
    grid = list(dict.fromkeys((r["n"], r["d"]) for r in timings))
    cell = {(r["policy"], r["n"], r["d"]): r["median_s"] for r in timings}
    lines = [
        "## Seconds per suggest",
        "",
        "One `suggest` producing an acquisition point (GP MAP refit warm-started from the stored hyperparameters, "
        "the acquisition maximised over 2048 Sobol + 256 local candidates, 5 L-BFGS-B refinements), median "
        "of repeated calls on random data, one torch thread and one BLAS thread; wall time, on a machine whose "
        f"1-minute load average was {min(r.get('load', 0) for r in timings):.1f} to "
        f"{max(r.get('load', 0) for r in timings):.1f} during the measurement (2 cores, shared).",
        "",
        "| policy | " + " | ".join(f"n = {n}, d = {d}" for n, d in grid) + " |",
        "|---|" + "---|" * len(grid),
    ]
    for policy in dict.fromkeys(r["policy"] for r in timings):
        lines.append(f"| {policy} | " + " | ".join(f"{cell[(policy, n, d)]:.3f}" for n, d in grid) + " |")
    return [*lines, ""]


def acceptance_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## How much the Lipschitz check prunes",
        "",
        "One run per row (seed 0, noise-free): the fraction of the acquisition's candidates (2048 Sobol + 256 "
        "local) that the Lipschitz bounds accept (accept-reject) or leave a non-zero value (TEI), at each "
        "acquisition point; L at the last point, and the true L (largest gradient norm at 2^16 Sobol points, "
        "unit-cube units).",
        "",
        "| objective | method | evaluations | accepted, min | accepted, mean | L at the end | true L |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        L = f"{r['L_final']:.3g}" if r["L_final"] is not None else "-"
        lines.append(
            f"| {r['objective']} | {r['method']} | {r['evals']} | {r['accepted_min']:.4f} | "
            f"{r['accepted_mean']:.4f} | {L} | {r['L_true']:.3g} |"
        )
    return [*lines, ""]


def plot(path: Path, objective: str, by: dict[tuple[str, str], Group]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(bo, lbo) for bo, lbo in (*PAIRS, *VARIANT_PAIRS) if (objective, bo) in by or (objective, lbo) in by]
    if not panels:
        panels = [("random", "random")]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False, sharey=True)
    for ax, (bo, lbo) in zip(axes[0], panels, strict=True):
        colors = {bo: "tab:blue", lbo: "tab:red", f"{lbo}-trueL": "tab:green", "random": "tab:gray"}
        for method, color in colors.items():
            g = by.get((objective, method))
            if g is None:
                continue
            e = errors_of(g)
            x = np.arange(1, e.shape[1] + 1)
            ax.plot(x, np.median(e, axis=0), color=color, label=f"{method} ({len(g.seeds)})")
            ax.fill_between(x, np.quantile(e, 0.25, axis=0), np.quantile(e, 0.75, axis=0), color=color, alpha=0.2)
        ax.set_yscale("log")
        ax.set_xlabel("evaluations")
        ax.set_title(f"{bo} / {lbo}" if bo != lbo else bo, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("best so far - f*")
    fig.suptitle(f"{objective} (d = {objective_spec(objective).dim}): median, 25-75 % over seeds", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# -- command line ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objectives", help="comma-separated (default: the paper's 12 functions)")
    parser.add_argument("--methods", help=f"comma-separated (default {METHODS})")
    parser.add_argument("--seeds", type=int, help="seeds per method, --seed0 .. (default 10)")
    parser.add_argument("--seed0", type=int, default=0)
    parser.add_argument("--evals", type=int, help="evaluations per run (default 100)")
    parser.add_argument("--noise", type=float, default=0.0, help="evaluation noise std (default 0: the paper's)")
    parser.add_argument("--out", type=Path, help=f"where to write (default {DEFAULT_OUT})")
    parser.add_argument("--jobs", type=int, default=1, help="runs in parallel processes")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    parser.add_argument("--smoke", action="store_true", help="a tiny run into a temp dir; never the results")
    parser.add_argument("--resume", action="store_true", help="keep the runs already in the CSV, run the rest")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the markdown and plots")
    parser.add_argument(
        "--timing-only", action="store_true", help="only measure the per-suggest time and the pruning table"
    )
    parser.add_argument("--no-timing", action="store_true", help="skip the per-suggest time and the pruning table")
    args = parser.parse_args(argv)
    for key, value in (SMOKE if args.smoke else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.smoke:
        if args.out is not None and args.out.resolve() == DEFAULT_OUT.resolve():
            parser.error("--smoke does not write into benchmarks/results; pass another --out")
        out = args.out or Path(tempfile.mkdtemp(prefix="lipschitz-smoke-"))
    else:
        out = args.out or DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / f"{NAME}.csv", out / f"{NAME}.json"
    state = load_json(json_path) if (args.resume or args.report_only or args.timing_only) else {}
    state.setdefault("runs", [])
    state.setdefault("failed", [])
    if args.report_only:
        write_report(out, state.get("meta", {}), state.get("timings", []))
        progress(f"wrote {out / (NAME + '.md')}")
        return 0

    objectives = [o.strip() for o in args.objectives.split(",") if o.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    from localbo.policies import registry

    for objective in objectives:
        try:
            objective_spec(objective)
        except KeyError as exc:
            parser.error(str(exc.args[0]))
    if bad := [m for m in methods if m not in registry() and m not in VARIANTS and m not in TRUE_L]:
        parser.error(f"unknown method(s) {bad}; known: {sorted(registry())}, {sorted(VARIANTS)}, {sorted(TRUE_L)}")
    if args.seeds < 1 or args.evals < 1 or args.jobs < 1:
        parser.error("--seeds, --evals and --jobs must be >= 1")
    quiet()
    import torch

    torch.set_num_threads(args.threads)
    previous = state.get("meta", {})
    state["meta"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "command": "benchmarks/lipschitz.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "previous_commands": [*previous.get("previous_commands", []), previous["command"]]
        if args.resume and "command" in previous
        else [],
        "machine": machine(),
        "versions": versions(),
        "smoke": args.smoke,
        "jobs": args.jobs,
        "threads": args.threads,
        "evals": args.evals,
        "noise": args.noise,
    }
    failures: list[str] = []
    if not args.timing_only:
        specs = [
            spec_for(o, m, s, args.evals, args.noise)
            for o in objectives
            for m in methods
            for s in range(args.seed0, args.seed0 + args.seeds)
        ]
        if args.resume and csv_path.exists():
            done = {(r["objective"], r["method"], r["seed"]) for r in read_csv(csv_path)}
            specs = [s for s in specs if (s.objective, s.method, s.seed) not in done]
            progress(f"resume: {len(done)} run(s) already in {csv_path}, {len(specs)} to go")
        else:
            start_csv(csv_path)
            state["runs"], state["failed"] = [], []
        save_json(json_path, state)

        def on_done(spec: RunSpec, result: RunResult | None, error: str | None) -> None:
            key = f"{spec.objective}/{spec.method}/seed {spec.seed}"
            if result is None:
                failures.append(key)
                state["failed"].append({"key": key, "error": (error or "?").splitlines()[0]})
                progress(f"\nFAILED {key}:\n{error}")
            else:
                append_csv(csv_path, result.rows)
                state["runs"].append(run_summary(result))
                err = result.rows[-1]["best_so_far"] - best_known(spec.objective, 0)[0]
                progress(f"{key}: error {err:.3g}, {result.wall_s:.1f} s")
            save_json(json_path, state)

        t0 = time.monotonic()
        run_all(specs, args.jobs, args.threads, on_done)
        progress(f"runs done in {time.monotonic() - t0:.0f} s")
    if not args.no_timing:
        state["timings"] = timing(SMOKE_TIMING_GRID if args.smoke else TIMING_GRID, 2 if args.smoke else 3)
        cases, evals = (SMOKE_ACCEPT_CASES, 8) if args.smoke else (ACCEPT_CASES, 30)
        state["acceptance"] = [acceptance(objective, method, evals) for objective, method in cases]
    save_json(json_path, state)
    write_report(out, state["meta"], state.get("timings", []))
    print_tables(out / f"{NAME}.md")
    progress(f"wrote {out / (NAME + '.md')}")
    if failures:
        progress(f"{len(failures)} run(s) failed: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
