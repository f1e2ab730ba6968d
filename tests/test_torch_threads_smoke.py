"""The torch-threads benchmark runs in its smoke configuration: a child process per thread setting and condition,
each reporting the threads torch took and a positive cost per suggest, written whole into the folder it is given."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import BENCHMARKS, run_benchmark


def test_smoke_run_times_one_thread_and_torch_default_quiet_and_beside_a_busy_process(tmp_path: Path) -> None:
    run_benchmark("torch_threads.py", "--smoke", "--conditions", "quiet,busy", "--out", str(tmp_path), timeout=600)
    data = json.loads((tmp_path / "torch_threads.json").read_text())
    runs = {(r["setting"], r["condition"]): r for r in data["runs"]}
    assert set(runs) == {(1, "quiet"), (0, "quiet"), (1, "busy"), (0, "busy")}
    assert runs[(1, "quiet")]["threads"] == 1 and runs[(1, "busy")]["threads"] == 1, "the setting reached torch"
    assert runs[(0, "quiet")]["threads"] >= 1, "torch's own choice, whatever the suite's OMP_NUM_THREADS"
    for run in runs.values():
        (case,) = run["cases"]
        assert case["policy"] == "minucb" and case["wall_s"] > 0 and case["cpu_s"] > 0
    text = (tmp_path / "torch_threads.md").read_text()
    assert text.startswith("# torch threads") and text.count("| minucb | 3 | 12 |") == 4
    assert data["meta"]["smoke"] is True


def test_an_unknown_condition_is_refused_naming_the_choices() -> None:
    done = run_benchmark("torch_threads.py", "--smoke", "--conditions", "idle", timeout=60, ok=False)
    assert done.returncode == 2 and "--conditions: unknown ['idle']" in done.stderr


def test_smoke_refuses_to_write_into_the_committed_results() -> None:
    done = run_benchmark("torch_threads.py", "--smoke", "--out", str(BENCHMARKS / "results"), timeout=60, ok=False)
    assert done.returncode == 2 and "--smoke does not write into benchmarks/results" in done.stderr
