"""Constraints, the contract: named metrics, one objective, outcome and parameter constraints, failures mode and safe
mode at creation; tells of named values; feasibility in trials, best and summaries; the 422s naming their field.

Every test runs on SQLite and on the real Postgres (the ``api`` fixture).
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import unique

API = "/api/v1/studies"
SPACE = {"a": {"type": "float", "low": 0, "high": 1}, "b": {"type": "float", "low": 0, "high": 2}}
REACTOR = {
    "objectives": [{"metric": "yield", "direction": "maximize"}],
    "constraints": [{"metric": "purity", "op": ">=", "bound": 0.95}, {"metric": "t_peak", "op": "<=", "bound": 450}],
}


def create(api: Any, policy: str = "random", **fields: Any) -> str:
    name = unique()
    body = {"name": name, "space": SPACE, "policy": policy, "seed": 1} | fields
    resp = api.post(API, json=body)
    assert resp.status_code == 201, resp.text
    return name


def refused(resp: Any, field: str, *words: str) -> None:
    assert resp.status_code == 422, resp.text
    detail = resp.json()["detail"]
    assert detail.startswith(f"{field}:"), detail
    for word in words:
        assert word in detail, detail


def ask(api: Any, name: str, count: int = 1) -> list[dict[str, Any]]:
    resp = api.post(f"{API}/{name}/ask", json={"count": count})
    assert resp.status_code == 200, resp.text
    return resp.json()["trials"]


def test_a_study_with_metrics_stores_them_and_reports_the_best_feasible_trial(api: Any) -> None:
    name = create(api, "turbo", **REACTOR)
    study = api.get(f"{API}/{name}").json()
    assert study["objectives"] == REACTOR["objectives"] and study["constraints"] == REACTOR["constraints"]
    assert study["direction"] == "maximize" and study["failures"] == "ignore"
    t1, t2, t3 = ask(api, name, 3)
    told = [
        (t1, {"yield": 0.9, "purity": 0.90, "t_peak": 400}),  # the highest yield, but impure
        (t2, {"yield": 0.7, "purity": 0.97, "t_peak": 430}),  # feasible
        (t3, {"yield": 0.8, "purity": 0.99, "t_peak": 470}),  # too hot
    ]
    for trial, values in told:
        resp = api.post(f"{API}/{name}/trials/{trial['number']}/tell", json={"values": values})
        assert resp.status_code == 200, resp.text
        assert resp.json()["values"] == values and resp.json()["value"] == values["yield"]
    assert [api.get(f"{API}/{name}/trials/{t['number']}").json()["feasible"] for t in (t1, t2, t3)] == [
        False,
        True,
        False,
    ]
    best = api.get(f"{API}/{name}/best").json()
    assert best["number"] == t2["number"], "best is the best feasible trial, not the highest yield"
    summary = api.get(f"{API}/{name}").json()["summary"]
    assert (summary["n_feasible"], summary["n_infeasible"], summary["best_value"]) == (1, 2, 0.7)
    # the same tell again is a no-op; other values a 409
    same = api.post(f"{API}/{name}/trials/{t2['number']}/tell", json={"values": told[1][1]})
    assert same.status_code == 200
    other = api.post(f"{API}/{name}/trials/{t2['number']}/tell", json={"values": {**told[1][1], "yield": 0.1}})
    assert other.status_code == 409
    impure = api.post(f"{API}/{name}/trials/{t2['number']}/tell", json={"values": {**told[1][1], "purity": 0.5}})
    assert impure.status_code == 409 and impure.json()["detail"].startswith("values.purity:"), impure.text
    assert "told 0.97, not 0.5" in impure.json()["detail"], "the metric that differs, not the objective that agrees"


def test_no_feasible_trial_means_no_best(api: Any) -> None:
    name = create(api, "turbo", **REACTOR)
    (trial,) = ask(api, name)
    api.post(f"{API}/{name}/trials/1/tell", json={"values": {"yield": 1.0, "purity": 0.5, "t_peak": 300}})
    assert trial["number"] == 1 and api.get(f"{API}/{name}/best").json() is None
    assert api.get(f"{API}/{name}").json()["summary"]["best_value"] is None


def test_a_tell_must_carry_every_metric_and_only_the_study_s(api: Any) -> None:
    name = create(api, "turbo", **REACTOR)
    ask(api, name)
    tell = f"{API}/{name}/trials/1/tell"
    refused(api.post(tell, json={"values": {"yield": 0.5, "purity": 0.99}}), "values.t_peak", "missing")
    refused(
        api.post(tell, json={"values": {"yield": 0.5, "purity": None, "t_peak": 1}}), "values.purity", "valid number"
    )
    refused(api.post(tell, json={"values": {"yield": 0.5, "purity": 0.99, "t_peak": 1, "ph": 7}}), "values.ph")
    refused(api.post(tell, json={"value": 0.5}), "values", "yield", "purity", "t_peak")
    refused(api.post(tell, json={"state": "failed", "values": {"yield": 1}}), "values", "failed")
    both = f"{API}/{name}/trials/1/tell-and-ask"  # in a tell-and-ask body the field is under tell
    refused(api.post(both, json={"tell": {"values": {"yield": 0.5, "purity": 0.99}}}), "tell.values.t_peak", "missing")
    assert api.get(f"{API}/{name}/trials/1").json()["state"] == "running", "nothing stored by a refused tell"
    assert api.post(tell, json={"state": "failed", "reason": "tripped"}).json()["values"] is None


def test_a_study_without_metrics_keeps_the_unnamed_value(api: Any) -> None:
    name = create(api)
    ask(api, name)
    refused(api.post(f"{API}/{name}/trials/1/tell", json={"values": {"yield": 1.0}}), "values", "no metrics")
    told = api.post(f"{API}/{name}/trials/1/tell", json={"value": 1.5}).json()
    assert (told["value"], told["values"], told["feasible"]) == (1.5, None, None)
    study = api.get(f"{API}/{name}").json()
    assert study["objectives"] is None and study["constraints"] is None and study["summary"]["best_value"] == 1.5


def test_a_single_named_objective_takes_a_bare_value_too(api: Any) -> None:
    name = create(api, objectives=[{"metric": "yield", "direction": "maximize"}])
    ask(api, name, 2)
    assert api.post(f"{API}/{name}/trials/1/tell", json={"value": 0.3}).json()["values"] == {"yield": 0.3}
    assert api.post(f"{API}/{name}/trials/2/tell", json={"values": {"yield": 0.6}}).json()["value"] == 0.6
    assert api.get(f"{API}/{name}/best").json()["number"] == 2


def test_external_trials_carry_metrics(api: Any) -> None:
    name = create(api, "turbo", **REACTOR)
    values = {"yield": 0.5, "purity": 0.96, "t_peak": 420}
    resp = api.post(f"{API}/{name}/trials", json={"params": {"a": 0.5, "b": 1.0}, "values": values})
    assert resp.status_code == 201 and resp.json()["feasible"] is True and resp.json()["values"] == values
    refused(api.post(f"{API}/{name}/trials", json={"params": {"a": 0.5, "b": 1.0}, "value": 0.5}), "values")


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"constraints": [{"metric": "p", "op": ">=", "bound": 1}]}, "objectives", ("named objective",)),
        (
            {"objectives": [{"metric": "y"}], "constraints": [{"metric": "y", "op": "<=", "bound": 1}]},
            "constraints[0].metric",
            ("objective",),
        ),
        (
            {"objectives": [{"metric": "y"}], "constraints": [{"metric": "p", "op": "=", "bound": 1}]},
            "constraints[0].op",
            (),
        ),
        ({"objectives": [{"metric": "y"}, {"metric": "z"}]}, "objectives", ("several objectives", "morbo")),
        ({"failures": "maybe"}, "failures", ()),
        (
            {"objectives": [{"metric": "y"}], "constraints": [{"metric": "p", "op": ">=", "bound": 1}] * 2},
            "constraints[1]",
            ("same constraint as constraints[0]",),
        ),
        ({"safety": {"max_violation_probability": 0.05}}, "safety", ()),
        (
            {
                "objectives": [{"metric": "y"}],
                "constraints": [{"metric": "p", "op": "<=", "bound": 1}, {"metric": "p", "op": ">=", "bound": 2}],
            },
            "constraints[1]",
            ("no value of 'p'", "constraints[0]"),
        ),  # fmt: skip
        ({"objectives": []}, "objectives", ("leave objectives out",)),
        ({"objectives": [{"metric": "  "}]}, "objectives[0].metric", ("visible character",)),
        ({"direction": "maximize", "objectives": [{"metric": "y"}]}, "direction", ("objectives[0].direction",)),
        (
            {
                "objectives": [{"metric": "y"}],
                "constraints": [{"metric": "p", "op": "<=", "bound": 1}],
                "safety": {"max_violation_probability": 0.05, "seeds": [{"a": 0.1, "b": 0.2}, {"a": 0.1, "b": 0.2}]},
            },
            "safety.seeds[1]",
            ("same point as safety.seeds[0]",),
        ),  # fmt: skip
    ],
)
def test_outcome_specs_that_cannot_be_served_are_refused(api: Any, fields: dict, field: str, words: tuple) -> None:
    name = unique()
    resp = api.post(API, json={"name": name, "space": SPACE, "policy": "turbo"} | fields)
    refused(resp, field, *words)
    assert api.get(f"{API}/{name}").status_code == 404


def test_a_study_stored_before_a_creation_check_still_loads(api: Any) -> None:
    """Metric names of spaces only are refused at creation; one stored before that check still reads and tells."""
    from localbo.storage import repository as repo
    from sqlalchemy import update

    name = create(api, "turbo", objectives=[{"metric": "y"}], constraints=[{"metric": "p", "op": "<=", "bound": 1}])
    with api.app.state.service.write.begin() as conn:
        older = [{"metric": " ", "direction": "minimize"}]
        conn.execute(update(repo.studies).where(repo.studies.c.name == name).values(objectives=older))
    assert api.get(f"{API}/{name}").json()["objectives"] == older
    told = api.post(f"{API}/{name}/trials", json={"params": {"a": 0.5, "b": 1}, "values": {" ": 0.3, "p": 0.5}})
    assert told.status_code == 201, told.text


def test_a_policy_that_cannot_serve_constraints_is_refused_naming_those_that_can(api: Any) -> None:
    resp = api.post(API, json={"name": unique(), "space": SPACE, "policy": "mpd"} | REACTOR)
    refused(resp, "constraints", "mpd", "turbo", "minucb")
    avoid = api.post(API, json={"name": unique(), "space": SPACE, "policy": "mpd", "failures": "avoid"})
    refused(avoid, "failures", "mpd", "gibo")


@pytest.mark.parametrize(
    ("constraints", "field", "words"),
    [
        ([{"terms": {"zz": 1}, "op": "<=", "bound": 1}], "parameter_constraints[0].terms.zz", ("not a parameter",)),
        ([{"terms": {"a": 0}, "op": "<=", "bound": 1}], "parameter_constraints[0].terms.a", ("zero",)),
        ([{"terms": {"a": 1}, "op": "<=", "bound": -1}], "parameter_constraints", ("no point",)),
        (
            [{"terms": {"a": 1, "b": 1}, "op": "==", "bound": 1}, {"terms": {"a": 1, "b": 1}, "op": "==", "bound": 1}],
            "parameter_constraints[1]",
            ("same constraint",),
        ),
        (
            [{"terms": {"a": 1}, "op": ">=", "bound": 0.8}, {"terms": {"a": 1}, "op": "<=", "bound": 0.5}],
            "parameter_constraints",
            ("no point",),
        ),
        ([{"terms": {"a": 1}, "op": "<", "bound": 1}], "parameter_constraints[0].op", ()),
        # apart by less than an LP's default tolerance (1e-7) but more than the 1e-9 every point must keep: no
        # point can be asked, so creation refuses them (they were accepted, then every ask was a 500)
        *(
            (
                [
                    {"terms": {"a": 1, "b": 1}, "op": "==", "bound": 1},
                    {"terms": {"a": 1, "b": 1}, "op": op, "bound": b},
                ],
                "parameter_constraints",
                ("no point",),
            )
            for op, b in (("<=", 1 - 1e-7), ("<=", 1 - 1e-8), (">=", 1 + 1e-8), ("==", 1 + 1e-7))
        ),
        (
            [
                {"terms": {"a": 1, "b": 1}, "op": "==", "bound": 1},
                {"terms": {"a": 2, "b": 2}, "op": "==", "bound": 2.0000001},
            ],
            "parameter_constraints",
            ("no point",),
        ),
    ],
)
def test_parameter_constraints_that_cannot_hold_are_refused(
    api: Any, constraints: list, field: str, words: tuple
) -> None:
    name = unique()
    resp = api.post(API, json={"name": name, "space": SPACE, "policy": "random", "parameter_constraints": constraints})
    refused(resp, field, *words)
    assert api.get(f"{API}/{name}").status_code == 404


def test_parameter_constraints_on_categorical_and_log_parameters_are_refused(api: Any) -> None:
    space = {
        **SPACE,
        "lr": {"type": "float", "low": 1e-4, "high": 1, "log": True},
        "opt": {"type": "categorical", "choices": ["sgd", "adam"]},
    }
    for param, kind in (("lr", "log-scaled"), ("opt", "categorical")):
        body = {"name": unique(), "space": space, "policy": "random"}
        body["parameter_constraints"] = [{"terms": {"a": 1, param: 1}, "op": "<=", "bound": 2}]
        refused(api.post(API, json=body), f"parameter_constraints[0].terms.{param}", kind)


MIXTURE = {
    "a": {"type": "float", "low": 0, "high": 1},
    "b": {"type": "float", "low": 0, "high": 1},
    "c": {"type": "float", "low": 0, "high": 1},
    "t": {"type": "float", "low": 300, "high": 500},
}
RULES = [
    {"terms": {"a": 1, "b": 1, "c": 1}, "op": "==", "bound": 1},  # fractions of a mixture
    {"terms": {"a": 2, "t": 0.01}, "op": "<=", "bound": 5},  # hot runs take less of a
]


def holds(params: dict[str, float], rules: list[dict[str, Any]]) -> bool:
    for rule in rules:
        lhs = sum(coef * params[name] for name, coef in rule["terms"].items())
        gap = {"==": abs(lhs - rule["bound"]), "<=": lhs - rule["bound"], ">=": rule["bound"] - lhs}[rule["op"]]
        if gap > 1e-9:
            return False
    return True


@pytest.mark.parametrize("policy", ["random", "sobol", "turbo"])
def test_every_point_handed_out_satisfies_the_parameter_constraints(api: Any, policy: str) -> None:
    name = unique()
    body = {"name": name, "space": MIXTURE, "policy": policy, "seed": 5, "parameter_constraints": RULES}
    assert api.post(API, json=body).status_code == 201
    assert api.get(f"{API}/{name}").json()["parameter_constraints"] == RULES
    for _ in range(3):
        trials = ask(api, name, 4)
        assert all(holds(t["params"], RULES) for t in trials), [t["params"] for t in trials]
        for t in trials:
            value = (t["params"]["a"] - 0.2) ** 2 + t["params"]["t"] / 1000
            api.post(f"{API}/{name}/trials/{t['number']}/tell", json={"value": value})
    assert api.get(f"{API}/{name}").json()["summary"]["n_fallback"] == 0


def test_a_policy_point_that_breaks_the_parameter_constraints_is_never_handed_out(
    make_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever a policy returns, the planner checks the constraints: a point outside them is the policy's
    failure (recorded), and the study gets fallback points inside them."""
    import torch
    from localbo.policies import get_policy
    from localbo.policies.base import Suggestion

    cls = get_policy("turbo")

    def outside(self: Any, request: Any) -> Any:
        return Suggestion(X=torch.ones(request.count, request.dim, dtype=torch.float64), state=request.state)

    monkeypatch.setattr(cls, "suggest", outside)
    api = make_client()
    name = unique()
    body = {"name": name, "space": MIXTURE, "policy": "turbo", "seed": 2, "parameter_constraints": RULES}
    assert api.post(API, json=body).status_code == 201
    trials = ask(api, name, 3)
    assert all(holds(t["params"], RULES) for t in trials), [t["params"] for t in trials]
    assert {t["source"] for t in trials} == {"fallback"}, trials
    assert "breaks the parameter constraints" in (api.get(f"{API}/{name}").json()["last_policy_error"] or "")


def test_a_fallback_point_satisfies_the_parameter_constraints(api: Any) -> None:
    """A policy that fails gets fallback points: inside the constraints too."""
    from localbo.storage.models import Study
    from sqlalchemy import update

    name = unique()
    body = {"name": name, "space": MIXTURE, "policy": "random", "seed": 6, "parameter_constraints": RULES}
    assert api.post(API, json=body).status_code == 201
    with api.app.state.service.db.begin() as conn:  # a config this release cannot load: every plan falls back
        conn.execute(update(Study).where(Study.name == name).values(policy_config_version=99))
    trials = ask(api, name, 6)
    assert {t["source"] for t in trials} == {"fallback"}
    assert all(holds(t["params"], RULES) for t in trials), [t["params"] for t in trials]


def test_turbo_serves_outcome_constraints_through_the_api(api: Any) -> None:
    """SCBO end to end: constraint values from the tells reach the policy; its points are the policy's."""
    name = create(api, "turbo", **REACTOR)
    yields = []
    for _ in range(4):
        for t in ask(api, name, 3):
            a, b = t["params"]["a"], t["params"]["b"]
            values = {"yield": 1 - (a - 0.3) ** 2 - (b - 1) ** 2, "purity": 1 - 0.1 * a, "t_peak": 400 + 40 * b}
            assert api.post(f"{API}/{name}/trials/{t['number']}/tell", json={"values": values}).status_code == 200
            yields.append(values["yield"])
    shown = api.get(f"{API}/{name}/policy").json()["display"]["numbers"]["region best"]
    assert any(abs(shown - y) < 1e-9 for y in yields), f"a told yield in the study's sign, not {shown}"
    study = api.get(f"{API}/{name}").json()
    assert study["summary"]["n_fallback"] == 0 and study["last_policy_error"] is None, study["last_policy_error"]
    assert study["summary"]["n_feasible"] + study["summary"]["n_infeasible"] == 12
    csv = api.get(f"{API}/{name}/export", params={"format": "csv"}).text.splitlines()
    assert csv[0].startswith("number,state,value,values.yield,values.purity,values.t_peak,feasible,a,b")


def test_failures_avoid_reaches_the_policy_through_the_api(api: Any) -> None:
    """Failed trials' points reach turbo's failure model: its plans stay the policy's, never fallbacks."""
    name = create(api, "turbo", failures="avoid", objectives=[{"metric": "loss"}])
    for _ in range(3):
        for t in ask(api, name, 4):
            a, b = t["params"]["a"], t["params"]["b"]
            if (a - 0.5) ** 2 + (b - 1.0) ** 2 < 0.1:  # the rig faults here
                body: dict[str, Any] = {"state": "failed", "reason": "tripped"}
            else:
                body = {"values": {"loss": (a - 0.4) ** 2 + (b - 0.8) ** 2}}
            assert api.post(f"{API}/{name}/trials/{t['number']}/tell", json=body).status_code == 200
    study = api.get(f"{API}/{name}").json()
    assert study["failures"] == "avoid" and study["summary"]["n_fallback"] == 0
    assert study["last_policy_error"] is None, study["last_policy_error"]


def test_parameter_constraints_on_a_finite_space_leave_out_the_candidates_that_break_them(api: Any) -> None:
    grid = [{"id": f"g{i}{j}", "params": {"x": i / 4, "y": j / 4}} for i in range(5) for j in range(5)]
    rule = [{"terms": {"x": 1, "y": 1}, "op": "<=", "bound": 1}]
    body = {"space": {"kind": "finite", "candidates": grid}, "policy": "random", "seed": 1}
    resp = api.post(API, json={"name": unique(), **body, "parameter_constraints": rule})
    assert resp.status_code == 201, resp.text
    study = resp.json()
    assert study["space"]["candidates"] == 15 and study["parameter_constraints"] == rule
    asked = ask(api, study["name"], 15)
    assert all(t["params"]["x"] + t["params"]["y"] <= 1 + 1e-9 for t in asked)
    assert len({t["candidate"] for t in asked}) == 15
    assert api.post(f"{API}/{study['name']}/ask", json={"count": 1}).status_code == 409, "every candidate is asked"
    none = [{"terms": {"x": 1}, "op": ">=", "bound": 2}]
    refused(api.post(API, json={"name": unique(), **body, "parameter_constraints": none}), "parameter_constraints")
    unknown = [{"terms": {"z": 1}, "op": "<=", "bound": 1}]
    refused(
        api.post(API, json={"name": unique(), **body, "parameter_constraints": unknown}),
        "parameter_constraints[0].terms.z",
    )


INTS = {"n": {"type": "int", "low": 0, "high": 6}, "m": {"type": "int", "low": 1, "high": 4},
        "a": {"type": "float", "low": 0, "high": 1}}  # fmt: skip


@pytest.mark.parametrize("policy", ["random", "sobol", "turbo"])
def test_int_parameters_keep_the_constraints_once_rounded(api: Any, policy: str) -> None:
    """n + m <= 5.5 and n - 2a == 1.2: every point, its ints whole, keeps both within 1e-9."""
    rules = [
        {"terms": {"n": 1, "m": 1}, "op": "<=", "bound": 5.5},
        {"terms": {"n": 1, "a": -2}, "op": "==", "bound": 1.2},
    ]
    resp = api.post(API, json={"name": unique(), "space": INTS, "policy": policy, "seed": 4,
                               "parameter_constraints": rules})  # fmt: skip
    assert resp.status_code == 201, resp.text
    name = resp.json()["name"]
    for trial in ask(api, name, 12):
        n, m, a = trial["params"]["n"], trial["params"]["m"], trial["params"]["a"]
        assert isinstance(n, int) and isinstance(m, int)
        assert n + m <= 5.5 + 1e-9 and abs(n - 2 * a - 1.2) <= 1e-9, trial["params"]
        api.post(f"{API}/{name}/trials/{trial['number']}/tell", json={"value": n + m + a})


@pytest.mark.parametrize("policy", ["random", "sobol"])
def test_a_region_flat_in_one_direction_is_sampled_along_the_rest(api: Any, policy: str) -> None:
    """a >= 1 on [0, 1] leaves a = 1 and b free: b varies (every point was (1, 0): no ball fits such a region, and
    a chain that steps off the face cannot move)."""
    name = create(api, policy, parameter_constraints=[{"terms": {"a": 1}, "op": ">=", "bound": 1}])
    trials = ask(api, name, 8)
    assert all(abs(t["params"]["a"] - 1) <= 1e-9 for t in trials), trials
    assert len({round(t["params"]["b"], 6) for t in trials}) >= 6, [t["params"] for t in trials]


def test_ints_on_an_equality_take_every_whole_solution(api: Any) -> None:
    space = {"n": {"type": "int", "low": 0, "high": 3}, "m": {"type": "int", "low": 0, "high": 3}}
    rule = [{"terms": {"n": 1, "m": 1}, "op": "==", "bound": 3}]
    resp = api.post(API, json={"name": unique(), "space": space, "policy": "random", "seed": 1,
                               "parameter_constraints": rule})  # fmt: skip
    assert resp.status_code == 201, resp.text
    trials = ask(api, resp.json()["name"], 12)
    assert all(t["params"]["n"] + t["params"]["m"] == 3 for t in trials), trials
    assert {t["params"]["n"] for t in trials} == {0, 1, 2, 3}, [t["params"] for t in trials]


@pytest.mark.parametrize("size", [1e-300, 1e-10, 1e300])
def test_coefficients_of_any_size_mean_the_same_constraint(api: Any, size: float) -> None:
    """size (a - b) >= size 0.25 is a - b >= 0.25 whatever the size (at 1e-300 every point passed the absolute
    tolerance, at 1e300 the unit-cube rows overflowed and every point was the same)."""
    rule = {"terms": {"a": size, "b": -size}, "op": ">=", "bound": size * 0.25}
    name = create(api, "random", parameter_constraints=[rule])
    trials = ask(api, name, 8)
    assert all(t["params"]["a"] - t["params"]["b"] >= 0.25 - 1e-9 for t in trials), [t["params"] for t in trials]
    assert len({round(t["params"]["a"], 6) for t in trials}) >= 6, [t["params"] for t in trials]


def test_int_constraints_with_no_whole_point_are_refused(api: Any) -> None:
    rules = [{"terms": {"n": 2}, "op": "==", "bound": 3}]  # n = 1.5: no whole number
    resp = api.post(API, json={"name": unique(), "space": INTS, "policy": "random", "parameter_constraints": rules})
    refused(resp, "parameter_constraints", "whole numbers")
