"""The README's benchmark figures, regenerated from the committed results files (never typed by hand).

Each block in README.md between ``<!-- figures:NAME -->`` and ``<!-- /figures:NAME -->`` is rewritten
from ``benchmarks/results/``; ``--check`` fails (exit 1) when a block differs from what the results say,
which tests/test_readme.py runs.

    python scripts/readme_figures.py           # rewrite the blocks
    python scripts/readme_figures.py --check   # are they current?
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "README.md"


def throughput() -> str:
    data = json.loads((RESULTS / "asktell_throughput.json").read_text())
    rows, meta = data["rows"], data["meta"]

    def rate(backend: str, system: str, clients: int) -> str:
        row = next((r for r in rows if (r["backend"], r["system"], r["clients"]) == (backend, system, clients)), None)
        return f"{row['trials_per_s']:.0f}/s" if row else "not measured"

    lines = [f"Last throughput run (`asktell_throughput.md`, {meta['date']}, {meta['nproc']} cores, loopback):"]
    for backend in sorted({r["backend"] for r in rows} - {"none"}):  # "none": the HTTP floor rows
        lines.append(
            f"{backend}: one client {rate(backend, 'localbo over HTTP', 1)} with ask + tell, "
            f"{rate(backend, 'localbo over HTTP, tell-and-ask', 1)} with tell-and-ask; Optuna RDBStorage in-process "
            f"{rate(backend, 'optuna RDB in-process', 1)}, Optuna's gRPC proxy {rate(backend, 'optuna gRPC proxy', 1)}."
        )
    floors = [r for r in rows if r["backend"] == "none"]
    if floors:
        each = ", ".join(f"{r['system'].split(': ')[1]} {r['trials_per_s']:.0f}/s" for r in floors)
        lines.append(f"HTTP alone (one httpx client, no database): {each}.")
    for goal in data.get("goals", []):
        verdict = "met" if goal["met"] else "not met"
        lines.append(f"Goal {goal['goal']} ({goal['backend']}): {goal['measured']}, {verdict}.")
    return "\n".join(lines)


def startup() -> str:
    runs = json.loads((RESULTS / "startup.json").read_text())["runs"]
    parts = []
    for run in runs:
        verbs = ", ".join(f"`{v}` {r['wall_s']:.2f} s" for v, r in run["verbs"].items())
        healthz = run["serve"]["healthz_s"]
        parts.append(f"{run['label']} (commit {run['meta']['commit']}): `/healthz` after {healthz:.1f} s; {verbs}")
    return "Start-up (`startup.md`): " + "; ".join(parts) + "."


def league() -> str:
    table = json.loads((RESULTS / "league.json").read_text())["table"]
    goals = re.search(r"^Goals met: (\d+) of (\d+) checkpoints\.$", (RESULTS / "league.md").read_text(), re.M)
    met = f"; issue 29's goals at 50 to 500 evaluations met at {goals[1]} of {goals[2]} checkpoints" if goals else ""
    lines = [
        f"League table (`league.md`; best value after the last evaluation, mean over seeds, lower is better{met}):"
    ]
    for instance in ("gp25", "gp50", "gp100", "ackley25", "rosenbrock25"):
        cells = table.get(instance)
        if not cells:
            continue
        means = {m: sum(s["best"] for s in c["seeds"].values()) / len(c["seeds"]) for m, c in cells.items()}
        short = {m: min(s["evals"] for s in c["seeds"].values()) for m, c in cells.items()}
        cut = {m: f" ({n} evaluations)" if n < max(short.values()) else "" for m, n in short.items()}
        ranked = ", ".join(f"{m} {v:.3g}{cut[m]}" for m, v in sorted(means.items(), key=lambda kv: kv[1]))
        lines.append(f"{instance}: {ranked}.")
    return "\n".join(lines)


def multiobjective() -> str:
    table = json.loads((RESULTS / "multiobjective.json").read_text())["table"]
    cells = [(problem, k, g) for problem, t in table.items() for k, g in t.get("goals", {}).items()]
    met = sum(bool(g.get("met")) for _, _, g in cells)
    head = (
        f"Several objectives (`multiobjective.md`; log10 hypervolume difference to the true front, mean over seeds, "
        f"lower is better; issue 31's goals met at {met} of {len(cells)}):"
    )
    lines = []
    for problem, t in table.items():
        parts = []
        for k, g in t.get("goals", {}).items():
            if g.get("met") is None:
                parts.append(f"@{k} undecided ({g.get('why')})")
                continue
            ours, peer = g["ours_cell"], g["peer_cell"]
            verdict = "met" if g["met"] else "not met"
            if g.get("by_se") is not None:  # ours' distance from the target in standard errors (multiobjective.py)
                distance = g["by_se"]
                verdict += f" (by {distance:.2g} SE)" if distance < 10 else f" (by {distance:.0f} SE)"
            parts.append(
                f"@{k} {g['ours']} {ours['mean']:.3g} ({ours['seeds']} seeds) against {g['peer']} {peer['mean']:.3g}, "
                f"goal {g['target']:.3g}: {verdict}"
            )
        lines.append(f"{problem} (d = {t['dim']}): " + "; ".join(parts) + ".")
    return " ".join([head, *lines])  # one line: the README stays short


def constrained() -> str:
    """Issue 30's goal counts from ``constrained.json``, and the verdicts that are not met or sit within two
    standard errors of their line (the ones another realisation may turn)."""
    data = json.loads((RESULTS / "constrained.json").read_text())
    counts = data["goals"]
    near = []
    for problem, t in data["table"].items():
        for k, g in t["goals"].items():
            if g.get("met") is None or (g["met"] and (g.get("by_se") is None or g["by_se"] >= 2)):
                continue
            verdict = "met" if g["met"] else "not met"
            if g.get("by_se") is not None:
                verdict += f" (by {g['by_se']:.2g} SE)"
            seeds = g["ours_cell"]["seeds"]
            near.append(f"{problem} @{k} {g['ours']} {g['ours_cell']['mean']:.3g} ({seeds} seeds) against {g['peer']} "
                        f"{g['peer_cell']['mean']:.3g}, goal {g['target']:.3g}: {verdict}")  # fmt: skip
    met_on = {v["problem"] for v in counts["careful"] if v["met"]}
    missed = [f"{v['problem']} {v['method']} ({v['measured']})" for v in counts["careful"]
              if v["met"] is False and v["problem"] not in met_on]  # fmt: skip
    return (
        "Constraints (`constrained.md`; regret of the best feasible value, mean over seeds, lower is better): "
        f"issue 30's value goals met at {counts['value_met']} of {counts['value_goals']}"
        + (f", within two standard errors of the line: {'; '.join(near)}" if near else "")
        + f". Failures and safe mode met on {counts['careful_met']} of {counts['careful_problems']} problems"
        + (f"; not on {'; '.join(missed)}" if missed else "")
        + "."
    )


def _dashboard() -> tuple[dict, dict[tuple[str, str, int], dict]]:
    data = json.loads((RESULTS / "dashboard.json").read_text())
    return data["meta"], {(r["system"], r["backend"], r["trials"]): r for r in data["rows"]}


def _s(value: float | str | None) -> str:
    return f"{value:.1f} s" if isinstance(value, float | int) else "not measured" if value is None else str(value)


def dashboard_live() -> str:
    """The live-update sentence: tell to screen, ours and optuna-dashboard's, from the same run."""
    meta, rows = _dashboard()
    ours = [r for (system, _, _), r in rows.items() if system == "localbo" and r.get("live_samples")]
    peer = [r for (system, _, _), r in rows.items() if system == "optuna-dashboard" and r.get("live_samples")]
    lo = min(r["live_min_s"] for r in ours)
    hi = max(r["live_max_s"] for r in ours)
    line = f"A tell shows on an open page in {lo:.1f} to {hi:.1f} s (`dashboard.md`, {meta['started'][:10]})"
    if peer:
        small = min(peer, key=lambda r: r["trials"])
        parts = [
            f"{r['trials']:,} trials {_s(r['live_min_s'])} to {_s(r['live_max_s'])}"
            for r in sorted(peer, key=lambda r: r["trials"])
        ]
        line += (
            f"; optuna-dashboard {meta['versions']['optuna-dashboard']}, polling, in the same run: "
            f"{', '.join(parts)} ({small['live_samples']} samples each)"
        )
    return line + "."


def dashboard_big() -> str:
    """The big-study sentence: first request and time to interactive at the largest size, beside the peer."""
    meta, rows = _dashboard()
    n = max(trials for (_, _, trials) in rows)
    ours = {backend: r for (system, backend, trials), r in rows.items() if system == "localbo" and trials == n}
    peer = rows.get(("optuna-dashboard", "in-memory", n))
    names = {"sqlite": "SQLite", "postgres": "Postgres"}
    order = [b for b in ("sqlite", "postgres") if b in ours]
    request = " / ".join(f"{ours[b]['series_median_s']:.2f} s" for b in order)
    page = " / ".join(_s(ours[b]["interactive_median_s"]) for b in order)
    analysis = " / ".join(_s(ours[b].get("analysis_median_s")) for b in order)
    line = (
        f"Measured in `benchmarks/results/dashboard.md` ({meta['started'][:10]}): with {n:,} trials the first data"
        f" request takes {request} ({' / '.join(names[b] for b in order)}), the page with its slices and parallel"
        f" coordinates is interactive in headless Chromium in {page}"
        f" (goal under {meta['goals']['interactive_s']:.0f} s),"
        f" and importance and the pair surface are drawn {analysis} after navigation"
    )
    if peer:
        line += (
            f"; optuna-dashboard, in the same run and on an in-memory study, takes {peer['series_median_s']:.1f} s"
            f" and {_s(peer['interactive_median_s'])}"
        )
    return line + "."


BLOCKS: dict[str, Callable[[], str]] = {
    "throughput": throughput,
    "startup": startup,
    "league": lambda: "\n".join([league(), constrained(), multiobjective()]),  # one objective, limits, several
    "dashboard-live": dashboard_live,
    "dashboard-big": dashboard_big,
}


def render(text: str) -> str:
    """Each block's body rewritten; a block inside a list item keeps its indentation (markers and body)."""
    for name, make in BLOCKS.items():
        pattern = re.compile(
            rf"^([ \t]*)(<!-- figures:{name} -->\n)(?:.*?\n)?[ \t]*(<!-- /figures:{name} -->)", re.S | re.M
        )
        if not pattern.search(text):
            raise SystemExit(f"README.md has no <!-- figures:{name} --> block")
        body = make()

        def block(m: re.Match[str], body: str = body) -> str:
            indent = m.group(1)
            lines = "\n".join(indent + line if line else line for line in body.split("\n"))
            return indent + m.group(2) + lines + "\n" + indent + m.group(3)

        text = pattern.sub(block, text)
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when a block is not what the results say")
    args = parser.parse_args()
    current = README.read_text()
    fresh = render(current)
    if args.check:
        if fresh != current:
            print("README.md's figures differ from benchmarks/results: run scripts/readme_figures.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
