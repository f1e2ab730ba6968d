"""benchmarks/multiobjective.py --smoke (issue 31): localbo's MORBO and random against Optuna's NSGA-II and
multi-objective TPE on Branin-Currin and the constrained C2DTLZ2, scored by log hypervolume difference and tabled
with costs, so the multi-objective benchmark's script cannot rot."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from tests.conftest import BENCHMARKS, run_benchmark

COMMITTED = BENCHMARKS / "results" / "multiobjective.json"


def test_smoke_run_tables_each_method_with_hypervolume_and_costs(tmp_path: Path) -> None:
    before = COMMITTED.stat().st_mtime_ns if COMMITTED.exists() else None
    run_benchmark("multiobjective.py", "--smoke", "--out", str(tmp_path), timeout=120)

    data = json.loads((tmp_path / "multiobjective.json").read_text())
    assert data["meta"]["smoke"] is True and not data["failed"]
    runs = {(r["problem"], r["method"]): r for r in data["runs"]}
    methods = {"morbo", "random", "nsga2", "tpe"}
    assert set(runs) == {(p, m) for p in ("branincurrin", "c2dtlz2") for m in methods}
    for run in runs.values():
        assert run["evals"] == 12 and run["wall_s"] >= 0 and run["cpu_s"] >= 0
        assert run["fallbacks"] == 0 and run["n_errors"] == 0, run["errors"]
        assert 0 <= run["infeasible"] <= 12
        hv, score = run["hv"]["12"], run["log_hv_diff"]["12"]
        max_hv = data["table"][run["problem"]]["max_hv"]
        assert 0 <= hv < max_hv and math.isclose(score, math.log10(max_hv - hv))
    assert all(r["infeasible"] == 0 for r in data["runs"] if r["problem"] == "branincurrin")
    assert math.isclose(data["table"]["branincurrin"]["max_hv"], 59.36011874867746)
    assert 0.3996 < data["table"]["c2dtlz2"]["max_hv"] < 0.4001, "the computed front beats BoTorch's NSGA-II estimate"
    text = (tmp_path / "multiobjective.md").read_text()
    assert text.startswith("# Multi-objective benchmark") and "## Goals (issue 31)" in text
    assert "| morbo | 1 | 12 |" in text and "## c2dtlz2 (d = 12, 2 objectives, 1 outcome constraint(s)" in text
    assert (COMMITTED.stat().st_mtime_ns if COMMITTED.exists() else None) == before


def test_smoke_refuses_to_write_into_the_committed_results() -> None:
    done = run_benchmark("multiobjective.py", "--smoke", "--out", str(BENCHMARKS / "results"), timeout=60, ok=False)
    assert done.returncode == 2 and "--smoke does not write into benchmarks/results" in done.stderr


def test_the_dtlz2_family_keeps_its_pareto_set_off_the_cube_centre_and_a_run_on_another_domain_is_dropped() -> None:
    import torch

    sys.path.insert(0, str(BENCHMARKS))
    from harness.multiobjective import SHIFTED, get_problem
    from multiobjective import aggregate

    for name, d in (("dtlz2_10", 10), ("dtlz2_30", 30), ("c2dtlz2", 12)):
        problem = get_problem(name)
        assert problem.domain == SHIFTED
        centre = problem.evaluate(problem.to_user(torch.full((d,), 0.5, dtype=torch.float64)))[0]
        assert float(centre.norm()) - 1 > 0.1, "where the local policies start is not on the front"
        u = torch.full((d,), 0.4, dtype=torch.float64)  # x_2..x_d = 0.5 in user units: on the front
        assert math.isclose(float(problem.evaluate(problem.to_user(u))[0].norm()), 1.0)
    assert get_problem("branincurrin").domain == ""
    run = {"problem": "dtlz2_10", "method": "random", "seed": 0, "evals": 1, "log_hv_diff": {"1": 0.0}, "infeasible": 0,
           "front_size": 1, "fallbacks": 0, "n_errors": 0, "errors": [], "wall_s": 0.0, "cpu_s": 0.0}  # fmt: skip
    assert aggregate([run], ["dtlz2_10"], ["random"])["dtlz2_10"]["rows"] == {}  # recorded on BoTorch's [0, 1]^d
    assert aggregate([{**run, "domain": SHIFTED}], ["dtlz2_10"], ["random"])["dtlz2_10"]["rows"]["random"]["seeds"] == 1


def test_auto_counts_among_ours_and_the_best_local_policy_keeps_its_own_verdict() -> None:
    sys.path.insert(0, str(BENCHMARKS))
    from multiobjective import goals

    def row(mean: float, se: float, seeds: int = 5) -> dict[str, object]:
        cell = {"seeds": seeds, "mean": mean, "se": se, "at_floor": 0}
        return {"seeds": seeds, "evals": 200, "log_hv_diff": {"100": cell, "200": cell}, "last": cell}

    rows = {"auto": row(0.30, 0.02), "morbo": row(0.98, 0.05), "gpsampler": row(0.31, 0.03)}
    verdict = goals(5, rows)["100"]
    assert (verdict["ours"], verdict["peer"], verdict["met"]) == ("auto", "gpsampler", True)
    assert (verdict["local"], verdict["local_met"]) == ("morbo", False)
    assert math.isclose(verdict["target"], 0.34)
    alone = goals(5, {"morbo": row(0.98, 0.05), "gpsampler": row(0.31, 0.03)})["100"]
    assert (alone["ours"], alone["local"], alone["met"], alone["local_met"]) == ("morbo", "morbo", False, False)
    lucky = {"morbo-nehvi": row(0.10, 0.01, seeds=2), "morbo": row(0.98, 0.05), "gpsampler": row(0.31, 0.03)}
    on_5 = goals(5, lucky, seeds=5)["100"]  # a row of ours on fewer seeds than the plan's decides nothing
    assert (on_5["ours"], on_5["local"], on_5["met"]) == ("morbo", "morbo", False)
    assert goals(5, lucky, seeds=2)["100"]["ours"] == "morbo-nehvi"
