"""The league at early budgets (issue 29): each method's regret after 50, 100, 200 and 500 evaluations, and
whether the local policies meet the issue's goals there.

A run's value at checkpoint c is its best (noise-free) value by evaluation c. The synthetic instances are
scored by regret, best - f*, with f* the instance's known optimum, or the multi-start L-BFGS-B estimate
(``best_known``) lowered to the best value any run of the league found on that instance; MuJoCo tasks by
the episode return itself (higher is better).

A run that stopped before c: ours count by their value at their last evaluation (an upper bound on the
value at c, so it can only make a local policy look worse); a peer's shorter run is left out at c, because
its value there is not known and could be better.

The goals (issue 29, "Must show"): at 100, 200 and 500 evaluations a local policy (or ``auto``) is first; on
the GP objectives, from 50 on, the best local policy's regret is at most 0.5x the best peer's; elsewhere it
is within one standard error of the best peer's (or ahead).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

LOCAL = ("auto", "la-minucb", "minucb", "gibo", "mpd")
PEERS = ("turbo", "cmaes", "gpsampler", "tpe", "ax")  # not random: the goals name these
CHECKPOINTS = (50, 100, 200, 500)
GP_RATIO = 0.5


def checkpoints_of(budget: int) -> list[int]:
    return [c for c in CHECKPOINTS if c < budget] + [budget]


def value_at(curve: dict[int, float], c: int, maximise: bool) -> float:
    """The best value by evaluation c of a curve {eval: best so far}; its last one where it stopped before c."""
    reached = [e for e in curve if e <= c]
    return curve[max(reached)] if reached else (-math.inf if maximise else math.inf)


def optimum(objective: str, instance: int, found: float) -> float:
    """f* of a synthetic instance: known, or estimated and lowered to the best value found on it."""
    from harness.objectives import best_known

    value, _exact = best_known(objective, instance)
    return min(value, found)


def scores(cells: dict[str, dict[str, Any]], budget: int) -> dict[str, dict[int, dict[int, float]]]:
    """Per method, checkpoint and seed: the regret (synthetic) or the return (MuJoCo) there, runs as the
    module's docstring says (a peer's shorter run left out)."""
    maximise = next(iter(cells.values()))["maximise"]
    objective = next(iter(cells.values()))["objective"]
    f_star: dict[int, float] = {}
    if not maximise:
        by_seed: dict[int, list[float]] = {}
        for cell in cells.values():
            for seed, s in cell["seeds"].items():
                by_seed.setdefault(seed, []).append(min(s["curve"].values()))
        f_star = {
            seed: optimum(objective, next(c["seeds"][seed]["instance"] for c in cells.values() if seed in c["seeds"]),
                          min(found))
            for seed, found in by_seed.items()
        }  # fmt: skip
    out: dict[str, dict[int, dict[int, float]]] = {}
    for method, cell in cells.items():
        out[method] = {}
        for c in checkpoints_of(budget):
            at = {}
            for seed, s in cell["seeds"].items():
                if max(s["curve"]) < c and method not in LOCAL:
                    continue
                v = value_at(s["curve"], c, maximise)
                at[seed] = v if maximise else v - f_star[seed]
            if at:
                out[method][c] = at
    return out


def mean_se(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return statistics.fmean(values), math.nan
    return statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))


def fmt(values: dict[int, float] | None) -> str:
    if not values:
        return "-"
    m, se = mean_se(list(values.values()))
    return f"{m:.3g}" if math.isnan(se) else f"{m:.3g} ± {se:.2g}"


def goals(instance: str, per_method: dict[str, dict[int, dict[int, float]]], maximise: bool, budget: int) -> list[dict]:
    """Per checkpoint: the leader, the best local policy and the best peer, and whether the goals are met."""
    rows = []
    gp = instance.startswith("gp")
    sign = -1.0 if maximise else 1.0  # lower sign * value is better
    for c in checkpoints_of(budget):
        ran = {m: v[c] for m, v in per_method.items() if c in v}
        local = {m: v for m, v in ran.items() if m in LOCAL}
        peers = {m: v for m, v in ran.items() if m in PEERS}
        if not local or not peers:
            continue
        leader, ours, theirs = _best(ran, sign), _best(local, sign), _best(peers, sign)
        (mo, _), (mp, sp) = mean_se(list(local[ours].values())), mean_se(list(peers[theirs].values()))
        first = leader in LOCAL
        if gp and not maximise:
            ratio = mo / mp if mp > 0 else math.inf
            test, met = f"ratio {ratio:.2f} (goal <= {GP_RATIO})", ratio <= GP_RATIO
        else:
            gap = sign * (mo - mp)  # > 0: ours behind
            met = gap <= (0.0 if math.isnan(sp) else sp)
            test = f"{'behind' if gap > 0 else 'ahead'} by {abs(gap):.3g} (one SE of the peer: {sp:.2g})"
        needs_first = c in (100, 200, 500)  # the issue names these; a longer run (Hopper 1000) is judged by its test
        rows.append({
            "checkpoint": c, "leader": leader, "local": ours, "local_value": fmt(local[ours]), "peer": theirs,
            "peer_value": fmt(peers[theirs]), "test": test, "first": first,
            "met": met and (first or not needs_first),
        })  # fmt: skip
    return rows


def _best(group: dict[str, dict[int, float]], sign: float) -> str:
    return min(group, key=lambda m: sign * statistics.fmean(group[m].values()))


def markdown(table: dict[str, Any], instances: list[str], budgets: dict[str, int]) -> list[str]:
    """The checkpoints' tables and the goals' table, for league.md."""
    lines = [
        "## Early checkpoints",
        "",
        "Regret (best - f*; lower is better) after 50, 100, 200 and 500 evaluations for the synthetic instances, the",
        "episode return (higher is better) for MuJoCo; mean ± standard error over seeds. Ours stopped early count by",
        "their last value; a peer's shorter run is left out where it stopped (`harness/checkpoints.py`). f* is the",
        "known optimum, or for the GP instances the L-BFGS-B estimate lowered to the best value any run found.",
        "",
    ]
    goal_rows = []
    for instance in instances:
        cells = {m: c for m, c in table.get(instance, {}).items()}
        if not cells:
            continue
        budget = budgets.get(instance, 500)
        cps = checkpoints_of(budget)
        per_method = scores(cells, budget)
        maximise = next(iter(cells.values()))["maximise"]
        last = cps[-1]
        order = sorted(per_method, key=lambda m: _rank(per_method[m].get(last), maximise))
        lines += [f"## Early checkpoints: {instance}", "", "| method | " + " | ".join(f"@{c}" for c in cps) + " |",
                  "|---|" + "---|" * len(cps)]  # fmt: skip
        lines += [f"| {m} | " + " | ".join(fmt(per_method[m].get(c)) for c in cps) + " |" for m in order]
        lines.append("")
        goal_rows += [{"instance": instance, **g} for g in goals(instance, per_method, maximise, budget)]
    lines += [
        "## Goals at the checkpoints (issue 29)",
        "",
        "At 100, 200 and 500 evaluations a local policy (`auto`, `la-minucb`, `minucb`, `gibo`, `mpd`) is first; on",
        f"the GP objectives its regret is at most {GP_RATIO}x the best peer's (`turbo`, `cmaes`, `gpsampler`, `tpe`,",
        "`ax`) from 50 on; elsewhere within one standard error of it. Peers not run on an instance are not in it.",
        "",
        "| instance | @ | leader | best local | its value | best peer | its value | test | goal met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for g in goal_rows:
        lines.append(
            f"| {g['instance']} | {g['checkpoint']} | {g['leader']} | {g['local']} | {g['local_value']} | {g['peer']} "
            f"| {g['peer_value']} | {g['test']} | {'yes' if g['met'] else 'no'} |"
        )
    met = sum(g["met"] for g in goal_rows)
    return [*lines, "", f"Goals met: {met} of {len(goal_rows)} checkpoints.", ""]


def _rank(values: dict[int, float] | None, maximise: bool) -> tuple[bool, float]:
    """Methods with a value first, the best first."""
    if not values:
        return True, 0.0
    mean = statistics.fmean(values.values())
    return False, -mean if maximise else mean
