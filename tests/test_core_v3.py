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
from localbo.workers.wire import WireError, request_from_wire, request_to_wire, suggestion_from_wire
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
    )


def test_worker_messages_carry_versions_and_a_mismatch_is_an_error_naming_the_side_to_upgrade() -> None:
    wire = json.loads(json.dumps(request_to_wire("minucb", _request())))
    assert wire["wire"] == 2 and wire["state"]["schema"] == get_policy("minucb").State.version
    name, back = request_from_wire(wire, torch.device("cpu"))
    assert name == "minucb" and back.config == get_policy("minucb").Config()

    older = {k: v for k, v in wire.items() if k not in ("wire", "config_version")} | {"state": {}}
    with pytest.raises(WireError, match="upgrade the sender"):
        request_from_wire(older, torch.device("cpu"))
    newer = wire | {"wire": 3}
    with pytest.raises(WireError, match="upgrade this side"):
        request_from_wire(newer, torch.device("cpu"))
    newer_state = wire | {"state": {"schema": 99, "data": {}}}
    with pytest.raises(WireError, match="newer"):  # never a fresh state in its place
        request_from_wire(newer_state, torch.device("cpu"))
    newer_config = wire | {"config_version": 99}
    with pytest.raises(WireError, match="newer"):
        request_from_wire(newer_config, torch.device("cpu"))
    with pytest.raises(WireError, match="newer"):
        suggestion_from_wire({"wire": 2, "X": [[0.5, 0.5]], "state": {"schema": 99, "data": {}}}, "minucb")


def test_a_config_version_is_stored_with_every_new_study(api: Any) -> None:
    name = unique()
    assert api.post(API, json={"name": name, "space": SPACE, "policy": "minucb"}).status_code == 201
    with api.app.state.service.db.begin() as conn:
        stored = conn.execute(Study.__table__.select().where(Study.name == name)).one()
    assert stored.policy_config_version == PolicyConfig.version == get_policy("minucb").Config.version
