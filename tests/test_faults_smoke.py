"""The fault suite runs end to end in its smoke configuration (issue 16, must show): kill -9 of the API processes
under concurrent clients, a worker SIGKILLed mid-suggest, a Redis outage on a private redis-server, and the run's
Postgres connections terminated; nothing lost, duplicated or stuck, and each part back by itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import BENCHMARKS, run_benchmark

COMMITTED = BENCHMARKS / "results" / "faults.json"

pytestmark = pytest.mark.live


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="the Redis outage needs redis-server on the PATH")
@pytest.mark.timeout(900)  # about 75 s on a quiet machine; it starts a dozen servers and workers, slow when loaded
def test_smoke_run_loses_nothing_and_recovers_from_each_fault(tmp_path: Path, redis_env: dict[str, str]) -> None:
    before = COMMITTED.stat().st_mtime_ns if COMMITTED.exists() else None
    run_benchmark("faults.py", "--smoke", "--out", str(tmp_path), timeout=840)

    data = json.loads((tmp_path / "faults.json").read_text())
    assert (tmp_path / "faults.md").read_text().startswith("# Fault suite")
    rows = {row["scenario"]: row for row in data["rows"]}
    assert set(rows) == {"api-kill", "worker-kill", "redis-outage", "pg-disconnect"}
    for row in rows.values():
        assert (row["lost"], row["duplicated"], row["stuck"], row["client_errors"]) == (0, 0, 0, 0), row
        assert row["cycles"] > 0 and row["ok"], row
        assert row["service_cpu_s"] > 0 and row["wall_s"] > 0
    assert rows["worker-kill"]["recovery_s"] <= 60, "the policy is back within 60 s of the kill"
    assert rows["worker-kill"]["fallback"] == 0, "asks that wait for the policy get no fallback point"
    assert rows["redis-outage"]["recovery_s"] is not None, "a worker computes again once Redis is back"
    assert data["meta"]["smoke"] is True
    assert (COMMITTED.stat().st_mtime_ns if COMMITTED.exists() else None) == before


def test_smoke_refuses_to_write_into_the_committed_results() -> None:
    done = run_benchmark("faults.py", "--smoke", "--out", str(BENCHMARKS / "results"), timeout=60, ok=False)
    assert done.returncode == 2 and "--smoke does not write into benchmarks/results" in done.stderr
