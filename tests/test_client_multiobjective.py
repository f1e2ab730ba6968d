"""The client's side of several objectives (issue 31): ``create_study(objectives=[...two...], reference_point=)``,
``study.pareto``, ``study.hypervolume``, ``best``'s ``Conflict``, and ``LocalBOSampler`` on an Optuna study created
with ``directions=[...]``; against a live server."""

from __future__ import annotations

from collections.abc import Iterator

import optuna
import pytest
from conftest import unique
from harness.processes import ServerProcess
from localbo_client import Client, Conflict, Objective
from localbo_client.optuna_sampler import LocalBOSampler

SPACE = {n: {"type": "float", "low": 0.0, "high": 1.0} for n in "ab"}
YIELD_COST: list[Objective] = [{"metric": "yield", "direction": "maximize"}, {"metric": "cost"}]


@pytest.fixture(scope="module")
def client(sqlite_server: ServerProcess) -> Iterator[Client]:
    with Client(sqlite_server.url, timeout=120) as c:
        yield c


def plant(a: float, b: float) -> dict[str, float]:
    """More of ``a`` raises the yield and the cost; ``b`` only costs."""
    return {"yield": a, "cost": 1 + 4 * a * a + b}


def test_a_study_with_two_objectives_has_a_front_and_a_hypervolume(client: Client) -> None:
    study = client.create_study(
        unique("plant"), SPACE, policy="random", seed=2, objectives=YIELD_COST, reference_point={"yield": 0, "cost": 6}
    )
    assert study.info["reference_point"] == {"yield": 0, "cost": 6}
    for trial in study.ask(8):
        study.tell(trial, plant(trial.params["a"], trial.params["b"]))
    front = study.pareto
    told = study.trials()
    assert front and {t.number for t in front} <= {t.number for t in told}
    for t in front:  # no told trial dominates a front trial
        assert t.values is not None
        assert not any(
            o.values is not None
            and o.values["yield"] >= t.values["yield"]
            and o.values["cost"] <= t.values["cost"]
            and o.values != t.values
            for o in told
        )
    hypervolume = study.hypervolume
    assert hypervolume is not None and hypervolume > 0
    assert study.front()["reference_point_inferred"] is False
    with pytest.raises(Conflict, match="pareto"):
        study.best  # noqa: B018  (the property's request is the test)


def test_the_optuna_sampler_takes_a_study_with_several_directions(client: Client) -> None:
    name = unique("optuna-mo")
    space = {n: optuna.distributions.FloatDistribution(0.0, 1.0) for n in "ab"}
    sampler = LocalBOSampler("unused: the client is given", space=space, study_name=name, seed=3, client=client)
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        values = plant(trial.suggest_float("a", 0.0, 1.0), trial.suggest_float("b", 0.0, 1.0))
        return values["yield"], values["cost"]

    study.optimize(objective, n_trials=8)
    remote = client.get_study(name)
    assert remote.info["policy"] == "auto"  # qlognehvi for these 2 parameters
    assert [o["metric"] for o in remote.info["objectives"]] == ["objective0", "objective1"]
    assert [o["direction"] for o in remote.info["objectives"]] == ["maximize", "minimize"]
    assert remote.info["summary"]["n_complete"] == 8 and remote.info["summary"]["n_fallback"] == 0
    optuna_front = {(t.params["a"], t.params["b"]) for t in study.best_trials}
    localbo_front = {(t.params["a"], t.params["b"]) for t in remote.pareto}
    assert optuna_front == localbo_front, "the same front on both sides"


def test_trials_dataframe_and_a_notebook_view(client: Client) -> None:
    """Issue 28, item 13: the trials as a pandas DataFrame (Optuna's column names), and a study's HTML repr."""
    study = client.create_study(unique("frame"), SPACE, policy="random", seed=4, objectives=YIELD_COST)
    for trial in study.ask(3):
        study.tell(trial, plant(trial.params["a"], trial.params["b"]))
    study.fail(study.ask(), "the rig tripped")
    frame = study.trials_dataframe()
    assert list(frame["number"]) == [1, 2, 3, 4] and list(frame["state"]) == ["complete"] * 3 + ["failed"]
    assert {"params_a", "params_b", "values_yield", "values_cost", "source", "reason"} <= set(frame.columns)
    assert frame.loc[3, "reason"] == "the rig tripped" and frame["values_cost"].iloc[:3].notna().all()
    study.refresh()
    html = study._repr_html_()
    assert "<table>" in html and study.name in html and "hypervolume" in html
