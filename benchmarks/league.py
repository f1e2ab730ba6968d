"""The local-BO league table: our local policies and ``auto`` against what users pick instead (TuRBO, CMA-ES,
Optuna's TPE and GP sampler, Ax's default generation strategy, random), instance by instance, from runs that
exist, at the last evaluation and at the early checkpoints (``harness/checkpoints.py``).

It runs nothing itself (except in ``--smoke``): it reads the per-evaluation CSVs and run summaries that
``synthetic.py`` and ``mujoco_rl.py`` wrote (committed results and the league's own runs in
``results/league_runs/``), and writes ``results/league.md`` and ``league.json`` whole. Every planned row
that no run covers is listed with the exact command that would make it, and why it is not there yet.

    python benchmarks/league.py                    # the table from what is committed
    python benchmarks/league.py --smoke            # a tiny synthetic run of three methods, tabled, in a temp dir
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.checkpoints import CHECKPOINTS
from harness.checkpoints import markdown as checkpoints_markdown
from harness.runs import output_dir, run_meta

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
METHODS = ["auto", "la-minucb", "minucb", "gibo", "mpd", "turbo", "cmaes", "gpsampler", "tpe", "ax", "random"]
SYNTHETIC = ["gp25", "gp50", "gp100", "ackley25", "rosenbrock25"]
MUJOCO = {"swimmer": 500, "hopper": 1000}
SOURCES = [
    ("synthetic", RESULTS),
    ("mujoco", RESULTS),
    ("league_gp25", RESULTS / "league_runs"),
    ("league_cmaes", RESULTS / "league_runs"),
    ("league_turbo", RESULTS / "league_runs"),
    ("league_botorch25", RESULTS / "league_runs"),
    ("league_turbo25", RESULTS / "league_runs"),
    ("mujoco", RESULTS / "league_runs" / "mujoco"),  # the new methods on the MuJoCo tasks
    # gp100 at the current code (bounded warm refits, batched exploration): these replace the older rows
    ("d100_default", RESULTS / "d100"),
    ("d100_gibo", RESULTS / "d100"),
    # policy "auto", the default (issue 29): minucb with the warp at d = 25 to 100, as at the current code
    ("auto_batches_of_d", RESULTS / "league_runs"),
    ("auto_53c1d5a", RESULTS / "league_runs"),  # the same rule, rerun at 53c1d5a (2026-11-28): these replace the above
    ("auto_f5dfb4b", RESULTS / "league_runs"),  # rerun at f5dfb4b (after the GP fit change): these replace
    ("league_ax", RESULTS / "league_runs"),  # Ax's default generation strategy (issue 29)
    ("mpd_d25", RESULTS / "league_runs"),  # MPD on Ackley-25 and Rosenbrock-25 (2026-11-28)
    ("mujoco", RESULTS / "league_runs" / "mujoco_auto"),  # auto on Swimmer (3 seeds, d6aa2b2)
    # Swimmer, every method but gpsampler and mpd at 5 seeds (the count) at one commit: these replace the above
    ("mujoco", RESULTS / "league_runs" / "mujoco5"),
    ("mujoco", RESULTS / "league_runs" / "mujoco5_mpd"),  # MPD on Swimmer and Hopper, the same episode seeds
    # issue 29's "every row at the current code" (2026-12-02, after the GP fit change of 06f7eb6): the local policies
    # and auto on every synthetic objective and both MuJoCo tasks; these replace the rows above
    ("local_f5dfb4b", RESULTS / "league_runs"),
    ("mujoco", RESULTS / "league_runs" / "mujoco_1202"),
    # and the peers at the same code (2026-12-02): turbo (ours), CMA-ES, TPE and random on the d = 25 objectives,
    # CMA-ES, TPE and random on gp50 and gp100, and turbo there
    ("peers_1202_d25", RESULTS / "league_runs"),
    ("peers_1202_d50_100", RESULTS / "league_runs"),
    ("turbo_1202_d50_100", RESULTS / "league_runs"),
    # and on the MuJoCo tasks (2026-12-02, evening): CMA-ES, TPE and random on Swimmer and Hopper, turbo on Swimmer
    ("mujoco", RESULTS / "league_runs" / "mujoco_peers_1202"),
    ("mujoco", RESULTS / "league_runs" / "mujoco_turbo_1202"),
    ("gpsampler_1202_gp25", RESULTS / "league_runs"),  # Optuna's GPSampler on gp25 at the current code (Optuna 5.1.0)
    ("mpd_1203", RESULTS / "league_runs"),  # MPD on the five synthetic objectives at the current code (2026-12-03)
    ("ax_1203", RESULTS / "league_runs"),  # Ax's default on gp25 at the current code (ax-platform 1.3.1)
    ("mujoco", RESULTS / "league_runs" / "mujoco_mpd_1203"),  # MPD on Swimmer and Hopper at the current code
    # the peers not run before (issue 29 item 5, 2026-12-03): GPSampler (Optuna 5.1.0) and Ax's default (100
    # evaluations) on Ackley-25 and Rosenbrock-25, GPSampler on gp50 and gp100, Ax on gp50 (100 evaluations)
    ("gpsampler_1203_d25", RESULTS / "league_runs"),
    ("ax_1203_d25", RESULTS / "league_runs"),
    ("gpsampler_1203_d50_100", RESULTS / "league_runs"),
    ("ax_1203_gp50", RESULTS / "league_runs"),
    ("ax_1203_d25_200", RESULTS / "league_runs"),  # Ax to 200 on Ackley-25, Rosenbrock-25: replaces its 100
    # auto with mpd for its first 4 d results (2026-12-03, 5affcd2): these replace auto's rows above (the variant
    # with mpd's step after 10 exploration points, auto_mpd10_1203 at 8c9c469, was measured and not kept)
    ("auto_mpd_1203", RESULTS / "league_runs"),  # gp100's runs added by --resume at 564406e
    ("mujoco", RESULTS / "league_runs" / "mujoco_auto_1203"),  # and on Swimmer, Hopper resumed at 993a9b3
    # Ackley-25 and Rosenbrock-25, every method but Ax and GPSampler at the current code on one host (an Intel Xeon,
    # where Ax's and GPSampler's rows there ran): these replace the rows above, so each verdict there is one host's
    ("d25_intel_1203", RESULTS / "league_runs"),
    # and gp25 the same way, every method (Ax's default to 100 evaluations, as before) on that host at that code
    ("gp25_intel_1203", RESULTS / "league_runs"),
    ("gp25_ax_intel_1203", RESULTS / "league_runs"),
    # gp50's and gp100's local rows, mpd's and auto's on that host at that code (their peers ran on it already)
    ("gp50_intel_1203", RESULTS / "league_runs"),
    ("gp100_intel_1203", RESULTS / "league_runs"),
    # the MuJoCo peers that had no row (2026-12-04, AMD EPYC, the kind of host of the MuJoCo peers' and auto's rows):
    # Ax's default to 200 episodes on Swimmer and Hopper, GPSampler to 500 on both (Hopper's first 200-episode runs,
    # in mujoco_gpsampler_1204 beside Swimmer's, are replaced by mujoco_gpsampler500_1204's)
    ("mujoco", RESULTS / "league_runs" / "mujoco_ax_1204"),
    ("mujoco", RESULTS / "league_runs" / "mujoco_gpsampler_1204"),
    ("mujoco", RESULTS / "league_runs" / "mujoco_gpsampler500_1204"),
    ("ax_1204_gp100", RESULTS / "league_runs"),  # and Ax's default on gp100 (100 evaluations), AMD (its peers: Intel)
    # and TuRBO on Hopper to 200 episodes (AMD EPYC): its refits to convergence cost 2-4 CPU s an episode from about
    # 150 episodes on at d = 33, so 500 and 1,000 were not run (league_findings.md, "TuRBO on Hopper")
    ("mujoco", RESULTS / "league_runs" / "mujoco_turbo_hopper_1204"),
    # (auto with mpd's searches capped at 30 L-BFGS-B iterations, auto_mpd30_1203 and mujoco_auto30_1203 at 95e146d,
    # a tenth of the CPU, was measured and not kept: behind on gp25 and gp50 early, league_findings.md)
]
# The d = 100 question: gp100 runs that change one setting at a time (synthetic.py --policy-config)
D100 = RESULTS / "d100"
D100_EARLY = 280  # where GIBO pulled ahead in the first runs
TURBO_CONFIG = '{"batch_size": 5}'


MUJOCO_WHY = {  # why a peer's MuJoCo row stops short of the task's budget, should it be missing again
    "turbo": "TuRBO's refits to convergence cost 2-4 CPU s an episode from about 150 episodes on at d = 33 (its GP on "
    "the region's data): Hopper was run to 200 episodes (league_findings.md, 'TuRBO on Hopper')",
    "gpsampler": "Optuna's GPSampler (5.1.0) costs 105-290 CPU s a run of 500 at d = 25 to 100, growing with n: "
    "Swimmer and Hopper were run to 500 episodes, not 1,000",
}


def command_for(instance: str, method: str) -> tuple[str, str]:
    """The command that would make the missing row, and why it was not run this session."""
    if instance in MUJOCO:
        return (
            f"benchmarks/mujoco_rl.py --tasks {instance} --methods {method} --seeds 5 --jobs 2 "
            "--out benchmarks/results/league_runs/mujoco5 --resume",
            MUJOCO_WHY.get(method, "MuJoCo runs take 5-30 min each on 2 cores; not run this session"),
        )
    config = f" --policy-config 'turbo={TURBO_CONFIG}'" if method == "turbo" else ""
    command = (
        f"benchmarks/synthetic.py --objectives {instance} --methods {method} --seeds 5 --evals 500 --jobs 2 "
        f"--threads 1{config} --out benchmarks/results/league_runs --name league_{instance} --resume"
    )
    why = {
        "ax": "Ax's default took 159-324 CPU s a run of 100 evaluations at d = 25 and 50 here (2-5 s a modelled step, "
        "growing with n and d; its rows elsewhere stop at 100 or 200): d = 100 was left for another session",
        "gpsampler": "Optuna's GPSampler (5.1.0) took 105-290 CPU s a run of 500 at d = 25 to 100 on this machine",
        "turbo": "TuRBO took 350-420 s a run at d = 25 on a core of the lent H100 box; its Ackley runs were on the "
        "discarded symmetric domain and no lent time was left to redo them",
    }
    slow = "CPU: 5 seeds x 500 evaluations at d >= 25 take 10 min to hours a method on 2 cores"
    return command, why.get(method, slow)


def load(name: str, folder: Path) -> tuple[list[dict[str, str]], dict[str, Any]]:
    csv_path, json_path = folder / f"{name}.csv", folder / f"{name}.json"
    if not csv_path.exists():
        return [], {}
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    return rows, json.loads(json_path.read_text()) if json_path.exists() else {}


def mean_se(values: list[float]) -> str:
    if not values:
        return "n/a"
    if len(values) == 1:
        return f"{values[0]:.4g}"
    return f"{statistics.fmean(values):.4g} ± {statistics.stdev(values) / math.sqrt(len(values)):.2g}"


def league(sources: list[tuple[str, Path]]) -> dict[str, Any]:
    """Per instance and method: the final best and incumbent per seed, costs, fallbacks and where it came from."""
    table: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    table["_sources"] = {}
    for name, folder in sources:
        rows, summary = load(name, folder)
        meta = summary.get("meta", {})
        runs = {(r["objective"], r["method"], int(r["seed"])): r for r in summary.get("runs", [])}
        last: dict[tuple[str, str, int], dict[str, str]] = {}
        curves: dict[tuple[str, str, int], dict[int, float]] = defaultdict(dict)
        fallbacks: dict[tuple[str, str], int] = defaultdict(int)
        for r in rows:
            key = (r["objective"], r["method"], int(r["seed"]))
            if key not in last or int(r["eval"]) > int(last[key]["eval"]):
                last[key] = r
            if int(r["eval"]) in CHECKPOINTS:
                curves[key][int(r["eval"])] = float(r["best_so_far"])
            fallbacks[(r["objective"], r["method"])] += r["source"] == "fallback"
        label = str((folder / name).relative_to(RESULTS)) if folder.is_relative_to(RESULTS) else str(folder / name)
        replaced: set[tuple[str, str]] = set()
        for (objective, method, seed), r in sorted(last.items()):
            if (objective, method) not in replaced:  # a later source's runs replace an earlier one's, whole
                replaced.add((objective, method))
                table[objective].pop(method, None)
            cell = table[objective].setdefault(
                method,
                {
                    "seeds": {},
                    "wall_s": [],
                    "cpu_s": [],
                    "source": label,
                    "maximise": name == "mujoco",
                    "objective": objective,
                },
            )
            table["_sources"][label] = {
                "when": str(meta.get("date", "?")),
                "commit": meta.get("commit", "not recorded (runs from before the benchmark recorded it)"),
                "machine": str(meta.get("machine", "?")),
                "command": str(meta.get("command", "?")),
            }
            run = runs.get((objective, method, seed), {})
            incumbent = float(r["incumbent"]) if r.get("incumbent_from") == "policy" and r["incumbent"] else None
            curve = {**curves[(objective, method, seed)], int(r["eval"]): float(r["best_so_far"])}
            cell["seeds"][seed] = {
                "best": float(r["best_so_far"]),
                "incumbent": incumbent,
                "evals": int(r["eval"]),
                "instance": int(r["instance"]),
                "curve": curve,  # the best so far at each checkpoint reached and at the last evaluation
            }
            cell["wall_s"].append(float(run.get("wall_s") or r["elapsed_s"]))
            if run.get("cpu_s") is not None:
                cell["cpu_s"].append(float(run["cpu_s"]))
            cell["fallbacks"] = fallbacks[(objective, method)]
    return table


def d100_variants(folder: Path) -> list[dict[str, Any]]:
    """Per run file and method in ``folder``: the best value at ``D100_EARLY`` evaluations and at the last one."""
    out = []
    for csv_path in sorted(folder.glob("*.csv")):
        rows, summary = load(csv_path.stem, folder)
        meta = summary.get("meta", {})
        curves: dict[tuple[str, int], dict[int, float]] = defaultdict(dict)
        for r in rows:
            curves[(r["method"], int(r["seed"]))][int(r["eval"])] = float(r["best_so_far"])
        for method in sorted({m for m, _ in curves}):
            runs = [c for (m, _), c in sorted(curves.items()) if m == method]
            early = [c[min(D100_EARLY, max(c))] for c in runs]
            out.append({
                "file": csv_path.stem, "method": method, "config": meta.get("policy_configs", {}).get(method, {}),
                "seeds": len(runs), "evals": min(max(c) for c in runs), "early": mean_se(early),
                "last": mean_se([c[max(c)] for c in runs]), "commit": meta.get("commit", "?"),
            })  # fmt: skip
    return out


def d100_markdown(variants: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## The d = 100 question: one setting at a time",
        "",
        f"gp100, noise-free best value (lower is better), mean ± standard error over seeds, after {D100_EARLY}",
        "evaluations and after the last one; `evals` = the shortest run (runs cut by a lent machine's time limit",
        "end early). Each row's run file is in `results/d100/`; findings in `league_findings.md`.",
        "",
        f"| run file | method | config | seeds | evals | best @ {D100_EARLY} | best @ last | commit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in variants:
        config = json.dumps(v["config"]) if v["config"] else "defaults"
        lines.append(
            f"| {v['file']} | {v['method']} | `{config}` | {v['seeds']} | {v['evals']} | {v['early']} | {v['last']} "
            f"| {v['commit']} |"
        )
    return [*lines, ""]


def wins(cells: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Per method, the seeds (instances) on which it ended best among the methods that ran that seed."""
    out = dict.fromkeys(cells, 0)
    seeds = set().union(*(c["seeds"] for c in cells.values())) if cells else set()
    for seed in seeds:
        ran = {m: c["seeds"][seed]["best"] for m, c in cells.items() if seed in c["seeds"]}
        maximise = next(iter(cells.values()))["maximise"]
        top = max(ran.values()) if maximise else min(ran.values())
        for m, v in ran.items():
            out[m] += v == top
    return out


def markdown(table: dict[str, Any], instances: list[str], meta: dict[str, Any]) -> str:
    lines = [
        "# League table: local BO against what users pick instead",
        "",
        "Written whole by `benchmarks/league.py` from the runs' own files (it runs nothing). `best` = the best",
        "value found by the last evaluation (noise-free for the synthetic functions, lower is better; episode",
        "return for MuJoCo, higher is better); `iterate` = the value at the policy's current iterate where it has",
        "one. Mean ± standard error over seeds; `wins` = seeds on which the method ended best among those run;",
        "wall and CPU seconds per run; `fallbacks` = points that were not the policy's. Each row names the file",
        "it comes from, when and at which commit that run was made (runs older than the policy contract v2 ran",
        "the same algorithms with other random streams).",
        "",
        f"Table built {meta['when']} at commit {meta['commit']}.",
        "",
    ]
    missing = []
    for instance in instances:
        cells = table.get(instance, {})
        lines += [f"## {instance}", ""]
        if cells:
            w = wins(cells)
            lines += [
                "| method | seeds | evals | best | iterate | wins | wall s / run | CPU s / run | fallbacks | from |",
                "|---|---|---|---|---|---|---|---|---|---|",
            ]
            maximise = next(iter(cells.values()))["maximise"]
            order = sorted(cells, key=lambda m: statistics.fmean(s["best"] for s in cells[m]["seeds"].values()))
            for m in reversed(order) if maximise else order:
                c = cells[m]
                seeds = c["seeds"].values()
                iterate = [s["incumbent"] for s in seeds if s["incumbent"] is not None]
                cpu = mean_se(c["cpu_s"]) if c["cpu_s"] else "not recorded"
                best, evals = mean_se([s["best"] for s in seeds]), min(s["evals"] for s in seeds)
                lines.append(
                    f"| {m} | {len(c['seeds'])} | {evals} | {best} "
                    f"| {mean_se(iterate) if iterate else '-'} | {w[m]} | {mean_se(c['wall_s'])} | {cpu} "
                    f"| {c['fallbacks']} | {c['source']} |"
                )
        else:
            lines.append("No run yet.")
        lines.append("")
        missing += [(instance, m) for m in METHODS if m not in cells]
    budgets = {instance: MUJOCO.get(instance, 500) for instance in instances}
    lines += checkpoints_markdown(table, instances, budgets)
    if meta.get("d100"):
        lines += d100_markdown(meta["d100"])
    lines += ["## Where the rows come from", ""]
    for label, source in table.get("_sources", {}).items():
        lines += [
            f"- `{label}` (its `.md`, `.csv` and `.json`): made {source['when']}; commit "
            f"{source['commit']}; machine: {source['machine']}; command: `{source['command']}`",
        ]
    lines += ["", "## Rows not run yet", ""]
    if not missing:
        lines.append("None: every method has a row on every instance (some peers' rows stop early: `evals` above).")
    else:
        lines += ["| instance | method | command | why not yet |", "|---|---|---|---|"]
    for instance, method in missing:
        command, why = command_for(instance, method)
        lines.append(f"| {instance} | {method} | `{command}` | {why} |")
    lines.append("")
    return "\n".join(lines)


def smoke_runs(folder: Path) -> list[tuple[str, Path]]:
    subprocess.run(
        [sys.executable, str(HERE / "synthetic.py"), "--objectives", "branin", "--methods", "turbo,cmaes,random",
         "--seeds", "1", "--evals", "6", "--no-optimum", "--out", str(folder), "--name", "league_smoke"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return [("league_smoke", folder)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a tiny run of three methods, tabled in a temp dir")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = output_dir(parser, args, RESULTS, "league")
    meta = run_meta(__file__, args.smoke)
    sources = smoke_runs(out) if args.smoke else SOURCES
    instances = ["branin"] if args.smoke else [*SYNTHETIC, *MUJOCO]
    table = league(sources)
    if not args.smoke:
        meta["d100"] = d100_variants(D100)
    (out / "league.json").write_text(json.dumps({"meta": meta, "table": table}, indent=1) + "\n")
    text = markdown(table, instances, meta)
    (out / "league.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
