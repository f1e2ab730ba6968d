"""Probe: one policy setting at a time on one problem, seeds paired, written whole into ``results/probes/``.

The findings files report probes (a setting tried on a problem, against the default, seed by seed) before a change
is kept or dropped. This script makes those numbers a results file instead of a note: each ``--setting`` (a JSON
object merged into the method's config; ``{}`` is the method as its benchmark runs it) runs on the same seeds,
and the table compares every setting with the first one, seed by seed.

Suites (``--suite``), each through its benchmark's own harness, so that a probe's run is that benchmark's run:

- ``constrained``: ``harness.constrained.run_method`` (``constrained.py``'s problems and method names, modes
  included: ``minucb-safe``); the value is the best feasible value's regret (lower is better; a run with no
  feasible point by a checkpoint counts as missing there).
- ``multiobjective``: ``harness.multiobjective.run_method``; the value is the log10 hypervolume difference
  (lower is better).
- ``league``: ``harness.runners.run`` on ``synthetic.py``'s objectives (gp25, ackley25, ...), the value the
  regret of the best value found (lower is better), and on the RL tasks (swimmer, hopper, cartpole) with
  ``mujoco_rl.py``'s settings for the method under the probe's, the value the best episode return (higher is
  better), as ``league.py`` reads them.

    .venv/bin/python benchmarks/probe.py --suite constrained --problem ackley10 --method minucb --seeds 20 \\
        --evals 100 --setting '{}' --setting '{"beta": 1.0}' --name ackley10_minucb_beta --jobs 2
    .venv/bin/python benchmarks/probe.py --smoke        # two settings, two seeds, 12 evaluations, into a temp dir

Runs are ``--jobs`` at a time in processes of ``--threads`` torch threads (and one BLAS thread: a run's path
depends on it; ``constrained_findings.md``, "What a run's numbers depend on"), niced by the caller.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import numerics  # noqa: E402

numerics.pin()  # before numpy and torch load: a seed takes the same path on any AVX2 host (harness/numerics.py)

from harness.runs import output_dir, run_meta  # noqa: E402
from harness.sweep import Key, fmt, mean_se, run_all, say, versions  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "probes"
SUITES = ("constrained", "multiobjective", "league")
RL_TASKS = ("cartpole", "swimmer", "hopper")
SMOKE = {"suite": "constrained", "problem": "c_gramacy", "method": "minucb", "seeds": 2, "evals": 12}
SMOKE_SETTINGS = ["{}", '{"beta": 1.0}']


def checkpoints_for(evals: int) -> list[int]:
    return sorted({k for k in (50, 100, 200, 500, 1000) if k <= evals} | {evals})


def higher_is_better(suite: str, problem: str) -> bool:
    return suite == "league" and problem.split("-h")[0] in RL_TASKS


def value_at(suite: str, problem: str, method: str, seed: int, evals: int, config: dict[str, Any]) -> dict[str, Any]:
    """One run: its value at each checkpoint (None where it has none yet), what else it counts, and the CPU seconds
    of the run alone (not the imports, nor a GP objective's optimum estimate)."""
    ks = checkpoints_for(evals)
    if suite == "constrained":
        from harness.constrained import get_problem, run_method

        cpu = time.process_time()
        summary = run_method(problem, method, seed, evals, config).summary(ks)
        cpu = time.process_time() - cpu
        optimum = get_problem(problem).optimum or 0.0
        values = {str(k): None if v is None else v - optimum for k, v in summary["best"].items()}
        extra = {"infeasible": summary["infeasible"], "fallbacks": summary["fallbacks"]}
    elif suite == "multiobjective":
        from harness.multiobjective import run_method as run_mo

        cpu = time.process_time()
        run, found = run_mo(problem, method, seed, evals, config)
        cpu = time.process_time() - cpu
        summary = run.summary(ks, found)
        values, extra = summary["log_hv_diff"], {"fallbacks": summary["fallbacks"]}
    else:
        values, extra, cpu = league_values(problem, method, seed, evals, config, ks)
    return {"values": values, **extra, "cpu_s": round(cpu, 2)}


def league_values(
    objective: str, method: str, seed: int, evals: int, config: dict[str, Any], ks: list[int]
) -> tuple[dict[str, float | None], dict[str, Any], float]:
    from harness.objectives import best_known, instance_for
    from harness.runners import RunSpec, run, runner_for

    base = objective.split("-h")[0]
    defaults = None
    if base in RL_TASKS:  # mujoco_rl.py's settings of the method on the task (GIBO's), under the probe's
        import mujoco_rl

        defaults = mujoco_rl.settings(base, method)
    merged = {**(defaults or {}), **config} or None
    runner = runner_for(method, "direct")
    if runner != "direct" and config:
        raise ValueError(f"{method} is not a localbo policy: it takes no policy config")
    result = run(RunSpec(objective, method, runner, seed, evals, merged))
    rows = result.rows
    offset = 0.0 if base in RL_TASKS else best_known(objective, instance_for(objective, seed))[0]
    values = {str(k): float(rows[k - 1]["best_so_far"]) - offset if k <= len(rows) else None for k in ks}
    return values, {"fallbacks": sum(r["source"] == "fallback" for r in rows)}, result.cpu_s or 0.0


def execute(suite: str, settings: list[dict[str, Any]], key: Key) -> tuple[dict[str, Any] | None, str | None]:
    """``key`` = (problem, "method#setting index", seed, evals); a failure comes back as text."""
    problem, tagged, seed, evals = key
    method, _, index = tagged.partition("#")
    try:
        return value_at(suite, problem, method, seed, evals, settings[int(index)]), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


def paired(runs: dict[int, dict[int, dict[str, Any]]], index: int, k: str) -> tuple[list[float], list[float]]:
    """Setting ``index``'s values at checkpoint ``k`` and its differences from setting 0's, over the seeds both
    have a value for."""
    mine = [r["values"].get(k) for r in runs[index].values()]
    diffs = [
        r["values"][k] - runs[0][seed]["values"][k]
        for seed, r in runs[index].items()
        if r["values"].get(k) is not None and runs[0].get(seed, {}).get("values", {}).get(k) is not None
    ]
    return [v for v in mine if v is not None], diffs


def markdown(state: dict[str, Any]) -> str:
    meta, settings = state["meta"], state["settings"]
    higher = higher_is_better(meta["suite"], meta["problem"])
    what = {
        "constrained": "regret of the best feasible value (lower is better)",
        "multiobjective": "log10 hypervolume difference (lower is better)",
        "league": "best episode return (higher is better)" if higher else "regret of the best value (lower is better)",
    }[meta["suite"]]
    runs: dict[int, dict[int, dict[str, Any]]] = {i: {} for i in range(len(settings))}
    for r in state["runs"]:
        runs[r["setting"]][r["seed"]] = r
    lines = [
        f"# Probe: {meta['method']} on {meta['problem']} ({meta['suite']}), one setting at a time",
        "",
        f"Written whole by `benchmarks/probe.py` at commit {meta['commit']}, {meta['when']}, on {meta['machine']} "
        f"({meta['cpus']} CPUs, load average {meta['load_before']} before the run); command: `{meta['command']}`; "
        f"{meta['versions']}.",
        "",
        f"Value: {what}, mean ± standard error over seeds {meta['seeds'][0]}..{meta['seeds'][-1]}; `paired` = the "
        "setting's value minus the first setting's, seed by seed (mean ± standard error); `better` / `worse` = "
        "seeds on which the setting's value beat / lost to the first's; `missing` = runs without a value there "
        "(no feasible point yet, or a failed run); fallbacks summed over the setting's runs.",
        "",
    ]
    if state["failed"]:
        lines += [f"Failed runs: {len(state['failed'])} ({state['failed'][0]['error']})", ""]
    for k in [str(k) for k in meta["checkpoints"]]:
        lines += [
            f"## After {k} evaluations",
            "",
            "| setting | runs | missing | value | paired | better / worse | fallbacks | CPU s / run |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for i, setting in enumerate(settings):
            values, diffs = paired(runs, i, k)
            sign = -1 if higher else 1
            better = sum(sign * d < 0 for d in diffs)
            worse = sum(sign * d > 0 for d in diffs)
            value = fmt(*mean_se(values)) if values else "-"
            pair = "-" if i == 0 or not diffs else fmt(*mean_se(diffs))
            cpu = fmt(*mean_se([r["cpu_s"] for r in runs[i].values()])) if runs[i] else "-"
            fallbacks = sum(r.get("fallbacks", 0) for r in runs[i].values())
            label = f"`{json.dumps(setting)}`" if setting else "`{}` (as the benchmark runs it)"
            lines.append(
                f"| {label} | {len(runs[i])} | {len(runs[i]) - len(values)} | {value} | {pair} | "
                f"{'-' if i == 0 else f'{better} / {worse}'} | {fallbacks} | {cpu} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", choices=SUITES, help="whose problems and harness (default constrained in --smoke)")
    parser.add_argument("--problem", help="a problem (objective, task) of the suite")
    parser.add_argument("--method", help="a localbo method of the suite (modes included: minucb-safe)")
    parser.add_argument(
        "--setting", action="append", default=[], metavar="JSON", help="a config object merged into the method's "
        "(repeatable; the first is the baseline)",
    )  # fmt: skip
    parser.add_argument("--seeds", type=int, help="seeds --seed0 .. --seed0 + N - 1")
    parser.add_argument("--seed0", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--evals", type=int, help="evaluations per run")
    parser.add_argument("--name", help="the results files' name (default suite_problem_method)")
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side in processes (default 1)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    parser.add_argument("--smoke", action="store_true", help="a tiny run into a temp dir; never writes the results")
    parser.add_argument("--out", type=Path, default=None, help=f"where to write (default {RESULTS})")
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            if getattr(args, key) is None:
                setattr(args, key, value)
        args.setting = args.setting or SMOKE_SETTINGS
    missing = [f"--{k}" for k in ("suite", "problem", "method", "seeds", "evals") if getattr(args, k) is None]
    if missing or not args.setting:
        parser.error(f"needs {', '.join(missing + ([] if args.setting else ['--setting']))}")
    if args.seeds < 1 or args.evals < 1 or args.jobs < 1 or args.threads < 1:
        parser.error("--seeds, --evals, --jobs and --threads must be >= 1")
    settings = []
    for text in args.setting:
        try:
            setting = json.loads(text)
        except json.JSONDecodeError as exc:
            parser.error(f"--setting {text!r}: not JSON ({exc})")
        if not isinstance(setting, dict):
            parser.error(f"--setting {text!r}: expected a JSON object")
        settings.append(setting)
    out = output_dir(parser, args, RESULTS, "probe")
    name = args.name or f"{args.suite}_{args.problem}_{args.method}"
    seeds = list(range(args.seed0, args.seed0 + args.seeds))
    keys: list[Key] = [(args.problem, f"{args.method}#{i}", s, args.evals) for s in seeds for i in range(len(settings))]
    state: dict[str, Any] = {
        "meta": {
            **run_meta(__file__, args.smoke, numerics=True),
            "command": "benchmarks/probe.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "versions": versions(),
            "suite": args.suite,
            "problem": args.problem,
            "method": args.method,
            "seeds": seeds,
            "evals": args.evals,
            "checkpoints": checkpoints_for(args.evals),
        },
        "settings": settings,
        "runs": [],
        "failed": [],
    }

    def on_done(key: Key, summary: dict[str, Any] | None, error: str | None) -> None:
        index = int(key[1].partition("#")[2])
        if summary is None:
            state["failed"].append({"setting": index, "seed": key[2], "error": error})
            say(f"{key}: failed: {error}")
            return
        state["runs"].append({"setting": index, "seed": key[2], **summary})
        say(f"setting {index} seed {key[2]}: {summary['values']} ({summary['cpu_s']} CPU s)")

    run_all(keys, args.jobs, args.threads, None, on_done, partial(execute, args.suite, settings))
    state["runs"].sort(key=lambda r: (r["setting"], r["seed"]))
    (out / f"{name}.json").write_text(json.dumps(state, indent=1) + "\n")
    (out / f"{name}.md").write_text(markdown(state))
    say(f"wrote {out / name}.md and .json")
    return 1 if state["failed"] and not state["runs"] else 0


if __name__ == "__main__":
    sys.exit(main())
