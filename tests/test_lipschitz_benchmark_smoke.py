"""The Lipschitz BO benchmark runs end to end in its smoke configuration and writes its table, plots and timings."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from conftest import run_benchmark


def test_smoke_run_writes_errors_per_evaluation_the_comparison_and_the_timing_table(tmp_path: Path) -> None:
    run_benchmark("lipschitz.py", "--smoke", "--out", str(tmp_path))
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
