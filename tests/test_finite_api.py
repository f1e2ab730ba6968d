"""Finite search spaces through the API, on SQLite and the real Postgres: create, ask, tell, refuse bad input."""

from __future__ import annotations

import pytest
from conftest import unique

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIXED = {"lengthscale": 0.2, "outputscale": 1.0, "noise_std": 0.05, "n_init": 3}


def grid_candidates(n: int = 5) -> list[dict]:
    return [{"id": f"c{i}-{j}", "params": {"x": i, "y": j / 2}} for i in range(n) for j in range(n)]


def objective(params: dict) -> float:
    return (params["x"] - 3) ** 2 + (params["y"] - 1) ** 2


def create(api, policy: str, space: dict, config: dict | None = None, **kw) -> str:  # noqa: ANN001, ANN003
    name = unique(policy)
    body = {"name": name, "space": space, "policy": policy, "policy_config": config or {}, "seed": 3, **kw}
    r = api.post("/api/v1/studies", json=body)
    assert r.status_code == 201, r.text
    return name


@pytest.mark.parametrize(("policy", "config"), [("chaining-ucb", FIXED), ("ucb", {"n_init": 3}), ("random", {})])
def test_asks_return_candidates_with_their_ids_and_never_one_twice_until_none_is_left(api, policy, config) -> None:  # noqa: ANN001
    candidates = grid_candidates()
    name = create(api, policy, {"kind": "finite", "candidates": candidates}, config)
    study = api.get(f"/api/v1/studies/{name}").json()
    assert study["space"] == {
        "kind": "finite",
        "params": {"x": {"type": "float", "low": 0, "high": 4}, "y": {"type": "float", "low": 0, "high": 2}},
        "candidates": 25,
        "kernel": None,
        "allow_repeats": False,
    }
    by_id = {c["id"]: c["params"] for c in candidates}
    seen = []
    while len(seen) < 25:
        r = api.post(f"/api/v1/studies/{name}/ask", json={"count": 2 if len(seen) < 24 else 1})
        assert r.status_code == 200, r.text
        for trial in r.json()["trials"]:
            assert trial["source"] in (policy, "fallback")
            assert trial["params"] == by_id[trial["candidate"]]
            seen.append(trial["candidate"])
            if len(seen) % 5:  # some fail: a failed candidate is asked, not asked again
                r = api.post(
                    f"/api/v1/studies/{name}/trials/{trial['number']}/tell", json={"value": objective(trial["params"])}
                )
            else:
                r = api.post(
                    f"/api/v1/studies/{name}/trials/{trial['number']}/tell", json={"state": "failed", "reason": "x"}
                )
            assert r.status_code == 200, r.text
    assert sorted(seen) == sorted(by_id)
    r = api.post(f"/api/v1/studies/{name}/ask", json={})
    assert r.status_code == 409 and "0 of the study's 25 candidates are left" in r.json()["detail"]
    best = api.get(f"/api/v1/studies/{name}/best").json()
    assert best["candidate"] in by_id and best["params"] == by_id[best["candidate"]]


def test_a_csv_space_with_a_kernel_matrix_and_repeats_allowed(api) -> None:  # noqa: ANN001
    csv = "id,a,b\ng0,0.0,1\ng1,1.0,1\ng2,2.0,3\n"
    kernel = [[1.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.0]]
    space = {"kind": "finite", "csv": csv, "kernel": kernel, "allow_repeats": True}
    name = create(api, "chaining-ucb", space, {"n_init": 1, "outputscale": 1.0, "noise_std": 0.1})
    asked = []
    for _ in range(6):
        trial = api.post(f"/api/v1/studies/{name}/ask", json={}).json()["trials"][0]
        asked.append(trial["candidate"])
        api.post(f"/api/v1/studies/{name}/trials/{trial['number']}/tell", json={"value": trial["params"]["a"]})
    assert set(asked) <= {"g0", "g1", "g2"} and len(set(asked)) < len(asked)  # a repeat: allowed here
    assert api.get(f"/api/v1/studies/{name}").json()["space"]["kernel"] == "matrix"
    assert api.get(f"/api/v1/studies/{name}").json()["last_policy_error"] is None


def test_an_external_trial_must_be_a_candidate_and_the_policy_then_skips_it(api) -> None:  # noqa: ANN001
    name = create(api, "random", {"kind": "finite", "candidates": grid_candidates(2)})
    r = api.post(f"/api/v1/studies/{name}/trials", json={"params": {"x": 0.5, "y": 0}, "value": 1.0})
    assert r.status_code == 422 and "params: not one of the study's candidates" in r.json()["detail"]
    r = api.post(f"/api/v1/studies/{name}/trials", json={"params": {"x": 1, "z": 0}, "value": 1.0})
    assert r.status_code == 422 and r.json()["detail"].startswith("params.z: unknown parameter")
    r = api.post(f"/api/v1/studies/{name}/trials", json={"params": {"x": 1, "y": 0.5}, "value": 1.0})
    assert r.status_code == 201 and r.json()["candidate"] == "c1-1"
    asked = [t["candidate"] for t in api.post(f"/api/v1/studies/{name}/ask", json={"count": 3}).json()["trials"]]
    assert sorted(asked) == ["c0-0", "c0-1", "c1-0"]


F = "finite"
ONE = [{"params": {"x": 1}}]
TWO = [{"params": {"x": 1, "y": 2}}]
BAD = [
    ({"kind": F}, "space.candidates", "either 'candidates'"),
    ({"kind": F, "candidates": []}, "space.candidates", "non-empty list"),
    ({"kind": F, "candidates": [*ONE, {"params": {"x": "a"}}]}, "space.candidates[1].params.x", "expected a number"),
    ({"kind": F, "candidates": [*TWO, *ONE]}, "space.candidates[1].params", "missing ['y']"),
    ({"kind": F, "candidates": [*ONE, *TWO]}, "space.candidates[1].params", "unknown ['y']"),
    ({"kind": F, "candidates": [{"id": "a", **ONE[0]}] * 2}, "space.candidates[1].id", "duplicate id 'a'"),
    ({"kind": F, "candidates": [{**ONE[0], "colour": "red"}]}, "space.candidates[0]", "expected {"),
    ({"kind": F, "candidates": ONE * 3, "kernel": [[1, 0], [0, 1]]}, "space.kernel", "N = 3 candidates"),
    ({"kind": F, "candidates": ONE * 2, "kernel": [[1, 0.5], [0.2, 1]]}, "space.kernel", "symmetric"),
    ({"kind": F, "candidates": ONE * 2, "kernel": [[1, 2], [2, 1]]}, "space.kernel", "positive semi-definite"),
    ({"kind": F, "candidates": ONE * 2, "kernel": [[1, 0], [0]]}, "space.kernel[1]", "expected 2 numbers"),
    ({"kind": F, "csv": "id,x\na,1\nb,2,3\n"}, "space.csv line 3", "expected 2 cells"),
    ({"kind": F, "candidates": ONE * 100_001}, "space.candidates", "at most 100000"),
    ({"kind": F, "candidates": ONE, "allow_repeats": "yes"}, "space.allow_repeats", "true or false"),
]


@pytest.mark.parametrize(("space", "field", "message"), BAD, ids=[b[1] + ":" + b[2][:12] for b in BAD])
def test_bad_finite_spaces_get_a_422_naming_the_field_and_store_nothing(api, space, field, message) -> None:  # noqa: ANN001
    name = unique("bad")
    r = api.post("/api/v1/studies", json={"name": name, "space": space, "policy": "random"})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith(field + ":") and message in r.json()["detail"], r.json()["detail"]
    assert api.get(f"/api/v1/studies/{name}").status_code == 404


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_continuous_only_policies_refuse_a_finite_space_and_chaining_ucb_a_continuous_one(api) -> None:  # noqa: ANN001
    finite = {"kind": "finite", "candidates": grid_candidates(2)}
    for policy in ("minucb", "gibo", "ei", "sobol"):
        r = api.post("/api/v1/studies", json={"name": unique(), "space": finite, "policy": policy})
        assert r.status_code == 422 and r.json()["detail"].startswith(f"policy: {policy} does not run on a finite")
        assert "chaining-ucb" in r.json()["detail"]
    r = api.post(
        "/api/v1/studies",
        json={"name": unique(), "space": {"x": {"type": "float", "low": 0, "high": 1}}, "policy": "chaining-ucb"},
    )
    assert r.status_code == 422 and "does not run on a continuous search space" in r.json()["detail"]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_large_space_is_created_in_one_request_and_served_from_the_cache(api) -> None:  # noqa: ANN001
    candidates = [{"params": {"x": i % 1000, "y": i // 1000}} for i in range(100_000)]
    name = create(api, "random", {"kind": "finite", "candidates": candidates})
    trials = api.post(f"/api/v1/studies/{name}/ask", json={"count": 20}).json()["trials"]
    assert len({t["candidate"] for t in trials}) == 20
    assert all(t["params"] == candidates[int(t["candidate"])]["params"] for t in trials)
    series = api.get(f"/api/v1/studies/{name}/series").json()
    assert series["space"] == {
        "x": {"type": "float", "low": 0, "high": 999},
        "y": {"type": "float", "low": 0, "high": 99},
    }


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_only_a_finite_space_may_exceed_the_body_limit_at_creation_and_only_up_to_its_own(make_client) -> None:  # noqa: ANN001
    small = make_client(max_body_bytes=2000, max_create_bytes=20_000)
    finite = {"kind": "finite", "candidates": grid_candidates(6)}  # about 2.5 kB
    r = small.post("/api/v1/studies", json={"name": unique(), "space": finite, "policy": "random"})
    assert r.status_code == 201, r.text
    padded = {"x": {"type": "float", "low": 0, "high": 1}}
    name = unique()
    r = small.post("/api/v1/studies", json={"name": name, "space": padded, "metadata": {"pad": "z" * 5000}})
    assert r.status_code == 413 and "LOCALBO_MAX_BODY_BYTES" in r.json()["detail"]
    huge = {"kind": "finite", "candidates": grid_candidates(40)}
    r = small.post("/api/v1/studies", json={"name": name, "space": huge, "policy": "random"})
    assert r.status_code == 413 and "20000 bytes (LOCALBO_MAX_CREATE_BYTES)" in r.json()["detail"]
    assert small.get(f"/api/v1/studies/{name}").status_code == 404


@pytest.mark.parametrize("policy", ["chaining-ucb", "ucb", "random"])
def test_running_out_of_candidates_is_not_a_policy_failure(api, policy: str, caplog: pytest.LogCaptureFixture) -> None:  # noqa: ANN001
    """Planning ahead past the last candidate asked the policy for points there were none of: it raised, the engine
    logged a failure with its traceback, counted it and showed it on the study. Now the planner asks for no more
    than is left, and nothing when nothing is."""
    config = {} if policy == "random" else {"n_init": 2}
    name = create(api, policy, {"kind": "finite", "candidates": grid_candidates(2)}, config)
    failed = f'localbo_policy_computations_total{{outcome="failed",policy="{policy}"}}'

    def failures_counted() -> str:  # the process's counter line (other tests' failures count in it too)
        return next((line for line in api.get("/metrics").text.splitlines() if line.startswith(failed)), "")

    before = failures_counted()
    with caplog.at_level("ERROR", logger="localbo.planning"):
        for count in (3, 1):  # 3 asked of 4 at once: the plan ahead then wants more than the one left
            for trial in api.post(f"/api/v1/studies/{name}/ask", json={"count": count}).json()["trials"]:
                tell = {"value": objective(trial["params"])}
                assert api.post(f"/api/v1/studies/{name}/trials/{trial['number']}/tell", json=tell).status_code == 200
        r = api.post(f"/api/v1/studies/{name}/ask", json={})
        assert r.status_code == 409 and "0 of the study's 4 candidates are left" in r.json()["detail"]
        study = api.get(f"/api/v1/studies/{name}").json()
    assert study["last_policy_error"] is None
    assert not [r for r in caplog.records if "failed on study" in r.getMessage()]
    assert failures_counted() == before
