"""Restarts of a stalled local gradient policy (``restart_after``; restarts.py): when a run stalls, where the next
one starts, what its GP sees, what is stored, and what a study may not combine with them."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
import torch
from conftest import unique
from localbo.policies import PolicyConfigError, get_policy
from localbo.policies.local import Data, LocalPolicy, LocalState
from localbo.policies.restarts import RunState, after_step, restart_point, stalled
from policy_requests import make_request
from test_local_policies import drive

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def two_basins(x: torch.Tensor) -> torch.Tensor:
    """A shallow basin at the centre, where a local policy from x_0 = centre settles, and a deeper one in a corner."""
    shallow = -torch.exp(-(x - 0.5).pow(2).sum(-1) / 0.02)
    deep = -2.0 * torch.exp(-(x - 0.1).pow(2).sum(-1) / 0.01)
    return shallow + deep


def path_events(state: dict) -> list[str]:
    return [str(p["info"]["event"]) for p in state["path"]]


def test_the_run_counts_steps_without_an_improvement_beyond_turbos_margin() -> None:
    run = after_step(RunState(), torch.tensor([3.0, 1.0]))
    assert (run.best, run.stale) == (1.0, 0)
    run = after_step(run, torch.tensor([3.0, 1.0, 0.9995]))  # within 1e-3 of |best|: not an improvement
    assert (run.best, run.stale) == (1.0, 1)
    run = after_step(run, torch.tensor([3.0, 1.0, 0.9995, 0.5]))
    assert (run.best, run.stale) == (0.5, 0)
    assert not stalled(run, 1) and stalled(run.model_copy(update={"stale": 2}), 2)
    assert not stalled(run.model_copy(update={"stale": 99}), None)  # None: never


def test_the_restart_point_is_the_candidate_farthest_from_the_evaluated_points() -> None:
    X = torch.rand(40, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 0.3  # one corner
    x = restart_point(X, seed=7, restarts=0)
    assert x.shape == (3,) and bool(((x >= 0) & (x <= 1)).all())
    assert float(torch.cdist(x[None], X).min()) > 0.9  # the opposite corner's side, not near the data
    assert torch.equal(x, restart_point(X, seed=7, restarts=0))  # seeded: the same study, the same point
    assert not torch.equal(x, restart_point(X, seed=7, restarts=1))  # each restart its own sequence


def test_a_stalled_minucb_restarts_far_away_with_a_window_of_its_own_and_finds_the_deeper_basin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    windows: list[int] = []  # the rows of every objective fit, in call order
    original = LocalPolicy._fit

    def spy(self: LocalPolicy, data: Data, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("y") is None:
            windows.append(data.X.shape[0])
        return original(self, data, *args, **kwargs)

    monkeypatch.setattr(LocalPolicy, "_fit", spy)
    d = 2
    run = drive("minucb", two_basins, d, 60, config={"restart_after": 2})
    state = LocalState.model_validate(run.state)
    events = path_events(run.state)
    assert "restart" in events, events
    assert state.run is not None and state.run.restarts >= 1
    first = events.index("restart")
    entry = run.state["path"][first]
    start = torch.tensor(entry["x"], dtype=torch.float64)
    assert float(torch.cdist(start[None], run.X[: entry["n"]]).min()) > 0.2  # away from everything evaluated
    # Each step fits the current run's results only: the window shrinks back after every restart.
    assert len(windows) == events.count("step")  # one fit a step (the start has no results to fit)
    assert any(later < earlier for earlier, later in zip(windows, windows[1:], strict=False)), windows
    # Starting at the centre it settles in the shallow basin (-1); a restart finds the deep one (-2).
    assert float(two_basins(run.X).min()) < -1.5
    assert float(two_basins(drive("minucb", two_basins, d, 60).X).min()) > -1.2


def test_without_restart_after_the_state_and_the_path_are_the_papers() -> None:
    run = drive("minucb", two_basins, 2, 30)
    assert "run" not in run.state  # the stored state of a study without restarts is unchanged
    assert "restart" not in path_events(run.state)


@pytest.mark.parametrize("policy", ["gibo", "la-minucb", "mpd"])
def test_every_local_policy_takes_the_setting(policy: str) -> None:
    run = drive(policy, two_basins, 2, 40, config={"restart_after": 1})
    assert "run" in run.state and run.state["run"]["restarts"] >= 1, path_events(run.state)


@pytest.mark.parametrize(
    "needs", [{"constraints"}, {"failures"}, {"safety"}, {"objectives"}, {"constraints", "parameter_constraints"}]
)
def test_restarts_are_refused_where_a_run_cannot_be_judged_or_left_safely(needs: set[str]) -> None:
    cls = get_policy("minucb")
    config = cls.Config.model_validate({"restart_after": 3})
    with pytest.raises(PolicyConfigError) as caught:
        cls.check_needs("continuous", 4, frozenset(needs), config)
    assert caught.value.field == "policy_config.restart_after"
    cls.check_needs("continuous", 4, frozenset({"parameter_constraints"}), config)  # served
    cls.check_needs("continuous", 4, frozenset(needs), cls.Config.model_validate({}))  # no restarts: no refusal


def test_nan_free_restart_point_without_data() -> None:
    x = restart_point(torch.empty(0, 4, dtype=torch.float64), seed=1, restarts=0)
    assert x.shape == (4,) and all(math.isfinite(v) for v in x.tolist())


# --- over REST (SQLite and Postgres): the 422, and restarts inside the parameter constraints --------------------

API = "/api/v1/studies"
SPACE = {"a": {"type": "float", "low": 0, "high": 1}, "b": {"type": "float", "low": 0, "high": 1}}


def test_a_study_with_outcome_constraints_and_restarts_is_refused_naming_the_setting(api: Any) -> None:
    body = {
        "name": unique("restart"),
        "space": SPACE,
        "policy": "minucb",
        "policy_config": {"restart_after": 2},
        "objectives": [{"metric": "yield", "direction": "maximize"}],
        "constraints": [{"metric": "purity", "op": ">=", "bound": 0.95}],
    }
    resp = api.post(API, json=body)
    assert resp.status_code == 422, resp.text
    detail = resp.json()["detail"]
    assert detail.startswith("policy_config.restart_after:") and "constraints" in detail, detail
    assert api.get(f"{API}/{body['name']}").status_code == 404  # nothing stored


def test_restarts_keep_every_point_inside_the_parameter_constraints(api: Any) -> None:
    name = unique("restart")
    body = {
        "name": name,
        "space": SPACE,
        "policy": "minucb",
        "seed": 4,
        "policy_config": {"restart_after": 1},
        "parameter_constraints": [{"terms": {"a": 1, "b": 1}, "op": "<=", "bound": 1.2}],
    }
    assert api.post(API, json=body).status_code == 201
    for _ in range(30):
        (trial,) = api.post(f"{API}/{name}/ask", json={}).json()["trials"]
        a, b = trial["params"]["a"], trial["params"]["b"]
        assert a + b <= 1.2 + 1e-9, trial
        value = float(two_basins(torch.tensor([a, b], dtype=torch.float64)))
        assert api.post(f"{API}/{name}/trials/{trial['number']}/tell", json={"value": value}).status_code == 200
    view = api.get(f"{API}/{name}/policy").json()
    assert view["last_policy_error"] is None, view
    assert view["display"]["numbers"]["restarts"] >= 1, view["display"]["numbers"]


def test_auto_refuses_a_restart_setting_for_its_local_policies_where_the_study_rules_it_out() -> None:
    cls = get_policy("auto")
    config = cls.Config.model_validate({"configs": {"minucb": {"restart_after": 3}}})
    with pytest.raises(PolicyConfigError) as caught:
        cls.check_needs("continuous", 30, frozenset({"constraints"}), config)
    assert caught.value.field == "policy_config.configs.minucb.restart_after"
    cls.check_needs("continuous", 30, frozenset(), config)  # one objective, nothing to respect: served


def test_a_request_with_outcome_constraints_never_starts_a_run_whatever_the_config() -> None:
    """The guard behind the 422: a config that reached a constrained study by another road does not restart."""
    X = torch.rand(12, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    y = (X - 0.3).pow(2).sum(-1)
    C = (X.sum(-1) - 2.5).reshape(-1, 1)
    made = make_request("minucb", X, y, count=2, config={"restart_after": 1})
    got = get_policy("minucb")().suggest(dataclasses.replace(made, C=C))
    assert isinstance(got.state, LocalState) and got.state.run is None
    plain = get_policy("minucb")().suggest(made)
    assert isinstance(plain.state, LocalState) and plain.state.run is not None
