"""Results: the per-evaluation CSV, the run summaries (JSON), the markdown table and the PNG plots.

The CSV has one row per evaluation (columns ``runners.COLUMNS``) and is appended run by run, so
an interrupted benchmark keeps what finished (``synthetic.py --resume`` goes on from there).
``write_report`` turns it into ``<name>.md`` (final best noise-free value, mean +- std over seeds,
per objective and method, the incumbent's value and the wall time per run) and one
``<name>_<objective>.png`` per objective (best so far, mean +- one std over seeds).
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.objectives import best_known, get_objective, objective_spec
from harness.runners import COLUMNS, RunResult

INT_COLUMNS = {"instance", "seed", "eval"}
FLOAT_COLUMNS = {"y", "f", "best_so_far", "incumbent", "elapsed_s"}


# -- files ------------------------------------------------------------------------------------------


def start_csv(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        csv.DictWriter(fh, fieldnames=COLUMNS).writeheader()


def append_csv(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        for row in rows:
            writer.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in row.items()})


def read_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        for k in INT_COLUMNS:
            row[k] = int(row[k])
        for k in FLOAT_COLUMNS:
            row[k] = float(row[k])
    return rows


def run_summary(result: RunResult) -> dict[str, Any]:
    spec = result.spec
    return {
        "objective": spec.objective,
        "method": spec.method,
        "runner": spec.runner,
        "seed": spec.seed,
        "evals": len(result.rows),
        "policy_config": spec.policy_config,
        "wall_s": result.wall_s,
        "cpu_s": result.cpu_s,
        "errors": result.errors[:20],
        "n_errors": len(result.errors),
    }


def load_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {"meta": {}, "runs": [], "failed": []}


def save_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def run_key(row: dict[str, Any]) -> tuple[str, str, str, int]:
    """What names one run in the CSV and the JSON: (objective, method, runner, seed)."""
    return row["objective"], row["method"], row.get("runner", "direct"), int(row["seed"])


def merge_results(out: Path, other: Path, name: str) -> dict[str, Any]:
    """Add ``other``'s runs of ``<name>`` (CSV rows, run summaries, failures) to ``out``'s; returns the new meta.

    A run in both folders is replaced by ``other``'s (a longer rerun replaces a cut one); the meta
    records ``other``'s date, command and machine under ``merged``. The caller rewrites the report.
    """
    theirs = load_json(other / f"{name}.json")
    their_rows = read_csv(other / f"{name}.csv")
    keys = {run_key(r) for r in their_rows}
    mine_path = out / f"{name}.csv"
    kept = [r for r in read_csv(mine_path) if run_key(r) not in keys]
    start_csv(mine_path)
    append_csv(mine_path, kept)
    append_csv(mine_path, their_rows)
    state = load_json(out / f"{name}.json")
    state["runs"] = [r for r in state.get("runs", []) if run_key(r) not in keys] + theirs.get("runs", [])
    # failure keys are "objective/method/seed N" (mujoco_rl) or "objective/method/runner/seed N" (synthetic)
    replaced = {f"{o}/{m}/seed {s}" for o, m, _, s in keys} | {f"{o}/{m}/{r}/seed {s}" for o, m, r, s in keys}
    state["failed"] = [f for f in state.get("failed", []) if f.get("key") not in replaced] + theirs.get("failed", [])
    meta = state.setdefault("meta", {})
    meta["merged"] = [
        *meta.get("merged", []),
        {k: theirs.get("meta", {}).get(k) for k in ("date", "command", "machine")},
    ]
    save_json(out / f"{name}.json", state)
    return meta


# -- aggregation ------------------------------------------------------------------------------------


@dataclass
class Group:
    """All seeds of one (objective, method, runner)."""

    objective: str
    method: str
    runner: str
    seeds: list[int]
    instances: list[int]
    best: np.ndarray  # seeds x evals, best noise-free value so far
    incumbent: np.ndarray  # seeds x evals
    incumbent_from: str  # "policy" where any row had a policy incumbent, else "best"
    wall_s: list[float]
    fallbacks: int

    @property
    def label(self) -> str:
        return self.method if self.runner in ("direct", "optuna") else f"{self.method} ({self.runner})"


def groups(rows: Sequence[dict[str, Any]]) -> list[Group]:
    runs: dict[tuple[str, str, str], dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        runs[(row["objective"], row["method"], row["runner"])][row["seed"]].append(row)
    out = []
    for (objective, method, runner), by_seed in runs.items():
        seeds = sorted(by_seed)
        per = [sorted(by_seed[s], key=lambda r: r["eval"]) for s in seeds]
        n = min(len(p) for p in per)  # runs of different lengths (resumed with other --evals): cut
        out.append(
            Group(
                objective=objective,
                method=method,
                runner=runner,
                seeds=seeds,
                instances=[p[0]["instance"] for p in per],
                best=np.array([[r["best_so_far"] for r in p[:n]] for p in per]),
                incumbent=np.array([[r["incumbent"] for r in p[:n]] for p in per]),
                incumbent_from="policy" if any(r["incumbent_from"] == "policy" for p in per for r in p) else "best",
                wall_s=[p[-1]["elapsed_s"] for p in per],
                fallbacks=sum(r["source"] == "fallback" for p in per for r in p),
            )
        )
    return out


def mean_std(values: Sequence[float] | np.ndarray, digits: int = 4) -> str:
    values = [float(v) for v in values]
    if not values:
        return "-"
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.{digits}g} ± {std:.2g}"


def optimum_text(objective: str, instances: Sequence[int], estimate: bool) -> tuple[str, dict[int, float] | None]:
    """How the markdown shows f*, and f* per instance (None where unknown or not estimated)."""
    spec = objective_spec(objective)
    if not spec.per_instance:
        value, _ = best_known(objective, 0)
        return f"{value:.6g} (known)", dict.fromkeys(instances, value)
    if not estimate:
        return "not estimated", None
    values = {i: best_known(objective, i)[0] for i in instances}
    return f"{mean_std(list(values.values()))} (L-BFGS-B estimate, per instance)", values


# -- markdown and plots -------------------------------------------------------------------------------


def write_report(out: Path, name: str, meta: dict[str, Any], estimate_optimum: bool = True) -> list[Path]:
    """Write ``<name>.md`` and the PNGs from ``<name>.csv`` / ``<name>.json`` in ``out``; returns the PNGs."""
    rows = read_csv(out / f"{name}.csv")
    runs = load_json(out / f"{name}.json")
    all_groups = groups(rows)
    objectives = list(dict.fromkeys(g.objective for g in all_groups))
    errors = {(r["objective"], r["method"], r["runner"], r["seed"]): r for r in runs.get("runs", [])}
    pngs = []
    md = [
        "# Synthetic benchmark: local BO policies against Optuna's peers",
        "",
        f"Written by `benchmarks/synthetic.py`{' (smoke run)' if meta.get('smoke') else ''}. "
        "Every objective is minimised; values are noise-free unless said otherwise.",
        "",
        f"- date: {meta.get('date', '?')}",
        f"- command: `{meta.get('command', '?')}`",
        f"- machine: {meta.get('machine', '?')}",
        f"- versions: {meta.get('versions', '?')}",
        f"- runs in parallel: {meta.get('jobs', 1)} process(es), torch threads per run: {meta.get('threads', '?')}",
        f"- policy configs: {json.dumps(meta.get('policy_configs') or {})}",
        *[f"- merged runs ({m.get('date')}, {m.get('machine')}): `{m.get('command')}`" for m in meta.get("merged", [])],
        "",
        "## Objectives",
        "",
        "| objective | d | domain | noise std | f* | instances |",
        "|---|---|---|---|---|---|",
    ]
    optima: dict[str, dict[int, float] | None] = {}
    for objective in objectives:
        spec = objective_spec(objective)
        instances = sorted({i for g in all_groups if g.objective == objective for i in g.instances})
        text, optima[objective] = optimum_text(objective, instances, estimate_optimum)
        obj = get_objective(objective, instances[0])
        lo, hi = obj.bounds[0].min().item(), obj.bounds[1].max().item()
        md.append(
            f"| {objective} | {spec.dim} | [{lo:g}, {hi:g}]^{spec.dim} | {spec.noise_std:g} | {text} | "
            f"{'one per seed: ' + ', '.join(map(str, instances)) if spec.per_instance else 'fixed'} |"
        )
    md += [
        "",
        "`best` = the lowest noise-free value among the evaluated points after the last evaluation; "
        "`incumbent` = the noise-free value at the policy's incumbent x_t after the last evaluation "
        "(from its stored state; `incumbent from = best` means the policy exposes none and "
        "the best evaluated point stands in); `gap` = best - f* of the run's instance. "
        "Mean ± std over seeds; wall time = one run, setup to last tell.",
        "",
    ]
    for objective in objectives:
        mine = [g for g in all_groups if g.objective == objective]
        md += [
            f"## {objective}",
            "",
            "| method | runner | seeds | evals | best, mean ± std | gap to f*, mean ± std | incumbent, mean ± std | "
            "incumbent from | wall s / run, mean ± std | s / eval | fallbacks |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        fstar = optima.get(objective)
        for g in sorted(mine, key=lambda g: float(np.mean(g.best[:, -1]))):
            final = g.best[:, -1]
            gap = mean_std([b - fstar[i] for b, i in zip(final, g.instances, strict=True)]) if fstar else "-"
            evals = g.best.shape[1]
            md.append(
                f"| {g.method} | {g.runner} | {len(g.seeds)} | {evals} | {mean_std(final)} | {gap} | "
                f"{mean_std(g.incumbent[:, -1])} | {g.incumbent_from} | {mean_std(g.wall_s, 3)} | "
                f"{statistics.fmean(g.wall_s) / evals:.3g} | {g.fallbacks} |"
            )
        png = out / f"{name}_{objective}.png"
        plot(png, objective, mine, fstar)
        pngs.append(png)
        md += ["", f"![best so far on {objective}]({png.name})", ""]
    problems = [r for r in errors.values() if r.get("n_errors")]
    failed = runs.get("failed", [])
    if problems or failed:
        md += ["## Problems", ""]
        md += [f"- run failed: {f['key']}: {f['error']}" for f in failed]
        md += [
            f"- {r['objective']} / {r['method']} / {r['runner']} / seed {r['seed']}: {r['n_errors']} policy "
            f"failure(s) answered with fallback points; first: {r['errors'][0] if r['errors'] else '?'}"
            for r in problems
        ]
        md.append("")
    findings = out / f"{name}_findings.md"  # written by hand, kept across rewrites of the report
    if findings.exists():
        md += [findings.read_text().rstrip(), ""]
    (out / f"{name}.md").write_text("\n".join(md))
    return pngs


def plot(path: Path, objective: str, mine: Sequence[Group], fstar: dict[int, float] | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spec = objective_spec(objective)
    exact = fstar if not spec.per_instance else None  # an exact optimum: plot best - f* on a log axis
    regret = exact is not None
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, g in enumerate(sorted(mine, key=lambda g: g.label)):
        color = colors[k % len(colors)]
        curves = g.best
        inc = g.incumbent
        if exact is not None:
            shift = np.array([exact[i] for i in g.instances])[:, None]
            curves, inc = np.maximum(curves - shift, 1e-12), np.maximum(inc - shift, 1e-12)
        x = np.arange(1, curves.shape[1] + 1)
        mean = curves.mean(axis=0)
        std = curves.std(axis=0, ddof=1) if len(curves) > 1 else np.zeros_like(mean)  # as in the table
        ax.plot(x, mean, color=color, label=f"{g.label} (n={len(g.seeds)})")
        low = np.maximum(mean - std, 1e-12) if regret else mean - std
        ax.fill_between(x, low, mean + std, color=color, alpha=0.2, linewidth=0)
        if g.incumbent_from == "policy":
            ax.plot(x, inc.mean(axis=0), color=color, linestyle="--", label=f"{g.label}: f(x_t)")
    if regret:
        ax.set_yscale("log")
    ax.set_xlabel("evaluation")
    ax.set_ylabel("best so far - f* (noise-free)" if regret else "best so far (noise-free)")
    ax.set_title(f"{objective} (d={spec.dim}, noise std {spec.noise_std:g}): mean ± 1 std over seeds")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def print_tables(md_path: Path) -> None:
    """Print a results file's section headings and table rows: the run's summary on the terminal."""
    lines = md_path.read_text().splitlines()
    print("\n".join(line for line in lines if line.startswith(("|", "## "))))
