"""Ask/tell against a live server process, on SQLite and on the real Postgres."""

from __future__ import annotations

import threading

import httpx
import pytest
from conftest import unique
from localbo_client import Client, NotFound

SPACE = {"x": {"type": "float", "low": -5, "high": 5}, "n": {"type": "int", "low": 1, "high": 8}}


def test_eight_clients_hundred_cycles_each_number_every_trial_once(live_server) -> None:
    name = unique("conc")
    with Client(live_server.url) as admin:
        admin.create_study(name, space=SPACE, policy="random")
    errors: list[BaseException] = []
    told: list[int] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        try:
            with Client(live_server.url) as client:
                study = client.get_study(name)
                for _ in range(100):
                    trial = study.ask(client_id=f"worker-{i}")
                    study.tell(trial, trial.params["x"] ** 2 + trial.params["n"])
                    with lock:
                        told.append(trial.number)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads), "workers did not finish in time"
    assert errors == []
    assert sorted(told) == list(range(1, 801))

    with Client(live_server.url) as client:
        study = client.get_study(name)
        trials = study.trials()
        assert [t.number for t in trials] == list(range(1, 801))
        assert all(t.state == "complete" and t.value is not None for t in trials)
        assert study.refresh()["summary"]["n_complete"] == 800
        best = study.best
        assert best is not None and best.value == min(t.value for t in trials)


class DropResponses(httpx.BaseTransport):
    """Delivers requests to the real server, then loses the first answer to each chosen path."""

    def __init__(self, drop_suffixes: tuple[str, ...]) -> None:
        self.inner = httpx.HTTPTransport()
        self.drop_suffixes = drop_suffixes
        self.dropped: list[str] = []
        self.keys: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        response.read()
        path = request.url.path
        if path.endswith(self.drop_suffixes):
            self.keys.append(request.headers.get("Idempotency-Key"))
            if path not in self.dropped:
                self.dropped.append(path)
                raise httpx.ReadError("simulated lost response", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def test_lost_answers_to_ask_and_tell_are_retried_without_storing_twice(live_server) -> None:
    name = unique("idem")
    transport = DropResponses(("/ask", "/tell"))
    with Client(live_server.url, transport=transport, backoff=0.01) as client:
        study = client.create_study(name, space=SPACE, policy="sobol")
        trial = study.ask()  # first answer lost; the retry must not make a second trial
        assert trial.number == 1
        told = study.tell(trial, 0.25)  # first answer lost; the retry is a replay
        assert told.state == "complete" and told.value == 0.25
    assert len(transport.dropped) == 2
    # each call was sent twice, with one key per call
    assert (
        len(transport.keys) == 4 and transport.keys[0] == transport.keys[1] and transport.keys[2] == transport.keys[3]
    )
    with Client(live_server.url) as client:
        info = client.get_study(name).refresh()
        summary = info["summary"]
        assert summary.pop("last_activity") and summary.pop("last_result_at")  # when the trial was touched, told
        assert summary == {
            "n_trials": 1,
            "n_running": 0,
            "n_complete": 1,
            "n_failed": 0,
            "n_stale": 0,
            "n_feasible": 0,  # the study names no constraints
            "n_infeasible": 0,
            "best_value": 0.25,
            "trials_since_improvement": 0,
            "results_per_hour": 1,
            "candidates_remaining": None,
            "n_fallback": 0,
            "last_fallback_at": None,
            "n_lease_expired": 0,
            "typical_result_gap_s": None,  # from 4 results on
            "hypervolume": None,  # several objectives only
            "hypervolume_reference_point": None,
            "hypervolume_history": None,
            "pareto_size": None,
        }


def test_reask_after_a_crash_returns_the_same_running_trial(live_server) -> None:
    name = unique("crash")
    with Client(live_server.url) as first:
        study = first.create_study(name, space=SPACE, policy="sobol")
        lost = study.ask(client_id="rig-7")
    # the evaluator crashed and restarts: a new process, a new client, the same client_id
    with Client(live_server.url) as second:
        study = second.get_study(name)
        again = study.ask(client_id="rig-7")
        assert (again.number, again.params) == (lost.number, lost.params)
        other = study.ask(client_id="rig-8")
        assert other.number != lost.number
        both = study.ask(count=2, client_id="rig-7")  # its own trial first, then a new one
        assert [t.number for t in both][0] == lost.number and both[1].number not in (lost.number, other.number)
        study.tell(again, 1.0)
        fresh = study.ask(client_id="rig-7")
        assert fresh.number == both[1].number  # still running, so it comes back before new points


@pytest.mark.parametrize("n_workers", [1, 3])
def test_optimize_runs_the_budget_and_fails_raising_trials(live_server, n_workers: int) -> None:
    with Client(live_server.url) as client:
        study = client.create_study(unique("opt"), space=SPACE, policy="sobol", direction="maximize")
        calls = iter(range(1000))

        def objective(params: dict) -> float:
            if next(calls) == 3:
                raise RuntimeError("sensor error")
            return -((params["x"] - 1) ** 2)

        study.optimize(objective, n_trials=12, n_workers=n_workers, catch=(RuntimeError,))
        trials = study.trials()
        assert len(trials) == 12
        assert sum(t.state == "failed" for t in trials) == 1
        assert "sensor error" in next(t.reason for t in trials if t.state == "failed")
        assert study.best.value == max(t.value for t in trials if t.state == "complete")
        with pytest.raises(ValueError):
            study.optimize(lambda p: (_ for _ in ()).throw(ValueError("boom")), n_trials=2)
        assert study.trials(state="failed")[-1].reason == "ValueError: boom"


def test_optimize_raises_when_the_study_is_deleted_mid_run(live_server) -> None:
    """The tells and asks after the delete get 404: optimize stops its workers and raises NotFound
    (it used to lose the error with the worker threads and return as if the budget had run)."""
    name = unique("gone")
    with Client(live_server.url) as client, Client(live_server.url) as admin:
        study = client.create_study(name, space=SPACE, policy="random")
        calls = iter(range(1000))

        def objective(params: dict) -> float:
            if next(calls) == 5:
                admin.delete_study(name)
            return params["x"]

        with pytest.raises(NotFound):
            study.optimize(objective, n_trials=40, n_workers=3)
        assert name not in [s.name for s in admin.list_studies()]
