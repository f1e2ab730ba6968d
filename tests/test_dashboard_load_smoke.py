"""The dashboard-load benchmark runs end to end in its smoke configuration (SQLite; no stream open, 20 open
studies-list streams, 20 open study-page streams)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BENCHMARKS, run_benchmark

COMMITTED = BENCHMARKS / "results" / "dashboard_load.json"


@pytest.mark.live
def test_smoke_run_times_asks_beside_open_streams_and_readers_hear_only_their_studies(tmp_path: Path) -> None:
    before = COMMITTED.stat().st_mtime_ns if COMMITTED.exists() else None
    run_benchmark("dashboard_load.py", "--smoke", "--out", str(tmp_path), timeout=180)

    data = json.loads((tmp_path / "dashboard_load.json").read_text())
    assert (tmp_path / "dashboard_load.md").read_text().startswith("# Dashboard load")
    rows = {(row["kind"], row["streams"]): row for row in data["rows"]}
    assert set(rows) == {("none", 0), ("list", 20), ("study", 20)}
    for row in rows.values():
        assert row["cycles"] > 0 and row["cycles_per_s"] > 0 and row["ask_p50_ms"] > 0
        assert row["errors"] == 0 and row["stream_errors"] == 0, row
        assert row["server_cpu_s"] > 0 and row["wall_s"] > 0
    lists, pages = rows["list", 20], rows["study", 20]
    assert lists["events_per_reader_of_busy"] >= 1  # readers of the busy study hear of it
    assert lists["events_max_per_reader_not_of_busy"] == 1  # the others get the first list and nothing after
    assert pages["events_per_reader_of_busy"] >= 1  # the study's pages hear its trials
    judged = [(v["backend"], v["kind"]) for v in data["verdicts"]]
    assert judged == [("sqlite", "list"), ("sqlite", "study")]  # judged; the goals themselves are for the full run
    assert data["meta"]["smoke"] is True
    assert (COMMITTED.stat().st_mtime_ns if COMMITTED.exists() else None) == before


def test_smoke_refuses_to_write_into_the_committed_results() -> None:
    done = run_benchmark("dashboard_load.py", "--smoke", "--out", str(BENCHMARKS / "results"), timeout=60, ok=False)
    assert done.returncode == 2 and "--smoke does not write into benchmarks/results" in done.stderr
