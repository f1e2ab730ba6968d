"""The policy compute-time benchmark runs (tiny mode) and writes its table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "policy_compute_time.py"


def test_smoke_prints_and_writes_one_row_per_dimension(tmp_path: Path) -> None:
    out = tmp_path / "times.md"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--threads", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in out.read_text().splitlines() if line.startswith("| 3 |")]
    assert len(rows) == 1
    seconds = float(rows[0].split("|")[4])
    assert seconds >= 0.0
