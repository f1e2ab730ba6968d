"""The client's side of constraints (issue 30): ``create_study(objectives=, constraints=, parameter_constraints=,
failures=, safety=)``, named values in ``tell`` / ``tell_and_ask`` / ``add_trial`` / ``optimize``, ``Trial.values``
and ``Trial.feasible``, ``best`` as the best feasible trial; against a live server, and, for what goes on the
wire, a scripted one (httpx's MockTransport)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import unique
from harness.processes import ServerProcess
from localbo_client import (
    BadRequest,
    Client,
    Objective,
    OutcomeConstraint,
    ParameterConstraint,
    Safety,
    Trial,
)

MIXTURE = {n: {"type": "float", "low": 0.0, "high": 1.0} for n in "abc"}
YIELD: list[Objective] = [{"metric": "yield", "direction": "maximize"}]
PURITY: list[OutcomeConstraint] = [{"metric": "purity", "op": ">=", "bound": 0.95}]
WHOLE: list[ParameterConstraint] = [{"terms": {"a": 1, "b": 1, "c": 1}, "op": "==", "bound": 1}]


@pytest.fixture(scope="module")
def client(sqlite_server: ServerProcess) -> Iterator[Client]:
    with Client(sqlite_server.url, timeout=120) as c:
        yield c


def reactor(params: dict[str, float]) -> dict[str, float]:
    """Yield peaks at a = 0.6; purity falls as a grows: feasible while a <= 0.5."""
    a, b = params["a"], params["b"]
    return {"yield": 1 - (a - 0.6) ** 2 - 0.1 * (b - 0.3) ** 2, "purity": 1 - 0.1 * a}


def test_a_study_with_metrics_and_limits_is_created_and_told_named_values(client: Client) -> None:
    study = client.create_study(
        unique("reactor"),
        MIXTURE,
        policy="turbo",
        seed=1,
        objectives=YIELD,
        constraints=PURITY,
        parameter_constraints=WHOLE,
    )
    assert study.info["objectives"] == YIELD and study.info["constraints"] == PURITY
    assert study.info["parameter_constraints"] == WHOLE and study.info["direction"] == "maximize"
    assert study.info["failures"] == "ignore" and study.info["safety"] is None
    t1, t2, t3 = study.ask(3)
    for t in (t1, t2, t3):
        assert abs(sum(t.params.values()) - 1) <= 1e-9, t.params
        assert t.values is None and t.feasible is None
    told = study.tell(t1, {"yield": 0.9, "purity": 0.90})  # the highest yield, but impure
    assert told is t1 and (t1.state, t1.value, t1.values, t1.feasible) == (
        "complete",
        0.9,
        {"yield": 0.9, "purity": 0.90},
        False,
    )
    with t2:
        t2.tell({"yield": 0.7, "purity": 0.97})
    assert (t2.values, t2.feasible) == ({"yield": 0.7, "purity": 0.97}, True)
    study.tell(t3.number, {"yield": 0.8, "purity": 0.99})  # by number: the Trial handed out learns it
    assert (t3.state, t3.feasible) == ("complete", True)
    best = study.best
    assert best is not None and best.number == t3.number, "the best feasible trial, not the highest yield"
    assert (best.values, best.feasible) == ({"yield": 0.8, "purity": 0.99}, True)
    listed = {t.number: t for t in study.trials()}
    assert [listed[t.number].feasible for t in (t1, t2, t3)] == [False, True, True]
    summary = study.refresh()["summary"]
    assert (summary["n_feasible"], summary["n_infeasible"]) == (2, 1)


def test_a_tell_the_study_cannot_take_is_refused_naming_the_field(client: Client) -> None:
    study = client.create_study(unique("refused"), MIXTURE, policy="turbo", objectives=YIELD, constraints=PURITY)
    trial = study.ask()
    with pytest.raises(BadRequest, match="values"):
        study.tell(trial, 0.5)  # a bare number: the purity is missing
    with pytest.raises(BadRequest, match="values.purity"):
        study.tell(trial, {"yield": 0.5})
    with pytest.raises(ValueError, match="values.purity: expected a finite number"):
        study.tell(trial, {"yield": 0.5, "purity": math.nan})  # refused here: JSON has no NaN
    assert trial.state == "running"
    study.fail(trial, "the reactor tripped")
    assert (trial.state, trial.values, trial.feasible) == ("failed", None, None)


def test_a_number_stays_the_value(client: Client) -> None:
    plain = client.create_study(unique("plain"), MIXTURE, policy="random", seed=2)
    trial = plain.ask()
    plain.tell(trial, 1.5)
    assert (trial.value, trial.values, trial.feasible) == (1.5, None, None)
    named = client.create_study(unique("named"), MIXTURE, policy="random", seed=2, objectives=YIELD)
    trial = named.ask()
    named.tell(trial, 0.3)  # one objective, no constraints: a number is the objective's value
    assert trial.values == {"yield": 0.3}


def test_tell_and_ask_and_add_trial_carry_named_values(client: Client) -> None:
    study = client.create_study(unique("both"), MIXTURE, policy="turbo", seed=3, objectives=YIELD, constraints=PURITY)
    external = study.add_trial({"a": 0.5, "b": 0.3, "c": 0.2}, {"yield": 0.99, "purity": 0.95})
    assert (external.source, external.values, external.feasible) == (
        "external",
        {"yield": 0.99, "purity": 0.95},
        True,
    )
    first = study.ask()
    nxt = study.tell_and_ask(first, reactor(first.params))
    assert isinstance(nxt, Trial) and nxt.number != first.number and nxt.state == "running"
    assert first.state == "complete" and first.values == pytest.approx(reactor(first.params))
    last = study.tell_and_ask(nxt, reason="the pump stalled", count=2)
    assert nxt.state == "failed" and isinstance(last, list) and len(last) == 2


def test_optimize_takes_an_objective_that_returns_named_values(client: Client) -> None:
    study = client.create_study(
        unique("optimize"), MIXTURE, policy="turbo", seed=4, objectives=YIELD, constraints=PURITY
    )
    study.optimize(reactor, n_trials=8, n_workers=2)
    trials = study.trials()
    assert len(trials) == 8 and all(t.state == "complete" for t in trials)
    assert all(t.values == pytest.approx(reactor(t.params)) for t in trials)
    assert all(t.feasible == (t.params["a"] <= 0.5) for t in trials)
    best = study.best
    feasible = [t for t in trials if t.feasible]
    assert best is not None and best.value == max(t.value for t in feasible)

    def leaky(params: dict[str, float]) -> dict[str, float]:
        return {**reactor(params), "purity": math.inf}

    broken = client.create_study(unique("leaky"), MIXTURE, policy="turbo", objectives=YIELD, constraints=PURITY)
    with pytest.raises(ValueError, match="values.purity: expected a finite number"):
        broken.optimize(leaky, n_trials=2)
    assert [t.state for t in broken.trials()] == ["failed"], "the trial is failed, as for an objective's error"


def test_safety_reaches_the_server_and_the_seeds_are_asked_first(client: Client) -> None:
    seeds = [{"a": 0.2, "b": 0.2, "c": 0.6}]
    safety: Safety = {"max_violation_probability": 0.05, "seeds": seeds}
    study = client.create_study(
        unique("safe"), MIXTURE, policy="turbo", objectives=YIELD, constraints=PURITY, safety=safety
    )
    assert study.info["safety"] == safety
    first = study.ask()
    assert first.source == "seed" and first.params == seeds[0]


def test_failures_avoid_reaches_the_server(client: Client) -> None:
    study = client.create_study(
        unique("avoid"), MIXTURE, policy="turbo", objectives=YIELD, constraints=PURITY, failures="avoid"
    )
    assert study.info["failures"] == "avoid"
    with pytest.raises(BadRequest, match=r"^422: failures: the sobol policy .*turbo"):
        client.create_study(unique("avoid"), MIXTURE, policy="sobol", failures="avoid")


def test_a_policy_that_cannot_serve_constraints_is_refused_naming_those_that_can(client: Client) -> None:
    with pytest.raises(BadRequest, match=r"constraints: the sobol policy .*turbo"):
        client.create_study(unique("sobol"), MIXTURE, policy="sobol", objectives=YIELD, constraints=PURITY)


class Recorder:
    """A scripted server that records every request body and answers a study and its trials."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        self.bodies.append((request.url.path, body))
        if request.url.path == "/api/v1/studies":
            return httpx.Response(201, json={"name": body["name"], "policy": body.get("policy", "auto")})
        trial = {"number": 1, "params": {"a": 0.5}, "state": "complete", "value": 0.5}
        if request.url.path.endswith("/trials"):
            return httpx.Response(201, json={**trial, "values": body.get("values")})
        return httpx.Response(200, json={**trial, "values": body.get("values")})


def test_only_the_fields_given_go_on_the_wire() -> None:
    """A call that names no metrics sends the request it always sent (an older server refuses unknown fields);
    a mapping goes as ``values``, a number as ``value``; the shapes go as given."""
    server = Recorder()
    client = Client("http://fake", transport=httpx.MockTransport(server), retries=0)
    plain = client.create_study("plain", MIXTURE)
    # no policy: the server's default (auto; an older server's sobol, the policy this client sent before)
    assert set(server.bodies[-1][1]) == {"name", "space", "direction", "policy_config", "metadata", "seed"}
    client.create_study("named", MIXTURE, policy="turbo")
    assert server.bodies[-1][1]["policy"] == "turbo"
    safety: Safety = {"max_violation_probability": 0.05}
    client.create_study(
        "full",
        MIXTURE,
        objectives=YIELD,
        constraints=PURITY,
        parameter_constraints=WHOLE,
        failures="avoid",
        safety=safety,
    )
    sent = server.bodies[-1][1]
    assert (sent["objectives"], sent["constraints"], sent["parameter_constraints"]) == (YIELD, PURITY, WHOLE)
    assert (sent["failures"], sent["safety"]) == ("avoid", safety)
    plain.tell(1, 0.5)
    assert server.bodies[-1][1] == {"value": 0.5}
    plain.tell(1, {"yield": 1, "purity": 0.97})
    assert server.bodies[-1][1] == {"values": {"yield": 1.0, "purity": 0.97}}
    plain.add_trial({"a": 0.5}, {"yield": 0.5})
    assert server.bodies[-1][1] == {"params": {"a": 0.5}, "values": {"yield": 0.5}}
    plain.add_trial({"a": 0.5}, 0.25)
    assert server.bodies[-1][1] == {"params": {"a": 0.5}, "value": 0.25}
    with pytest.raises(ValueError, match="values: expected a number for each"):
        plain.tell(1, {})


def test_a_non_finite_number_anywhere_in_a_request_is_refused_naming_its_field() -> None:
    """JSON has no NaN or infinity: the client names the field instead of failing inside the encoder."""
    server = Recorder()
    client = Client("http://fake", transport=httpx.MockTransport(server), retries=0)
    with pytest.raises(ValueError, match=r"^reference_point\.y: expected a finite number, got nan"):
        client.create_study("mo", MIXTURE, reference_point={"y": math.nan, "z": 1.0})
    bound = [{"metric": "purity", "op": ">=", "bound": math.inf}]
    with pytest.raises(ValueError, match=r"^constraints\.0\.bound: expected a finite number, got inf"):
        client.create_study("c", MIXTURE, objectives=YIELD, constraints=bound)  # type: ignore[arg-type]
    assert server.bodies == [], "nothing was sent"
