"""Core v3: one typed study handle (versioned configs that never turn into a 500), versioned worker messages.

The API tests run on SQLite and on the real Postgres (the ``api`` fixture).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
import torch
from conftest import unique
from localbo.policies import PolicyConfig, get_policy
from localbo.policies.minucb import MinUCBConfig
from localbo.storage.models import Study
from localbo.workers.wire import WIRE_VERSION, WireError, request_from_wire, request_to_wire, suggestion_from_wire
from pydantic import Field
from sqlalchemy import update

API = "/api/v1/studies"
SPACE = {"x": {"type": "float", "low": 0, "high": 1}, "y": {"type": "float", "low": 0, "high": 1}}


def _store(api: Any, name: str, **values: Any) -> None:
    """Overwrite a study's stored columns, as an older or newer release would have left them."""
    with api.app.state.service.db.begin() as conn:
        conn.execute(update(Study).where(Study.name == name).values(**values))


def _stored_config(api: Any, name: str) -> dict[str, Any]:
    return api.get(f"{API}/{name}").json()["policy_config"]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda cfg: {"policy_config": {**cfg, "a_field_a_later_release_removed": 1}}, id="unknown-key"),
        pytest.param(lambda cfg: {"policy_config": {**cfg, "delta": "wide"}}, id="no-longer-validates"),
        pytest.param(lambda cfg: {"policy_config_version": 99}, id="newer-version"),
        pytest.param(lambda cfg: {"policy": "a-policy-this-release-dropped"}, id="unknown-policy"),
    ],
)
def test_a_stored_config_that_no_longer_loads_is_served_fallback_points_not_a_500(api: Any, damage: Any) -> None:
    name = unique()
    assert api.post(API, json={"name": name, "space": SPACE, "policy": "minucb", "seed": 1}).status_code == 201
    _store(api, name, **damage(_stored_config(api, name)))
    for _ in range(2):  # the defect: every ask of such a study was a 500, forever
        resp = api.post(f"{API}/{name}/ask", json={"count": 2})
        assert resp.status_code == 200, resp.text
        trials = resp.json()["trials"]
        assert [t["source"] for t in trials] == ["fallback", "fallback"]
        assert all(0.0 <= t["params"][k] <= 1.0 for t in trials for k in SPACE)
        for t in trials:
            assert api.post(f"{API}/{name}/trials/{t['number']}/tell", json={"value": 1.0}).status_code == 200
    study = api.get(f"{API}/{name}").json()
    error = study["last_policy_error"]
    assert error and ("could not be loaded" in error or "no policy named" in error), error
    # every read of the study still answers
    for path in ("", "/policy", "/trials", "/best", "/export", "/analysis/importance"):
        assert api.get(f"{API}/{name}{path}").status_code == 200, path
    assert api.get(f"{API}/{name}/policy").json()["display"] is None


def test_a_valid_stored_config_still_runs_the_policy(api: Any) -> None:
    """Control: nothing above happens to an intact study."""
    name = unique()
    assert api.post(API, json={"name": name, "space": SPACE, "policy": "minucb", "seed": 1}).status_code == 201
    trials = api.post(f"{API}/{name}/ask", json={"count": 2}).json()["trials"]
    assert {t["source"] for t in trials} == {"minucb"}
    assert api.get(f"{API}/{name}").json()["last_policy_error"] is None


class _RenamedConfig(MinUCBConfig):
    """MinUCB's config in a later release that renamed ``delta`` to ``box_half_width``."""

    version: ClassVar[int] = 2
    box_half_width: float = Field(default=0.2, gt=0, le=0.5)

    @classmethod
    def migrate(cls, raw: dict[str, Any], from_version: int) -> dict[str, Any]:
        raw = dict(raw)
        raw["box_half_width"] = raw.pop("delta_old", 0.2)
        return raw


def test_load_config_migrates_an_older_version_and_refuses_a_newer_one() -> None:
    cls = get_policy("minucb")

    class Renamed(cls):  # type: ignore[valid-type, misc]
        Config = _RenamedConfig

    config, problem = Renamed.load_config({"delta_old": 0.3}, 1)
    assert problem is None and isinstance(config, _RenamedConfig) and config.box_half_width == 0.3
    config, problem = Renamed.load_config({"box_half_width": 0.1}, 2)
    assert problem is None and config is not None and config.box_half_width == 0.1
    config, problem = Renamed.load_config({"box_half_width": 0.1}, 3)
    assert config is None and problem is not None and "newer" in problem
    # the base class has no migration: an older version it cannot bring up to date is a problem, not a crash
    config, problem = cls.load_config({"delta": 0.1}, 0)
    assert config is None and problem is not None and "no migration" in problem


def _request() -> Any:
    from localbo.policies import SpaceStructure, SuggestRequest

    cls = get_policy("minucb")
    return SuggestRequest(
        dim=2,
        X=torch.rand(3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0)),
        y=torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64),
        numbers=torch.tensor([1, 2, 3]),
        X_pending=torch.zeros(0, 2, dtype=torch.float64),
        count=1,
        state=cls.State(),
        config=cls.Config(),
        seed=1,
        rng_seed=2,
        space=SpaceStructure(dim=2),
        n_failed=4,
    )


def test_worker_messages_carry_versions_and_a_mismatch_is_an_error_naming_the_side_to_upgrade() -> None:
    wire = json.loads(json.dumps(request_to_wire("minucb", _request())))
    assert wire["wire"] == WIRE_VERSION and wire["state"]["schema"] == get_policy("minucb").State.version
    name, back = request_from_wire(wire, torch.device("cpu"))
    assert name == "minucb" and back.config == get_policy("minucb").Config()
    assert back.n_failed == 4, "the failed trials' count travels to the worker"

    older = {k: v for k, v in wire.items() if k not in ("wire", "config_version")} | {"state": {}}
    with pytest.raises(WireError, match="upgrade the sender"):
        request_from_wire(older, torch.device("cpu"))
    newer = wire | {"wire": WIRE_VERSION + 1}
    with pytest.raises(WireError, match="upgrade this side"):
        request_from_wire(newer, torch.device("cpu"))
    newer_state = wire | {"state": {"schema": 99, "data": {}}}
    with pytest.raises(WireError, match="newer"):  # never a fresh state in its place
        request_from_wire(newer_state, torch.device("cpu"))
    newer_config = wire | {"config_version": 99}
    with pytest.raises(WireError, match="newer"):
        request_from_wire(newer_config, torch.device("cpu"))
    with pytest.raises(WireError, match="newer"):
        suggestion_from_wire({"wire": WIRE_VERSION, "X": [[0.5, 0.5]], "state": {"schema": 99, "data": {}}}, "minucb")


def test_a_config_version_is_stored_with_every_new_study(api: Any) -> None:
    name = unique()
    assert api.post(API, json={"name": name, "space": SPACE, "policy": "minucb"}).status_code == 201
    with api.app.state.service.db.begin() as conn:
        stored = conn.execute(Study.__table__.select().where(Study.name == name)).one()
    assert stored.policy_config_version == PolicyConfig.version == get_policy("minucb").Config.version


# -- one request, one unit of work -----------------------------------------------------------------


def _study(api: Any, policy: str = "sobol", **config: Any) -> str:
    name = unique()
    body = {"name": name, "space": SPACE, "policy": policy, "policy_config": config, "seed": 3}
    assert api.post(API, json=body).status_code == 201, name
    return name


def _trial(api: Any, name: str, number: int) -> dict[str, Any]:
    return api.get(f"{API}/{name}/trials/{number}").json()


def test_tell_and_ask_with_a_bad_ask_stores_nothing(api: Any) -> None:
    name = _study(api)
    (trial,) = api.post(f"{API}/{name}/ask").json()["trials"]
    resp = api.post(f"{API}/{name}/trials/1/tell-and-ask", json={"tell": {"value": 0.25}, "ask": {"count": 5000}})
    assert resp.status_code == 422 and resp.json()["detail"].startswith("count:"), resp.text
    assert _trial(api, name, 1)["state"] == "running", "the tell was stored though the request was refused"
    assert api.get(f"{API}/{name}").json()["summary"]["n_trials"] == 1
    # control: the same request with a good ask stores both halves
    ok = api.post(f"{API}/{name}/trials/1/tell-and-ask", json={"tell": {"value": 0.25}, "ask": {"count": 2}})
    assert ok.status_code == 200 and ok.json()["told"]["value"] == 0.25 and len(ok.json()["trials"]) == 2


def test_one_idempotency_key_for_tell_and_ask_on_two_trials_is_refused(api: Any) -> None:
    name = _study(api)
    api.post(f"{API}/{name}/ask", json={"count": 2})
    key = {"Idempotency-Key": unique("k")}
    first = api.post(f"{API}/{name}/trials/1/tell-and-ask", json={"tell": {"value": 1.0}}, headers=key)
    assert first.status_code == 200
    again = api.post(f"{API}/{name}/trials/1/tell-and-ask", json={"tell": {"value": 1.0}}, headers=key)
    assert again.json() == first.json(), "a retry replays the whole answer"
    other = api.post(f"{API}/{name}/trials/2/tell-and-ask", json={"tell": {"value": 2.0}}, headers=key)
    assert other.status_code == 422 and other.json()["detail"].startswith("Idempotency-Key:"), other.text
    assert _trial(api, name, 2)["state"] == "running", "the second call's tell was stored"
    # the key of a plain ask does not replay for a tell-and-ask either
    ask_key = {"Idempotency-Key": unique("k")}
    api.post(f"{API}/{name}/ask", headers=ask_key)
    mixed = api.post(f"{API}/{name}/trials/2/tell-and-ask", json={"tell": {"value": 2.0}}, headers=ask_key)
    assert mixed.status_code == 422 and _trial(api, name, 2)["state"] == "running"


def test_tell_and_ask_whose_plan_is_short_stores_the_tell_then_waits_for_the_policy(api: Any) -> None:
    """The local policy plans from the told value: the tell commits first, the ask then gets the policy's points."""
    name = _study(api, "minucb")
    first = api.post(f"{API}/{name}/ask", json={"count": 3, "wait_seconds": 120}).json()["trials"]
    for t in first[:-1]:
        assert api.post(f"{API}/{name}/trials/{t['number']}/tell", json={"value": 1.0}).status_code == 200
    body = {"tell": {"value": 0.5}, "ask": {"count": 2, "wait_seconds": 120}}
    resp = api.post(f"{API}/{name}/trials/{first[-1]['number']}/tell-and-ask", json=body)
    assert resp.status_code == 200, resp.text
    assert resp.json()["told"]["value"] == 0.5
    assert all(t["source"] == "minucb" for t in resp.json()["trials"]), resp.json()["trials"]


# -- a trial's study, beyond its name --------------------------------------------------------------


def test_a_stale_tell_never_lands_on_a_recreated_study(api: Any) -> None:
    name = _study(api)
    (old,) = api.post(f"{API}/{name}/ask").json()["trials"]
    assert api.delete(f"{API}/{name}").status_code == 204
    # deleted: a tell for its trial says the study is gone
    gone = api.post(f"{API}/{name}/trials/1/tell", json={"value": 1.0, "token": old["token"]})
    assert gone.status_code == 404, gone.text
    assert api.post(API, json={"name": name, "space": SPACE, "policy": "sobol", "seed": 4}).status_code == 201
    (new,) = api.post(f"{API}/{name}/ask").json()["trials"]
    assert new["number"] == old["number"] == 1 and new["token"] != old["token"]

    stale = api.post(f"{API}/{name}/trials/1/tell", json={"value": 9.0, "token": old["token"]})
    assert stale.status_code == 409 and stale.json()["detail"].startswith("token:"), stale.text
    combined = {"tell": {"value": 9.0, "token": old["token"]}, "ask": {"count": 1}}
    assert api.post(f"{API}/{name}/trials/1/tell-and-ask", json=combined).status_code == 409
    assert _trial(api, name, 1)["state"] == "running" and api.get(f"{API}/{name}").json()["summary"]["n_trials"] == 1
    # the new trial's rig tells it with its own token; every trial record carries that token
    ok = api.post(f"{API}/{name}/trials/1/tell", json={"value": 2.0, "token": new["token"]})
    assert ok.status_code == 200 and ok.json()["token"] == new["token"]
    assert _trial(api, name, 1)["token"] == new["token"]
    assert api.get(f"{API}/{name}/best").json()["token"] == new["token"]


def test_a_tell_without_a_token_works_as_before(api: Any) -> None:
    """Old clients send only the number: studies never recreated keep working for them."""
    name = _study(api)
    api.post(f"{API}/{name}/ask")
    assert api.post(f"{API}/{name}/trials/1/tell", json={"value": 1.0}).json()["value"] == 1.0
    assert api.post(f"{API}/{name}/trials/1/tell", json={"value": 1.0}).status_code == 200  # a retry


# -- an ask waits until its deadline, however many rounds it loses -----------------------------------


@pytest.fixture
def local(db_url: str):  # noqa: ANN201
    from conftest import make_settings
    from local_service import LocalService

    made: list[Any] = []

    def make(**overrides: object) -> Any:
        service = LocalService(make_settings(db_url, **overrides))
        made.append(service)
        return service

    yield make
    for service in made:
        service.close(wait=True)


def test_an_ask_that_keeps_losing_its_points_to_other_asks_waits_for_the_policy(local: Any) -> None:
    """The defect: after 20 lost rounds an ask got a fallback point however long it might still wait."""
    service = local(suggest_ahead=False, ask_wait_seconds=120)
    name = unique()
    service.create_study(name, "minimize", SPACE, "sobol", {"plan_ahead": 1}, seed=1)  # one point a plan
    planner, asking = service.service.planner, service.service.asking
    start, stolen = planner.start, []

    def start_then_lose_the_race(study_id: int, need: int) -> Any:
        job = start(study_id, need)
        if len(stolen) < 30:  # another client is faster 30 times in a row
            job.result(timeout=60)
            _, served = asking.step(name, 1, f"faster-client-{len(stolen)}", None)
            stolen.append(served["trials"][0]["number"])
        return job

    planner.start = start_then_lose_the_race
    (trial,) = service.ask(name, 1, "patient-client")["trials"]
    assert len(stolen) == 30
    assert trial["source"] == "sobol", "the ask gave up before its wait was over"
    assert service.get_study(name)["summary"]["n_fallback"] == 0


def test_the_planning_job_plans_for_every_ask_waiting_in_this_process(local: Any) -> None:
    import asyncio

    service = local(suggest_ahead=False, ask_wait_seconds=120)
    name = unique()
    service.create_study(name, "minimize", SPACE, "sobol", {"plan_ahead": 1}, seed=2)
    import threading

    needs: list[int] = []
    planner = service.service.planner
    start, plan, all_waiting = planner.start, planner.plan, threading.Event()

    def recording(study_id: int, need: int) -> Any:
        needs.append(need)
        if need == 8:
            all_waiting.set()
        return start(study_id, need)

    def plan_once_all_wait(*args: Any) -> Any:  # the first job computes only once every ask waits on it
        all_waiting.wait(timeout=60)
        return plan(*args)

    planner.start, planner.plan = recording, plan_once_all_wait

    async def eight() -> list[dict]:
        return await asyncio.gather(*(service.service.asking.ask(name, 1, f"rig-{i}") for i in range(8)))

    answers = asyncio.run(eight())
    sources = [a["trials"][0]["source"] for a in answers]
    assert sources == ["sobol"] * 8 and max(needs) == 8, needs  # the demand of the waiting asks, summed


def test_a_planning_job_that_fails_is_a_value_logged_and_recorded(local: Any, caplog: Any) -> None:
    from localbo.planning.outcomes import Failed

    service = local(suggest_ahead=False)
    name = unique()
    service.create_study(name, "minimize", SPACE, "sobol", seed=3)
    study_id = service.study_id(name)

    def broken(*args: Any) -> Any:
        raise RuntimeError("the database blinked")

    service.service.planner._plan_claimed = broken
    outcome = service.service.planner.start(study_id, 1).result(timeout=60)
    assert isinstance(outcome, Failed) and "the database blinked" in outcome.error
    assert any("planning study" in r.getMessage() for r in caplog.records), "not logged"
    assert "planning failed: RuntimeError: the database blinked" in service.get_study(name)["last_policy_error"]
    # suggest-ahead's job (whose future nobody reads) is logged the same way
    caplog.clear()
    with service.db.begin() as conn:
        from localbo.storage import repository as repo

        repo.update_study(conn, study_id, last_policy_error=None)
    service.service.settings.suggest_ahead = True
    job = service.service.planner.plan_ahead(study_id)
    assert job is not None and isinstance(job.result(timeout=60), Failed)
    assert any("planning study" in r.getMessage() for r in caplog.records)


def test_worker_messages_carry_constraints_and_parameter_constraints() -> None:
    import dataclasses

    from localbo.policies import Polytope

    polytope = Polytope(
        A_ub=torch.tensor([[1.0, 1.0]], dtype=torch.float64),
        b_ub=torch.tensor([1.0], dtype=torch.float64),
        A_eq=torch.zeros(0, 2, dtype=torch.float64),
        b_eq=torch.zeros(0, dtype=torch.float64),
    )
    C = torch.tensor([[0.5, -1.0], [-0.2, 0.1], [0.0, 0.0]], dtype=torch.float64)
    request = dataclasses.replace(_request(), C=C, polytope=polytope, max_violation_probability=0.05)
    _, back = request_from_wire(json.loads(json.dumps(request_to_wire("minucb", request))), torch.device("cpu"))
    assert back.C is not None and torch.equal(back.C, C)
    assert back.polytope is not None and torch.equal(back.polytope.A_ub, polytope.A_ub)
    assert back.polytope.A_eq.shape == (0, 2) and back.max_violation_probability == 0.05 and back.X_failed is None
    none = request_from_wire(json.loads(json.dumps(request_to_wire("minucb", _request()))), torch.device("cpu"))[1]
    assert none.C is None and none.polytope is None


@pytest.mark.postgres
def test_leases_and_claims_use_the_database_clock_not_a_skewed_host_s(pg_url: str, monkeypatch: Any) -> None:
    """Two hosts whose clocks differ by an hour still agree on leases and claims: both read Postgres's clock."""
    from datetime import datetime, timedelta

    import localbo.asking
    import localbo.storage.db
    import localbo.storage.models
    from conftest import make_settings
    from local_service import LocalService
    from localbo.planning.claims import Claims

    service = LocalService(make_settings(pg_url, suggest_ahead=False, lease_seconds=600))
    try:
        name = unique()
        service.create_study(name, "minimize", SPACE, "sobol", seed=1)
        skewed = lambda: datetime.now(localbo.storage.models.UTC) + timedelta(hours=1)  # noqa: E731
        monkeypatch.setattr(localbo.asking, "utcnow", skewed)  # this host runs an hour ahead
        (trial,) = service.ask(name)["trials"]
        lease = datetime.fromisoformat(trial["lease_expires_at"])
        true_now = datetime.now(localbo.storage.models.UTC)
        assert abs((lease - true_now).total_seconds() - 600) < 120, "the lease came from the host's skewed clock"
        # a claim another host took is live for this one, whatever this host's clock says
        claims = Claims(service.db, service.write)
        study_id = service.study_id(name)
        assert claims.take(study_id, "other-host")
        monkeypatch.setattr(localbo.storage.db, "datetime", _SkewedDatetime)
        status = claims.peek(study_id)
        assert status is not None and status.claimed
    finally:
        service.close(wait=True)


class _SkewedDatetime:
    """``datetime`` as a host an hour ahead sees it (``storage.db`` reads only ``now``)."""

    @staticmethod
    def now(tz: Any = None) -> Any:
        from datetime import datetime, timedelta

        return datetime.now(tz) + timedelta(hours=1)
