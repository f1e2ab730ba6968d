"""Multi-objective benchmark (issue 31, "Several objectives"): localbo's policies for several objectives against
Optuna's and Ax's, in the same run.

Problems and runners: ``benchmarks/harness/multiobjective.py`` (BoTorch's ``BraninCurrin`` (d 2), ``VehicleSafety``
(d 5, 3 objectives), ``DTLZ2`` at d 10 and 30 and the constrained ``C2DTLZ2`` (d 12), every objective minimised).
Methods: localbo's ``morbo`` (MORBO: trust regions on the Pareto front), ``qlognehvi`` (BoTorch's global qLogNEHVI)
and ``random``, driven in process through the policy API with ``SuggestRequest.Y``, ``reference_point`` (the
problem's, as a user of a known problem states it in the study) and ``C`` (the engine emulation of
``harness.constrained.run_direct``); any other registered policy that handles "objectives" (e.g. ``minucb``) runs
the same way when named in ``--methods``. Peers: Optuna's ``nsga2`` (NSGAIISampler), ``tpe`` (multi-objective TPE),
``gpsampler`` (GPSampler) and ``optuna-random``, with ``directions`` and, on C2DTLZ2, ``constraints_func``; Ax
(``ax``: its default generation strategy, qLogNEHVI, the reference point as objective thresholds). Every
(problem, method, seed) is one run of sequential evaluations (ask 1, tell 1), noise-free; ``--jobs`` runs run side
by side in processes of ``--threads`` torch threads each.

Per run: the hypervolume of the feasible results (BoTorch's box decompositions, ``localbo.policies.pareto``) w.r.t.
the problem's reference point at 50, 100 and 200 evaluations (those within the budget), scored as
log10(max_hv - HV), the log hypervolume difference to the true front (max_hv: BoTorch's, exact for DTLZ2, computed
once for C2DTLZ2, see the harness); infeasible evaluations; fallback points (points the policy did not make: it
failed); the Pareto front's size; wall and CPU seconds. The table: mean ± standard error over seeds (of the log10).

    .venv/bin/python benchmarks/multiobjective.py --smoke       # ~40 s: 2 problems, 4 methods, 1 seed, 12 evals
    nice -n 10 .venv/bin/python benchmarks/multiobjective.py --jobs 2 --threads 1     # the full run
    .venv/bin/python benchmarks/multiobjective.py --evals-for ax=50 --seeds-for ax=1 --seeds-for-problem dtlz2_30=1
    .venv/bin/python benchmarks/multiobjective.py --resume       # keep the runs in multiobjective.json, run the rest
    .venv/bin/python benchmarks/multiobjective.py --resume --only ax@branincurrin,morbo   # of the rest, only these
    .venv/bin/python benchmarks/multiobjective.py --resume --rerun minucb   # minucb changed: its runs again
    .venv/bin/python benchmarks/multiobjective.py --resume --rerun auto@c2dtlz2   # one problem's runs of a method
    .venv/bin/python benchmarks/multiobjective.py --report-only  # rewrite multiobjective.md from the JSON

It writes ``benchmarks/results/multiobjective.json`` (every run's summary and the run's settings) and
``multiobjective.md`` whole, after every finished run (a run stopped early leaves a table of what finished, and says
so); ``--smoke`` writes into a temp dir (or ``--out``) and refuses ``benchmarks/results``. Findings, by hand:
``results/multiobjective_findings.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import numerics  # noqa: E402

numerics.pin()  # before numpy and torch load: a seed takes the same path on any AVX2 host (harness/numerics.py)

from harness import sweep  # noqa: E402
from harness.multiobjective import (  # noqa: E402
    AX_METHODS,
    LOCALBO_METHODS,
    LOG_FLOOR,
    OPTUNA_METHODS,
    PROBLEMS,
    get_problem,
    is_localbo_method,
    run_method,
)
from harness.runs import output_dir, run_meta  # noqa: E402
from harness.sweep import Key, by_se, fmt, mean_se, parse_per_method, pick_only, runs_by_commit, say, versions  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
NAME = "multiobjective"
CHECKPOINTS = (50, 100, 200)
# the local policies whose best the goals compare (qlognehvi is global: shown, not ours) and ``auto``, the default
# policy a study gets (as in league.py): at d <= 5 it runs qlognehvi, so a goal met by it is marked as such
LOCAL = ("morbo", "morbo-1r", "morbo-nehvi", "morbo-nehvi-1r", "minucb", "la-minucb")
OURS = (*LOCAL, "auto")
PEERS = ("nsga2", "tpe", "gpsampler", "ax", "random", "optuna-random")
CHEAP = ("random", "optuna-random", "nsga2", "tpe")  # seconds a run: they run first
HEADLINE = ("morbo", "minucb", "gpsampler")  # the local policies and the model-based Optuna peer: before the others
FULL = {"problems": ",".join(PROBLEMS), "methods": "morbo,qlognehvi,random,nsga2,tpe,gpsampler,ax", "seeds": 5,
        "evals": 200}  # fmt: skip
SMOKE = {"problems": "branincurrin,c2dtlz2", "methods": "morbo,random,nsga2,tpe", "seeds": 1, "evals": 12}


# -- running ------------------------------------------------------------------------------------------------------


def checkpoints_for(evals: int) -> list[int]:
    return sorted({c for c in CHECKPOINTS if c <= evals} | {evals})


def execute(key: Key) -> tuple[dict[str, Any] | None, str | None]:
    """One run's summary; a failure comes back as text, so that the other runs go on."""
    problem, method, seed, evals = key
    try:
        run, prob = run_method(problem, method, seed, evals)
        return run.summary(checkpoints_for(evals), prob), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}\n{traceback.format_exc(limit=6)}"


# -- the table ------------------------------------------------------------------------------------------------------


def cell(runs: list[dict[str, Any]], k: int) -> dict[str, Any] | None:
    """Mean ± SE of log10(HV difference) at ``k`` over the runs that reached ``k``; how many sit at the floor."""
    reached = [r for r in runs if r["evals"] >= k and str(k) in r["log_hv_diff"]]
    if not reached:
        return None
    values = [r["log_hv_diff"][str(k)] for r in reached]
    m, se = mean_se(values)
    return {"seeds": len(reached), "mean": m, "se": se, "at_floor": sum(v <= LOG_FLOOR for v in values)}


def show(c: dict[str, Any] | None) -> str:
    if c is None:
        return "-"
    return fmt(c["mean"], c["se"]) + (f" ({c['at_floor']} at the floor)" if c["at_floor"] else "")


def aggregate(
    runs: list[dict[str, Any]],
    problems: list[str],
    methods: list[str],
    seeds: int = 1,
    seeds_for_problem: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The table: per problem its rows (one per method) and its goals, where a row of ours needs the plan's seeds
    for that problem (``seeds``, or its ``seeds_for_problem``) to decide one."""
    table: dict[str, Any] = {}
    for name in problems:
        problem = get_problem(name)
        rows = {}
        for method in methods:
            mine = sorted(  # a run on an earlier domain of the problem is not this problem's
                (r for r in runs if (r["problem"], r["method"], r.get("domain", "")) == (name, method, problem.domain)),
                key=lambda r: r["seed"],
            )
            if not mine:
                continue
            last = min(r["evals"] for r in mine)
            rows[method] = {
                "seeds": len(mine),
                "evals": last,
                "log_hv_diff": {str(k): cell(mine, k) for k in CHECKPOINTS},
                "last": cell(mine, last),
                "infeasible": mean_se([r["infeasible"] / r["evals"] for r in mine]),
                "front_size": mean_se([float(r["front_size"]) for r in mine]),
                "fallbacks": sum(r["fallbacks"] for r in mine),
                "errors": sum(r["n_errors"] for r in mine),
                "first_errors": [e for r in mine for e in r["errors"]][:3],
                "wall_s": mean_se([r["wall_s"] for r in mine]),
                "cpu_s": mean_se([r["cpu_s"] for r in mine]),
                "cpu_total_s": sum(r["cpu_s"] for r in mine),
            }
        table[name] = {
            "dim": problem.dim, "k": problem.k, "m": problem.m, "ref": problem.ref.tolist(), "max_hv": problem.max_hv,
            "max_hv_from": problem.max_hv_from, "domain": problem.domain, "rows": rows,
            "goals": goals(problem.dim, rows, (seeds_for_problem or {}).get(name, seeds)),
        }  # fmt: skip
    return table


def goals(dim: int, rows: dict[str, Any], seeds: int = 1) -> dict[str, Any]:
    """At 100 and 200 evaluations: the best of ``OURS`` run on at least ``seeds`` seeds (the plan's: the best of many
    configurations on fewer would be a lucky draw) against the best of ``PEERS`` (on the seeds each has), by mean
    log10 hypervolume difference. d >= 10: ours <= the peer's + log10(0.5) (a difference at most half the peer's,
    as geometric means over seeds); d <= 5: ours <= the peer's + one standard error (of the log10). Others
    (5 < d < 10): the d <= 5 rule."""
    out: dict[str, Any] = {}
    for k in ("100", "200"):

        def best(methods: tuple[str, ...], k: str = k, bound: bool = False) -> tuple[str, dict[str, Any]] | None:
            """With ``bound``, a method cut below ``k`` evaluations counts with its value at its last one: the
            hypervolume only rises, so that is an upper bound on its difference at ``k`` (a loss against it is
            certain)."""
            have = [(m, rows[m]["log_hv_diff"][k]) for m in methods if m in rows and rows[m]["log_hv_diff"][k]]
            if bound:
                have += [(f"{m} (at {rows[m]['evals']}: a bound)", rows[m]["last"]) for m in methods
                         if m in rows and not rows[m]["log_hv_diff"][k] and rows[m]["last"]]  # fmt: skip
            return min(have, key=lambda mc: mc[1]["mean"]) if have else None

        full = tuple(m for m in OURS if m in rows and rows[m]["seeds"] >= seeds)
        ours, peer = best(full, bound=True), best(PEERS, bound=True)  # a bound of ours: conservative, against us
        if ours is None or peer is None:
            out[k] = {"ours": ours and ours[0], "peer": peer and peer[0], "met": None,
                      "why": f"no run of {'ours' if ours is None else 'a peer'} reached {k} evaluations"}  # fmt: skip
            continue
        (om, oc), (pm, pc) = ours, peer
        if dim >= 10:
            target, rule = pc["mean"] + math.log10(0.5), "<= peer + log10(0.5)"
        else:
            target, rule = pc["mean"] + (pc["se"] or 0.0), "<= peer + 1 SE"
        local = best(tuple(m for m in LOCAL if m in full), bound=True)
        distance = abs(target - oc["mean"]) / oc["se"] if oc["se"] else None  # ours' from the target, in SE
        out[k] = {"ours": om, "ours_cell": oc, "peer": pm, "peer_cell": pc, "target": target, "rule": rule,
                  "met": oc["mean"] <= target, "by_se": distance, "local": local and local[0],
                  "local_cell": local and local[1],
                  "local_met": local is not None and local[1]["mean"] <= target}  # fmt: skip
    return out


def markdown(state: dict[str, Any], table: dict[str, Any]) -> str:
    meta = state["meta"]
    cuts = [f"`{m}`: {n} evaluations" for m, n in meta["evals_for"].items()]
    cuts += [f"`{m}`: {n} seed(s)" for m, n in meta["seeds_for"].items()]
    cuts += [f"{p}: {n} seed(s)" for p, n in meta.get("seeds_for_problem", {}).items()]
    pairs = meta.get("evals_for_pair", {})
    cuts += [f"`{m}` on {p}: {n} evaluations" for p, mn in pairs.items() for m, n in mn.items()]
    lines = [
        "# Multi-objective benchmark: localbo's policies for several objectives against Optuna and Ax",
        "",
        f"Written whole by `benchmarks/multiobjective.py`{' (smoke run)' if meta['smoke'] else ''} at commit "
        f"{meta['commit']}, {meta['when']}, on {meta['machine']} ({meta['cpus']} CPUs, load average "
        f"{meta['load_before']} before the run, shared with other work); command: `{meta['command']}`; "
        f"{meta['versions']}.",
        "",
        f"Budget: {meta['evals']} evaluations and {meta['seeds']} seed(s) per method"
        + (f", cut: {'; '.join(cuts)}" if cuts else "")
        + f"; {meta['jobs']} run(s) side by side, {meta['threads']} torch thread(s) each, niced.",
    ]
    lines += runs_by_commit(state["runs"], meta["problems"], meta["methods"], ",".join(meta.get("rerun") or []))
    if meta.get("not_run"):
        lines += ["", f"**Cut** (`--deadline-min {meta['deadline_min']}`, `--only {meta.get('only')}`): "
                  f"{len(meta['not_run'])} planned run(s) not run: {', '.join(meta['not_run'][:40])}"
                  + (" ..." if len(meta["not_run"]) > 40 else "") + "."]  # fmt: skip
    if meta.get("methods_not_run"):
        lines += ["", *[f"- `{m}` not run: {why}" for m, why in meta["methods_not_run"].items()]]
    if state.get("failed"):
        lines += ["", "Failed runs: " + "; ".join(f"{f['key']}: {f['error']}" for f in state["failed"])]
    wall = meta.get("wall_s")
    lines += [
        "",
        "Score = log10(max_hv - HV): HV the hypervolume of the run's feasible results by that evaluation w.r.t. the",
        "problem's reference point (BoTorch's), max_hv that of the true Pareto front (see each problem's header).",
        "Lower is better; -1 is a difference of a tenth. Mean ± standard error over seeds; a difference <=",
        f"1e{LOG_FLOOR:.0f} (or <= 0, beyond an estimated max_hv) counts as the floor and is marked. localbo's",
        "policies get the problem's reference point in `SuggestRequest.reference_point` (as a study that states",
        "it; the engine would infer one from the data otherwise); Ax gets it as objective thresholds; Optuna takes",
        "none.",
        "`infeasible` = the share of a run's evaluations that violate the outcome constraint; `fallbacks` = points",
        "the policy did not make (it failed; all seeds), with its first errors below the table; `front` = the size",
        "of the run's feasible Pareto front at its end; wall and CPU seconds per run (the run's process, all threads).",
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
        "## Goals (issue 31)",
        "",
        "The best of ours (the local policies morbo, minucb, la-minucb and their variants, and `auto`, the default",
        "policy, which runs qlognehvi from a 5-point design without outcome constraints, searching as Ax does (20",
        "starts among 1,024) for its first 20 d results, with its own design with one, at d <= 5; at d 6 to 10",
        "without outcome constraints qlognehvi from a 5-point design for 20 d results, then morbo; else minucb for",
        "5 d results, then morbo) against the best peer",
        "(NSGA-II, TPE, GPSampler, Ax, random), each by its mean log10 hypervolume difference; `best local` is the",
        "best without `auto` (whose value at d <= 10 is a global policy's until it hands over), with its own",
        "verdict. d >= 10: ours <= 0.5 x the peer's difference (in log10: <= peer - 0.301; geometric means over",
        "seeds); d <= 5: ours within one standard error of the peer (<= peer + SE, in log10). (qlognehvi is global,",
        "a reference beside them, not in either side.) A row of ours counts only with the plan's seeds (`--seeds`);",
        "a peer's with the seeds it has. A method cut below the row's budget counts with its value at its last",
        "evaluation, `(at N: a bound)`: an upper bound on its difference at the row's budget (the hypervolume only",
        "rises), so a `no` against a peer's bound is certain, a `yes` not, and a bound of ours only counts against",
        "us.",
        "`by`: how far ours is from the target, in ours' standard errors; a verdict by under 2 may turn in another",
        'realisation of the same seeds (results/league_findings.md, "Another machine, another path").',
        "",
        "| problem | d | evals | ours | ours' log10 diff | best peer | peer's log10 diff | target | met "
        "| best local | its log10 diff | met by it |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, t in table.items():
        for k, g in t["goals"].items():
            if "ours_cell" not in g:
                lines.append(f"| {name} | {t['dim']} | {k} | {g['ours'] or '-'} | - | {g['peer'] or '-'} | - | - "
                             f"| n/a: {g['why']} | - | - | - |")  # fmt: skip
                continue
            met = {True: "yes", False: "**no**"}
            local = (f"{g['local']} | {show(g['local_cell'])} | {met[g['local_met']]}" if g.get("local")
                     else "- | - | -")  # fmt: skip
            by = f" (by {by_se(g['by_se'])} SE)" if g.get("by_se") is not None else ""
            lines.append(
                f"| {name} | {t['dim']} | {k} | {g['ours']} | {show(g['ours_cell'])} | {g['peer']} "
                f"| {show(g['peer_cell'])} | {g['rule']}: {g['target']:.3f} | {met[g['met']]}{by} | {local} |"
            )
    for name, t in table.items():
        ref = ", ".join(f"{v:.6g}" for v in t["ref"])
        lines += [
            "",
            f"## {name} (d = {t['dim']}, {t['k']} objectives, {t['m']} outcome constraint(s); reference point ({ref}); "
            f"max_hv {t['max_hv']:.8g}: {t['max_hv_from']}{'; ' + t['domain'] if t.get('domain') else ''})",
            "",
            "| method | seeds | evals | log10 diff @ 50 | @ 100 | @ 200 | infeasible | fallbacks | front "
            "| wall s / run | CPU s / run |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        notes = []
        for method, r in t["rows"].items():
            scores = " | ".join(show(r["log_hv_diff"][str(k)]) for k in CHECKPOINTS)
            if all(r["log_hv_diff"][str(k)] is None for k in CHECKPOINTS):
                scores = f"at {r['evals']}: {show(r['last'])} | - | -"
            lines.append(
                f"| {method} | {r['seeds']} | {r['evals']} | {scores} | {fmt(*r['infeasible'])} | {r['fallbacks']} "
                f"| {fmt(*r['front_size'])} | {fmt(*r['wall_s'])} | {fmt(*r['cpu_s'])} |"
            )
            if r["errors"]:
                notes.append(f"- `{method}`: {r['errors']} policy error(s), e.g. " + "; ".join(
                    f"`{e[:200]}`" for e in r["first_errors"]))  # fmt: skip
        lines += ["", *notes] if notes else []
    lines += ["", "Findings, written by hand: `multiobjective_findings.md`.", ""]
    return "\n".join(lines)


def write(out: Path, state: dict[str, Any]) -> None:
    meta = state["meta"]
    state["table"] = aggregate(
        state["runs"], meta["problems"], meta["methods"], meta["seeds"], meta.get("seeds_for_problem")
    )
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
    parser.add_argument("--seeds-for-problem", action="append", default=[], metavar="PROBLEM=N",
                        help="a problem's own seeds (the fewer of this and a method's)")  # fmt: skip
    parser.add_argument("--evals-for-pair", action="append", default=[], metavar="METHOD@PROBLEM=N",
                        help="a method's own budget on one problem")  # fmt: skip
    parser.add_argument("--skip", action="append", default=[], metavar="METHOD=WHY",
                        help="leave a method out and say why in the table's header")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side in processes (default 1)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    parser.add_argument("--deadline-min", type=float, help="start no run after this many minutes; table what ran")
    parser.add_argument("--resume", action="store_true", help="keep the runs already in the JSON, run the rest")
    parser.add_argument("--only", metavar="METHOD@PROBLEM,...",
                        help="of the planned runs, run only these now (METHOD, @PROBLEM or METHOD@PROBLEM), "
                        "seed by seed, in this order; with --resume the plan's runs in the JSON stay")  # fmt: skip
    parser.add_argument("--rerun", default="", metavar="METHOD,..",
                        help="with --resume: drop these methods' runs (METHOD, or METHOD@PROBLEM: one problem's) "
                        "from the JSON and make them again (their code changed); every other run stays")  # fmt: skip
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
    peers = (*OPTUNA_METHODS, *AX_METHODS)
    if bad := [m for m in methods if m not in peers and not is_localbo_method(m)]:
        parser.error(f"unknown method(s) {bad}; known: {[*LOCALBO_METHODS, *peers]} and any registered policy that "
                     "handles several objectives")  # fmt: skip
    evals_for = parse_per_method(args.evals_for, "--evals-for", parser)
    seeds_for = parse_per_method(args.seeds_for, "--seeds-for", parser)
    seeds_for_problem = parse_per_method(args.seeds_for_problem, "--seeds-for-problem", parser)
    evals_for_pair: dict[str, dict[str, int]] = {}
    for pair, n in parse_per_method(args.evals_for_pair, "--evals-for-pair", parser).items():
        method, sep, problem = pair.partition("@")
        if not sep:
            parser.error(f"--evals-for-pair {pair!r}: expected METHOD@PROBLEM=N")
        evals_for_pair.setdefault(problem, {})[method] = n
    skipped = {}
    for item in args.skip:
        method, _, why = item.partition("=")
        skipped[method.strip()] = why.strip() or "skipped"
    methods = [m for m in methods if m not in skipped]
    if args.seeds < 1 or args.evals < 1 or args.jobs < 1 or args.threads < 1:
        parser.error("--seeds, --evals, --jobs and --threads must be >= 1")

    def budget(p: str, m: str) -> int:
        return evals_for_pair.get(p, {}).get(m, evals_for.get(m, args.evals))

    # the cheap methods first (every seed), then the model-based ones seed by seed: in each seed the local policies
    # and the GP peer first, then the others (qlognehvi, Ax) in --methods' order; a run stopped by its deadline has
    # every method's first seeds
    keys = [(p, m, s, budget(p, m)) for s in range(args.seeds) for p in problems for m in methods
            if s < min(seeds_for.get(m, args.seeds), seeds_for_problem.get(p, args.seeds))]  # fmt: skip
    keys.sort(key=lambda k: (k[1] not in CHEAP, 0 if k[1] in CHEAP else k[2], k[1] not in HEADLINE))  # stable
    state: dict[str, Any] = {"runs": [], "failed": []}
    rerun = [m.strip() for m in args.rerun.split(",") if m.strip()]
    if rerun and not args.resume:
        parser.error("--rerun needs --resume (it replaces runs in the JSON)")
    if args.resume and json_path.exists():
        old = json.loads(json_path.read_text())
        known = {*methods, *(f"{m}@{p}" for m in methods for p in problems)}
        if bad := [m for m in rerun if m not in known]:
            parser.error(f"--rerun: {bad} not among the methods (and problems) run")
        dropped = set(rerun)
        old["runs"] = [r for r in old.get("runs", []) if not {r["method"], f"{r['method']}@{r['problem']}"} & dropped]
        domains = {p: get_problem(p).domain for p in problems}  # a run on another domain is another problem's
        state["runs"] = [
            r for r in old.get("runs", []) if (r["problem"], r["method"], r["seed"], r["evals"]) in keys
            and r.get("domain", "") == domains[r["problem"]]
        ]  # fmt: skip
        done = {(r["problem"], r["method"], r["seed"], r["evals"]) for r in state["runs"]}
        keys = [k for k in keys if k not in done]
        say(f"resume: {len(done)} run(s) kept from {json_path}, {len(keys)} to go")
    keys, later = pick_only(keys, args.only)
    meta = run_meta(__file__, args.smoke, numerics=True)
    meta.update({
        "command": "benchmarks/multiobjective.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "versions": versions(), "problems": problems, "methods": methods, "seeds": args.seeds, "evals": args.evals,
        "evals_for": evals_for, "seeds_for": seeds_for, "seeds_for_problem": seeds_for_problem,
        "evals_for_pair": evals_for_pair, "methods_not_run": skipped, "jobs": args.jobs, "threads": args.threads,
        "deadline_min": args.deadline_min, "only": args.only, "not_run": [], "rerun": rerun,
    })  # fmt: skip
    state["meta"] = meta
    write(out, state)
    return sweep.run_and_report(
        keys, later, args, state, out, NAME, write, execute,
        lambda summary: f"log10 HV diff {summary['log_hv_diff'][str(summary['evals'])]:.3f}",
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
