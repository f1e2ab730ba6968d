"""The global BO policies and their Lipschitz variants through the engine: create, ask, tell over the API (SQLite)."""

from __future__ import annotations

import math

import pytest
from conftest import unique

SPACE = {
    "x": {"type": "float", "low": -2.0, "high": 3.0},
    "lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
    "k": {"type": "int", "low": 1, "high": 4},
}
FAST = {"candidates": 256, "local_candidates": 32, "restarts": 2}  # small settings: the loop is what is tested


def objective(params: dict) -> float:
    return (params["x"] - 0.7) ** 2 + (math.log10(params["lr"]) + 2) ** 2 + 0.1 * params["k"]


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("policy", ["ucb", "ar-ucb", "tucb", "ei", "tei", "pi", "tpi", "ts", "ar-ts"])
def test_a_policy_runs_a_maximised_study_with_parallel_asks_through_the_engine(api, policy: str) -> None:  # noqa: ANN001
    name = unique(policy)
    body = {"name": name, "space": SPACE, "policy": policy, "policy_config": FAST, "direction": "maximize", "seed": 5}
    r = api.post("/api/v1/studies", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["policy_config"]["random_every"] == 4  # defaults filled in and stored
    told = 0
    while told < 10:
        r = api.post(f"/api/v1/studies/{name}/ask", json={"count": 2})
        assert r.status_code == 200, r.text
        trials = r.json()["trials"]
        assert len(trials) == 2 and trials[0]["params"] != trials[1]["params"]
        for trial in trials:
            p = trial["params"]
            assert set(p) == {"x", "lr", "k"}, p
            assert -2.0 <= p["x"] <= 3.0 and 1e-4 <= p["lr"] <= 1.0 and p["k"] in (1, 2, 3, 4), p
            assert trial["source"] == policy, trial  # never the engine's fallback
            r = api.post(f"/api/v1/studies/{name}/trials/{trial['number']}/tell", json={"value": -objective(p)})
            assert r.status_code == 200, r.text
            told += 1
    view = api.get(f"/api/v1/studies/{name}/policy").json()
    assert view["last_policy_error"] is None
    state = view["state"]
    assert state["hypers"]["kernel"] == "matern52" and len(state["hypers"]["lengthscale"]) == 3
    if policy in ("ar-ucb", "tucb", "tei", "tpi", "ar-ts"):
        assert state["lipschitz"]["L"] > 0 and not state["lipschitz"]["known"]
    best = api.get(f"/api/v1/studies/{name}/best").json()
    assert best is not None and best["value"] <= 0.0


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("db_url", ["sqlite", "postgres"], indirect=True)
@pytest.mark.parametrize("policy", ["ei", "ucb", "ts", "tei"])
def test_a_failed_trial_is_not_asked_again_without_failures_avoided(api, policy: str) -> None:  # noqa: ANN001
    """A study that does not avoid failures still counts its failed trials: before, a design point (or an
    acquisition point) whose trial failed was asked again and again, and the study stalled on it."""
    name = unique(policy)
    body = {"name": name, "space": SPACE, "policy": policy, "policy_config": FAST, "seed": 1}
    assert api.post("/api/v1/studies", json=body).status_code == 201
    asked = []
    for i in range(12):
        (trial,) = api.post(f"/api/v1/studies/{name}/ask", json={"count": 1}).json()["trials"]
        asked.append(tuple(trial["params"].values()))
        assert trial["source"] == policy
        url = f"/api/v1/studies/{name}/trials/{trial['number']}/tell"
        told = {"value": objective(trial["params"])} if i < 3 else {"state": "failed", "reason": "the rig faulted"}
        assert api.post(url, json=told).status_code == 200
    assert len(set(asked)) == len(asked), "no failed point asked twice"
