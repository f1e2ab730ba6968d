"""The every-policy device check runs (tiny mode, on the CPU) and writes one row per thing each policy serves."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_benchmark


def test_smoke_runs_each_policy_on_each_thing_it_declares_and_records_no_error(tmp_path: Path) -> None:
    run_benchmark("policies_on_device.py", "--smoke", "--out", str(tmp_path))
    runs = json.loads((tmp_path / "policies_on_device.json").read_text())["runs"]
    served = {(r["method"], r["problem"]) for r in runs}
    assert served == {
        ("minucb", "c_hartmann6"), ("minucb", "mixture8"), ("minucb-avoid", "fail_hartmann6"),
        ("minucb-safe", "c_hartmann6"), ("minucb", "mo:branincurrin"),
        ("ei", "c_hartmann6"), ("ei", "mixture8"), ("ei-avoid", "fail_hartmann6"),
    }  # fmt: skip  # ei declares neither safety nor several objectives: no such rows
    for r in runs:
        assert r["evals"] == 12 and r["device"] == "cpu" and r["gpu_mib"] is None
        assert r["errors"] == 0 and r["fallbacks"] == 0 and r["off_equality"] == 0, r
    table = (tmp_path / "policies_on_device.md").read_text()
    assert "8 runs; 0 with a policy error or a point off the equality." in table
