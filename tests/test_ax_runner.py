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
