"""Categorical parameters on continuous studies: one-hot coordinates, snapped points, policies that can and cannot."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest
from conftest import unique
from localbo.space import SearchSpace, SpaceError

API = "/api/v1/studies"
SPACE = {
    "x": {"type": "float", "low": 0, "high": 1},
    "optimizer": {"type": "categorical", "choices": ["sgd", "adam", "lbfgs"]},
    "layers": {"type": "int", "low": 1, "high": 4},
    "flag": {"type": "categorical", "choices": [True, False]},
}
PENALTY = {"sgd": 1.0, "adam": 0.0, "lbfgs": 2.0}


def trials_of(api: Any, name: str) -> list[dict[str, Any]]:
    return api.get(f"{API}/{name}/trials").json()["trials"]


def objective(params: dict[str, Any]) -> float:
    return (params["x"] - 0.3) ** 2 + PENALTY[params["optimizer"]] + 0.1 * params["layers"] + 0.5 * params["flag"]


def test_a_categorical_takes_one_coordinate_per_choice_and_decodes_by_argmax() -> None:
    space = SearchSpace.parse(SPACE)
    assert space.dim == 1 + 3 + 1 + 2 and space.kind == "categorical"
    assert SearchSpace.parse({"x": SPACE["x"]}).kind == "continuous"
    x = space.to_unit({"x": 0.5, "optimizer": "lbfgs", "layers": 2, "flag": False})
    assert x[1:4] == [0.0, 0.0, 1.0] and x[5:] == [0.0, 1.0]
    assert space.from_unit(x) == {"x": 0.5, "optimizer": "lbfgs", "layers": 2, "flag": False}
    relaxed = [0.5, 0.2, 0.7, 0.1, 0.4, 0.6, 0.6]  # a policy's point: argmax, the first on ties
    assert space.from_unit(relaxed)["optimizer"] == "adam" and space.from_unit(relaxed)["flag"] is True
    assert space.snap(relaxed) == [0.5, 0.0, 1.0, 0.0, 0.4, 1.0, 0.0]  # float and int coordinates kept
    assert space.spec()["optimizer"] == {"type": "categorical", "choices": ["sgd", "adam", "lbfgs"]}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("rmsprop", "expected one of ['sgd', 'adam', 'lbfgs']"), (1, "got 1"), (None, "got None")],
)
def test_a_value_outside_the_choices_is_refused_naming_the_parameter(value: Any, expected: str) -> None:
    space = SearchSpace.parse(SPACE)
    with pytest.raises(SpaceError, match=re.escape(expected)) as info:
        space.to_unit({"x": 0.5, "optimizer": value, "layers": 2, "flag": True})
    assert info.value.field == "params.optimizer"


def test_booleans_and_numbers_are_different_choices() -> None:
    space = SearchSpace.parse({"c": {"type": "categorical", "choices": [1, True, "1", 2.5]}})
    assert space.to_unit({"c": True}) == [0.0, 1.0, 0.0, 0.0]
    assert space.to_unit({"c": 1.0}) == [1.0, 0.0, 0.0, 0.0]  # JSON does not tell 1 from 1.0
    assert space.to_unit({"c": "1"}) == [0.0, 0.0, 1.0, 0.0]
    with pytest.raises(SpaceError, match="expected one of"):
        space.to_unit({"c": False})


@pytest.mark.parametrize(("policy", "trials"), [("ei", 24), ("ar-ucb", 12), ("ts", 12), ("random", 12)])
def test_a_study_with_categoricals_asks_valid_choices_and_learns_which_is_best(
    api: Any, policy: str, trials: int
) -> None:
    name = unique("cat")
    body = {"name": name, "space": SPACE, "policy": policy, "seed": 3, "direction": "minimize"}
    assert api.post(API, json=body).status_code == 201, "created"
    assert api.get(f"{API}/{name}").json()["space"]["optimizer"]["choices"] == ["sgd", "adam", "lbfgs"]
    for _ in range(trials):
        trial = api.post(f"{API}/{name}/ask", json={}).json()["trials"][0]
        params = trial["params"]
        assert params["optimizer"] in PENALTY and params["flag"] in (True, False) and 1 <= params["layers"] <= 4
        resp = api.post(f"{API}/{name}/trials/{trial['number']}/tell", json={"value": objective(params)})
        assert resp.status_code == 200, resp.text
    series = api.get(f"{API}/{name}/series").json()
    for x in series["trials"]["x"]:  # what a GP sees is the point evaluated: each categorical block one-hot
        assert sorted(x[1:4]) == [0.0, 0.0, 1.0] and sorted(x[5:7]) == [0.0, 1.0]
    assert {t["source"] for t in trials_of(api, name)} - {"sobol", "random", policy} == set()
    assert not api.get(f"{API}/{name}").json().get("last_policy_error")  # no fallback: the policy ran
    best = api.get(f"{API}/{name}/best").json()
    if policy == "ei":  # 24 evaluations: EI has found the best optimizer and flag
        assert best["params"]["optimizer"] == "adam" and best["params"]["flag"] is False
    rows = list(csv.DictReader(io.StringIO(api.get(f"{API}/{name}/export?format=csv").text)))
    assert len(rows) == trials and {r["optimizer"] for r in rows} <= set(PENALTY)


@pytest.mark.parametrize("policy", ["minucb", "gibo", "la-minucb", "mpd"])
def test_local_policies_refuse_a_categorical_space_naming_the_ones_that_run_on_it(api: Any, policy: str) -> None:
    name = unique("cat")
    resp = api.post(API, json={"name": name, "space": SPACE, "policy": policy})
    assert resp.status_code == 422
    detail = resp.json()["detail"]
    assert detail.startswith("policy:") and "categorical" in detail and "'ei'" in detail and "'random'" in detail
    assert api.get(f"{API}/{name}").status_code == 404


def test_an_external_trial_with_a_bad_choice_is_refused_and_nothing_is_stored(api: Any) -> None:
    name = unique("cat")
    assert api.post(API, json={"name": name, "space": SPACE, "policy": "random"}).status_code == 201
    good = {"x": 0.2, "optimizer": "adam", "layers": 3, "flag": False}
    assert api.post(f"{API}/{name}/trials", json={"params": good, "value": 1.5}).status_code in (200, 201)
    resp = api.post(f"{API}/{name}/trials", json={"params": {**good, "optimizer": "Adam"}, "value": 1.0})
    assert resp.status_code == 422 and resp.json()["detail"].startswith("params.optimizer:")
    assert [t["params"] for t in trials_of(api, name)] == [good]
