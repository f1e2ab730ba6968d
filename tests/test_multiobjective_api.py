"""Several objectives, the contract (issue 31): creation with 2 to 4 objectives and a reference point, tells of
several values, ``/pareto`` and the hypervolume in the summary, ``best``'s 409, exports, and the 422s.

Every test runs on SQLite and on the real Postgres (the ``api`` fixture).
"""

from __future__ import annotations

import csv
import io
from typing import Any

from conftest import unique
from test_constraints_api import API, SPACE, ask, refused

YIELD_COST = {
    "objectives": [{"metric": "yield", "direction": "maximize"}, {"metric": "cost", "direction": "minimize"}],
    "reference_point": {"yield": 0.0, "cost": 10.0},
}


def create(api: Any, policy: str = "random", **fields: Any) -> str:
    name = unique()
    resp = api.post(API, json={"name": name, "space": SPACE, "policy": policy, "seed": 1} | fields)
    assert resp.status_code == 201, resp.text
    return name


def tell(api: Any, name: str, number: int, values: dict[str, float]) -> dict[str, Any]:
    resp = api.post(f"{API}/{name}/trials/{number}/tell", json={"values": values})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_the_front_is_the_non_dominated_trials_and_the_hypervolume_is_what_they_dominate(api: Any) -> None:
    name = create(api, **YIELD_COST)
    study = api.get(f"{API}/{name}").json()
    assert study["objectives"] == YIELD_COST["objectives"] and study["reference_point"] == {"yield": 0.0, "cost": 10.0}
    trials = ask(api, name, 5)
    told = [
        {"yield": 0.5, "cost": 4.0},  # on the front
        {"yield": 0.8, "cost": 8.0},  # on the front
        {"yield": 0.4, "cost": 5.0},  # dominated by the first
        {"yield": 0.2, "cost": 1.0},  # on the front
        {"yield": 0.9, "cost": 12.0},  # beyond the reference point's cost: on the front, adds no volume
    ]
    for trial, values in zip(trials, told, strict=True):
        assert tell(api, name, trial["number"], values)["value"] == values["yield"]  # value: the first objective
    pareto = api.get(f"{API}/{name}/pareto").json()
    numbers = [t["number"] for t in trials]
    assert [t["number"] for t in pareto["trials"]] == [numbers[0], numbers[1], numbers[3], numbers[4]]
    assert pareto["reference_point"] == {"yield": 0.0, "cost": 10.0} and pareto["reference_point_inferred"] is False
    # the dominated area, by hand: steps at (cost 1, yield 0.2), (4, 0.5), (8, 0.8) up to (10, 0)
    area = 0.2 * (4 - 1) + 0.5 * (8 - 4) + 0.8 * (10 - 8)
    assert abs(pareto["hypervolume"] - area) < 1e-9
    steps = [(h["number"], round(h["hypervolume"], 9)) for h in pareto["history"]]
    assert steps == [
        (numbers[0], round(0.5 * 6, 9)),
        (numbers[1], round(0.5 * 4 + 0.8 * 2, 9)),
        (numbers[3], round(area, 9)),
    ]
    summary = api.get(f"{API}/{name}").json()["summary"]
    assert abs(summary["hypervolume"] - area) < 1e-9 and summary["pareto_size"] == 4
    assert summary["hypervolume_reference_point"] == {"yield": 0.0, "cost": 10.0}
    assert summary["best_value"] is None and summary["trials_since_improvement"] == 1
    assert [tuple(h) for h in summary["hypervolume_history"]][-1][0] == numbers[3]
    listed = {s["name"]: s for s in api.get(API).json()["studies"]}[name]
    assert abs(listed["summary"]["hypervolume"] - area) < 1e-9


def test_best_on_several_objectives_is_a_409_pointing_to_pareto_and_pareto_on_one_is_its_best(api: Any) -> None:
    several = create(api, **YIELD_COST)
    resp = api.get(f"{API}/{several}/best")
    assert resp.status_code == 409 and f"/api/v1/studies/{several}/pareto" in resp.json()["detail"]
    one = create(api, objectives=[{"metric": "yield", "direction": "maximize"}])
    assert api.get(f"{API}/{one}/pareto").json()["trials"] == []
    trials = ask(api, one, 2)
    tell(api, one, trials[0]["number"], {"yield": 0.2})
    tell(api, one, trials[1]["number"], {"yield": 0.7})
    pareto = api.get(f"{API}/{one}/pareto").json()
    assert [t["number"] for t in pareto["trials"]] == [trials[1]["number"]] and pareto["hypervolume"] is None


def test_an_inferred_reference_point_is_said_so_and_infeasible_trials_stay_off_the_front(api: Any) -> None:
    name = create(
        api,
        "morbo",
        objectives=YIELD_COST["objectives"],
        constraints=[{"metric": "purity", "op": ">=", "bound": 0.9}],
    )
    empty = api.get(f"{API}/{name}/pareto").json()
    assert empty["hypervolume"] is None and empty["reference_point"] == {"yield": None, "cost": None}  # nothing yet
    trials = ask(api, name, 3)
    tell(api, name, trials[0]["number"], {"yield": 0.5, "cost": 4.0, "purity": 0.95})
    tell(api, name, trials[1]["number"], {"yield": 0.9, "cost": 1.0, "purity": 0.5})  # dominates, but impure
    tell(api, name, trials[2]["number"], {"yield": 0.3, "cost": 2.0, "purity": 0.99})
    pareto = api.get(f"{API}/{name}/pareto").json()
    assert pareto["reference_point_inferred"] is True
    assert [t["number"] for t in pareto["trials"]] == [trials[0]["number"], trials[2]["number"]]
    ref = pareto["reference_point"]
    assert ref["yield"] < 0.3 and ref["cost"] > 4.0, "the inferred point is worse than the feasible front"
    assert pareto["hypervolume"] > 0
    summary = api.get(f"{API}/{name}").json()["summary"]
    assert (summary["n_feasible"], summary["n_infeasible"]) == (2, 1)


def test_exports_carry_every_objective(api: Any) -> None:
    name = create(api, **YIELD_COST)
    (trial,) = ask(api, name)
    tell(api, name, trial["number"], {"yield": 0.5, "cost": 4.0})
    text = api.get(f"{API}/{name}/export?format=csv").text
    row = next(csv.DictReader(io.StringIO(text)))
    assert float(row["values.yield"]) == 0.5 and float(row["values.cost"]) == 4.0
    # the JSON export's summary is the API's: no single best, the hypervolume and the front's size
    exported = api.get(f"{API}/{name}/export?format=json").json()["study"]["summary"]
    summary = api.get(f"{API}/{name}").json()["summary"]
    assert exported["best_value"] is None and exported["hypervolume"] == summary["hypervolume"] == 0.5 * 6.0
    assert exported["pareto_size"] == 1 and exported["hypervolume_history"] == [[trial["number"], 3.0]]


def test_the_422s_name_their_field(api: Any) -> None:
    def post(**fields: Any) -> Any:
        return api.post(API, json={"name": unique(), "space": SPACE, "policy": "random"} | fields)

    both = [{"metric": "yield", "direction": "maximize"}, {"metric": "cost"}]
    five = [{"metric": f"m{i}"} for i in range(5)]
    refused(post(objectives=five), "objectives")
    refused(post(objectives=[{"metric": "a"}, {"metric": "a"}]), "objectives[1].metric", "objectives[0]")
    refused(post(objectives=both, constraints=[{"metric": "cost", "op": "<=", "bound": 5}]), "constraints[0].metric")
    refused(post(objectives=both, reference_point={"yield": 0.0}), "reference_point.cost", "every objective")
    refused(post(objectives=both, reference_point={"yield": 0, "cost": 1, "x": 2}), "reference_point.x")
    refused(post(objectives=both[:1], reference_point={"yield": 0.0}), "reference_point", "several objectives")
    refused(post(objectives=both, policy="ei"), "objectives", "several objectives", "random")

    name = create(api, **YIELD_COST)
    (trial,) = ask(api, name)
    url = f"{API}/{name}/trials/{trial['number']}/tell"
    refused(api.post(url, json={"values": {"yield": 0.5}}), "values.cost")
    refused(api.post(url, json={"values": {"yield": 0.5, "cost": 1, "speed": 2}}), "values.speed")
    refused(api.post(url, json={"value": 0.5}), "values")
    assert api.get(f"{API}/{name}/trials/{trial['number']}").json()["state"] == "running", "nothing stored"


def test_a_single_objective_study_keeps_best_and_has_no_hypervolume(api: Any) -> None:
    name = create(api, objectives=[{"metric": "yield", "direction": "maximize"}])
    (trial,) = ask(api, name)
    tell(api, name, trial["number"], {"yield": 0.5})
    summary = api.get(f"{API}/{name}").json()["summary"]
    assert summary["best_value"] == 0.5 and summary["hypervolume"] is None
    assert api.get(f"{API}/{name}/best").json()["number"] == trial["number"]


def test_morbo_runs_a_study_through_the_api_with_no_fallback(api: Any) -> None:
    """Branin-Currin-like trade-off on the test space, 14 results: morbo's design, then its trust regions."""
    name = create(api, "morbo", policy_config={"n_init": 6, "regions": 2, "candidates": 512}, **YIELD_COST)
    for _ in range(14):
        (trial,) = ask(api, name)
        a, b = trial["params"]["a"], trial["params"]["b"]
        tell(api, name, trial["number"], {"yield": a * (1 - 0.2 * b), "cost": 2 + 6 * a * a + b})
    trials = api.get(f"{API}/{name}/trials").json()["trials"]
    assert {t["source"] for t in trials} == {"morbo"}, {t["source"] for t in trials}
    study = api.get(f"{API}/{name}").json()
    assert study["summary"]["n_fallback"] == 0 and study["last_policy_error"] is None
    assert study["summary"]["hypervolume"] > 0 and study["summary"]["pareto_size"] >= 2
    display = api.get(f"{API}/{name}/policy").json()["display"]
    assert display is not None and display["numbers"], display


def test_a_volume_past_the_double_range_keeps_the_history_before_it(api: Any) -> None:
    name = create(api, objectives=YIELD_COST["objectives"], reference_point={"yield": 0, "cost": 10})
    first, second = ask(api, name, 2)
    tell(api, name, first["number"], {"yield": 1.0, "cost": 2.0})
    tell(api, name, second["number"], {"yield": 1e308, "cost": -1e308})
    pareto = api.get(f"{API}/{name}/pareto").json()
    assert pareto["hypervolume"] is None and "double range" in pareto["hypervolume_note"]
    assert pareto["history"] == [{"number": first["number"], "hypervolume": 8.0}]
    summary = api.get(f"{API}/{name}").json()["summary"]
    assert summary["hypervolume"] is None and summary["hypervolume_history"] == [[first["number"], 8.0]]


def test_values_near_the_double_range_never_make_a_500(api: Any) -> None:
    name = create(api, objectives=YIELD_COST["objectives"])  # the reference point inferred
    trials = ask(api, name, 3)
    for trial, values in zip(trials, ({"yield": 1e300, "cost": -1e300}, {"yield": -1e300, "cost": 1e300},
                                      {"yield": 0.5, "cost": 2.0}), strict=True):  # fmt: skip
        tell(api, name, trial["number"], values)
    pareto = api.get(f"{API}/{name}/pareto")
    assert pareto.status_code == 200, pareto.text
    # the volume (about 1e600) has no JSON number: null, and the answer says why
    assert pareto.json()["hypervolume"] is None and "double range" in pareto.json()["hypervolume_note"]
    assert api.get(f"{API}/{name}").status_code == 200 and api.get(API).status_code == 200
    assert api.get(f"{API}/{name}/export?format=csv").status_code == 200
