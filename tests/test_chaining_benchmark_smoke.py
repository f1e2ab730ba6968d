"""The Chaining-UCB benchmark runs end to end in its smoke configuration and writes its table, plots and timings."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from conftest import run_benchmark


def test_smoke_run_writes_the_regret_of_every_method_on_the_three_tasks_and_the_timing_table(tmp_path: Path) -> None:
    run_benchmark("chaining.py", "--smoke", "--out", str(tmp_path))
    with (tmp_path / "chaining.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["task"], r["method"]) for r in rows} == {
        (t, m) for t in ("gp-se", "himmelblau", "graphs") for m in ("chaining-ucb", "ucb", "random")
    }
    assert len(rows) == 3 * 3 * 2 * 16  # tasks x methods x runs x (10 initial + 6 suggested)
    assert all(float(r["regret"]) >= 0 for r in rows)
    md = (tmp_path / "chaining.md").read_text()
    assert md.startswith("# Chaining-UCB") and "| gp-se | chaining-ucb |" in md and "## Seconds per suggest" in md
    assert (tmp_path / "chaining_graphs.png").stat().st_size > 10_000
    timings = json.loads((tmp_path / "chaining_timing_local.json").read_text())["results"]
    assert {(t["size"], t["method"]) for t in timings} == {(s, m) for s in (400, 900) for m in ("chaining-ucb", "ucb")}
    assert all(t["median_s"] > 0 for t in timings)
