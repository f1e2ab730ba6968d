"""The synthetic benchmark's harness: its smoke run end to end, its objectives, and its engine emulation."""

from __future__ import annotations

import csv
import json
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))

from conftest import run_benchmark  # noqa: E402
from harness.objectives import (  # noqa: E402
    GP_NOISE_VARIANCE,
    best_known,
    get_objective,
    gp_lengthscales,
    noise_draws,
)
from harness.runners import RunSpec, run  # noqa: E402
from localbo.policies import Policy, PolicyConfig, Suggestion, SuggestRequest, register  # noqa: E402
from localbo.policies.base import PolicyState, state_as  # noqa: E402

SMOKE_OBJECTIVES = {"branin", "gp25"}
SMOKE_RUNS = {("random", "direct"), ("random", "http"), ("sobol", "direct"), ("sobol", "http"), ("tpe", "optuna")}
SMOKE_EVALS = 8


def committed_meta() -> dict[str, Any]:
    path = COMMITTED / "synthetic.json"
    return json.loads(path.read_text())["meta"] if path.exists() else {}


@pytest.mark.live
def test_smoke_run_writes_csv_markdown_and_plots(tmp_path: Path) -> None:
    run_benchmark("synthetic.py", "--smoke", "--out", str(tmp_path), timeout=120)

    with (tmp_path / "synthetic.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    runs: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        runs[(row["objective"], row["method"], row["runner"], row["seed"])].append(row)
    expected = {(o, m, r, "0") for o in SMOKE_OBJECTIVES for m, r in SMOKE_RUNS}
    assert set(runs) == expected
    assert len(rows) == len(expected) * SMOKE_EVALS
    for key, run_rows in runs.items():
        assert [int(r["eval"]) for r in run_rows] == list(range(1, SMOKE_EVALS + 1)), key
        best = [float(r["best_so_far"]) for r in run_rows]
        f = [float(r["f"]) for r in run_rows]
        assert all(b1 <= b0 for b0, b1 in zip(best, best[1:], strict=False)), f"{key}: best so far went up: {best}"
        assert best == [min(f[: i + 1]) for i in range(len(f))], key  # the running minimum of the noise-free values
        assert all(math.isfinite(float(r["y"])) for r in run_rows), key
        assert all(r["source"] != "fallback" for r in run_rows), key
    # The emulation of the engine is faithful: direct and HTTP runs of a policy evaluate the same points.
    for objective in SMOKE_OBJECTIVES:
        for method in ("random", "sobol"):
            direct = [float(r["f"]) for r in runs[(objective, method, "direct", "0")]]
            http = [float(r["f"]) for r in runs[(objective, method, "http", "0")]]
            assert http == pytest.approx(direct, rel=1e-9, abs=1e-9), (objective, method)

    for objective in SMOKE_OBJECTIVES:
        png = tmp_path / f"synthetic_{objective}.png"
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
    md = (tmp_path / "synthetic.md").read_text()
    assert md.startswith("# Synthetic benchmark")
    for objective in SMOKE_OBJECTIVES:
        section = md.split(f"## {objective}\n", 1)[1].split("\n## ", 1)[0]
        table_rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
        assert {tuple(c.strip() for c in line.split("|")[1:3]) for line in table_rows} == SMOKE_RUNS, section
    meta = json.loads((tmp_path / "synthetic.json").read_text())["meta"]
    assert meta["smoke"] is True
    # A smoke run never writes the committed results (compared by content, not mtime: a full run may be
    # writing there meanwhile).
    committed = committed_meta()
    assert committed.get("smoke") is not True and committed.get("date") != meta["date"]


# -- objectives -----------------------------------------------------------------------------------


def test_gp_objective_is_deterministic_per_instance_and_differs_between_instances() -> None:
    U = torch.rand(64, 25, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    first = get_objective("gp25", 3)
    again = first.fn.__class__(25, 3)  # rebuilt from scratch, not from the cache
    assert torch.equal(first(U), again(U))
    other = get_objective("gp25", 4)
    assert not torch.allclose(first(U), other(U))
    # Not flat: the values vary on the scale of the prior (outputscale 1, smoothed by the likelihood noise).
    assert 0.05 < float(first(U).std()) < 2.0
    assert torch.equal(noise_draws(first, 7, 50), noise_draws(first, 7, 50))
    assert not torch.equal(noise_draws(first, 7, 50), noise_draws(first, 8, 50))
    # a shorter run sees the noise of a league run's first evaluations, its last 16 included (torch's tail path)
    assert torch.equal(noise_draws(first, 7, 100), noise_draws(first, 7, 500)[:100])
    assert noise_draws(first, 7, 700).shape == (700,)  # beyond 500 the draws are made at the run's own length


def test_gp_lengthscales_follow_the_gibo_rule() -> None:
    # algorithms.md 4.1: d=25 in [0.52, 0.97], d=50 in [0.74, 1.37], d=100 in [1.05, 1.95]
    for d, (lo, hi) in {25: (0.52, 0.97), 50: (0.74, 1.37), 100: (1.05, 1.95)}.items():
        ls = gp_lengthscales(d)
        assert ls.shape == (d,)
        assert lo - 0.01 <= float(ls.min()) and float(ls.max()) <= hi + 0.01, (d, ls.min(), ls.max())
        assert torch.equal(ls, gp_lengthscales(d))


def test_gp_objective_noise_has_the_configured_variance() -> None:
    obj = get_objective("gp25", 0)
    assert obj.noise_std**2 == pytest.approx(GP_NOISE_VARIANCE)
    n = 20_000
    x = torch.full((n, 25), 0.5, dtype=torch.float64)
    generator = torch.Generator().manual_seed(1)
    values = obj.noisy(x, torch.randn(n, generator=generator, dtype=torch.float64))
    # The sample variance of n normal draws has a relative std of sqrt(2/n) = 1%: 5% is 5 sigma.
    assert float(values.var()) == pytest.approx(GP_NOISE_VARIANCE, rel=0.05)
    assert float(values.mean()) == pytest.approx(float(obj(x[:1])[0]), abs=5 * math.sqrt(GP_NOISE_VARIANCE / n))
    # The runs' own noise sequence too.
    eps = noise_draws(obj, 0, n)
    assert float((obj.noise_std * eps).var()) == pytest.approx(GP_NOISE_VARIANCE, rel=0.05)


def test_branin_known_minimum_is_reproduced_at_its_minimisers() -> None:
    branin = get_objective("branin")
    value, exact = best_known("branin")
    assert exact and value == pytest.approx(0.397887, abs=1e-6)
    X = torch.tensor([[-math.pi, 12.275], [math.pi, 2.275], [9.42478, 2.475]], dtype=torch.float64)
    assert branin(X).tolist() == pytest.approx([0.397887] * 3, abs=1e-5)
    assert float(branin(torch.tensor([0.0, 0.0]))[0]) > 1.0
    assert branin.bounds.tolist() == [[-5.0, 0.0], [10.0, 15.0]]


# -- the direct runner's emulation of the engine --------------------------------------------------------


class _ToyConfig(PolicyConfig):
    fail_at_n: int = -1  # raise when the study has this many completed points, to exercise the fallback


class _ToyState(PolicyState):
    x_t: list[float] | None = None
    calls: int | None = None


@register
class _ToyIncumbent(Policy):
    """Moves an incumbent x_t half-way to the best point so far; plans x_t and two points beside it."""

    name = "_harness-toy"
    Config = _ToyConfig
    State = _ToyState
    calls: ClassVar[list[SuggestRequest]] = []

    def suggest(self, request: SuggestRequest) -> Suggestion:
        type(self).calls.append(request)
        if len(request.X) == request.config.fail_at_n:  # type: ignore[attr-defined]
            raise RuntimeError("toy failure")
        state = state_as(request.state, _ToyState)
        x = torch.tensor(state.x_t or [0.5] * request.dim, dtype=torch.float64)
        if len(request.y):
            x = 0.5 * (x + request.X[int(torch.argmin(request.y))])
        X = torch.stack([x, (x + 0.05).clamp(0, 1), (x - 0.05).clamp(0, 1)])
        return Suggestion(X=X, state=_ToyState(x_t=x.tolist(), calls=(state.calls or 0) + 1))


def test_direct_runner_queues_plans_records_the_policy_incumbent_and_falls_back() -> None:
    _ToyIncumbent.calls.clear()
    result = run(RunSpec("branin", "_harness-toy", "direct", seed=0, evals=9))
    assert len(result.rows) == 9 and not result.errors
    # Three points per call, queued; the policy is asked again only when the queue is empty,
    # with the data so far and the state it returned last time.
    calls = _ToyIncumbent.calls
    assert [len(r.X) for r in calls] == [0, 3, 6]
    assert [r.state.calls for r in calls] == [None, 1, 2]
    assert all(len(r.X_pending) == 0 and r.count == 1 for r in calls)
    branin = get_objective("branin")
    for r in calls[1:]:
        assert r.y.tolist() == pytest.approx([row["y"] for row in result.rows[: len(r.y)]])
    assert torch.equal(calls[2].X[:3], calls[1].X)
    x_t = torch.tensor(calls[1].state.x_t, dtype=torch.float64)
    assert result.rows[0]["incumbent"] == pytest.approx(float(branin(branin.to_user(x_t))[0]))
    for block in range(3):  # each plan's first point is its x_t: f there is the incumbent's value
        rows = result.rows[3 * block : 3 * block + 3]
        assert {r["incumbent_from"] for r in rows} == {"policy"}
        assert rows[0]["f"] == pytest.approx(rows[0]["incumbent"])
        assert rows[1]["incumbent"] == rows[0]["incumbent"] == rows[2]["incumbent"]
    assert [r["source"] for r in result.rows] == ["_harness-toy"] * 9

    _ToyIncumbent.calls.clear()
    failed = run(RunSpec("branin", "_harness-toy", "direct", seed=0, evals=5, policy_config={"fail_at_n": 3}))
    assert [r["source"] for r in failed.rows] == ["_harness-toy"] * 3 + ["fallback", "_harness-toy"]
    assert len(failed.errors) == 1 and "toy failure" in failed.errors[0]
    assert _ToyIncumbent.calls[-1].state.calls == 1  # the failed call's state was not kept (there was none)


# -- merging result folders -----------------------------------------------------------------------


def _write_runs(folder: Path, runs: dict[tuple[str, int], int], command: str) -> None:
    """A results folder with one branin run per (method, seed) of the given length, as synthetic.py writes it."""
    from harness.report import append_csv, save_json, start_csv

    start_csv(folder / "synthetic.csv")
    summaries = []
    for (method, seed), evals in runs.items():
        rows = [
            {"objective": "branin", "instance": 0, "method": method, "runner": "direct", "seed": seed, "eval": i,
             "y": 10.0 - i, "f": 10.0 - i, "best_so_far": 10.0 - i, "incumbent": 10.0 - i,
             "incumbent_from": "best", "source": "policy", "elapsed_s": 0.1 * i}
            for i in range(1, evals + 1)
        ]  # fmt: skip
        append_csv(folder / "synthetic.csv", rows)
        summaries.append({"objective": "branin", "method": method, "runner": "direct", "seed": seed, "evals": evals,
                          "wall_s": 1.0, "errors": [], "n_errors": 0})  # fmt: skip
    failed = [{"key": f"branin/{m}/direct/seed {s}", "error": "cut"} for (m, s), n in runs.items() if n < 5]
    meta = {"date": "d", "command": command}
    save_json(folder / "synthetic.json", {"meta": meta, "runs": summaries, "failed": failed})


def test_merge_replaces_rerun_runs_keeps_the_others_and_the_hand_written_findings(tmp_path: Path) -> None:
    from harness.report import load_json, merge_results, read_csv, write_report

    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir(), theirs.mkdir()
    _write_runs(mine, {("random", 0): 5, ("sobol", 0): 3, ("sobol", 1): 5}, "first")
    _write_runs(theirs, {("sobol", 0): 5}, "rerun of the cut sobol seed")
    (mine / "synthetic_findings.md").write_text("## What we find\n\nWritten by hand.\n")

    meta = merge_results(mine, theirs, "synthetic")
    write_report(mine, "synthetic", meta, estimate_optimum=False)

    rows = read_csv(mine / "synthetic.csv")
    lengths = Counter((r["method"], r["seed"]) for r in rows)
    assert lengths == {("random", 0): 5, ("sobol", 0): 5, ("sobol", 1): 5}  # the cut run replaced, once
    state = load_json(mine / "synthetic.json")
    assert sorted((r["method"], r["seed"], r["evals"]) for r in state["runs"]) == [
        ("random", 0, 5), ("sobol", 0, 5), ("sobol", 1, 5)
    ]  # fmt: skip
    assert state["failed"] == []  # the cut run's failure went with it
    assert state["meta"]["command"] == "first"
    assert [m["command"] for m in state["meta"]["merged"]] == ["rerun of the cut sobol seed"]
    md = (mine / "synthetic.md").read_text()
    assert "merged runs" in md and "rerun of the cut sobol seed" in md
    assert md.rstrip().endswith("Written by hand.")
    sobol = next(line for line in md.splitlines() if line.startswith("| sobol "))
    assert "| 2 | 5 |" in sobol  # two seeds at 5 evaluations: the merged run is no longer cut to 3


def test_a_constrained_method_name_is_its_policy_and_its_modes() -> None:
    from harness.constrained import LOCALBO_METHODS, split_method

    assert split_method("la-minucb-safe") == ("la-minucb", {"safe"})
    assert split_method("la-minucb") == ("la-minucb", set())
    assert split_method("ei-greedy-exact") == ("ei", {"greedy", "exact"})
    assert split_method("turbo-avoid") == ("turbo", {"avoid"})
    from localbo.policies import get_policy

    for method in LOCALBO_METHODS:
        get_policy(split_method(method)[0])  # every listed method names a policy
