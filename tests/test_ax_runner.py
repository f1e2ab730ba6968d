"""The league's Ax peer (``harness/runners.py::run_ax``): Ax's default generation strategy, run through the same
harness and Recorder as our policies, on the same objective and noise draws."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_benchmark


def test_ax_runs_its_default_strategy_through_the_synthetic_harness(tmp_path: Path) -> None:
    run_benchmark(
        "synthetic.py", "--objectives", "branin", "--methods", "ax,random", "--seeds", "1", "--evals", "7",
        "--no-optimum", "--out", str(tmp_path), "--name", "ax_smoke",
    )  # fmt: skip
    runs = json.loads((tmp_path / "ax_smoke.json").read_text())["runs"]
    ax = next(r for r in runs if r["method"] == "ax")
    assert ax["runner"] == "ax" and not ax.get("errors")
    rows = [line.split(",") for line in (tmp_path / "ax_smoke.csv").read_text().splitlines()[1:]]
    ours = [r for r in rows if r[2] == "ax"]
    assert len(ours) == 7 and all(r[11] == "ax" for r in ours)  # every point Ax's own, none a fallback
    best = [float(r[8]) for r in ours]
    assert best == sorted(best, reverse=True) and best[-1] == min(float(r[7]) for r in ours)


def test_ax_takes_the_reference_point_as_its_objective_thresholds_on_several_objectives() -> None:
    """The multi-objective benchmark's Ax peer (``harness/multiobjective.py``): qLogNEHVI scores the hypervolume
    over the thresholds Ax is given, so they must be the problem's reference point, the one the table scores by,
    and the outcome constraint must stay a constraint."""
    from harness.multiobjective import ax_client, get_problem, run_method

    problem = get_problem("c2dtlz2")
    config = ax_client(problem, seed=0)._experiment.optimization_config
    thresholds = [(t.metric_names, t.op.name, t.bound, t.relative) for t in config.objective_thresholds]
    assert thresholds == [([f"f{i}"], "LEQ", float(r), False) for i, r in enumerate(problem.ref)]
    constraints = [(c.metric_names, c.op.name, c.bound) for c in config.outcome_constraints]
    assert constraints == [(["c0"], "LEQ", 0.0)]

    def nodes(center: bool) -> list[str]:
        return [node.name for node in ax_client(problem, seed=0, center=center)._generation_strategy_or_choose()._nodes]

    assert nodes(True) == ["CenterOfSearchSpace", "Sobol", "MBM"]  # Ax's default, as the table's `ax` runs it
    assert nodes(False) == ["Sobol", "MBM"]  # `ax-nocenter`: the same without the centre point

    run, _ = run_method("c2dtlz2", "ax", seed=0, evals=6)  # Sobol's design, then one qLogNEHVI step
    assert len(run.Y) == 6 and run.source == ["ax"] * 6 and not run.errors


def test_ax_searches_the_mixture_on_its_simplex_in_the_constrained_benchmark() -> None:
    """The constrained benchmark's Ax peer (``harness/constrained.py``): Ax has no parameter equalities, so it
    searches 7 of the 8 fractions under their sum <= 1 and the last is the rest; every point it asks must then lie
    on the simplex, as our policies' points do."""
    from harness.constrained import run_method

    run = run_method("mixture8", "ax", seed=0, evals=6)  # Sobol's design, then one step with the outcome constraint
    assert len(run.f) == 6 and run.source == ["ax"] * 6 and not run.errors
    assert run.equality_violations == 0 and run.failed == 0
