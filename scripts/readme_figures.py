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
    for backend in sorted({r["backend"] for r in rows}):
        lines.append(
            f"{backend}: one client {rate(backend, 'localbo over HTTP', 1)} with ask + tell, "
            f"{rate(backend, 'localbo over HTTP, tell-and-ask', 1)} with tell-and-ask; Optuna RDBStorage in-process "
            f"{rate(backend, 'optuna RDB in-process', 1)}, Optuna's gRPC proxy {rate(backend, 'optuna gRPC proxy', 1)}."
        )
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
    lines = ["League table (`league.md`; best value after the last evaluation, mean over seeds, lower is better):"]
    for instance in ("gp25", "gp50", "gp100"):
        cells = table.get(instance)
        if not cells:
            continue
        means = {m: sum(s["best"] for s in c["seeds"].values()) / len(c["seeds"]) for m, c in cells.items()}
        ranked = ", ".join(f"{m} {v:.2f}" for m, v in sorted(means.items(), key=lambda kv: kv[1]))
        lines.append(f"{instance}: {ranked}.")
    return "\n".join(lines)


BLOCKS: dict[str, Callable[[], str]] = {"throughput": throughput, "startup": startup, "league": league}


def render(text: str) -> str:
    for name, make in BLOCKS.items():
        pattern = re.compile(rf"(<!-- figures:{name} -->\n)(?:.*?\n)?(<!-- /figures:{name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no <!-- figures:{name} --> block")
        body = make()
        text = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), text)
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
