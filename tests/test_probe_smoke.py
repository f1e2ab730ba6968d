"""benchmarks/probe.py --smoke: a setting against the method as its benchmark runs it, seeds paired, written whole
into a results file (the findings' probes become results, not notes), so the script cannot rot; and each suite's
harness takes a probe's setting."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import BENCHMARKS, run_benchmark


def test_smoke_pairs_each_setting_with_the_first_seed_by_seed(tmp_path: Path) -> None:
    run_benchmark("probe.py", "--smoke", "--out", str(tmp_path), timeout=300)

    data = json.loads((tmp_path / "constrained_c_gramacy_minucb.json").read_text())
    assert data["meta"]["smoke"] is True and not data["failed"]
    assert data["settings"] == [{}, {"beta": 1.0}] and data["meta"]["checkpoints"] == [12]
    assert {(r["setting"], r["seed"]) for r in data["runs"]} == {(i, s) for i in (0, 1) for s in (0, 1)}
    for run in data["runs"]:
        assert run["fallbacks"] == 0 and run["cpu_s"] > 0 and 0 <= run["infeasible"] <= 12
        value = run["values"]["12"]
        assert value is None or value >= -1e-6  # regret against Gramacy's known optimum
    text = (tmp_path / "constrained_c_gramacy_minucb.md").read_text()
    assert text.startswith("# Probe: minucb on c_gramacy (constrained)") and "## After 12 evaluations" in text
    assert '| `{"beta": 1.0}` | 2 |' in text and "| `{}` (as the benchmark runs it) | 2 |" in text


def test_a_setting_reaches_the_policy_in_every_suite(tmp_path: Path) -> None:
    """A setting the policy's config refuses fails the run: so the setting got there (and a failed run is tabled,
    not fatal, while another setting's runs stand)."""
    for suite, problem in (("multiobjective", "dtlz2_10"), ("league", "ackley5"), ("constrained", "c_gramacy")):
        run_benchmark(
            "probe.py", "--suite", suite, "--problem", problem, "--method", "minucb", "--seeds", "1", "--evals", "6",
            "--setting", "{}", "--setting", '{"beta": -1}', "--out", str(tmp_path), "--name", suite, timeout=300,
        )  # fmt: skip
        data = json.loads((tmp_path / f"{suite}.json").read_text())
        assert [r["setting"] for r in data["runs"]] == [0], suite
        assert [f["setting"] for f in data["failed"]] == [1] and "beta" in data["failed"][0]["error"], suite
        assert "Failed runs: 1" in (tmp_path / f"{suite}.md").read_text()


def test_smoke_refuses_to_write_into_the_committed_results() -> None:
    done = run_benchmark("probe.py", "--smoke", "--out", str(BENCHMARKS / "results" / "probes"), timeout=60, ok=False)
    assert done.returncode == 2 and "--smoke does not write into benchmarks/results" in done.stderr
