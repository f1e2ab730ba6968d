"""One round trip per cycle (issue 19, item 1): POST .../trials/{n}/tell-and-ask, each half as it is alone."""

from __future__ import annotations

import pytest
from localbo_client import Client

from tests.conftest import unique

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0}}


def study(api) -> str:  # noqa: ANN001
    name = unique("cycle")
    assert (
        api.post("/api/v1/studies", json={"name": name, "space": SPACE, "policy": "sobol", "seed": 2}).status_code
        == 201
    )
    return name


def test_a_cycle_tells_and_hands_out_the_next_trials(api) -> None:  # noqa: ANN001
    name = study(api)
    (first,) = api.post(f"/api/v1/studies/{name}/ask", json={"client_id": "rig"}).json()["trials"]
    body = {"tell": {"value": 0.5}, "ask": {"count": 2, "client_id": "rig"}}
    answer = api.post(f"/api/v1/studies/{name}/trials/{first['number']}/tell-and-ask", json=body).json()
    assert answer["told"]["state"] == "complete" and answer["told"]["value"] == 0.5
    assert [t["number"] for t in answer["trials"]] == [2, 3] and all(t["state"] == "running" for t in answer["trials"])
    failed = api.post(
        f"/api/v1/studies/{name}/trials/2/tell-and-ask", json={"tell": {"state": "failed", "reason": "sensor"}}
    ).json()
    assert failed["told"]["state"] == "failed" and failed["told"]["reason"] == "sensor"
    assert [t["number"] for t in failed["trials"]] == [4], "the ask's defaults: one trial"


def test_a_retry_with_the_same_key_stores_once_and_returns_the_same_next_trials(api) -> None:  # noqa: ANN001
    name = study(api)
    (first,) = api.post(f"/api/v1/studies/{name}/ask", json={}).json()["trials"]
    url, headers = f"/api/v1/studies/{name}/trials/{first['number']}/tell-and-ask", {"Idempotency-Key": "cycle-1"}
    once = api.post(url, json={"tell": {"value": 1.0}}, headers=headers)
    again = api.post(url, json={"tell": {"value": 1.0}}, headers=headers)
    assert once.status_code == again.status_code == 200 and once.json() == again.json()
    trials = api.get(f"/api/v1/studies/{name}/trials").json()["trials"]
    assert [(t["number"], t["state"]) for t in trials] == [(1, "complete"), (2, "running")]


def test_an_empty_plan_after_the_tell_makes_the_ask_wait_for_the_policy(make_client) -> None:  # noqa: ANN001
    api = make_client(suggest_ahead=False, ask_wait_seconds=300)  # nothing planned after a tell: the ask computes
    name = unique("cycle-short")
    body = {"name": name, "space": SPACE, "policy": "sobol", "policy_config": {"plan_ahead": 1}, "seed": 3}
    assert api.post("/api/v1/studies", json=body).status_code == 201
    (trial,) = api.post(f"/api/v1/studies/{name}/ask", json={}).json()["trials"]
    for number in range(2, 5):
        url = f"/api/v1/studies/{name}/trials/{trial['number']}/tell-and-ask"
        answer = api.post(url, json={"tell": {"value": 0.1}})
        assert answer.status_code == 200, answer.text
        (trial,) = answer.json()["trials"]
        assert trial["number"] == number and trial["source"] != "fallback", trial
    trials = api.get(f"/api/v1/studies/{name}/trials").json()["trials"]
    assert [t["state"] for t in trials] == ["complete"] * 3 + ["running"]


def test_a_tell_that_conflicts_asks_nothing(api) -> None:  # noqa: ANN001
    name = study(api)
    (first,) = api.post(f"/api/v1/studies/{name}/ask", json={}).json()["trials"]
    api.post(f"/api/v1/studies/{name}/trials/1/tell", json={"value": 1.0})
    refused = api.post(f"/api/v1/studies/{name}/trials/1/tell-and-ask", json={"tell": {"value": 2.0}})
    assert refused.status_code == 409
    assert len(api.get(f"/api/v1/studies/{name}/trials").json()["trials"]) == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ask": {"count": 1}}, "tell"),
        ({"tell": {"value": "1"}}, "tell"),
        ({"tell": {"value": 1.0}, "ask": {"count": 0}}, "ask.count"),
        ({"tell": {"value": 1.0}, "ask": {"wait_seconds": -1}}, "ask.wait_seconds"),
        ({"tell": {"value": 1.0}, "next": 2}, "next"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(api, body: dict, field: str) -> None:  # noqa: ANN001
    name = study(api)
    api.post(f"/api/v1/studies/{name}/ask", json={})
    answer = api.post(f"/api/v1/studies/{name}/trials/1/tell-and-ask", json=body)
    assert answer.status_code == 422 and field in answer.json()["detail"], answer.text
    assert api.get(f"/api/v1/studies/{name}/trials").json()["trials"][0]["state"] == "running", "nothing changed"


def test_the_client_cycles_in_one_call(api) -> None:  # noqa: ANN001
    client = Client("http://testserver", transport=api._transport)
    remote = client.create_study(unique("client-cycle"), SPACE, policy="sobol", seed=1)
    trial = remote.ask()
    following = remote.tell_and_ask(trial, 0.25)
    assert trial.state == "complete" and trial.value == 0.25 and following.number == 2
    pair = remote.tell_and_ask(following, reason="broken", count=2)
    assert following.state == "failed" and [t.number for t in pair] == [3, 4]
    with pytest.raises(ValueError, match="not both"):
        remote.tell_and_ask(pair[0], 1.0, reason="x")
    remote.optimize(lambda p: p["x"], n_trials=6, n_workers=2)
    states = [t.state for t in remote.trials()]
    assert states.count("complete") == 7 and states.count("running") == 2  # pair's two, never told
