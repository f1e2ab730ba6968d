"""What drives a study's value, through the API, on SQLite and the real Postgres: parameter importance
(GP lengthscales and a random forest) and the GP's posterior mean over a pair of parameters.

References are independent of the route: the importance test knows which parameters the objective
uses; the surface test fits ``policies/gp.py``'s GP itself on the trials as the API lists them and
maps the grid's user-unit values into the unit cube with ``SearchSpace.to_unit``.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
from conftest import unique
from test_bad_input import assert_error, unchanged

pytestmark = pytest.mark.usefixtures("one_torch_thread")
API = "/api/v1/studies"
SIX = {
    "x0": {"type": "float", "low": 0, "high": 1},
    "x1": {"type": "float", "low": 1e-3, "high": 1, "log": True},
    "n": {"type": "int", "low": 1, "high": 6},
    "opt": {"type": "categorical", "choices": ["sgd", "adam", "lbfgs"]},
    "x4": {"type": "float", "low": -1, "high": 1},
    "x5": {"type": "float", "low": -1, "high": 1},
}


def six_objective(p: dict) -> float:
    """Driven by x0 (most), opt (some); x1, n, x4, x5 not at all."""
    return 8 * (p["x0"] - 0.3) ** 2 + (1.5 if p["opt"] == "lbfgs" else 0.0)


def random_params(rng: random.Random, space: dict) -> dict:
    out = {}
    for name, spec in space.items():
        if spec["type"] == "categorical":
            out[name] = rng.choice(spec["choices"])
        elif spec["type"] == "int":
            out[name] = rng.randint(spec["low"], spec["high"])
        elif spec.get("log"):
            out[name] = math.exp(rng.uniform(math.log(spec["low"]), math.log(spec["high"])))
        else:
            out[name] = rng.uniform(spec["low"], spec["high"])
    return out


def create(api, space: dict, policy: str = "random", name: str | None = None, **extra) -> str:  # noqa: ANN001
    name = name or unique("an")
    r = api.post(API, json={"name": name, "space": space, "policy": policy, "seed": 5, **extra})
    assert r.status_code == 201, r.text
    return name


def add(api, name: str, params: dict, value: float) -> dict:  # noqa: ANN001
    r = api.post(f"{API}/{name}/trials", json={"params": params, "value": value})
    assert r.status_code == 201, r.text
    return r.json()


def fill(api, name: str, space: dict, objective, n: int, seed: int = 0) -> None:  # noqa: ANN001
    rng = random.Random(seed)
    for _ in range(n):
        params = random_params(rng, space)
        add(api, name, params, objective(params))


# -- importance ----------------------------------------------------------------------------------


def test_importance_ranks_the_parameters_the_value_depends_on_first_by_both_methods(api) -> None:  # noqa: ANN001
    name = create(api, SIX)
    fill(api, name, SIX, six_objective, 4)
    early = api.get(f"{API}/{name}/analysis/importance").json()
    assert early["gp"] is None and early["forest"] is None and early["n_complete"] == 4
    assert "at least 5 completed trials" in early["note"] and early["parameters"] == list(SIX)

    fill(api, name, SIX, six_objective, 56, seed=1)
    r = api.get(f"{API}/{name}/analysis/importance")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["parameters"] == list(SIX) and body["n_complete"] == 60
    assert "last 60 of 60" in body["note"] and "gradient" in body["gp_method"]
    assert "permutation" in body["forest_method"]
    for method in ("gp", "forest"):
        shares = dict(zip(body["parameters"], body[method], strict=True))
        assert sum(shares.values()) == pytest.approx(1.0) and min(shares.values()) >= 0
        assert max(shares, key=shares.get) == "x0", (method, shares)
        assert shares["x0"] + shares["opt"] > 0.6, (method, shares)
        for unused in ("x1", "n", "x4", "x5"):
            assert shares[unused] < shares["opt"], (method, unused, shares)
    assert api.get(f"{API}/{name}/analysis/importance").json() == body  # cached: the same answer


def test_importance_is_cached_per_study_id_not_name(api) -> None:  # noqa: ANN001
    """A study deleted and created again under its name, with as many results, gets its own answer."""
    space = {"a": {"type": "float", "low": 0, "high": 1}, "b": {"type": "float", "low": 0, "high": 1}}
    name = create(api, space)
    fill(api, name, space, lambda p: 10 * p["a"], 12)
    first = api.get(f"{API}/{name}/analysis/importance").json()
    assert first["forest"][0] > first["forest"][1] and first["gp"][0] > first["gp"][1]
    assert api.delete(f"{API}/{name}").status_code == 204
    create(api, space, name=name)
    fill(api, name, space, lambda p: 10 * p["b"], 12)
    again = api.get(f"{API}/{name}/analysis/importance").json()
    assert again["n_complete"] == first["n_complete"] == 12
    assert again["forest"][1] > again["forest"][0] and again["gp"][1] > again["gp"][0]


def test_importance_of_constant_values_says_so(api) -> None:  # noqa: ANN001
    space = {"a": {"type": "float", "low": 0, "high": 1}, "b": {"type": "float", "low": 0, "high": 1}}
    name = create(api, space)
    fill(api, name, space, lambda p: 2.0, 6)
    body = api.get(f"{API}/{name}/analysis/importance").json()
    assert body["gp"] is None and body["forest"] is None and "same value" in body["note"]


# -- the posterior mean over a pair --------------------------------------------------------------

FOUR = {
    "x": {"type": "float", "low": -2, "high": 2},
    "lr": {"type": "float", "low": 1e-4, "high": 1, "log": True},
    "n": {"type": "int", "low": 1, "high": 4},
    "opt": {"type": "categorical", "choices": ["a", "b"]},
}


def four_objective(p: dict) -> float:
    return 3 * (p["x"] - 0.5) ** 2 + 0.2 * (math.log10(p["lr"]) + 2) ** 2 + 0.1 * p["n"] + (p["opt"] == "b") + 10.0


def test_surface_is_the_gp_posterior_mean_on_a_grid_in_user_units(api) -> None:  # noqa: ANN001
    from localbo.policies import gp
    from localbo.space import SearchSpace

    name = create(api, FOUR, policy="ei", policy_config={"kernel": "rbf"})
    fill(api, name, FOUR, four_objective, 30, seed=3)
    r = api.get(f"{API}/{name}/analysis/surface", params={"x": "x", "y": "lr", "size": 7})
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["available"] is True and s["x"] == "x" and s["y"] == "lr" and s["n_complete"] == 30
    assert s["log_x"] is False and s["log_y"] is True and s["fixed_at"] == "best"
    assert len(s["xs"]) == len(s["ys"]) == 7 and len(s["mean"]) == 7 and all(len(row) == 7 for row in s["mean"])
    assert s["xs"][0] == -2 and s["xs"][-1] == 2 and s["ys"][0] == pytest.approx(1e-4) and s["ys"][-1] == 1
    assert s["ys"][3] == pytest.approx(1e-2)  # geometric: the middle of 1e-4..1 on a log scale
    best = api.get(f"{API}/{name}/best").json()
    assert s["fixed"] == {"n": best["params"]["n"], "opt": best["params"]["opt"]}

    # the reference: the same GP fitted here to the trials as listed, evaluated point by point
    space = SearchSpace.parse(FOUR)
    trials = api.get(f"{API}/{name}/trials", params={"limit": 100}).json()["trials"]
    X = torch.tensor([space.to_unit(t["params"]) for t in trials], dtype=torch.float64)
    y = torch.tensor([t["value"] for t in trials], dtype=torch.float64)
    model = gp.fit_model(X, y, "rbf", maxiter=100)
    for i in (0, 3, 6):
        for j in (0, 2, 6):
            point = space.to_unit({**s["fixed"], "x": s["xs"][j], "lr": s["ys"][i]})
            with torch.no_grad():
                expected = float(model.posterior(torch.tensor([point], dtype=torch.float64)).mean)
            # the two fits agree to the optimiser's tolerance (the points went through user units and back)
            assert s["mean"][i][j] == pytest.approx(expected, rel=1e-4), (i, j)
    # in the study's units, and shaped by the data: lowest near x = 0.5, lr = 1e-2
    means = [v for row in s["mean"] for v in row]
    assert 9 < min(means) < 12 < max(means)
    i, j = divmod(means.index(min(means)), 7)
    assert abs(s["xs"][j] - 0.5) <= 0.7 and 1e-3 <= s["ys"][i] <= 1e-1


def test_surface_holds_the_others_at_the_local_policys_centre(api) -> None:  # noqa: ANN001
    space = {k: FOUR[k] for k in ("x", "lr")} | {"z": {"type": "float", "low": 0, "high": 1}}
    name = create(api, space, policy="turbo", policy_config={"n_init": 5})
    for _ in range(3):  # turbo's region exists once its initial design is told
        for t in api.post(f"{API}/{name}/ask", json={"count": 5}).json()["trials"]:
            p = t["params"]
            r = api.post(f"{API}/{name}/trials/{t['number']}/tell", json={"value": (p["x"] - 0.5) ** 2 + p["z"]})
            assert r.status_code == 200, r.text
    view = api.get(f"{API}/{name}/policy").json()
    centre = (view["display"] or {}).get("centre")
    assert centre is not None, view["display"]
    s = api.get(f"{API}/{name}/analysis/surface", params={"x": "x", "y": "lr", "size": 5}).json()
    assert s["available"] is True and s["fixed_at"] == "centre"
    assert s["fixed"] == {"z": pytest.approx(centre[2])}


def test_surface_says_why_it_is_not_available(api) -> None:  # noqa: ANN001
    without_model = create(api, FOUR, policy="sobol")
    fill(api, without_model, FOUR, four_objective, 6)
    s = api.get(f"{API}/{without_model}/analysis/surface", params={"x": "x", "y": "lr"}).json()
    assert s == {"x": "x", "y": "lr", "available": False, "reason": s["reason"], "n_complete": 6}
    assert "sobol" in s["reason"] and "no model" in s["reason"]

    early = create(api, FOUR, policy="ei")
    fill(api, early, FOUR, four_objective, 4)
    s = api.get(f"{API}/{early}/analysis/surface", params={"x": "x", "y": "lr"}).json()
    assert s["available"] is False and "at least 5 completed trials" in s["reason"]

    fill(api, early, FOUR, four_objective, 2, seed=9)
    s = api.get(f"{API}/{early}/analysis/surface", params={"x": "opt", "y": "lr"}).json()
    assert s["available"] is False and "opt is categorical" in s["reason"] and s["x"] == "opt"
    s = api.get(f"{API}/{early}/analysis/surface", params={"x": "n", "y": "lr"}).json()
    assert s["available"] is True and len(s["xs"]) == 30 and s["xs"][0] == 1 and s["xs"][-1] == 4  # an int axis


def test_bad_surface_queries_are_422s_naming_the_field_and_change_nothing(api) -> None:  # noqa: ANN001
    name = create(api, FOUR, policy="ei")
    fill(api, name, FOUR, four_objective, 6)
    url = f"{API}/{name}/analysis/surface"
    with unchanged(api, name):
        assert_error(api.get(url, params={"x": "nope", "y": "lr"}), 422, "x", "'nope'", "'lr'")
        assert_error(api.get(url, params={"x": "x", "y": "nope"}), 422, "y", "'nope'")
        assert_error(api.get(url, params={"x": "x", "y": "x"}), 422, "y", "other than x")
        assert_error(api.get(url, params={"x": "x", "y": "lr", "size": 4}), 422, "size", "5")
        assert_error(api.get(url, params={"x": "x", "y": "lr", "size": 61}), 422, "size", "60")
        assert_error(api.get(url, params={"x": "x", "y": "lr", "size": "big"}), 422, "size")
        assert_error(api.get(url, params={"x": "x"}), 422, "y", "required")
        assert_error(api.get(url, params={"y": "x"}), 422, "x", "required")
    assert api.get(f"{API}/nope-study/analysis/surface", params={"x": "x", "y": "lr"}).status_code == 404
    assert api.get(f"{API}/nope-study/analysis/importance").status_code == 404


def test_values_at_the_edge_of_float64_answer_200_never_a_5xx(api) -> None:  # noqa: ANN001
    space = {"a": {"type": "float", "low": -1e300, "high": 1e300}, "b": {"type": "float", "low": 0, "high": 1}}
    name = create(api, space, policy="ei")
    for i, value in enumerate((1.7e308, -1.7e308, 0.0, 1.0, 2.0, 3.0)):
        add(api, name, {"a": -1e300 + i * 3e299, "b": i / 6}, value)
    importance = api.get(f"{API}/{name}/analysis/importance")
    assert importance.status_code == 200, importance.text
    assert importance.json()["forest"] is None  # the values' spread overflows: nothing to permute against
    surface = api.get(f"{API}/{name}/analysis/surface", params={"x": "a", "y": "b", "size": 5})
    assert surface.status_code == 200, surface.text
    body = surface.json()
    assert (
        body["available"] is False
        and "not finite" in body["reason"]
        or all(math.isfinite(v) for row in body["mean"] for v in row)
    )


def test_a_finite_space_has_importance_and_a_surface_over_its_candidates_range(api) -> None:  # noqa: ANN001
    candidates = [
        {"id": f"g{i}-{j}", "params": {"u": i, "v": j / 4, "w": 1 + (i * j) % 3}} for i in range(6) for j in range(6)
    ]
    name = create(api, {"kind": "finite", "candidates": candidates}, policy="ucb", policy_config={"n_init": 3})
    for c in candidates[::3]:  # 12 results: u matters, v a little, w never varies among them
        add(api, name, c["params"], (c["params"]["u"] - 2) ** 2 + 0.1 * c["params"]["v"])
    importance = api.get(f"{API}/{name}/analysis/importance").json()
    assert importance["parameters"] == ["u", "v", "w"] and importance["n_complete"] == 12
    for method in ("gp", "forest"):
        assert importance[method][0] == max(importance[method]), (method, importance)
    s = api.get(f"{API}/{name}/analysis/surface", params={"x": "u", "y": "v", "size": 6}).json()
    assert s["available"] is True and s["xs"][0] == 0 and s["xs"][-1] == 5 and s["ys"][-1] == 1.25
    assert s["fixed_at"] == "best" and set(s["fixed"]) == {"w"}
    lowest = [min(range(6), key=row.__getitem__) for row in s["mean"]]  # per row: the u of the lowest mean
    assert all(1 <= s["xs"][j] <= 3 for j in lowest), lowest

    kernel = [[1.0 if a == b else 0.3 for b in range(4)] for a in range(4)]
    given = [{"id": f"k{i}", "params": {"u": i, "v": i % 2}} for i in range(4)]
    other = create(api, {"kind": "finite", "candidates": given, "kernel": kernel}, policy="ucb")
    s = api.get(f"{API}/{other}/analysis/surface", params={"x": "u", "y": "v"}).json()
    assert s["available"] is False and "kernel is given over its candidates" in s["reason"]


def test_the_new_read_routes_need_read_scope_on_the_study(tmp_path) -> None:  # noqa: ANN001
    from fastapi.testclient import TestClient
    from localbo.api import create_app
    from localbo.bootstrap import prepare_database
    from localbo.config import Settings

    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'auth.db'}", tokens="adm=admin;ro=read:lab-*;other=read:x-*"
    )
    prepare_database(settings)
    with TestClient(create_app(settings)) as client:
        adm, ro, other = ({"Authorization": f"Bearer {t}"} for t in ("adm", "ro", "other"))
        name = unique("lab")
        body = {"name": name, "space": FOUR, "policy": "ei", "seed": 1}
        assert client.post(API, json=body, headers=adm).status_code == 201
        rng = random.Random(0)
        for _ in range(6):
            params = random_params(rng, FOUR)
            r = client.post(
                f"{API}/{name}/trials", json={"params": params, "value": four_objective(params)}, headers=adm
            )
            assert r.status_code == 201
        routes = [
            (f"{API}/{name}/trials/1", {}),
            (f"{API}/{name}/analysis/importance", {}),
            (f"{API}/{name}/analysis/surface", {"x": "x", "y": "lr", "size": 5}),
        ]
        for url, params in routes:
            assert client.get(url, params=params).status_code == 401
            assert client.get(url, params=params, headers=other).status_code == 403
            assert client.get(url, params=params, headers=ro).status_code == 200
        client.app.state.service.close(wait=True)
