"""Studies and trials through the API, on SQLite and on the real Postgres."""

from __future__ import annotations

import csv
import io
import time
from datetime import UTC, datetime

import torch
from conftest import unique
from localbo.policies import Policy, Suggestion, SuggestRequest, register
from localbo.policies.base import PolicyState, state_as

SPACE = {"x": {"type": "float", "low": 0, "high": 10}, "k": {"type": "int", "low": 0, "high": 3}}


def create(api, policy: str = "sobol", **extra) -> str:  # noqa: ANN001
    name = unique()
    r = api.post("/api/v1/studies", json={"name": name, "space": SPACE, "policy": policy, **extra})
    assert r.status_code == 201, r.text
    return name


def ask(api, name: str, **body) -> list[dict]:  # noqa: ANN001
    r = api.post(f"/api/v1/studies/{name}/ask", json=body)
    assert r.status_code == 200, r.text
    return r.json()["trials"]


def tell(api, name: str, number: int, value: float) -> dict:  # noqa: ANN001
    r = api.post(f"/api/v1/studies/{name}/trials/{number}/tell", json={"value": value})
    assert r.status_code == 200, r.text
    return r.json()


def test_create_get_list_delete(api) -> None:
    name = create(api, metadata={"owner": "lab-3"}, direction="maximize", seed=11)
    study = api.get(f"/api/v1/studies/{name}").json()
    assert study["metadata"] == {"owner": "lab-3"} and study["direction"] == "maximize" and study["seed"] == 11
    assert study["policy_config"] == {"plan_ahead": 64}  # defaults filled in and stored
    assert name in [s["name"] for s in api.get("/api/v1/studies").json()["studies"]]
    assert api.delete(f"/api/v1/studies/{name}").status_code == 204
    assert api.get(f"/api/v1/studies/{name}").status_code == 404
    assert api.delete(f"/api/v1/studies/{name}").status_code == 404


def test_asked_params_lie_in_the_space_and_follow_the_seeded_sequence(api) -> None:
    a, b = create(api, seed=3), create(api, seed=3)
    first = ask(api, a, count=5)
    assert [t["number"] for t in first] == [1, 2, 3, 4, 5]
    assert all(0 <= t["params"]["x"] <= 10 and t["params"]["k"] in (0, 1, 2, 3) for t in first)
    assert all(t["state"] == "running" and t["lease_expires_at"] for t in first)
    assert [t["params"] for t in ask(api, b, count=5)] == [t["params"] for t in first]


def test_best_follows_the_direction(api) -> None:
    for direction, expect in (("minimize", 1.0), ("maximize", 7.0)):
        name = create(api, direction=direction)
        assert api.get(f"/api/v1/studies/{name}/best").json() is None
        for trial, value in zip(ask(api, name, count=3), (3.0, 1.0, 7.0), strict=True):
            tell(api, name, trial["number"], value)
        assert api.get(f"/api/v1/studies/{name}/best").json()["value"] == expect
        assert api.get(f"/api/v1/studies/{name}").json()["summary"]["best_value"] == expect


def test_external_trials_are_stored_complete_and_numbered_in_turn(api) -> None:
    name = create(api)
    ask(api, name)
    r = api.post(f"/api/v1/studies/{name}/trials", json={"params": {"x": 2.5, "k": 1}, "value": -1.0})
    assert r.status_code == 201
    assert r.json() | {"created_at": None, "completed_at": None} == {
        "number": 2,
        "state": "complete",
        "params": {"x": 2.5, "k": 1},
        "value": -1.0,
        "values": None,  # only a study that names metrics has them
        "feasible": None,
        "reason": None,
        "source": "external",
        "client_id": None,
        "lease_expires_at": None,
        "created_at": None,
        "completed_at": None,
        "candidate": None,  # only finite spaces name one
        "token": ask(api, name)[0]["token"],  # the study's, as every trial of it carries
        "note": None,  # a person's note, none yet (PUT .../trials/{n}/note)
    }
    assert api.get(f"/api/v1/studies/{name}/best").json()["number"] == 2


def test_list_pages_with_after_and_filters_by_state(api) -> None:
    name = create(api)
    trials = ask(api, name, count=7)
    for t in trials[:4]:
        tell(api, name, t["number"], float(t["number"]))
    api.post(f"/api/v1/studies/{name}/trials/5/tell", json={"state": "failed", "reason": "clogged"})
    page = api.get(f"/api/v1/studies/{name}/trials", params={"limit": 3}).json()
    assert [t["number"] for t in page["trials"]] == [1, 2, 3] and page["next_after"] == 3
    page = api.get(f"/api/v1/studies/{name}/trials", params={"limit": 3, "after": 3}).json()
    assert [t["number"] for t in page["trials"]] == [4, 5, 6] and page["next_after"] == 6
    page = api.get(f"/api/v1/studies/{name}/trials", params={"after": 6}).json()
    assert [t["number"] for t in page["trials"]] == [7] and page["next_after"] is None
    failed = api.get(f"/api/v1/studies/{name}/trials", params={"state": "failed"}).json()["trials"]
    assert [(t["number"], t["reason"]) for t in failed] == [(5, "clogged")]
    summary = api.get(f"/api/v1/studies/{name}").json()["summary"]
    assert (summary["n_complete"], summary["n_failed"], summary["n_running"]) == (4, 1, 2)


def test_export_as_csv_and_json(api) -> None:
    name = create(api)
    for t in ask(api, name, count=3):
        tell(api, name, t["number"], t["params"]["x"] * 2)
    body = api.get(f"/api/v1/studies/{name}/export", params={"format": "json"}).json()
    assert body["study"]["name"] == name and len(body["trials"]) == 3
    r = api.get(f"/api/v1/studies/{name}/export", params={"format": "csv"})
    assert r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [int(row["number"]) for row in rows] == [1, 2, 3]
    for row, trial in zip(rows, body["trials"], strict=True):
        assert float(row["value"]) == trial["value"] and float(row["x"]) == trial["params"]["x"]
        assert int(row["k"]) == trial["params"]["k"]


def test_expired_leases_become_stale_and_their_points_are_offered_again(api) -> None:
    from localbo.storage import repository as repo
    from localbo.storage.models import utcnow
    from sqlalchemy import update

    name = create(api)
    first, kept = ask(api, name, count=2)
    with api.app.state.service.write.begin() as conn:  # the first lease ran out (no clock games, no sleeps)
        past = utcnow().replace(year=2000)
        conn.execute(update(repo.trials).where(repo.trials.c.number == first["number"]).values(lease_expires_at=past))
    assert api.post(f"/api/v1/studies/{name}/trials/{kept['number']}/heartbeat").status_code == 200
    again = ask(api, name)[0]
    assert again["params"] == first["params"] and again["source"] == "stale-retry" and again["number"] == 3
    states = {t["number"]: t["state"] for t in api.get(f"/api/v1/studies/{name}/trials").json()["trials"]}
    assert states == {1: "stale", 2: "running", 3: "running"}
    r = api.post(f"/api/v1/studies/{name}/trials/1/heartbeat")
    assert r.status_code == 409 and "stale" in r.json()["detail"]
    # a late result of a stale trial is still a result
    assert tell(api, name, 1, 4.0)["state"] == "complete"


@register
class ExplodingPolicy(Policy):
    """A policy that always fails, as a singular matrix or a fit error would."""

    name = "test-exploding"

    def suggest(self, request: SuggestRequest) -> Suggestion:
        raise torch.linalg.LinAlgError("singular matrix in the test policy")


@register
class FailsUntilDataPolicy(Policy):
    """Fails while no result is in (a fit on no data), then answers the cube's centre."""

    name = "test-fails-until-data"

    def suggest(self, request: SuggestRequest) -> Suggestion:
        if request.y.numel() == 0:
            raise RuntimeError("no data to fit yet")
        return Suggestion(X=torch.full((request.count, request.dim), 0.5, dtype=torch.float64), state=request.state)


class CountingState(PolicyState):
    calls: int = 0
    seen: dict[str, int] = {}
    best: float | None = None


@register
class CountingPolicy(Policy):
    """Proposes the centre of the cube; records what it saw in its state."""

    name = "test-counting"
    State = CountingState

    def suggest(self, request: SuggestRequest) -> Suggestion:
        seen = {"n": int(request.X.shape[0]), "pending": int(request.X_pending.shape[0])}
        best = request.y.min().item() if request.y.numel() else None
        X = torch.full((request.count, request.dim), 0.5, dtype=torch.float64)
        calls = state_as(request.state, CountingState).calls + 1
        return Suggestion(X=X, state=CountingState(calls=calls, seen=seen, best=best))


def test_a_failing_policy_falls_back_and_records_why(api) -> None:
    name = create(api, policy="test-exploding")
    trials = ask(api, name, count=2)
    assert [t["source"] for t in trials] == ["fallback", "fallback"]
    tell(api, name, trials[0]["number"], 1.0)
    study = api.get(f"/api/v1/studies/{name}").json()
    assert "LinAlgError: singular matrix in the test policy" in study["last_policy_error"]
    assert study["summary"]["n_complete"] == 1


def test_the_policy_error_is_the_latest_computation_s_and_clears_when_one_succeeds(api) -> None:
    name = create(api, policy="test-fails-until-data")
    (first,) = ask(api, name)
    assert first["source"] == "fallback"
    assert "RuntimeError: no data to fit yet" in api.get(f"/api/v1/studies/{name}").json()["last_policy_error"]
    tell(api, name, first["number"], 1.0)
    (second,) = ask(api, name)
    assert second["source"] == "test-fails-until-data"  # computed with the result in
    assert api.get(f"/api/v1/studies/{name}").json()["last_policy_error"] is None
    assert api.get(f"/api/v1/studies/{name}/policy").json()["last_policy_error"] is None
    assert api.get(f"/api/v1/studies/{name}").json()["summary"]["n_fallback"] == 1  # the fallback stays counted


def test_policy_sees_completed_and_pending_points_with_minimisation_values(api) -> None:
    name = create(api, policy="test-counting", direction="maximize")
    t1 = ask(api, name)[0]
    tell(api, name, t1["number"], 5.0)
    ask(api, name)  # running
    ask(api, name)
    with api.app.state.service.db.connect() as conn:
        from localbo.storage import repository as repo

        state = repo.get_study(conn, name).policy_state
    assert state["schema"] == 1
    assert state["data"]["calls"] == 3
    assert state["data"]["seen"] == {"n": 1, "pending": 1}
    assert state["data"]["best"] == -5.0  # maximised values reach the policy negated
    # the policy view says when, and on how many results, the state it shows was computed
    view = api.get(f"/api/v1/studies/{name}/policy").json()
    assert view["state"] == state["data"] and view["state_results"] == 1
    computed = datetime.fromisoformat(view["state_computed_at"])
    assert computed.tzinfo is not None and abs((datetime.now(UTC) - computed).total_seconds()) < 600


def test_idempotent_answers_are_kept_for_their_ttl_then_forgotten(make_client) -> None:
    api = make_client(idempotency_ttl_seconds=0.8)
    name = create(api)
    headers = {"Idempotency-Key": "rig-1-ask-1"}
    first = api.post(f"/api/v1/studies/{name}/ask", json={}, headers=headers).json()
    assert api.post(f"/api/v1/studies/{name}/ask", json={}, headers=headers).json() == first
    time.sleep(1.2)  # past the TTL and the engine's once-a-second clean-up
    ask(api, name)  # an ask runs the clean-up
    later = api.post(f"/api/v1/studies/{name}/ask", json={}, headers=headers).json()
    assert later["trials"][0]["number"] == 3


def test_a_failure_told_without_a_reason_reads_null_and_may_be_told_again(api) -> None:
    name = create(api)
    number = ask(api, name)[0]["number"]
    url = f"/api/v1/studies/{name}/trials/{number}/tell"
    first = api.post(url, json={"state": "failed"})
    assert first.status_code == 200 and first.json()["reason"] is None, first.text
    again = api.post(url, json={"state": "failed", "reason": ""})  # the same tell: nothing to do
    assert again.status_code == 200 and again.json()["reason"] is None, again.text
    other = api.post(url, json={"value": 1.0})
    assert other.status_code == 409 and "no reason given" in other.text, other.text
    exported = api.get(f"/api/v1/studies/{name}/export", params={"format": "json"}).json()["trials"]
    assert exported[0]["reason"] is None
