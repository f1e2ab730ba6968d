"""The dashboard benchmark runs end to end in its smoke configuration (200 trials; localbo on SQLite, the peer)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "dashboard.py"


@pytest.mark.live
def test_smoke_run_times_the_series_and_the_page(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, (
        f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    data = json.loads((tmp_path / "dashboard.json").read_text())
    assert data["meta"]["smoke"] is True and "Chromium" in data["meta"]["chromium"]
    rows = {r["system"]: r for r in data["rows"]}
    assert [(r["system"], r["backend"], r["trials"]) for r in data["rows"]] == [
        ("optuna-dashboard", "in-memory", 200),
        ("localbo", "sqlite", 200),
    ]
    for row in rows.values():
        assert 0 < row["series_median_s"] < 30 and row["series_bytes"] > row["trials"] * 50
        assert 0 < row["interactive_median_s"] < 60
    assert rows["localbo"]["render_ms"] > 0 and 0 < rows["localbo"]["live_latency_s"] < 5
    assert (tmp_path / "dashboard.md").read_text().startswith("# Dashboard speed")


def test_smoke_refuses_to_write_into_the_committed_results() -> None:
    out = ROOT / "benchmarks" / "results"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--smoke does not write into benchmarks/results" in done.stderr
