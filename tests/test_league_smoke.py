"""benchmarks/league.py --smoke: a tiny synthetic run of TuRBO, CMA-ES and random, tabled, so the league
table's script cannot rot."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_benchmark


def test_smoke_run_tables_each_method_with_costs_and_lists_what_is_missing(tmp_path: Path) -> None:
    run_benchmark("league.py", "--smoke", "--out", str(tmp_path))
    table = json.loads((tmp_path / "league.json").read_text())["table"]["branin"]
    assert set(table) == {"turbo", "cmaes", "random"}
    for cell in table.values():
        assert len(cell["seeds"]) == 1 and cell["fallbacks"] == 0 and cell["cpu_s"] and cell["wall_s"]
    text = (tmp_path / "league.md").read_text()
    assert "| turbo | 1 | 6 |" in text and "## Rows not run yet" in text
    assert "| branin | la-minucb | `benchmarks/synthetic.py --objectives branin --methods la-minucb" in text
