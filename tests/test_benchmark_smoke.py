"""The throughput benchmark runs end to end in its smoke configuration (SQLite, a few trials)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BENCHMARKS, run_benchmark

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "benchmarks" / "results" / "asktell_throughput.json"


@pytest.mark.live
def test_smoke_run_writes_results_with_positive_rates_and_no_errors(tmp_path: Path) -> None:
    before = COMMITTED.stat().st_mtime_ns if COMMITTED.exists() else None
    run_benchmark("asktell_throughput.py", "--smoke", "--out", str(tmp_path))

    data = json.loads((tmp_path / "asktell_throughput.json").read_text())
    assert (tmp_path / "asktell_throughput.md").read_text().startswith("# Ask/tell throughput")
    rows = data["rows"]
    systems = {row["system"] for row in rows}
    assert {"localbo over HTTP", "optuna RDB in-process", "HTTP floor: bare FastAPI route"} <= systems
    assert any(paragraph.startswith("**The HTTP floor**") for paragraph in data["findings"])
    assert {row["clients"] for row in rows if row["system"] == "localbo over HTTP"} >= {1, 2}
    for row in rows:
        where = f"{row['backend']} / {row['system']} / {row['clients']} client(s)"
        assert row["trials_per_s"] > 0, where
        assert row["errors"] == 0, f"{where}: {row['error_samples']}"
        assert row["done"] == row["trials"], where
        assert row["verified"], f"{where}: {row['check']}"
    assert data["meta"]["smoke"] is True
    # A smoke run never touches the committed results.
    assert (COMMITTED.stat().st_mtime_ns if COMMITTED.exists() else None) == before


@pytest.mark.parametrize(
    "script", ["asktell_throughput.py", "synthetic.py", "latency.py", "lipschitz.py", "dashboard.py", "mujoco_rl.py"]
)
def test_smoke_refuses_to_write_into_the_committed_results(script: str) -> None:
    done = run_benchmark(script, "--smoke", "--out", str(BENCHMARKS / "results"), timeout=60, ok=False)
    assert done.returncode == 2
    assert "--smoke does not write into benchmarks/results" in done.stderr
