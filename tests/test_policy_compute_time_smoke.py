"""The policy compute-time benchmark runs (tiny mode) and writes its table."""

from __future__ import annotations

from pathlib import Path

from conftest import run_benchmark


def test_smoke_prints_and_writes_one_row_per_policy_and_dimension(tmp_path: Path) -> None:
    out = tmp_path / "times.md"
    run_benchmark(
        "policy_compute_time.py", "--smoke", "--threads", "1", "--policies", "minucb,la-minucb,mpd", "--out", str(out)
    )
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| 3 |")]
    assert len(rows) == 3
    sections = [line.split()[0] for line in text.splitlines() if " suggest on cpu" in line]
    assert sections == ["minucb", "la-minucb", "mpd"]
    for row in rows:
        total, fit, step, batch = (float(v) for v in row.split("|")[4:8])
        assert total > 0.0 and total >= fit + batch - 0.1
