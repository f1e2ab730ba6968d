"""The acquisition-search check runs in its smoke configuration: a small qlognehvi data set, one acquisition searched
with and without starts at front points, both values finite and the one with more starts no worse (it adds starts to
the same random ones), written whole into the folder it is given."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import BENCHMARKS, run_benchmark


def test_smoke_run_searches_one_acquisition_both_ways(tmp_path: Path) -> None:
    run_benchmark("acquisition_search.py", "--smoke", "--out", str(tmp_path), timeout=600)
    data = json.loads((tmp_path / "acquisition_search.json").read_text())
    ((block),) = data["data"]
    assert block["seed"] == 0 and block["front_size"] >= 1 and block["fallbacks"] == 0
    ((draw),) = block["draws"]
    alone, anchored = draw["0"]["log_acq"], draw["5"]["log_acq"]
    assert alone is not None and anchored is not None and anchored >= alone - 1e-6
    text = (tmp_path / "acquisition_search.md").read_text()
    assert text.startswith("# qlognehvi's acquisition search") and "| 0 | " in text
    assert data["meta"]["smoke"] is True


def test_smoke_refuses_to_write_into_the_committed_results() -> None:
    done = run_benchmark("acquisition_search.py", "--smoke", "--out", str(BENCHMARKS / "results"), timeout=60, ok=False)
    assert done.returncode == 2 and "--smoke does not write into benchmarks/results" in done.stderr
