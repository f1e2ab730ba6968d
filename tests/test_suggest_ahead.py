"""Planning in the background: suggest-ahead after tells, coalesced asks, late asks, one refit across processes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_service import LocalService as Engine
from localbo.policies import Suggestion, SuggestRequest
from localbo.workers import Executor

from tests.conftest import make_settings

# batches of 1 + 5 points, small acquisition searches: quick on a busy machine
LIGHT = {"samples_per_iteration": 5, "num_restarts": 1, "raw_samples": 16, "step_restarts": 2}
SPACE = {"a": {"type": "float", "low": 0.0, "high": 1.0}, "b": {"type": "float", "low": 0.0, "high": 1.0}}


def f(params: dict[str, float]) -> float:
    return (params["a"] - 0.3) ** 2 + (params["b"] - 0.6) ** 2


class Counting:
    """The engine's real executor, counting the computations it runs and how many overlap.

    ``delay`` makes every computation that much slower; a ``gate`` (``hold()``) keeps each one from
    finishing until ``release()``: a computation known to be slower than anything it is raced against,
    whatever the machine's load, and no longer than the test needs.
    """

    def __init__(self, inner: Executor, delay: float = 0.0) -> None:
        self.inner, self.delay = inner, delay
        self.name = inner.name
        self.calls = 0
        self.active = 0
        self.max_active = 0
        self.started = threading.Event()
        self.gate: threading.Event | None = None
        self._guard = threading.Lock()

    def hold(self) -> None:
        self.gate = threading.Event()

    def release(self) -> None:
        if self.gate is not None:
            self.gate.set()

    def run(
        self, policy: str, request: SuggestRequest, queue: str = "cpu", timeout: float = 900.0, local: bool = False
    ) -> Suggestion:
        with self._guard:
            self.calls += 1
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.started.set()
        try:
            if self.gate is not None:
                assert self.gate.wait(timeout=120), "the test never released the computation"
            time.sleep(self.delay)  # a slow refit, as at d = 100
            return self.inner.run(policy, request, queue, timeout, local)
        finally:
            with self._guard:
                self.active -= 1

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def make_engine(tmp_path: Path) -> Iterator:
    made: list[Engine] = []

    def make(db_url: str | None = None, delay: float = 0.0, **overrides: object) -> Engine:
        engine = Engine(make_settings(db_url or f"sqlite:///{tmp_path / 'db.sqlite'}", **overrides))
        engine.executor = Counting(engine.executor, delay)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.executor.release()
        engine.close(wait=True)


def settle(engine: Engine, name: str, timeout: float = 60.0) -> None:
    """Wait until no planning job for ``name`` is under way in this engine."""
    deadline = time.monotonic() + timeout
    while (job := engine.running_job(name)) is not None:
        job.result(timeout=max(0.0, deadline - time.monotonic()))


def run_batch(engine: Engine, name: str) -> list[dict]:
    """Ask for the whole planned batch, then tell every point."""
    n = len(engine.policy_view(name)["planned"])
    trials = engine.ask(name, count=n)["trials"]
    for trial in trials[:-1]:
        engine.tell(name, trial["number"], f(trial["params"]))
    return trials


def test_the_tell_that_completes_a_batch_plans_the_next_one_before_any_ask(make_engine) -> None:
    engine = make_engine()
    engine.create_study("ahead", "minimize", SPACE, "minucb", LIGHT, seed=1)
    engine.ask("ahead")  # the first batch: x_0 and its exploration
    engine.tell("ahead", 1, 0.5)
    trials = run_batch(engine, "ahead")
    settle(engine, "ahead")
    view = engine.policy_view("ahead")
    assert view["planned"] == [] and view["state"]["t"] == 0, "no top-up while the batch's last trial runs"
    calls = engine.executor.calls

    engine.tell("ahead", trials[-1]["number"], f(trials[-1]["params"]))  # the batch is complete
    settle(engine, "ahead")
    view = engine.policy_view("ahead")
    assert view["state"]["t"] == 1 and len(view["planned"]) == 6, "the step was computed after the tell"
    assert engine.executor.calls == calls + 1

    engine.executor.delay = 30.0  # a computation now takes 30 s: an ask served from the plan takes none
    started = time.perf_counter()
    (trial,) = engine.ask("ahead")["trials"]
    assert time.perf_counter() - started < 15.0, "served from the plan"
    assert trial["source"] == "minucb" and engine.executor.calls == calls + 1
    engine.executor.delay = 0.0


def test_with_suggest_ahead_off_the_ask_computes_the_step(make_engine) -> None:
    engine = make_engine(suggest_ahead=False)
    engine.create_study("lazy", "minimize", SPACE, "minucb", LIGHT, seed=1)
    engine.ask("lazy")
    engine.tell("lazy", 1, 0.5)
    trials = run_batch(engine, "lazy")
    engine.tell("lazy", trials[-1]["number"], 0.1)
    assert engine.running_job("lazy") is None
    assert engine.policy_view("lazy")["state"]["t"] == 0 and engine.executor.calls == 1
    assert engine.ask("lazy")["trials"][0]["source"] == "minucb"
    assert engine.policy_view("lazy")["state"]["t"] == 1 and engine.executor.calls == 2


def test_concurrent_asks_share_one_computation(make_engine) -> None:
    engine = make_engine(delay=0.5)
    config = {**LIGHT, "samples_per_iteration": 7}  # a batch of 8: one per asker
    engine.create_study("crowd", "minimize", SPACE, "minucb", config, seed=2)
    got: list[dict] = []
    asks = [threading.Thread(target=lambda: got.extend(engine.ask("crowd")["trials"])) for _ in range(8)]
    for t in asks:
        t.start()
    for t in asks:
        t.join(timeout=60)
    assert sorted(t["number"] for t in got) == list(range(1, 9))
    assert engine.executor.calls == 1 and engine.executor.max_active == 1
    assert {t["source"] for t in got} == {"minucb"}


def test_an_ask_that_waits_too_long_gets_a_local_fallback_point_and_the_plan_still_lands(make_engine) -> None:
    engine = make_engine(ask_wait_seconds=0.2)
    engine.executor.hold()  # the computation cannot finish while the ask waits
    engine.create_study("late", "minimize", SPACE, "minucb", {**LIGHT, "delta": 0.1}, seed=3)
    (trial,) = engine.ask("late")["trials"]
    assert trial["source"] == "fallback", "the ask did not wait for the whole computation"
    engine.executor.release()
    settle(engine, "late")
    view = engine.policy_view("late")
    assert view["policy_state_version"] == 1 and len(view["planned"]) == 6, "the late plan was kept"
    assert view["last_policy_error"] is None, "a late policy is no policy error"
    x_t = view["state"]["x_t"]
    (planned,) = engine.ask("late")["trials"]
    assert planned["source"] == "minucb" and planned["params"] == {"a": x_t[0], "b": x_t[1]}

    # once the policy has an iterate, a late point lies in its exploration box
    for number in (1, 2):
        engine.tell("late", number, 0.3)
    engine.settings.ask_wait_seconds = 0.0
    engine.executor.hold()
    engine.ask("late", count=5)
    (late,) = engine.ask("late")["trials"]  # the plan is empty, and the policy's top-up is held
    engine.executor.release()
    assert late["source"] == "fallback"
    assert all(abs(late["params"][k] - x) <= 0.1 + 1e-9 for k, x in zip("ab", x_t, strict=True))


def test_two_engines_on_one_database_never_refit_one_study_at_once(db_url: str, make_engine) -> None:
    """Two processes' engines (each with its own in-process locks): the claim on the study row keeps them apart."""
    first, second = make_engine(db_url, delay=0.5), make_engine(db_url, delay=0.5)
    first.create_study("shared", "minimize", SPACE, "minucb", LIGHT, seed=4)
    jobs = [engine.start_plan("shared") for engine in (first, second)]
    for job in jobs:
        job.result(timeout=60)
    assert first.executor.calls + second.executor.calls == 1
    view = first.policy_view("shared")
    assert view["policy_state_version"] == 1 and len(view["planned"]) == 6


def test_a_claim_left_by_a_crashed_process_runs_out_and_a_live_one_is_respected(make_engine) -> None:
    from datetime import timedelta

    from localbo.storage import claims as claim_rows
    from localbo.storage import repository as repo
    from localbo.storage.models import utcnow

    engine = make_engine()
    engine.create_study("claimed", "minimize", SPACE, "minucb", LIGHT, seed=5)
    study_id = engine.study_id("claimed")
    with engine.write.begin() as conn:  # another process holds the claim and is computing
        assert claim_rows.claim_planning(conn, study_id, "other", utcnow(), utcnow() + timedelta(seconds=60))
    engine.plan("claimed", 1, True)
    assert engine.executor.calls == 0, "suggest-ahead leaves the study to the process computing it"

    with engine.write.begin() as conn:  # that process died: its claim ran out a second ago
        claim_rows.renew_planning(conn, study_id, "other", utcnow() - timedelta(seconds=1))
    engine.plan("claimed", 1, False)
    assert engine.executor.calls == 1 and len(engine.policy_view("claimed")["planned"]) == 6
    with engine.db.begin() as conn:
        assert repo.get_study(conn, "claimed").plan_claim is None, "released after planning"


def test_a_long_computation_keeps_its_claim_alive(make_engine, monkeypatch: pytest.MonkeyPatch) -> None:
    import localbo.planning.claims
    from localbo.storage import claims as claim_rows
    from localbo.storage.models import utcnow

    # renewed every second; a renewal thread would have to stall for 2 s to lose it on a busy machine
    monkeypatch.setattr(localbo.planning.claims, "CLAIM_SECONDS", 3.0)
    first, second = make_engine(), make_engine()
    first.executor.hold()  # the refit lasts until released, past the claim's first life
    first.create_study("long", "minimize", SPACE, "minucb", LIGHT, seed=6)
    study_id = first.study_id("long")
    job = first.start_plan("long")
    assert first.executor.started.wait(timeout=60), "the refit did not start"

    def claimed_until():  # noqa: ANN202
        with first.db.begin() as conn:
            return claim_rows.planning_status(conn, study_id).claimed_until

    first_life = claimed_until()
    deadline = time.monotonic() + 60
    while not (utcnow() > first_life and claimed_until() > first_life):  # well past the claim's first life
        assert time.monotonic() < deadline, "the claim was not renewed"
        time.sleep(0.1)
    second.plan("long", 1, True)
    first.executor.release()
    job.result(timeout=60)
    assert (first.executor.calls, second.executor.calls) == (1, 0)


def test_a_late_ask_on_a_categorical_space_gets_a_fallback_point_and_the_plan_is_stored_one_hot(make_engine) -> None:
    space = {**SPACE, "kind": {"type": "categorical", "choices": ["x", "y", "z"]}}
    engine = make_engine(ask_wait_seconds=0.2)
    engine.create_study("late-cat", "minimize", space, "ei", {}, seed=3)
    engine.executor.hold()
    for trial in engine.ask("late-cat", count=6)["trials"]:  # the initial design: d + 1 = 6 points
        engine.tell("late-cat", trial["number"], f(trial["params"]) + "xyz".index(trial["params"]["kind"]))
    (late,) = engine.ask("late-cat")["trials"]  # the policy is held, the ask waits 0.2 s
    engine.executor.release()
    assert late["source"] == "fallback" and late["params"]["kind"] in ("x", "y", "z")
    settle(engine, "late-cat")
    for point in engine.policy_view("late-cat")["planned"]:  # what the next suggest sees as pending
        assert sorted(point["x"][2:]) == [0.0, 0.0, 1.0], point
