"""The latency benchmark runs end to end in its smoke configuration and writes a sane table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "latency.py"

pytestmark = pytest.mark.live


def test_smoke_run_times_asks_with_suggest_ahead_on_and_off_and_optuna(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    data = json.loads((tmp_path / "latency.json").read_text())
    assert data["meta"]["smoke"] is True
    assert (tmp_path / "latency.md").read_text().startswith("# Ask latency")
    systems = {row["system"] for row in data["rows"]}
    assert systems == {
        "localbo minucb, suggest-ahead on",
        "localbo minucb, suggest-ahead off",
        "optuna GPSampler (in-process)",
    }
    for row in data["rows"]:
        assert row["asks"] == len(row["latencies_ms"]) > 0
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["max_ms"]
        if row["system"].startswith("localbo"):
            assert row["sources"] == {"minucb": row["asks"]}, "every point from the policy's plan"
            assert row["steps"] >= 1, "the timed asks include a step"


def test_smoke_refuses_to_write_into_the_committed_results() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--out", str(ROOT / "benchmarks" / "results")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--smoke does not write into benchmarks/results" in done.stderr
