"""The worker compute-time benchmark (tiny mode) times suggests through a real `localbo worker` on the real Redis."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_benchmark
from harness.processes import WorkerProcess

pytestmark = pytest.mark.live


def test_smoke_times_each_policy_and_size_through_a_real_worker(tmp_path: Path, redis_env: dict[str, str]) -> None:
    worker = WorkerProcess(tmp_path / "worker.log", **redis_env)
    out = tmp_path / "times.md"
    try:
        run_benchmark("worker_compute_time.py", "--smoke", "--out", str(out), env=redis_env)
    finally:
        worker.stop()
    lines = [line for line in out.read_text().splitlines() if line.startswith("| ") and not line.startswith("| policy")]
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("minucb", "3", "20"),
        ("minucb", "3", "30"),
        ("la-minucb", "3", "20"),
        ("la-minucb", "3", "30"),
    ]
    for row in rows:
        median, low, high = (float(v) for v in row[3:6])
        assert 0.0 < low <= median <= high
        assert row[6] == "cpu"  # computed by the worker, on its device
    assert "localbo.suggest" in worker.log()  # the worker, not this process, ran them
