"""``Study.optimize`` against a scripted server (httpx's MockTransport): what goes wrong in a worker is
raised in the caller, after the other workers have stopped; nothing is lost silently."""

from __future__ import annotations

import json
import re
import threading

import httpx
import pytest
from localbo_client import Client, NotFound, ServerError

STUDY = {"name": "s", "policy": "sobol", "direction": "minimize", "space": {"x": {"type": "float"}}}


class FakeServer:
    """Hands out trials 0, 1, 2...; ``broken_ask`` / ``broken_tell`` answer the ask / tell (or fail) calls from that one
    (1-based) on with ``status`` (the study was deleted, the server is down)."""

    def __init__(self, *, broken_tell: int | None = None, broken_ask: int | None = None, status: int = 404) -> None:
        self.broken_tell, self.broken_ask, self.status = broken_tell, broken_ask, status
        self.lock = threading.Lock()
        self.asks = 0
        self.tell_calls = 0
        self.tells: list[int] = []
        self.failed: dict[int, str] = {}
        self.states: dict[int, str] = {}

    def trial(self, number: int, **extra: object) -> dict:
        return {"number": number, "params": {"x": float(number)}, "state": self.states[number], **extra}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        with self.lock:
            if path == "/api/v1/studies/s":
                return httpx.Response(200, json=STUDY)
            if path == "/api/v1/studies/s/ask":
                return self.ask()
            told = re.fullmatch(r"/api/v1/studies/s/trials/(\d+)/tell", path)
            if told:
                return self.tell(int(told[1]), json.loads(request.content))
            both = re.fullmatch(r"/api/v1/studies/s/trials/(\d+)/tell-and-ask", path)
            if both:  # the two halves in one call, as the server does them: the tell, then the ask
                body = json.loads(request.content)
                told_answer = self.tell(int(both[1]), body["tell"])
                if told_answer.status_code != 200:
                    return told_answer
                asked = self.ask()
                if asked.status_code != 200:
                    return asked
                return httpx.Response(200, json={"told": told_answer.json(), "trials": asked.json()["trials"]})
        return httpx.Response(404, json={"detail": f"no route {path}"})

    def ask(self) -> httpx.Response:
        self.asks += 1
        if self.broken_ask is not None and self.asks >= self.broken_ask:
            return httpx.Response(self.status, json={"detail": "study 's' not found"})
        number = len(self.states)
        self.states[number] = "running"
        return httpx.Response(200, json={"trials": [self.trial(number)]})

    def tell(self, number: int, body: dict) -> httpx.Response:
        self.tell_calls += 1
        if self.broken_tell is not None and self.tell_calls >= self.broken_tell:
            return httpx.Response(self.status, json={"detail": "study 's' not found"})
        if body.get("state") == "failed":
            self.states[number] = "failed"
            self.failed[number] = body["reason"]
            return httpx.Response(200, json=self.trial(number, reason=body["reason"]))
        self.tells.append(number)
        self.states[number] = "complete"
        return httpx.Response(200, json=self.trial(number, value=body["value"]))


def study_on(server: FakeServer) -> tuple[Client, object]:
    client = Client("http://fake", transport=httpx.MockTransport(server), retries=1, backoff=0.001)
    return client, client.get_study("s")


@pytest.mark.parametrize("n_workers", [1, 3])
def test_a_failing_tell_is_raised_and_stops_the_workers(n_workers: int) -> None:
    server = FakeServer(broken_tell=4)
    client, study = study_on(server)
    with client, pytest.raises(NotFound, match="not found"):
        study.optimize(lambda p: p["x"], n_trials=50, n_workers=n_workers)
    # the workers stopped at the error: each finished at most the trial it held
    assert server.tell_calls < 4 + n_workers
    assert server.asks < 50


@pytest.mark.parametrize("n_workers", [1, 3])
def test_a_failing_ask_is_raised(n_workers: int) -> None:
    server = FakeServer(broken_ask=3)
    client, study = study_on(server)
    with client, pytest.raises(NotFound):
        study.optimize(lambda p: p["x"], n_trials=50, n_workers=n_workers)
    assert server.asks < 3 + n_workers


def test_a_server_error_after_the_retries_is_raised() -> None:
    server = FakeServer(broken_tell=2, status=503)
    client, study = study_on(server)
    with client, pytest.raises(ServerError):
        study.optimize(lambda p: p["x"], n_trials=10)


def test_an_objective_error_fails_its_trial_and_is_raised_even_if_the_fail_call_fails() -> None:
    server = FakeServer(broken_tell=1)  # the fail() of the raising trial gets a 404 too

    def objective(params: dict) -> float:
        raise RuntimeError("sensor error")

    client, study = study_on(server)
    with client, pytest.raises(RuntimeError, match="sensor error"):
        study.optimize(objective, n_trials=5)


def test_a_non_finite_value_fails_its_trial_like_an_objective_error() -> None:
    server = FakeServer()
    values = iter([1.0, float("nan"), 2.0, float("inf"), 3.0])
    client, study = study_on(server)
    with client:
        study.optimize(lambda p: next(values), n_trials=5, catch=(ValueError,))
        assert sorted(server.states.values()) == ["complete"] * 3 + ["failed"] * 2
        assert all("finite" in reason for reason in server.failed.values())
        with pytest.raises(ValueError, match="finite"):
            study.optimize(lambda p: float("nan"), n_trials=3)
    assert list(server.states.values()).count("running") == 0


def test_the_budget_is_run_in_full_when_nothing_fails() -> None:
    server = FakeServer()
    client, study = study_on(server)
    with client:
        study.optimize(lambda p: p["x"], n_trials=20, n_workers=4)
    assert sorted(server.tells) == list(range(20))
