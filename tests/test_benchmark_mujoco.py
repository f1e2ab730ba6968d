"""The RL benchmark (linear policies on CartPole, Swimmer, Hopper): its episodes, its recorder, its smoke run.

Needs the ``bench`` extra (gymnasium, mujoco): these tests fail, not skip, without it.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from conftest import run_benchmark  # noqa: E402
from harness.objectives import get_objective  # noqa: E402
from harness.rl import TASKS  # noqa: E402
from harness.runners import RunSpec, run  # noqa: E402


def test_tasks_have_the_papers_parameter_counts_and_the_envs_sizes() -> None:
    import gymnasium as gym

    assert {name: task.dim for name, task in TASKS.items()} == {"cartpole": 4, "swimmer": 16, "hopper": 33}
    for task in TASKS.values():
        env = gym.make(task.env_id)
        assert env.observation_space.shape == (task.observations,), task.env_id
        assert (env.action_space.n == 2) if task.discrete else (env.action_space.shape == (task.actions,))


def test_an_episode_is_a_function_of_the_parameters_and_the_seed() -> None:
    for name in ("cartpole-h50", "swimmer-h20", "hopper-h20"):
        obj = get_objective(name)
        assert obj.direction == "maximize" and obj.episode is not None
        x = obj.to_user(torch.rand(obj.dim, generator=torch.Generator().manual_seed(1), dtype=torch.float64))
        assert obj.episode(x, 3) == obj.episode(x, 3), name
        returns = {obj.episode(x, s) for s in range(4)}
        assert len(returns) > 1, f"{name}: the reset seed changes nothing"  # random initial states
        assert obj.episode(-x, 3) != obj.episode(x, 3), name
    # CartPole: reward 1 per step, so a return is the episode's length, capped by the horizon.
    cartpole = get_objective("cartpole-h50")
    upright = torch.tensor([0.0, 0.0, 1.0, 0.5], dtype=torch.float64)  # push towards the pole's lean
    assert cartpole.episode(upright, 0) == 50.0
    assert cartpole.episode(-upright, 0) < 20.0
    assert float(cartpole(upright.unsqueeze(0))[0]) == 50.0  # the test-episode mean


def test_runs_see_the_same_episode_seeds_and_record_the_iterates_test_return() -> None:
    spec = RunSpec("cartpole-h50", "random", "direct", 0, 10)
    first, again = run(spec), run(spec)
    assert [r["y"] for r in first.rows] == [r["y"] for r in again.rows]
    rows = first.rows
    assert [r["f"] for r in rows] == [r["y"] for r in rows]  # one episode: the only value there is
    assert [r["best_so_far"] for r in rows] == [max(r["y"] for r in rows[: i + 1]) for i in range(len(rows))]
    # random exposes no iterate: the test return of the evaluated point with the best return stands in
    assert all(r["incumbent_from"] == "best" for r in rows)
    assert all(0 < r["incumbent"] <= 50 for r in rows)
    best = max(range(len(rows)), key=lambda i: rows[i]["y"])  # the first best
    assert len({r["incumbent"] for r in rows[best:]}) == 1  # it moves only when the best point does


def test_a_run_stops_at_its_deadline_and_keeps_what_it_evaluated() -> None:
    import time

    assert run(RunSpec("cartpole-h50", "random", "direct", 0, 10, deadline=time.time() - 1)).rows == []
    done = run(RunSpec("cartpole-h50", "random", "direct", 0, 10, deadline=time.time() + 600))
    assert len(done.rows) == 10


def test_smoke_run_writes_csv_markdown_and_plots(tmp_path: Path) -> None:
    run_benchmark("mujoco_rl.py", "--smoke", "--out", str(tmp_path), timeout=180)

    with (tmp_path / "mujoco.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    runs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        runs[(row["objective"], row["method"])].append(row)
    tasks = {"cartpole-h30", "swimmer-h30", "hopper-h30"}
    assert set(runs) == {(t, m) for t in tasks for m in ("la-minucb", "gibo", "minucb", "random")}
    for key, run_rows in runs.items():
        assert len(run_rows) == 12, key
        assert all(r["source"] != "fallback" for r in run_rows), key
        if key[1] != "random":  # the local policies expose x_t: its test return is recorded
            assert all(r["incumbent_from"] == "policy" for r in run_rows), key
    # Every method sees the same episode seeds: x_0 = the centre of the box = W = 0 for the local
    # policies, and their first evaluation is x_0, so its return is the same.
    for task in tasks:
        assert runs[(task, "gibo")][0]["y"] == runs[(task, "minucb")][0]["y"] == runs[(task, "la-minucb")][0]["y"]
    md = (tmp_path / "mujoco.md").read_text()
    assert md.startswith("# RL benchmark")
    for task in tasks:
        assert f"## {task} (d = " in md
        png = tmp_path / f"mujoco_{task}.png"
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
    meta = json.loads((tmp_path / "mujoco.json").read_text())["meta"]
    assert meta["smoke"] is True and "gymnasium 1." in meta["versions"]
