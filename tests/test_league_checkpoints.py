"""The league's early checkpoints (issue 29): values at 50/100/200/500 from the runs' curves, regret against f*,
ours cut short counted by their last value, a peer cut short left out, and the goals' verdicts."""

from __future__ import annotations

from typing import Any

import pytest
from harness.checkpoints import goals, markdown, scores

BRANIN_STAR = 0.397887


def cell(curves: dict[int, dict[int, float]], maximise: bool = False, objective: str = "branin") -> dict[str, Any]:
    seeds = {seed: {"curve": c, "instance": 0, "best": c[max(c)], "evals": max(c)} for seed, c in curves.items()}
    return {"seeds": seeds, "maximise": maximise, "objective": objective}


def test_regret_at_each_checkpoint_counts_ours_cut_short_and_leaves_a_short_peer_out() -> None:
    cells = {
        "minucb": cell({0: {50: 3.0, 100: 2.0, 200: 1.0, 500: 0.5}, 1: {50: 4.0, 100: 3.0, 180: 1.5}}),
        "cmaes": cell({0: {50: 2.5, 100: 2.2, 200: 2.0, 500: 1.0}, 1: {50: 3.5, 100: 2.4, 150: 2.3}}),
    }
    per = scores(cells, 500)
    assert per["minucb"][200] == pytest.approx({0: 1.0 - BRANIN_STAR, 1: 1.5 - BRANIN_STAR})
    assert per["minucb"][500][1] == pytest.approx(1.5 - BRANIN_STAR)  # ours: its value at its last evaluation
    assert set(per["cmaes"][200]) == {0}  # the peer's seed 1 stopped at 150: not known at 200
    assert per["cmaes"][50] == pytest.approx({0: 2.5 - BRANIN_STAR, 1: 3.5 - BRANIN_STAR})


def test_goals_need_a_local_leader_from_100_and_name_the_test() -> None:
    cells = {
        "minucb": cell({0: {50: 3.0, 100: 2.0, 200: 0.6, 500: 0.5}}),
        "cmaes": cell({0: {50: 2.5, 100: 1.5, 200: 2.0, 500: 0.45}}),
    }
    rows = {g["checkpoint"]: g for g in goals("branin", scores(cells, 500), False, 500)}
    assert rows[100]["leader"] == "cmaes" and not rows[100]["met"] and "behind" in rows[100]["test"]
    assert rows[200]["leader"] == "minucb" and rows[200]["met"] and "ahead" in rows[200]["test"]
    assert not rows[500]["met"]  # the peer leads by less than nothing: first is required from 100 on


def test_gp_objectives_are_judged_by_the_regret_ratio() -> None:
    rows = goals("gp25", {"minucb": {100: {0: 0.4}}, "turbo": {100: {0: 1.0}}}, False, 500)
    assert rows[0]["test"].startswith("ratio 0.40") and rows[0]["met"]
    rows = goals("gp25", {"minucb": {100: {0: 0.6}}, "turbo": {100: {0: 1.0}}}, False, 500)
    assert rows[0]["test"].startswith("ratio 0.60") and not rows[0]["met"]


def test_returns_are_maximised_and_tabled_with_the_last_checkpoint() -> None:
    cells = {
        "minucb": cell({0: {50: 300.0, 100: 900.0, 1000: 1100.0}}, maximise=True, objective="hopper"),
        "tpe": cell({0: {50: 200.0, 100: 950.0, 1000: 1000.0}}, maximise=True, objective="hopper"),
    }
    text = "\n".join(markdown({"hopper": cells}, ["hopper"], {"hopper": 1000}))
    assert "| method | @50 | @100 | @200 | @500 | @1000 |" in text
    assert "| minucb | 300 | 900 | 900 | 900 | 1.1e+03 |" in text  # returns, not regrets; best first
    assert "| hopper | 100 | tpe | minucb |" in text and "| hopper | 1000 | minucb |" in text
    assert "Goals met: 2 of 5 checkpoints." in text  # 50 and 1000 (ahead; first is needed at 100, 200, 500 only)
