"""The policy compute-time benchmark runs (tiny mode) and writes its table."""

from __future__ import annotations

from pathlib import Path

from conftest import run_benchmark


def test_smoke_prints_and_writes_one_row_per_dimension(tmp_path: Path) -> None:
    out = tmp_path / "times.md"
    run_benchmark("policy_compute_time.py", "--smoke", "--threads", "1", "--out", str(out))
    rows = [line for line in out.read_text().splitlines() if line.startswith("| 3 |")]
    assert len(rows) == 1
    seconds = float(rows[0].split("|")[4])
    assert seconds >= 0.0
