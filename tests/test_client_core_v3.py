"""Core v3 (issue 26), the client: a trial told by number learns it (item 9), ``ask``/``tell_and_ask`` are typed,
the client's modules import no cycle and no private names, and each tell carries the token of the study instance
its trial came from (the client half of item 5), so a tell meant for a deleted study never lands in its namesake.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness.processes import ServerProcess
from localbo_client import Client, Conflict

from tests.conftest import unique

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "client" / "localbo_client"
SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
TOLD = re.compile(r"/api/v1/studies/([^/]+)/trials/(\d+)/(tell|tell-and-ask)$")


# -- item 9: a trial told by number learns it ---------------------------------------------------------------------


def test_a_with_block_that_tells_by_number_ends_cleanly(sqlite_server: ServerProcess) -> None:
    with Client(sqlite_server.url) as client:
        study = client.create_study(unique("by-number"), space=SPACE, policy="sobol")
        with study.ask() as trial:
            told = study.tell(trial.number, 0.25)  # raised Conflict at the block's end: the exit failed it
        assert told is trial and (trial.state, trial.value) == ("complete", 0.25)
        with study.ask() as failed:
            study.fail(failed.number, "sensor error")
        assert (failed.state, failed.reason) == ("failed", "sensor error")
        with study.ask() as first:
            following = study.tell_and_ask(first.number, 0.5)
        assert first.state == "complete"
        with following:
            study.heartbeat(following.number)
            study.tell(following.number, 0.75)
        assert following.state == "complete"
        stored = {t.number: (t.state, t.reason) for t in study.trials()}
    assert stored == {
        trial.number: ("complete", None),
        failed.number: ("failed", "sensor error"),
        first.number: ("complete", None),
        following.number: ("complete", None),
    }


def test_a_with_block_without_a_tell_still_fails_its_trial(sqlite_server: ServerProcess) -> None:
    with Client(sqlite_server.url) as client:
        study = client.create_study(unique("no-tell"), space=SPACE, policy="sobol")
        other = study.ask()
        with study.ask() as trial:
            study.tell(other.number, 0.5)  # another trial's tell is not this one's
        assert other.state == "complete"
        assert trial.state == "failed" and trial.reason == "the with-block ended without a tell"


def test_a_trial_listed_and_told_elsewhere_updates_the_one_handed_out(sqlite_server: ServerProcess) -> None:
    with Client(sqlite_server.url) as client:
        study = client.create_study(unique("listed"), space=SPACE, policy="sobol")
        with study.ask() as trial:
            (listed,) = study.trials(state="running")
            assert listed is not trial
            study.tell(listed, 0.5)
        assert trial.state == "complete" and listed.state == "complete"


# -- item 9: precise types, no import cycle -----------------------------------------------------------------------

TYPED = """
from typing import assert_type

from localbo_client import Client, Study, Trial

study: Study = Client().get_study("s")
assert_type(study.ask(), Trial)
assert_type(study.ask(1, "rig", 5.0), Trial)
assert_type(study.ask(count=1), Trial)
assert_type(study.ask(count=3), Trial | list[Trial])
trial = study.ask()
assert_type(study.tell_and_ask(trial, 1.0), Trial)
assert_type(study.tell_and_ask(trial.number, reason="broken", client_id="rig"), Trial)
assert_type(study.tell_and_ask(trial, 1.0, count=2), Trial | list[Trial])
assert_type(study.tell(trial.number, 1.0), Trial)
assert_type(trial.token, str | None)
"""


def test_ask_and_tell_and_ask_are_typed(tmp_path: Path) -> None:
    (tmp_path / "typed.py").write_text(TYPED)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
         str(tmp_path / "cache"), str(tmp_path / "typed.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "MYPYPATH": str(ROOT / "client")},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def client_imports() -> dict[str, list[tuple[str, str]]]:
    """Each client module -> the (module, name) pairs it imports from the package, wherever the import stands
    (``TYPE_CHECKING`` blocks and functions included)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        imports: list[tuple[str, str]] = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("localbo_client"):
                imports += [(node.module or "", alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                imports += [(alias.name, "") for alias in node.names if alias.name.startswith("localbo_client")]
        found[f"localbo_client.{path.stem}"] = imports
    return found


def test_the_client_modules_import_no_cycle_and_no_private_names() -> None:
    imports = client_imports()
    private = [(m, f"{source}.{name}") for m, pairs in imports.items() for source, name in pairs if name[:1] == "_"]
    assert not private, private
    edges = {m: {source for source, _ in pairs if source in imports and source != m} for m, pairs in imports.items()}
    edges["localbo_client.__init__"] = set()  # the package re-exports; nothing imports it
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join((*path, module))}"
        if module not in done:
            for target in sorted(edges[module]):
                visit(target, (*path, module))
            done.add(module)

    for module in sorted(edges):
        visit(module, ())


def test_the_client_modules_touch_no_private_attribute_of_another_object() -> None:
    """``self._x`` is a class's own business; ``study._abandon(...)`` from another module is not."""
    reached = []
    for path in sorted(PACKAGE.glob("*.py")):
        if path.stem == "optuna_sampler":
            continue  # reads Optuna's own private storage API, as Optuna's samplers do
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    reached.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not reached, reached


# -- item 5, the client half: the study instance's token travels with each tell --------------------------------


class FakeServer:
    """Hands out trials of one study instance, whose token is ``token`` (None: an old server, which sends none);
    records each tell's body by trial number and answers 409 to a token that is not the instance's."""

    def __init__(self, token: str | None = "instance-1") -> None:
        self.token = token
        self.next = 1
        self.bodies: list[tuple[int, dict[str, Any]]] = []

    def record(self, number: int, state: str, **extra: Any) -> dict[str, Any]:
        record = {"number": number, "params": {"x": 0.5}, "state": state, **extra}
        return record if self.token is None else {**record, "token": self.token}

    def handed(self, count: int) -> list[dict[str, Any]]:
        first, self.next = self.next, self.next + count
        return [self.record(n, "running") for n in range(first, self.next)]

    def told(self, number: int, body: dict[str, Any]) -> httpx.Response | dict[str, Any]:
        self.bodies.append((number, body))
        if "token" in body and body["token"] != self.token:
            return httpx.Response(409, json={"detail": "token: trial of another instance of the study"})
        if body.get("state") == "failed":
            return self.record(number, "failed", reason=body["reason"])
        return self.record(number, "complete", value=body["value"])

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        body = json.loads(request.content or b"{}")
        if path == "/api/v1/studies/s":
            return httpx.Response(200, json={"name": "s", "policy": "sobol", "space": SPACE})
        if path == "/api/v1/studies/s/ask":
            return httpx.Response(200, json={"trials": self.handed(body["count"])})
        match = TOLD.fullmatch(path)
        assert match, path
        told = self.told(int(match[2]), body if match[3] == "tell" else body["tell"])
        if isinstance(told, httpx.Response):
            return told
        if match[3] == "tell":
            return httpx.Response(200, json=told)
        return httpx.Response(200, json={"told": told, "trials": self.handed(body["ask"]["count"])})


def fake_study(server: FakeServer) -> Any:
    return Client("http://fake", transport=httpx.MockTransport(server), retries=0).get_study("s")


def test_a_trial_keeps_its_token_and_each_tell_sends_it() -> None:
    server = FakeServer()
    study = fake_study(server)
    a, b, c, d = study.ask(count=4)
    assert {t.token for t in (a, b, c, d)} == {"instance-1"}
    study.tell(a, 1.0)  # the Trial
    study.tell(b.number, 2.0)  # by number: a trial this study handed out
    study.fail(c.number, "broken")
    following = study.tell_and_ask(d.number, 3.0)
    assert following.token == "instance-1"
    study.tell(following, 4.0)
    study.tell(99, 5.0)  # a number it never handed out: no token, as before
    assert server.bodies == [
        (a.number, {"value": 1.0, "token": "instance-1"}),
        (b.number, {"value": 2.0, "token": "instance-1"}),
        (c.number, {"state": "failed", "reason": "broken", "token": "instance-1"}),
        (d.number, {"value": 3.0, "token": "instance-1"}),
        (following.number, {"value": 4.0, "token": "instance-1"}),
        (99, {"value": 5.0}),
    ]
    assert [t.state for t in (a, b, c, d)] == ["complete", "complete", "failed", "complete"]


def test_an_old_server_gets_no_token() -> None:
    server = FakeServer(token=None)
    study = fake_study(server)
    trial = study.ask()
    assert trial.token is None
    with trial:
        study.tell(trial.number, 1.0)
    assert server.bodies == [(trial.number, {"value": 1.0})]


def test_a_trial_of_another_study_instance_is_refused_by_number_too() -> None:
    server = FakeServer()
    study = fake_study(server)
    old = study.ask()
    server.token, server.next = "instance-2", 1  # the study was deleted and created again: its trials start at 1
    new = study.ask()
    assert new.number == old.number and new.token == "instance-2"
    with pytest.raises(Conflict):
        study.tell(old, 1.0)
    study.tell(new.number, 2.0)  # the number now stands for the trial handed out last
    assert new.state == "complete" and old.state == "running"
    assert server.bodies[-1] == (new.number, {"value": 2.0, "token": "instance-2"})


def test_the_trials_a_study_remembers_are_bounded() -> None:
    """The study remembers the trials it handed out, not all of them: a number it forgot is told as before."""
    server = FakeServer()
    study = fake_study(server)
    first = study.ask()
    rest = study.ask(count=5000)
    study.tell(rest[-1].number, 1.0)
    study.tell(first.number, 2.0)
    assert server.bodies == [(rest[-1].number, {"value": 1.0, "token": "instance-1"}), (first.number, {"value": 2.0})]
    assert first.state == "running", "forgotten: a tell by number cannot reach it"


def test_optimize_sends_each_trials_token() -> None:
    server = FakeServer()
    study = fake_study(server)
    study.optimize(lambda p: p["x"], n_trials=6, n_workers=2)
    assert len(server.bodies) == 6 and all(body["token"] == "instance-1" for _, body in server.bodies)


# -- item 5 against a real server ---------------------------------------------------------------------------------


class Recording(httpx.BaseTransport):
    """A real server's transport that records the body of each tell the client sends (trial number, body)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.told: list[tuple[int, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        match = TOLD.fullmatch(request.url.path)
        if match and request.method == "POST":
            body = json.loads(request.content)
            with self.lock:
                self.told.append((int(match[2]), body if match[3] == "tell" else body["tell"]))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_a_tell_for_a_deleted_study_never_lands_in_its_namesake(sqlite_server: ServerProcess) -> None:
    transport = Recording()
    name = unique("recreated")
    with Client(sqlite_server.url, transport=transport) as client:
        study = client.create_study(name, space=SPACE, policy="sobol")
        first, second = study.ask(count=2)
        assert first.token is not None and first.token == second.token
        study.tell(first.number, 0.5)
        assert transport.told[-1] == (first.number, {"value": 0.5, "token": first.token})
        client.delete_study(name)
        again = client.create_study(name, space=SPACE, policy="sobol")
        namesake, _ = again.ask(count=2)
        assert namesake.number == first.number and namesake.token not in (None, first.token)
        for tell in (lambda: study.tell(second, 0.1), lambda: study.tell(second.number, 0.1)):
            with pytest.raises(Conflict, match="token"):
                tell()
            assert transport.told[-1] == (second.number, {"value": 0.1, "token": second.token})
        with pytest.raises(Conflict, match="token"):
            study.tell_and_ask(second, reason="the rig broke")
        assert transport.told[-1] == (
            second.number,
            {"state": "failed", "reason": "the rig broke", "token": second.token},
        )
        assert second.state == "running"
        assert [t.state for t in again.trials()] == ["running", "running"], "nothing landed in the namesake"
        with again.ask() as trial:
            again.tell(trial.number, 0.25)
        assert transport.told[-1] == (trial.number, {"value": 0.25, "token": namesake.token})


def test_each_trial_record_of_a_real_server_carries_the_token_the_client_sends_back(
    sqlite_server: ServerProcess,
) -> None:
    transport = Recording()
    with Client(sqlite_server.url, transport=transport) as client:
        study = client.create_study(unique("plain"), space=SPACE, policy="sobol")
        with study.ask() as trial:
            following = study.tell_and_ask(trial.number, 0.5)
        assert trial.token is not None and following.token == trial.token
        assert study.tell(following, 0.25).token == trial.token
        study.tell(study.ask().number, 0.75)
        assert {t.token for t in study.trials()} == {trial.token}
        assert [body.get("token") for _, body in transport.told] == [trial.token] * 3
        assert [t.state for t in study.trials()] == ["complete"] * 3


def test_load_if_exists_with_another_definition_names_what_differs(sqlite_server: Any) -> None:
    """Issue 28, item 10: asked for minucb on one parameter, a study of that name on sobol and two is an error that
    says so, not the old study returned in silence; the same definition again loads it."""
    name = unique("defined")
    with Client(sqlite_server.url) as client:
        space = {"x": {"type": "float", "low": 0, "high": 1}, "y": {"type": "float", "low": 0, "high": 1}}
        client.create_study(name, space, policy="sobol")
        same = client.create_study(name, {**space, "x": {"type": "float", "low": 0.0, "high": 1.0, "log": False}},
                                   policy="sobol", load_if_exists=True)  # fmt: skip
        assert same.name == name
        with pytest.raises(Conflict) as caught:
            client.create_study(name, {"x": space["x"]}, policy="minucb", load_if_exists=True)
        assert "space" in str(caught.value) and "policy 'sobol' (asked 'minucb')" in str(caught.value)
        # outcomes as the user wrote them, the server's defaults left out (a direction, safety's seeds), load it
        several = {"objectives": [{"metric": "a"}, {"metric": "b"}]}
        safe = {
            "objectives": [{"metric": "y"}],
            "constraints": [{"metric": "c", "op": "<=", "bound": 1}],
            "safety": {"max_violation_probability": 0.05},
        }
        for policy, outcomes in (("turbo", safe), ("random", several)):
            again = unique("outcomes")
            client.create_study(again, space, policy=policy, **outcomes)
            assert client.create_study(again, space, policy=policy, load_if_exists=True, **outcomes).name == again
        with pytest.raises(Conflict, match="objectives"):  # a direction the stored study does not have
            maximised = [{"metric": "a", "direction": "maximize"}, {"metric": "b"}]
            client.create_study(again, space, policy="random", load_if_exists=True, objectives=maximised)


def test_a_wrong_url_says_so_at_once_and_the_error_names_it(caplog: Any) -> None:
    """Issue 28, item 9: a refused connection at the first call is logged at once with the URL and the retry budget;
    the final error names the URL."""
    import logging

    url = "http://127.0.0.1:9"  # discard: nothing listens
    with Client(url, retry_for=1.0, backoff=0.1) as client, caplog.at_level(logging.WARNING, "localbo_client"):
        with pytest.raises(httpx.ConnectError, match="127.0.0.1:9/api/v1/studies"):
            client.create_study(unique("nowhere"), {"x": {"type": "float", "low": 0, "high": 1}})
    warned = [r.getMessage() for r in caplog.records if "cannot be reached" in r.getMessage()]
    assert len(warned) == 1 and url in warned[0] and "retrying for up to 1 s" in warned[0]
