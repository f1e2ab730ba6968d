"""A server stopped and started again continues each study where it was: plan, state, numbers."""

from __future__ import annotations

from conftest import unique
from localbo.server_process import ServerProcess
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
