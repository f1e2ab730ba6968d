"""RL benchmark: linear policies on CartPole-v1, Swimmer-v5 and Hopper-v5 (GIBO/MPD/MinUCB's RL tasks).

(Not named mujoco.py: the script's folder is on sys.path, and that name would hide the mujoco package.)

Tasks (``benchmarks/harness/rl.py``): CartPole 4 parameters, Swimmer 16, Hopper 33 (no bias, no state
normalisation, as MinUCB's Hopper), parameters in [-1, 1]^d, maximise one episode's return; every
evaluation is one episode whose reset seed is fixed by (task, run seed, evaluation number), so every
method sees the same seeds. Methods: ``la-minucb``, ``minucb``, ``gibo`` with GIBO's RL settings per
task (``SETTINGS``; algorithms.md 1.5) and ``random``, run through the policy API emulating the engine
(``harness.runners``, ``direct``). The curve reported is GIBO's: the return of the policy's current
iterate x_t (mean over 5 fixed test episodes, computed whenever x_t moves; for ``random``, the
evaluated point with the best return), beside the best single-episode return so far.

Needs the ``bench`` extra (gymnasium, mujoco). From the repository root::

    .venv/bin/python benchmarks/mujoco_rl.py --smoke                 # ~30 s, short episodes, into a temp dir
    .venv/bin/python benchmarks/mujoco_rl.py --jobs 16               # the full grid: cartpole (100 episodes),
        # swimmer (500), hopper (1000) x la-minucb, minucb, gibo, random x 3 seeds
    .venv/bin/python benchmarks/mujoco_rl.py --tasks cartpole --methods gibo,random --seeds 5 --jobs 2
    .venv/bin/python benchmarks/mujoco_rl.py --resume                # go on: runs in the CSV are kept
    .venv/bin/python benchmarks/mujoco_rl.py --report-only           # redraw the tables and plots

It writes ``benchmarks/results/mujoco.csv`` (one row per episode, ``harness.runners.COLUMNS``: ``f`` and
``best_so_far`` are single-episode returns, ``incumbent`` the iterate's test return), ``mujoco.json``
(settings, runs, failures), ``mujoco.md`` and ``mujoco_<task>.png``, or the same into ``--out``.
``--smoke`` (episodes cut to 30 steps, 12 evaluations, one seed) never writes into ``benchmarks/results``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import numerics  # noqa: E402

numerics.pin()  # before numpy and torch load: a seed takes the same path on any AVX2 host (harness/numerics.py)

import numpy as np  # noqa: E402
from harness.objectives import objective_spec  # noqa: E402
from harness.report import (  # noqa: E402
    Group,
    append_csv,
    groups,
    load_json,
    merge_results,
    print_tables,
    read_csv,
    run_summary,
    save_json,
    start_csv,
)
from harness.rl import PARAM_BOUND, TASKS, TEST_EPISODES  # noqa: E402
from harness.runners import RunResult, RunSpec, known_methods, runner_for  # noqa: E402
from harness.runs import commit_of  # noqa: E402
from synthetic import machine, progress, quiet, run_all, versions  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results"
NAME = "mujoco"
METHODS = ("la-minucb", "minucb", "gibo", "random")
FULL = {"tasks": "cartpole,swimmer,hopper", "methods": ",".join(METHODS), "seeds": 3}
SMOKE = {"tasks": "cartpole-h30,swimmer-h30,hopper-h30", "methods": "la-minucb,gibo,minucb,random", "seeds": 1}
SMOKE_EVALS = 12
EPISODES = {"cartpole": 100, "swimmer": 500, "hopper": 1000}
# GIBO's RL reference (algorithms.md 4.2: its repo's result files, 10 runs, the iterate's return):
# episodes -> "mean ± std"; Hopper's is with state normalisation and a bias (36 parameters) and without.
REFERENCE = {
    "cartpole": {21: "327 ± 149", 51: "468 ± 69", 100: "500 ± 0"},
    "swimmer": {501: "350 ± 10"},
    "hopper": {1001: "1744 ± 950 (normalised states, 36 params); 191 ± 52 without normalisation"},
}

# GIBO's RL configs (algorithms.md 1.5), with its parameter-space delta halved: our box [-1, 1]^d is
# the unit cube scaled by 2. epsilon None = no early stop (GIBO's 10-run configs). GIBO's learning-rate
# schedules become one lr (CartPole {0: 0.8, 3: 0.3} over ~11 iterations: 0.5; Hopper's 0.6 holds for
# all ~30 iterations). Hyperparameter priors are the service's (gp.py), not GIBO's U(0.01, 0.3).
SCALE = 2 * PARAM_BOUND
LOCAL = {
    "cartpole": {"samples_per_iteration": 8, "n_max": 20, "delta": 0.1 / SCALE, "epsilon": None},
    "swimmer": {"samples_per_iteration": 16, "n_max": 32, "delta": 0.1 / SCALE, "epsilon": None},
    "hopper": {"samples_per_iteration": 32, "n_max": 128, "delta": 0.2 / SCALE, "epsilon": None},
}
LR = {"cartpole": 0.5, "swimmer": 0.5, "hopper": 0.6}


def settings(task: str, method: str) -> dict[str, Any] | None:
    """The policy config of ``method`` on ``task`` (a base task name: cartpole, swimmer, hopper)."""
    local = LOCAL[task]
    if method == "gibo":
        return {**local, "lr": LR[task]}
    if method == "minucb":
        return {**local, "beta": 3.0}
    if method == "la-minucb":  # b = GIBO's samples per iteration; Z and the inner points near x_{t+1}
        return {
            "samples_per_iteration": local["samples_per_iteration"],
            "n_max": local["n_max"],
            "delta": local["delta"],
            "beta": 3.0,
            "region_delta": 2 * local["delta"],
        }
    return None


def base_task(objective: str) -> str:
    return objective.split("-h")[0]


def spec_for(
    objective: str, method: str, seed: int, evals: int, device: str = "cpu", deadline: float | None = None
) -> RunSpec:
    config = settings(base_task(objective), method)
    runner = runner_for(method, "direct")  # Optuna's samplers run in process beside the policies
    return RunSpec(objective, method, runner, seed, evals, config, device=device, deadline=deadline)


# -- report -----------------------------------------------------------------------------------------


def at(values: np.ndarray, k: int) -> np.ndarray | None:
    """The column after ``k`` evaluations (1-based); None when the runs stopped before."""
    return values[:, k - 1] if k <= values.shape[1] else None


def fmt(values: np.ndarray | None) -> str:
    if values is None:
        return "-"
    std = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.0f} ± {std:.0f}"


def checkpoints(task: str, evals: int) -> list[int]:
    marks = {"cartpole": [21, 51, 100], "swimmer": [100, 250, 501], "hopper": [250, 501, 1001]}[task]
    return sorted({min(k, evals) for k in marks})


def write_report(out: Path, meta: dict[str, Any]) -> None:
    rows = read_csv(out / f"{NAME}.csv")
    state = load_json(out / f"{NAME}.json")
    all_groups = groups(rows)
    md = [
        "# RL benchmark: linear policies on CartPole, Swimmer and Hopper",
        "",
        f"Written by `benchmarks/mujoco_rl.py`{' (smoke run)' if meta.get('smoke') else ''}. Every value is an "
        "episode return (maximised, the environment's own reward, no scaling).",
        "",
        f"- date: {meta.get('date', '?')}",
        f"- command: `{meta.get('command', '?')}`",
        *[f"- earlier command (resumed): `{c}`" for c in meta.get("previous_commands", [])],
        f"- machine: {meta.get('machine', '?')}",
        *[
            f"- merged runs from {m.get('machine', '?')}: `{m.get('command', '?')}` ({m.get('date', '?')})"
            for m in meta.get("merged", [])
        ],
        f"- versions: {meta.get('versions', '?')}",
        f"- runs in parallel: {meta.get('jobs', 1)} process(es), torch threads per run: {meta.get('threads', '?')}",
        "",
        "Policy a = W s (no bias, no state normalisation), W in [-1, 1]^(actions x observations); each "
        "evaluation is one episode with a reset seed fixed by (task, run seed, episode number), the same for "
        f"every method. `iterate` = the mean return over {TEST_EPISODES} fixed test episodes of the policy's "
        "current x_t (GIBO's curve; for `random`, of the evaluated point with the best return), `best episode` "
        "= the best single-episode return so far (optimistic: a lucky episode counts). Mean ± std over seeds.",
        "",
        "## Settings",
        "",
        "| task | environment | parameters | episodes (all seeds) | method | machine, device | policy config |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in all_groups:
        task = base_task(g.objective)
        run = next((r for r in state.get("runs", []) if (r["objective"], r["method"]) == (g.objective, g.method)), {})
        md.append(
            f"| {g.objective} | {TASKS[task].env_id} | {objective_spec(g.objective).dim} | {g.best.shape[1]} | "
            f"{g.method} | {run.get('machine', '?').split(';')[0]}, {run.get('device', 'cpu')} | "
            f"`{run.get('policy_config') or {}}` |"
        )
    md.append("")
    for objective in dict.fromkeys(g.objective for g in all_groups):
        task = base_task(objective)
        mine = sorted(
            (g for g in all_groups if g.objective == objective), key=lambda g: -float(g.incumbent[:, -1].mean())
        )
        planned = max(
            (r.get("planned_evals", r["evals"]) for r in state.get("runs", []) if r["objective"] == objective),
            default=max(g.best.shape[1] for g in mine),
        )
        marks = checkpoints(task, planned)
        md += [
            f"## {objective} (d = {objective_spec(objective).dim})",
            "",
            "| method | seeds | "
            + " | ".join(f"iterate @{k}" for k in marks)
            + " | episodes (all seeds) | iterate @end | "
            "best episode @end | wall s / run | fallbacks |",
            "|---|---|" + "---|" * len(marks) + "---|---|---|---|---|",
        ]
        for g in mine:
            md.append(
                f"| {g.method} | {len(g.seeds)} | "
                + " | ".join(fmt(at(g.incumbent, k)) for k in marks)
                + f" | {g.best.shape[1]} | {fmt(g.incumbent[:, -1])} | {fmt(g.best[:, -1])} | "
                f"{np.mean(g.wall_s):.0f} | {g.fallbacks} |"
            )
        if task in REFERENCE and not meta.get("smoke"):
            ref = "; ".join(f"@{k}: {v}" for k, v in REFERENCE[task].items())
            md += ["", f"GIBO's reference (its paper's code, gym v1 environments, 10 runs): {ref}."]
        png = out / f"{NAME}_{objective}.png"
        plot(png, objective, mine)
        md += ["", f"![iterate return on {objective}]({png.name})", ""]
    failed = state.get("failed", [])
    problems = [r for r in state.get("runs", []) if r.get("n_errors")]
    short = [r for r in state.get("runs", []) if r["evals"] < r.get("planned_evals", r["evals"])]
    if failed or problems or short:
        md += ["## Problems", ""]
        md += [f"- run failed: {f['key']}: {f['error']}" for f in failed]
        md += [
            f"- {r['objective']} / {r['method']} / seed {r['seed']}: stopped at the deadline after {r['evals']} of "
            f"{r['planned_evals']} episodes"
            for r in short
        ]
        md += [
            f"- {r['objective']} / {r['method']} / seed {r['seed']}: {r['n_errors']} policy failure(s) answered "
            f"with fallback points; first: {r['errors'][0] if r['errors'] else '?'}"
            for r in problems
        ]
        md.append("")
    notes = out / f"{NAME}_notes.md"  # the hand-written findings, kept across --report-only
    if notes.exists():
        md += [notes.read_text().rstrip(), ""]
    (out / f"{NAME}.md").write_text("\n".join(md))


def plot(path: Path, objective: str, mine: list[Group]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"la-minucb": "#D55E00", "minucb": "#0072B2", "gibo": "#009E73", "random": "#999999"}
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for g in sorted(mine, key=lambda g: g.method):
        color = colors.get(g.method, "#CC79A7")
        x = np.arange(1, g.incumbent.shape[1] + 1)
        mean = g.incumbent.mean(axis=0)
        std = g.incumbent.std(axis=0, ddof=1) if len(g.seeds) > 1 else np.zeros_like(mean)
        ax.plot(x, mean, color=color, label=f"{g.method}: iterate (n={len(g.seeds)})")
        ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.15, linewidth=0)
        ax.plot(x, g.best.mean(axis=0), color=color, linestyle=":", linewidth=1, label=f"{g.method}: best episode")
    ax.set_xlabel("episodes")
    ax.set_ylabel("return")
    ax.set_title(f"{objective} (d = {objective_spec(objective).dim}): mean ± 1 std over seeds")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# -- command line ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", help=f"comma-separated, <task> or <task>-h<steps> (default {FULL['tasks']})")
    parser.add_argument("--methods", help=f"comma-separated (default {FULL['methods']})")
    parser.add_argument("--seeds", type=int, help="seeds per method, --seed0 .. (default 3)")
    parser.add_argument("--seed0", type=int, default=0)
    parser.add_argument("--evals", type=int, help=f"episodes per run (default per task: {EPISODES})")
    parser.add_argument("--out", type=Path, help=f"where to write (default {DEFAULT_OUT})")
    parser.add_argument("--jobs", type=int, default=1, help="runs in parallel processes")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    parser.add_argument("--cuda-methods", default="", help="comma-separated methods whose policy computes on cuda")
    parser.add_argument(
        "--deadline-s", type=float, help="stop every run this many seconds after the start, keeping its episodes"
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny run into a temp dir; never the results")
    parser.add_argument("--resume", action="store_true", help="keep the runs already in the CSV, run the rest")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the markdown and plots")
    parser.add_argument(
        "--merge",
        type=Path,
        metavar="DIR",
        help="add the runs of another results folder (another machine's) and report",
    )
    args = parser.parse_args(argv)
    for key, value in (SMOKE if args.smoke else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.smoke:
        if args.out is not None and args.out.resolve() == DEFAULT_OUT.resolve():
            parser.error("--smoke does not write into benchmarks/results; pass another --out")
        out = args.out or Path(tempfile.mkdtemp(prefix="mujoco-smoke-"))
        args.evals = args.evals or SMOKE_EVALS
    else:
        out = args.out or DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / f"{NAME}.csv", out / f"{NAME}.json"
    state = load_json(json_path) if (args.resume or args.report_only) else {}
    state.setdefault("runs", [])
    state.setdefault("failed", [])
    if args.merge:
        write_report(out, merge_results(out, args.merge, NAME))
        progress(f"merged the runs of {args.merge} into {out}")
        return 0
    if args.report_only:
        write_report(out, state.get("meta", {}))
        progress(f"wrote {out / (NAME + '.md')}")
        return 0

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for task in tasks:
        if base_task(task) not in TASKS:
            parser.error(f"unknown task {task!r}; expected one of {sorted(TASKS)} (or <task>-h<steps>)")
        try:
            objective_spec(task)
        except KeyError as exc:
            parser.error(str(exc.args[0]))
    if bad := [m for m in methods if m not in known_methods()]:  # localbo's policies and Optuna's samplers
        parser.error(f"unknown method(s) {bad}; known: {sorted(known_methods())}")
    if args.seeds < 1 or (args.evals is not None and args.evals < 1) or args.jobs < 1:
        parser.error("--seeds, --evals and --jobs must be >= 1")
    quiet()
    import torch

    torch.set_num_threads(args.threads)
    cuda = {m.strip() for m in args.cuda_methods.split(",") if m.strip()}
    deadline = time.time() + args.deadline_s if args.deadline_s else None
    previous = state.get("meta", {})
    state["meta"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "command": "benchmarks/mujoco_rl.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "previous_commands": [*previous.get("previous_commands", []), previous["command"]]
        if args.resume and "command" in previous
        else [],
        "machine": "; ".join(filter(None, [os.environ.get("LOCALBO_MACHINE"), machine()])),
        "commit": commit_of(Path(__file__).parent),
        "versions": versions() + gym_versions(),
        "smoke": args.smoke,
        "jobs": args.jobs,
        "threads": args.threads,
        "cuda_methods": sorted(cuda),
        "deadline_s": args.deadline_s,
    }
    specs = [
        spec_for(t, m, s, args.evals or EPISODES[base_task(t)], "cuda" if m in cuda else "cpu", deadline)
        for t in tasks
        for m in methods
        for s in range(args.seed0, args.seed0 + args.seeds)
    ]
    # The costliest runs first, so that parallel processes finish together.
    cost = {"la-minucb": 100, "minucb": 10, "gibo": 10, "random": 1}
    specs.sort(key=lambda s: -cost.get(s.method, 10) * s.evals * objective_spec(s.objective).dim)
    if args.resume and csv_path.exists():
        done = {(r["objective"], r["method"], r["seed"]) for r in read_csv(csv_path)}
        specs = [s for s in specs if (s.objective, s.method, s.seed) not in done]
        progress(f"resume: {len(done)} run(s) already in {csv_path}, {len(specs)} to go")
    else:
        start_csv(csv_path)
        state["runs"], state["failed"] = [], []
    save_json(json_path, state)
    failures: list[str] = []
    where = state["meta"]["machine"]

    def on_done(spec: RunSpec, result: RunResult | None, error: str | None) -> None:
        key = f"{spec.objective}/{spec.method}/seed {spec.seed}"
        if result is None:
            failures.append(key)
            state["failed"].append({"key": key, "error": (error or "?").splitlines()[0]})
            progress(f"\nFAILED {key}:\n{error}")
        elif not result.rows:
            state["failed"].append({"key": key, "error": "no episode before the deadline"})
            progress(f"{key}: no episode before the deadline")
        else:
            append_csv(csv_path, result.rows)
            state["runs"].append(
                {**run_summary(result), "planned_evals": spec.evals, "device": spec.device, "machine": where}
            )
            last = result.rows[-1]
            progress(
                f"{key}: iterate {last['incumbent']:.1f}, best episode {last['best_so_far']:.1f}, {result.wall_s:.0f} s"
            )
        save_json(json_path, state)

    t0 = time.monotonic()
    run_all(specs, args.jobs, args.threads, on_done)
    progress(f"runs done in {time.monotonic() - t0:.0f} s")
    save_json(json_path, state)
    if csv_path.exists() and len(read_csv(csv_path)):
        write_report(out, state["meta"])
        print_tables(out / f"{NAME}.md")
        progress(f"wrote {out / (NAME + '.md')}")
    if failures:
        progress(f"{len(failures)} run(s) failed: {', '.join(failures)}")
    return 1 if failures else 0


def gym_versions() -> str:
    from importlib import metadata

    out = []
    for package in ("gymnasium", "mujoco"):
        try:
            out.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            out.append(f"{package} -")
    return ", " + ", ".join(out)


if __name__ == "__main__":
    sys.exit(main())
