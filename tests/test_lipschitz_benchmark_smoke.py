"""The Lipschitz BO benchmark runs end to end in its smoke configuration and writes its table, plots and timings."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "lipschitz.py"


def test_smoke_run_writes_errors_per_evaluation_the_comparison_and_the_timing_table(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, (
        f"exit {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    )
    with (tmp_path / "lipschitz.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {r["method"] for r in rows} == {"ei", "tei", "ts", "ar-ts", "random"}
    assert len(rows) == 5 * 10 and all(r["source"] != "fallback" for r in rows)
    assert all(float(r["y"]) == float(r["f"]) for r in rows)  # the paper's noise-free evaluations
    md = (tmp_path / "lipschitz.md").read_text()
    assert md.startswith("# Lipschitz BO") and "| branin | 2 | ts / ar-ts |" in md and "## Seconds per suggest" in md
    assert "| branin | ar-ts | 8 |" in md  # the pruning table
    assert (tmp_path / "lipschitz_branin.png").stat().st_size > 10_000
    timings = json.loads((tmp_path / "lipschitz.json").read_text())["timings"]
    assert {t["policy"] for t in timings} == {"ucb", "ar-ucb", "tucb", "ei", "tei", "pi", "tpi", "ts", "ar-ts"}
    assert all(t["median_s"] > 0 and t["how"] == "acquisition" for t in timings)


def test_smoke_refuses_to_write_into_the_committed_results() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--out", str(ROOT / "benchmarks" / "results")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--smoke does not write into benchmarks/results" in done.stderr
