"""Is a study alive, is it stuck: the summary's liveness fields and a policy that fell back, through the API
and the repository, on SQLite and the real Postgres."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
import torch
from conftest import make_settings, unique
from localbo.policies import Policy, Suggestion, SuggestRequest, register

API = "/api/v1/studies"
SPACE = {"x": {"type": "float", "low": 0, "high": 1}}


def create(api, direction: str = "minimize", policy: str = "random", space: dict | None = None) -> str:  # noqa: ANN001
    name = unique("live")
    body = {"name": name, "space": space or SPACE, "policy": policy, "direction": direction, "seed": 1}
    r = api.post(API, json=body)
    assert r.status_code == 201, r.text
    return name


def add(api, name: str, x: float, value: float) -> dict:  # noqa: ANN001
    r = api.post(f"{API}/{name}/trials", json={"params": {"x": x}, "value": value})
    assert r.status_code == 201, r.text
    return r.json()


def summary(api, name: str) -> dict:  # noqa: ANN001
    got = api.get(f"{API}/{name}").json()["summary"]
    listed = next(s for s in api.get(API).json()["studies"] if s["name"] == name)["summary"]
    assert listed == got  # the list (and the studies stream built from it) shows the same summary
    return got


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_trials_since_improvement_counts_completed_trials_after_the_first_best(api, direction: str) -> None:  # noqa: ANN001
    name = create(api, direction)
    empty = summary(api, name)
    assert empty["trials_since_improvement"] is None and empty["last_result_at"] is None
    assert empty["results_per_hour"] == 0 and empty["candidates_remaining"] is None
    sign = 1 if direction == "minimize" else -1
    for i, value in enumerate((5, 3, 1, 2, 4)):  # the best is trial 3
        add(api, name, i / 10, sign * value)
    assert summary(api, name)["trials_since_improvement"] == 2
    (running,) = api.post(f"{API}/{name}/ask", json={}).json()["trials"]  # trial 6
    r = api.post(f"{API}/{name}/trials/{running['number']}/tell", json={"state": "failed", "reason": "oven"})
    assert r.status_code == 200
    assert summary(api, name)["trials_since_improvement"] == 2  # a failure is no completed trial
    last = add(api, name, 0.9, sign * 1)  # equals the best: not an improvement, the first best stays
    s = summary(api, name)
    assert s["trials_since_improvement"] == 3
    assert s["last_result_at"] == last["completed_at"]
    assert s["results_per_hour"] == 7  # six complete, one failed, all just now
    add(api, name, 0.95, sign * 0.5)  # a new best
    assert summary(api, name)["trials_since_improvement"] == 0


def test_results_per_hour_counts_the_last_60_minutes_only(db_url: str) -> None:
    """Written through the repository with old completion times (the API stamps now)."""
    from localbo.bootstrap import Service, prepare_database
    from localbo.storage import repository as repo

    settings = make_settings(db_url)
    prepare_database(settings)
    service = Service(settings)
    try:
        name = unique("hour")
        service.studies.create(name, "minimize", SPACE, "random", seed=1)
        now = datetime.now(UTC)
        ages = [timedelta(hours=2), timedelta(minutes=61), timedelta(minutes=59), timedelta(minutes=5), None]
        states = ["complete", "failed", "complete", "failed", "running"]
        with service.write.begin() as conn:
            study = repo.get_study(conn, name)
            rows = [
                {
                    "study_id": study.id,
                    "number": k + 1,
                    "state": state,
                    "params": {"x": 0.5},
                    "x": [0.5],
                    "value": float(k) if state == "complete" else None,
                    "reason": "r" if state == "failed" else None,
                    "source": "random",
                    "client_id": "lab-1" if state == "running" else None,
                    "lease_expires_at": now + timedelta(minutes=5) if state == "running" else None,
                    "created_at": now - timedelta(hours=3),
                    "completed_at": now - age if age is not None else None,
                }
                for k, (state, age) in enumerate(zip(states, ages, strict=True))
            ]
            repo.insert_trials(conn, rows)
            repo.update_study(conn, study.id, trial_count=len(rows))
        s = service.studies.get(name)["summary"]
        assert s["results_per_hour"] == 2  # 59 and 5 minutes ago; not 61 minutes or 2 hours ago
        assert s["last_result_at"] == (now - timedelta(minutes=5)).isoformat()
        assert s["trials_since_improvement"] == 1  # trial 1 (value 0) is best; trial 3 completed after it
    finally:
        service.close(wait=True)


def test_candidates_remaining_counts_candidates_no_trial_holds(api) -> None:  # noqa: ANN001
    from localbo.storage import repository as repo
    from sqlalchemy import update

    candidates = [{"id": f"c{i}", "params": {"x": i, "y": i % 3}} for i in range(10)]
    name = create(api, space={"kind": "finite", "candidates": candidates})
    assert summary(api, name)["candidates_remaining"] == 10
    asked = api.post(f"{API}/{name}/ask", json={"count": 3}).json()["trials"]
    api.post(f"{API}/{name}/trials/{asked[0]['number']}/tell", json={"value": 1.0})
    api.post(f"{API}/{name}/trials/{asked[1]['number']}/tell", json={"state": "failed", "reason": "x"})
    r = api.post(f"{API}/{name}/trials", json={"params": {"x": 9, "y": 0}, "value": 2.0})
    assert r.status_code == 201 and r.json()["candidate"] == "c9"
    assert summary(api, name)["candidates_remaining"] == 6  # 3 asked (one still running) and c9 told
    with api.app.state.service.write.begin() as conn:  # the running trial's lease ran out, as a sweep marks it
        study_id = repo.get_study(conn, name).id
        number = asked[2]["number"]
        match = (repo.trials.c.study_id == study_id) & (repo.trials.c.number == number)
        conn.execute(update(repo.trials).where(match).values(state="stale", lease_expires_at=None))
    assert summary(api, name)["candidates_remaining"] == 7  # its candidate is offered again


# -- a policy that fell back -------------------------------------------------------------------------


@register
class SlowPolicy(Policy):
    """Answers the cube's centre after a second: later than an ask that waits 0 s."""

    name = "test-slow-liveness"

    def suggest(self, request: SuggestRequest) -> Suggestion:
        time.sleep(1.0)
        return Suggestion(X=torch.full((request.count, request.dim), 0.5, dtype=torch.float64), state=request.state)


@register
class RaisingPolicy(Policy):
    name = "test-raising-liveness"

    def suggest(self, request: SuggestRequest) -> Suggestion:
        raise RuntimeError("the test policy broke")


def test_a_late_policy_that_fell_back_is_visible_in_the_summary_and_the_policy_view(make_client) -> None:  # noqa: ANN001
    api = make_client(ask_wait_seconds=0)
    name = create(api, policy="test-slow-liveness")
    assert summary(api, name)["n_fallback"] == 0 and api.get(f"{API}/{name}/policy").json()["last_fallback_at"] is None
    (trial,) = api.post(f"{API}/{name}/ask", json={}).json()["trials"]
    assert trial["source"] == "fallback"
    s = summary(api, name)
    assert s["n_fallback"] == 1 and s["last_fallback_at"] == trial["created_at"]
    view = api.get(f"{API}/{name}/policy").json()
    assert view["last_fallback_at"] == trial["created_at"]
    assert view["last_policy_error"] is None  # late is not an error; the fallback is what shows it


def test_a_policy_that_raised_shows_its_error_and_its_fallbacks(api) -> None:  # noqa: ANN001
    name = create(api, policy="test-raising-liveness")
    trials = api.post(f"{API}/{name}/ask", json={"count": 2}).json()["trials"]
    assert [t["source"] for t in trials] == ["fallback", "fallback"]
    study = api.get(f"{API}/{name}").json()
    assert "RuntimeError: the test policy broke" in study["last_policy_error"]
    assert study["summary"]["n_fallback"] == 2
    view = api.get(f"{API}/{name}/policy").json()
    assert "the test policy broke" in view["last_policy_error"] and view["last_fallback_at"] == trials[0]["created_at"]
