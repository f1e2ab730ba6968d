"""The latency benchmark runs end to end in its smoke configuration and writes a sane table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_benchmark

pytestmark = pytest.mark.live


def test_smoke_run_times_asks_with_suggest_ahead_on_and_off_and_optuna(tmp_path: Path) -> None:
    run_benchmark("latency.py", "--smoke", "--out", str(tmp_path))
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
