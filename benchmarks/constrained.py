"""Constrained benchmark (issue 30): localbo's constrained policies against Optuna's and Ax's, in the same run.

Problems and runners: ``benchmarks/harness/constrained.py`` (BoTorch's constrained test problems, SCBO's
Ackley-10 with two constraints, an 8-fraction mixture with a parameter equality and a purity constraint).
Methods: localbo's ``turbo`` (SCBO), ``ei`` (constrained log-EI), ``ucb`` (weighted by the probability of
feasibility) and ``random``, driven in process through the policy API as ``league.py``'s runs are
(``harness.runners.run_direct``'s engine emulation, with ``SuggestRequest.C`` and ``SuggestRequest.polytope``
added); Optuna's ``tpe`` and ``gpsampler`` with ``constraints_func`` and ``optuna-random``; Ax (``ax``, its
default generation strategy with outcome constraints). Every (problem, method, seed) is one run of sequential
evaluations (ask 1, tell 1), noise-free; ``--jobs`` runs run side by side in processes of ``--threads`` torch
threads each.

Per run: the best feasible value (every outcome constraint <= 0) at 50, 100 and 200 evaluations (those within
the budget), as regret to the known optimum; infeasible evaluations; fallback points (points the policy did not
make: it failed); points off the parameter equality; wall and CPU seconds. The table: mean ± standard error
over seeds; a method with a seed that has no feasible point yet at a checkpoint shows how many seeds have one.

    .venv/bin/python benchmarks/constrained.py --smoke        # ~30 s: 2 problems, 4 methods, 1 seed, 12 evals
    nice -n 10 .venv/bin/python benchmarks/constrained.py --jobs 2 --threads 1     # the full run
    .venv/bin/python benchmarks/constrained.py --evals-for ei=100 --seeds-for ax=1 --evals-for ax=50
    .venv/bin/python benchmarks/constrained.py --resume       # keep the runs in constrained.json, run the rest
    .venv/bin/python benchmarks/constrained.py --resume --rerun turbo@9275bf0 ...  # turbo changed at 9275bf0
    .venv/bin/python benchmarks/constrained.py --report-only  # rewrite constrained.md from constrained.json

It writes ``benchmarks/results/constrained.json`` (every run's summary and the run's settings) and
``constrained.md`` whole, after every finished run (a run stopped early leaves a table of what finished, and says
so); ``--smoke`` writes into a temp dir (or ``--out``) and refuses ``benchmarks/results``. Every run records the
commit it ran at. ``--rerun METHOD@COMMIT,..`` (with ``--resume``, after a change to those methods' code at COMMIT):
their runs in the JSON made before COMMIT (at a commit that does not contain it; without ``@COMMIT``: at any other
commit than this one) are dropped and run again; every other method's runs are kept as they are and none of theirs
starts (the table says which commits its rows come from); with ``--only``, only the runs it names are dropped and run
again (a change that touches one problem's runs). Give the whole plan (the same ``--seeds-for`` and
``--evals-for``) so that the table is whole. Findings, by hand: ``results/constrained_findings.md``.
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import numerics  # noqa: E402

numerics.pin()  # before numpy and torch load: a seed takes the same path on any AVX2 host (harness/numerics.py)

from harness import sweep  # noqa: E402
from harness.constrained import (  # noqa: E402
    AX_METHODS,
    LOCALBO_METHODS,
    OPTUNA_METHODS,
    PROBLEMS,
    get_problem,
    run_method,
    split_method,
)
from harness.runs import output_dir, run_meta  # noqa: E402
from harness.sweep import Key, by_se, fmt, mean_se, parse_per_method, pick_only, runs_by_commit, say, versions  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
NAME = "constrained"
CHECKPOINTS = (50, 100, 200)
OURS = (  # the goals compare their best
    "turbo",
    "ei",
    "ucb",
    "ei-greedy",
    "turbo-noisefree",
    "ei-greedy-noisefree",
    "ei-greedy-exact",
    "minucb",
    "la-minucb",
    "gibo",
)
PEERS = ("tpe", "gpsampler", "optuna-random", "ax")
CHEAP = ("random", "optuna-random", "tpe")  # seconds a run: they run first
HEADLINE = ("turbo", "gpsampler")  # the local constrained policy and the model-based peer: before ei and ucb
FULL = {"problems": ",".join(PROBLEMS),
        "methods": "turbo,ei,ucb,minucb,la-minucb,gibo,random,tpe,gpsampler,optuna-random,ax,turbo-avoid,ei-avoid,"
                   "turbo-safe,minucb-safe,la-minucb-safe,gibo-safe", "seeds": 5,
        "evals": 200}  # fmt: skip
SMOKE = {"problems": "c_gramacy,mixture8,fail_hartmann6",
         "methods": "turbo,random,tpe,optuna-random,turbo-avoid,turbo-safe", "seeds": 1, "evals": 12}  # fmt: skip


# -- running ------------------------------------------------------------------------------------------------------


def execute(key: tuple[str, str, int, int], checkpoints: list[int]) -> tuple[dict[str, Any] | None, str | None]:
    """One run's summary; a failure comes back as text, so that the other runs go on."""
    problem, method, seed, evals = key
    try:
        return run_method(problem, method, seed, evals).summary(checkpoints), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}\n{traceback.format_exc(limit=6)}"


def execute_at_checkpoints(key: Key) -> tuple[dict[str, Any] | None, str | None]:
    """``execute`` at the checkpoints of the key's budget (what ``run_all`` pickles to a worker)."""
    return execute(key, checkpoints_for(key[3]))


def applies(method: str, problem: str) -> bool:
    """``-avoid`` runs only where evaluations can fail, ``-safe`` only where there are outcome constraints and a
    known-feasible point to start from (ackley10 has none: such a run could only fail)."""
    modes = split_method(method)[1]
    if "avoid" in modes:
        return get_problem(problem).fails is not None
    if "safe" in modes:
        return get_problem(problem).m > 0 and has_safe_seed(problem)
    return True


@functools.cache
def has_safe_seed(problem: str) -> bool:
    return get_problem(problem).safe_seed() is not None


def contains(run: dict[str, Any], commit: str) -> bool:
    """Whether ``run`` was made at ``commit`` or at a later one that contains it (git's ancestry)."""
    made = run.get("commit")
    if made is None or made == "unknown":
        return False
    if made == commit:
        return True
    cwd = Path(__file__).resolve().parent
    done = subprocess.run(["git", "-C", str(cwd), "merge-base", "--is-ancestor", commit, made], capture_output=True)
    return done.returncode == 0


def checkpoints_for(evals: int) -> list[int]:
    return sorted({c for c in CHECKPOINTS if c <= evals} | {evals})


# -- the table ------------------------------------------------------------------------------------------------------


def cell(runs: list[dict[str, Any]], k: int, optimum: float | None) -> dict[str, Any] | None:
    """Regret (or best value where f* is unknown) at ``k`` over the runs that reached ``k``."""
    reached = [r for r in runs if r["evals"] >= k and str(k) in r["best"]]
    if not reached:
        return None
    values = [r["best"][str(k)] for r in reached]
    found = [v - (optimum or 0.0) for v in values if v is not None]
    out = {"seeds": len(reached), "feasible_seeds": len(found)}
    if len(found) == len(reached):
        out["mean"], out["se"] = mean_se(found)
    return out


def trace_at(runs: list[dict[str, Any]], k: int, optimum: float | None) -> dict[str, Any] | None:
    """``cell`` at ``k`` from the runs' traces (the best feasible value every 10 evaluations)."""
    reached = [r for r in runs if str(k) in r.get("trace", {})]
    if not reached:
        return None
    return cell([{**r, "best": {str(k): r["trace"][str(k)]}, "evals": k} for r in reached], k, optimum)


def show(c: dict[str, Any] | None) -> str:
    if c is None:
        return "-"
    if "mean" not in c:
        return f"no feasible point in {c['seeds'] - c['feasible_seeds']}/{c['seeds']} seed(s)"
    return fmt(c["mean"], c["se"])


def aggregate(runs: list[dict[str, Any]], problems: list[str], methods: list[str], seeds: int = 1) -> dict[str, Any]:
    """The table: per problem its rows (one per method) and its goals, where a row of ours needs ``seeds`` seeds
    (the plan's) to decide one."""
    table: dict[str, Any] = {}
    for name in problems:
        problem = get_problem(name)
        rows = {}
        for method in methods:
            mine = sorted((r for r in runs if r["problem"] == name and r["method"] == method), key=lambda r: r["seed"])
            if not mine:
                continue
            rows[method] = {
                "seeds": len(mine),
                "evals": min(r["evals"] for r in mine),
                "regret": {str(k): cell(mine, k, problem.optimum) for k in CHECKPOINTS},
                "last": cell(mine, min(r["evals"] for r in mine), problem.optimum),
                "trace_cells": {k: c for k in ("50", "100", "150") if (c := trace_at(mine, int(k), problem.optimum))},
                "infeasible": mean_se([r["infeasible"] / r["evals"] for r in mine]),
                "failed": mean_se([r.get("failed", 0) / r["evals"] for r in mine]),
                "fallbacks": sum(r["fallbacks"] for r in mine),
                "equality_violations": sum(r["equality_violations"] for r in mine),
                "errors": sum(r["n_errors"] for r in mine),
                "wall_s": mean_se([r["wall_s"] for r in mine]),
                "cpu_s": mean_se([r["cpu_s"] for r in mine]),
                "cpu_total_s": sum(r["cpu_s"] for r in mine),
            }
        table[name] = {
            "dim": problem.dim, "m": problem.m, "optimum": problem.optimum, "optimum_from": problem.optimum_from,
            "rows": rows, "goals": goals(problem.dim, rows, seeds),
        }  # fmt: skip
    return table


def goals(dim: int, rows: dict[str, Any], seeds: int = 1) -> dict[str, Any]:
    """At 100 and 200 evaluations: the best of ``OURS`` run on at least ``seeds`` seeds (the plan's: a row of ours
    on fewer, picked as the best of many configurations, would be a lucky draw) against the best peer (on whatever
    seeds it has: leaving one out could only favour us). A method with a feasible point in every seed ranks above
    one without (fewer seeds without one first), then by mean regret. Both feasible in every seed: d >= 7: ours <=
    0.5 x the peer's regret; d < 7: ours <= the peer's + one standard error. Ours feasible in every seed and the
    peer not: met; the other way round: not met; neither: not decided."""
    out: dict[str, Any] = {}
    for k in ("100", "200"):

        def best(methods: tuple[str, ...], k: str = k, bound: bool = False) -> tuple[str, dict[str, Any]] | None:
            """With ``bound``, a method cut below ``k`` evaluations counts with its value at its last one: the best
            so far only falls, so that is an upper bound on its regret at ``k`` (a loss against it is certain)."""
            have = [(m, rows[m]["regret"][k]) for m in methods if m in rows and rows[m]["regret"][k]]
            if bound:
                have += [(f"{m} (at {rows[m]['evals']}: a bound)", rows[m]["last"]) for m in methods
                         if m in rows and not rows[m]["regret"][k] and rows[m]["last"]]  # fmt: skip
            rank = [(c["seeds"] - c["feasible_seeds"], c.get("mean", 0.0), m, c) for m, c in have]
            return (min(rank)[2], min(rank)[3]) if rank else None

        full = tuple(m for m in OURS if m in rows and rows[m]["seeds"] >= seeds)
        ours, peer = best(full, bound=True), best(PEERS, bound=True)  # a bound of ours: conservative, against us
        if ours is None or peer is None:
            out[k] = {"ours": ours and ours[0], "peer": peer and peer[0], "met": None,
                      "why": f"no run of {'ours' if ours is None else 'a peer'} reached {k} evaluations"}  # fmt: skip
            continue
        (om, oc), (pm, pc) = ours, peer
        entry = {"ours": om, "ours_cell": oc, "peer": pm, "peer_cell": pc}
        if "mean" in oc and "mean" in pc:
            if dim >= 7:
                target, rule = (0.5 * pc["mean"] if pc["mean"] > 0 else pc["mean"]), "<= 0.5 x peer"
            else:
                target, rule = pc["mean"] + (pc["se"] or 0.0), "<= peer + 1 SE"
            distance = abs(target - oc["mean"]) / oc["se"] if oc["se"] else None  # ours' from the target, in SE
            entry.update(target=target, rule=rule, met=oc["mean"] <= target, by_se=distance)
        elif "mean" in oc:
            entry.update(rule="ours feasible in every seed, the peer not", met=True)
        elif "mean" in pc:
            entry.update(rule="the peer feasible in every seed, ours not", met=False)
        else:
            entry.update(rule="neither feasible in every seed", met=None)
        out[k] = entry
    return out


def careful_goals(table: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 30's goals for failures and safe mode, from the table's rows: a ``-avoid`` method's failed share at
    most half its plain policy's; a ``-safe`` run with at most 5 % of its evaluations infeasible while its last
    best feasible value is within 10 % of its plain policy's (|f_safe - f| <= 0.1 |f|, f the plain run's mean).
    One verdict per (problem, careful method): ``measured`` says what was compared, ``met`` True / False / None."""
    out = []
    for name, t in table.items():
        rows = t["rows"]
        for method, r in rows.items():
            base, modes = split_method(method)
            mode = "".join(modes)
            if mode not in ("avoid", "safe") or base not in rows:
                continue
            plain = rows[base]
            verdict = {"problem": name, "method": method, "against": base}
            if mode == "avoid":
                ours, theirs = r["failed"][0], plain["failed"][0]
                out.append(
                    verdict
                    | {
                        "measured": f"failed {ours:.3f} vs {theirs:.3f} of evaluations",
                        "target": "<= 0.5 x",
                        "met": ours <= 0.5 * theirs if theirs > 0 else None,
                    }
                )
                continue
            share = r["infeasible"][0]
            ours_f = r["last"]  # both at the safe runs' budget (the plain policy's best so far at that evaluation)
            plain_f = plain["regret"].get(str(r["evals"])) or trace_cell(plain, r["evals"]) or plain["last"]
            verdict["target"] = "<= 0.05 and within 10 %"
            missing = [m for m, f in ((method, ours_f), (base, plain_f)) if f is None or "mean" not in f]
            if missing:  # a seed of that method without a feasible value: no mean to compare
                out.append(verdict | {"measured": f"infeasible {share:.3f}; {' and '.join(missing)}: no feasible "
                                      "value in some seed", "met": None})  # fmt: skip
                continue
            optimum = t["optimum"] or 0.0
            f_safe, f_plain = ours_f["mean"] + optimum, plain_f["mean"] + optimum  # regrets back to values
            close = abs(f_safe - f_plain) <= 0.1 * abs(f_plain) or f_safe <= f_plain
            out.append(verdict | {"measured": f"infeasible {share:.3f}; best {f_safe:.4g} vs {f_plain:.4g}",
                                  "met": share <= 0.05 and close})  # fmt: skip
    return out


def goal_counts(table: dict[str, Any], seeds: int = 1) -> dict[str, Any]:
    """How many value goals are met of those decided, on how many problems with a careful (``-avoid`` / ``-safe``)
    method one of them run on ``seeds`` seeds (the plan's) meets its goal, and every careful verdict: what the README
    and the issue note count."""
    value = [g["met"] for t in table.values() for g in t["goals"].values()]
    verdicts = careful_goals(table)
    careful: dict[str, bool] = {}
    for v in verdicts:
        counted = bool(v["met"]) and table[v["problem"]]["rows"][v["method"]]["seeds"] >= seeds
        careful[v["problem"]] = careful.get(v["problem"], False) or counted
    return {"value_met": sum(m is True for m in value), "value_goals": len(value),
            "careful_met": sum(careful.values()), "careful_problems": len(careful), "careful": verdicts}  # fmt: skip


def careful_lines(counts: dict[str, Any]) -> list[str]:
    lines = ["", "## Goals for failures and safe mode (issue 30)", "",
             f"Met on {counts['careful_met']} of {counts['careful_problems']} problems (a problem counts when one of "
             "its careful methods run on the plan's seeds meets its goal).", "",
             "| problem | method | against | measured | target | met |", "|---|---|---|---|---|---|"]  # fmt: skip
    for v in counts["careful"]:
        lines.append(f"| {v['problem']} | {v['method']} | {v['against']} | {v['measured']} | {v['target']} "
                     f"| {_met(v['met'])} |")  # fmt: skip
    return lines


def trace_cell(row: dict[str, Any], k: int) -> dict[str, Any] | None:
    """A row's cell at ``k`` evaluations from its runs' traces (best feasible every 10), for a budget that is not a
    checkpoint; None when the row has no trace there."""
    return row.get("trace_cells", {}).get(str(k))


def _met(met: bool | None) -> str:
    return {True: "yes", False: "**no**", None: "not decided"}[met]


def markdown(state: dict[str, Any], table: dict[str, Any]) -> str:
    meta = state["meta"]
    cuts = [f"`{m}`: {n} evaluations" for m, n in meta["evals_for"].items()]
    cuts += [f"`{m}`: {n} seed(s)" for m, n in meta["seeds_for"].items()]
    lines = [
        "# Constrained benchmark: localbo's constrained policies against Optuna and Ax",
        "",
        f"Written whole by `benchmarks/constrained.py`{' (smoke run)' if meta['smoke'] else ''} at commit "
        f"{meta['commit']}, {meta['when']}, on {meta['machine']} ({meta['cpus']} CPUs, load average "
        f"{meta['load_before']} before the run, shared with other work); command: `{meta['command']}`; "
        f"{meta['versions']}.",
        "",
        f"Budget: {meta['evals']} evaluations and {meta['seeds']} seed(s) per method"
        + (f", cut for the slow methods: {'; '.join(cuts)}" if cuts else "")
        + f"; {meta['jobs']} run(s) side by side, {meta['threads']} torch thread(s) each, niced.",
    ]
    lines += runs_by_commit(state["runs"], meta["problems"], meta["methods"], ",".join(meta.get("rerun") or []),
                            "those methods' runs made before that commit ran again"
                            + (f", of the runs `--only {meta['only']}` names" if meta.get("only") else ""))  # fmt: skip
    if meta.get("not_run"):
        lines += ["", f"**Cut** (`--deadline-min {meta['deadline_min']}`, `--only {meta.get('only')}`): "
                  f"{len(meta['not_run'])} "
                  f"planned run(s) not run in this invocation: {', '.join(meta['not_run'][:40])}"
                  + (" ..." if len(meta["not_run"]) > 40 else "") + "."]  # fmt: skip
    if meta.get("methods_not_run"):
        lines += ["", *[f"- `{m}` not run: {why}" for m, why in meta["methods_not_run"].items()]]
    if state.get("failed"):
        lines += ["", "Failed runs: " + "; ".join(f"{f['key']}: {f['error']}" for f in state["failed"])]
    wall = meta.get("wall_s")
    lines += [
        "",
        "Regret = best feasible value found by that evaluation - f* (f* as the problem states: BoTorch's",
        "`optimal_value`, a best known value a method may beat by a little). Mean ± standard error over seeds;",
        "`no feasible point in k/n seeds` where some seed has none yet. `infeasible` = the share of a run's",
        "evaluations that violate an outcome constraint; `fallbacks` = points the policy did not make (it failed;",
        "all seeds); `off eq.` = points off the mixture's equality by more than 1e-9 (all seeds); wall and CPU",
        "seconds per run (the run's process, all threads). Lower regret is better.",
        "",
        f"Total: {len(state['runs'])} runs, {sum(r['cpu_s'] for r in state['runs']):.0f} CPU s summed over runs"
        + (
            f", {wall:.0f} s wall for this invocation ({meta.get('cpu_children_s', 0):.0f} CPU s in its processes; "
            "`--resume` keeps the runs of earlier ones)"
            if wall
            else ""
        )
        + ".",  # fmt: skip
        "",
        "## Goals (issue 30)",
        "",
        "The best of turbo / ei / ucb / ei-greedy / minucb / la-minucb / gibo and the `-noisefree` runs",
        "(`noise_floor` 1e-6, as GPSampler's; the setting for noise-free evaluations) and `ei-greedy-exact`",
        "(`noise_floor` 1e-8, the lowest a config allows: a deterministic simulator's) against the best peer (TPE,",
        "GPSampler, Optuna random, Ax): a method with a feasible point in every seed ranks above one without, then by",
        "mean regret. Both feasible in every seed: d >= 7: ours <= 0.5 x the peer's regret; d < 7: ours within one",
        "standard error of the peer (<= peer + SE). (turbo, minucb, la-minucb and gibo are the local policies; ei and",
        "ucb are global and count here too.) A row of ours counts only with the plan's seeds (`--seeds`): the best of",
        "many configurations on fewer seeds would be a lucky draw; a peer's counts with the seeds it has. A method cut",
        "below the row's budget counts with its value at its last evaluation, `(at N: a bound)`: an upper bound on its",
        "regret at the row's budget (best so far only falls); against a peer's bound a `no` is certain and a `yes` is",
        "not, and a bound of ours only counts against us. `by`: how far ours is from the target, in ours' standard",
        "errors; a verdict by under 2 may turn in another realisation of the same seeds (`league_findings.md`,",
        '"Another machine, another path").',
        "",
        "| problem | d | evals | ours | ours' regret | best peer | peer's regret | target | met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, t in table.items():
        for k, g in t["goals"].items():
            if "ours_cell" not in g:
                lines.append(f"| {name} | {t['dim']} | {k} | {g['ours'] or '-'} | - | {g['peer'] or '-'} | - | - "
                             f"| n/a: {g['why']} |")  # fmt: skip
                continue
            target = f"{g['rule']}: {g['target']:.4g}" if "target" in g else g["rule"]
            met = {True: "yes", False: "**no**", None: "not decided"}[g["met"]]
            met += f" (by {by_se(g['by_se'])} SE)" if g.get("by_se") is not None else ""
            lines.append(
                f"| {name} | {t['dim']} | {k} | {g['ours']} | {show(g['ours_cell'])} | {g['peer']} "
                f"| {show(g['peer_cell'])} | {target} | {met} |"
            )
    counts = goal_counts(table, meta["seeds"])
    lines += ["", f"Value goals met: {counts['value_met']} of {counts['value_goals']}."]
    lines += careful_lines(counts)
    for name, t in table.items():
        opt = "unknown" if t["optimum"] is None else f"{t['optimum']:.6g} ({t['optimum_from']})"
        lines += [
            "",
            f"## {name} (d = {t['dim']}, {t['m']} outcome constraint(s){', sum x = 1' if name.startswith('mixture') else ''}; f* = {opt})",  # noqa: E501
            "",
            "| method | seeds | evals | regret @ 50 | regret @ 100 | regret @ 200 | infeasible | failed | fallbacks "
            "| off eq. | wall s / run | CPU s / run |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for method, r in t["rows"].items():
            regrets = " | ".join(show(r["regret"][str(k)]) for k in CHECKPOINTS)
            if all(r["regret"][str(k)] is None for k in CHECKPOINTS):
                regrets = f"at {r['evals']}: {show(r['last'])} | - | -"
            lines.append(
                f"| {method} | {r['seeds']} | {r['evals']} | {regrets} | {fmt(*r['infeasible'])} "
                f"| {fmt(*r.get('failed', (0.0, None)))} | {r['fallbacks']} "
                f"| {r['equality_violations']} | {fmt(*r['wall_s'])} | {fmt(*r['cpu_s'])} |"
            )
    lines += ["", "Findings, written by hand: `constrained_findings.md`.", ""]
    return "\n".join(lines)


def write(out: Path, state: dict[str, Any]) -> None:
    meta = state["meta"]
    state["table"] = aggregate(state["runs"], meta["problems"], meta["methods"], meta["seeds"])
    state["goals"] = goal_counts(state["table"], meta["seeds"])
    (out / f"{NAME}.json").write_text(json.dumps(state, indent=1) + "\n")
    (out / f"{NAME}.md").write_text(markdown(state, state["table"]))


# -- command line -----------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", help=f"comma-separated (default all: {FULL['problems']})")
    parser.add_argument("--methods", help=f"comma-separated (default {FULL['methods']})")
    parser.add_argument("--seeds", type=int, help=f"seeds 0..N-1 (default {FULL['seeds']})")
    parser.add_argument("--evals", type=int, help=f"evaluations per run (default {FULL['evals']})")
    parser.add_argument("--evals-for", action="append", default=[], metavar="METHOD=N", help="a method's own budget")
    parser.add_argument("--seeds-for", action="append", default=[], metavar="METHOD=N", help="a method's own seeds")
    parser.add_argument("--skip", action="append", default=[], metavar="METHOD=WHY",
                        help="leave a method out and say why in the table's header")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side in processes (default 1)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    parser.add_argument("--first", default="", help="comma-separated methods whose runs start before the others")
    parser.add_argument(
        "--only",
        metavar="METHOD@PROBLEM,...",
        help="of the planned runs, run only these now (METHOD, @PROBLEM or METHOD@PROBLEM), in order",
    )
    parser.add_argument("--deadline-min", type=float, help="start no run after this many minutes; table what ran")
    parser.add_argument("--resume", action="store_true", help="keep the runs already in the JSON, run the rest")
    parser.add_argument("--rerun", default="", metavar="METHOD@COMMIT,..",
                        help="with --resume: run these methods again where their runs predate COMMIT (default: are "
                        "from another commit); keep every other method's runs and start none of theirs")  # fmt: skip
    parser.add_argument("--report-only", action="store_true", help="only rewrite the markdown from the JSON")
    parser.add_argument("--smoke", action="store_true", help="a tiny run into a temp dir; never writes the results")
    parser.add_argument("--out", type=Path, default=None, help=f"where to write (default {RESULTS})")
    args = parser.parse_args(argv)
    out = output_dir(parser, args, RESULTS, NAME)
    json_path = out / f"{NAME}.json"
    if args.report_only:
        if not json_path.exists():
            parser.error(f"--report-only: {json_path} does not exist")
        write(out, json.loads(json_path.read_text()))
        say(f"wrote {out / (NAME + '.md')}")
        return 0
    for key, value in (SMOKE if args.smoke else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    problems = [p.strip() for p in args.problems.split(",") if p.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if bad := [p for p in problems if p not in PROBLEMS]:
        parser.error(f"unknown problem(s) {bad}; known: {list(PROBLEMS)}")
    known = (*LOCALBO_METHODS, *OPTUNA_METHODS, *AX_METHODS)
    if bad := [m for m in methods if m not in known]:
        parser.error(f"unknown method(s) {bad}; known: {list(known)}")
    evals_for = parse_per_method(args.evals_for, "--evals-for", parser)
    seeds_for = parse_per_method(args.seeds_for, "--seeds-for", parser)
    skipped = {}
    for item in args.skip:
        method, _, why = item.partition("=")
        skipped[method.strip()] = why.strip() or "skipped"
    methods = [m for m in methods if m not in skipped]
    if args.seeds < 1 or args.evals < 1 or args.jobs < 1 or args.threads < 1:
        parser.error("--seeds, --evals, --jobs and --threads must be >= 1")

    # the cheap methods first, each group seed-major: a run stopped by its deadline has whole seeds of each problem
    keys = [(p, m, s, evals_for.get(m, args.evals)) for s in range(args.seeds) for p in problems for m in methods
            if s < seeds_for.get(m, args.seeds) and applies(m, p)]  # fmt: skip
    # then SCBO and the GP peer, then the other GP policies: a cut run has those two's seeds first
    first = {m.strip() for m in args.first.split(",") if m.strip()}
    keys.sort(key=lambda k: (k[1] not in first, k[1] not in CHEAP, k[1] not in HEADLINE))  # stable sort
    meta = run_meta(__file__, args.smoke, numerics=True)
    since = {m.strip(): (c.strip() or meta["commit"]) for m, _, c in (i.partition("@") for i in args.rerun.split(","))
             if m.strip()}  # fmt: skip
    rerun = list(since)
    if rerun and not args.resume:
        parser.error("--rerun needs --resume (it replaces runs in the JSON)")
    if bad := [m for m in rerun if m not in methods]:
        parser.error(f"--rerun: {bad} not among the methods run")
    state: dict[str, Any] = {"runs": [], "failed": []}
    if args.resume and json_path.exists():
        old = json.loads(json_path.read_text())
        if rerun:  # the other methods' runs all stay; the named ones' where made since their change (with --only:
            # only those of the runs it names, e.g. one problem whose runs a change touched)
            named = {k for k in pick_only(keys, args.only)[0] if k[1] in rerun}

            def stale(r: dict[str, Any]) -> bool:
                key = (r["problem"], r["method"], r["seed"], r["evals"])
                return r["method"] in rerun and (not args.only or key in named) and not contains(r, since[r["method"]])

            state["runs"] = [r for r in old.get("runs", []) if not stale(r)]
            keys = [k for k in keys if k[1] in rerun]
        else:
            state["runs"] = [
                r for r in old.get("runs", []) if (r["problem"], r["method"], r["seed"], r["evals"]) in keys
            ]
        done = {(r["problem"], r["method"], r["seed"], r["evals"]) for r in state["runs"]}
        keys = [k for k in keys if k not in done]
        dropped = len(old.get("runs", [])) - len(state["runs"])
        say(f"resume: {len(state['runs'])} run(s) kept from {json_path} ({dropped} dropped), {len(keys)} to go")
    keys, later = pick_only(keys, args.only)
    meta.update({
        "command": "benchmarks/constrained.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "versions": versions(), "problems": problems, "methods": methods, "seeds": args.seeds, "evals": args.evals,
        "evals_for": evals_for, "seeds_for": seeds_for, "methods_not_run": skipped, "jobs": args.jobs,
        "threads": args.threads, "deadline_min": args.deadline_min, "only": args.only,
        "not_run": [], "rerun": [f"{m}@{c}" for m, c in since.items()],
    })  # fmt: skip
    state["meta"] = meta
    write(out, state)
    return sweep.run_and_report(
        keys, later, args, state, out, NAME, write, execute_at_checkpoints,
        lambda summary: f"best feasible {summary['best'][str(summary['evals'])]}",
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
