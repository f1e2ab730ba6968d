"""The dashboard benchmark runs end to end in its smoke configuration (200 trials; localbo on SQLite, the peer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_benchmark


@pytest.mark.live
def test_smoke_run_times_the_series_and_the_page(tmp_path: Path) -> None:
    run_benchmark("dashboard.py", "--smoke", "--out", str(tmp_path))
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
