"""A server stopped and started again continues each study where it was: plan, state, numbers."""

from __future__ import annotations

from conftest import unique
from harness.processes import ServerProcess
from localbo_client import Client

SPACE = {"a": {"type": "float", "low": 0, "high": 1}, "b": {"type": "float", "low": -1, "high": 1}}


def test_restart_continues_the_plan_and_the_running_trials(db_url: str) -> None:
    name, twin = unique("restart"), unique("twin")
    server = ServerProcess(db_url)
    try:
        with Client(server.url) as client:
            study = client.create_study(name, space=SPACE, policy="sobol", seed=5)
            client.create_study(twin, space=SPACE, policy="sobol", seed=5)
            first = study.ask(count=3, client_id="rig")
            study.tell(first[0], 1.0)
    finally:
        server.stop()

    server = ServerProcess(db_url)
    try:
        with Client(server.url) as client:
            study = client.get_study(name)
            # the evaluator that was running trials 2 and 3 gets them back after the restart
            again = study.ask(count=2, client_id="rig")
            assert [t.number for t in again] == [2, 3]
            nxt = study.ask()
            assert nxt.number == 4
            # an uninterrupted study with the same seed hands out the same 4th point
            reference = client.get_study(twin).ask(count=4)
            assert [t.params for t in reference] == [*(t.params for t in first), nxt.params]
            assert study.refresh()["policy_state_version"] == 1  # the plan was not recomputed
    finally:
        server.stop()


def test_restart_mid_iteration_continues_the_same_minucb_iteration(db_url: str) -> None:
    space = {f"x{i}": {"type": "float", "low": -1, "high": 1} for i in range(3)}

    def f(params: dict) -> float:
        return sum((v - 0.3) ** 2 for v in params.values())

    name = unique("minucb-restart")
    server = ServerProcess(db_url, LOCALBO_TORCH_THREADS="1")
    try:
        with Client(server.url) as client:
            study = client.create_study(name, space=space, policy="minucb", seed=3)
            for _ in range(6):  # iteration 0 (x_0 and 3 exploration points), then x_1 and one point of its batch
                trial = study.ask()
                study.tell(trial, f(trial.params))
            before = client.request("GET", f"/api/v1/studies/{name}/policy")
            assert [t.source for t in study.trials()] == ["minucb"] * 6
    finally:
        server.stop()
    assert before["state"]["t"] == 1 and len(before["planned"]) == 2

    server = ServerProcess(db_url, LOCALBO_TORCH_THREADS="1")
    try:
        with Client(server.url) as client:
            after = client.request("GET", f"/api/v1/studies/{name}/policy")
            assert after == before  # same x_t, same t, same remaining plan
            study = client.get_study(name)
            nxt = study.ask()
            assert nxt.number == 7 and nxt.params == before["planned"][0]["params"]
            assert client.request("GET", f"/api/v1/studies/{name}/policy")["state"]["x_t"] == before["state"]["x_t"]
    finally:
        server.stop()
