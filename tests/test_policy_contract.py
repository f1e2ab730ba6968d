"""Every registered policy keeps the policy contract (policies/base.py) on every kind of space it runs on:
points in the unit cube, at least ``count`` of them, a state that survives the engine's JSON round trip,
and the same points for the same seed and data whatever torch's global RNG holds, also while another
thread runs the same policy and a third keeps reseeding the global RNG (no policy may read or seed it).

Sequential and concurrent runs must agree bit for bit: no global RNG, and GPyTorch's settings per
thread (policies/thread_settings.py; without it a posterior computed while another thread is inside a
settings context takes another code path and differs in the last bits)."""

from __future__ import annotations

import json
import random
import threading
from typing import Any

import pytest
import torch
from localbo.policies import FiniteSpace, Policy, PolicyState, Suggestion, registry
from policy_requests import make_request

TINY = {  # the cheapest settings each policy accepts: this file checks the contract, not the science
    "num_restarts": 2,
    "raw_samples": 16,
    "step_restarts": 2,
    "fantasies": 4,
    "lookahead_restarts": 1,
    "lookahead_maxiter": 5,
    "max_steps": 50,
    "candidates": 16,
    "local_candidates": 0,
    "restarts": 1,
    "plan_ahead": 4,
    "features": 20,
}
COUNT = 2
# one torch thread for every run, the sequential ones too: a reduction split over two intra-op threads
# may differ in the last bits from the same sum on one, which is not what this file checks
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_config(cls: type[Policy], kind: str) -> dict[str, Any]:
    """TINY's keys that ``cls`` has and that apply to ``kind`` (n_init small on a finite space, so the GP runs)."""
    fields = cls.Config.model_fields
    out: dict[str, Any] = {}
    for key, value in {**TINY, **({"n_init": 2} if kind == "finite" else {})}.items():
        extra = fields[key].json_schema_extra if key in fields else None
        spaces = extra.get("spaces") if isinstance(extra, dict) else None
        if key in fields and (not isinstance(spaces, list) or kind in spaces):
            out[key] = value
    return out


def case(name: str, kind: str, seed: int = 11) -> tuple[type[Policy], Any]:
    """The policy and a factory of its request on a small study of this kind (fresh generator each call)."""
    cls = registry()[name]
    g = torch.Generator().manual_seed(3)
    config = cls.Config.model_validate(tiny_config(cls, kind))
    cls.check_space(kind, config)
    if kind == "finite":
        candidates = torch.rand(30, 2, generator=g, dtype=torch.float64)
        done, pending = torch.arange(6), torch.tensor([6])
        space = FiniteSpace(candidates, done, pending)
        y = (candidates[done] - 0.4).pow(2).sum(-1)
        X, P = candidates[done], candidates[pending]
        onehot: tuple[tuple[int, int], ...] = ()
    else:
        space = None
        d = 2 if kind == "continuous" else 3
        X = torch.rand(6, d, generator=g, dtype=torch.float64)
        P = torch.rand(1, d, generator=g, dtype=torch.float64)
        onehot = ((1, 2),) if kind == "categorical" else ()
        for M in (X, P):  # the engine snaps one-hot blocks to their argmax
            if onehot:
                hot = M[:, 1:3].argmax(-1)
                M[:, 1:3] = torch.nn.functional.one_hot(hot, 2).to(M)
        y = (X[:, 0] - 0.3).pow(2) + X[:, -1]

    def request(state: PolicyState | None = None) -> Any:
        return make_request(
            cls, X, y, pending=P, count=COUNT, state=state, config=config, seed=seed, onehot=onehot, finite=space
        )

    return cls, request


# the service's policies: not the test doubles ("test-...") that other test modules register on import
SERVED = {name: cls for name, cls in registry().items() if not name.startswith("test-")}
CASES = [(name, kind) for name, cls in SERVED.items() for kind in sorted(cls.spaces)]


def check_points(cls: type[Policy], suggestion: Suggestion, request: Any) -> None:
    X = suggestion.X
    assert X.ndim == 2 and X.shape[0] >= COUNT and X.shape[1] == request.dim
    assert bool(torch.isfinite(X).all()) and bool((X >= 0).all()) and bool((X <= 1).all())
    assert isinstance(suggestion.state, cls.State)
    if request.finite is not None:
        assert suggestion.index is not None and torch.equal(X, request.finite.candidates[suggestion.index])


@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_policy_keeps_the_contract_and_ignores_the_global_rng(name: str, kind: str) -> None:
    cls, request = case(name, kind)
    first = cls().suggest(request())
    check_points(cls, first, request())

    # the state as the engine stores it (JSON) comes back unchanged, and a second call continues from it
    stored = json.loads(json.dumps(cls.dump_state(first.state)))
    loaded, note = cls.load_state(stored)
    assert note is None and loaded == first.state

    # the same seed and data after the global RNG was reseeded: the same points, bit for bit
    torch.manual_seed(12345)
    again = cls().suggest(request())
    assert torch.equal(again.X, first.X) and again.state == first.state
    if kind == "categorical":
        return  # the same code as on the continuous cube: its threads are checked there (this file stays fast)

    # ... and in two threads at once while a third reseeds the global RNG in a loop
    results: dict[int, Suggestion] = {}
    done = threading.Event()

    def run(slot: int) -> None:
        results[slot] = cls().suggest(request())

    def reseed() -> None:
        rng = random.Random(0)
        while not done.wait(0.0002):  # a short wait: a spinning loop would starve the workers of the GIL
            torch.manual_seed(rng.randrange(2**31))

    seeder = threading.Thread(target=reseed)
    workers = [threading.Thread(target=run, args=(slot,)) for slot in (0, 1)]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two workers with intra-op pools each would only wait on each other
    try:
        seeder.start()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        done.set()
        seeder.join()
        torch.set_num_threads(threads)
    for slot in (0, 1):
        got = results[slot]
        assert torch.equal(got.X, first.X), f"{name} on {kind}: thread {slot} differs"
        assert type(got.state) is type(first.state)
        if first.index is not None:
            assert got.index is not None and torch.equal(got.index, first.index)


def test_a_state_stored_by_the_dict_era_loads() -> None:
    """States as the previous code stored them ({"schema": 1, "data": {...}}) load into the typed States."""
    gibo = registry()["gibo"]
    hypers = {"kernel": "rbf", "lengthscale": [0.2, 0.3], "noise": 0.01, "mean": 0.1}
    local = {
        "t": 2,
        "x_t": [0.4, 0.6],
        "phase": "top-up",
        "n_start": 7,
        "batch": 3,
        "extra": 1,
        "hypers": hypers,
        "path": [
            {"t": 0, "n": 0, "x": [0.5, 0.5], "info": {"event": "start", "t": 0, "batch": 3, "trace_before": 4.0}},
            {"t": 1, "n": 3, "x": [0.45, 0.55], "info": {"event": "step", "grad_norm": 1.5, "moved": True}},
        ],
    }
    state, note = gibo.load_state({"schema": 1, "data": local})
    assert note is None and state.model_dump(mode="json") == local
    assert gibo.plans_now(state, 9, 1) is False and gibo.plans_now(state, 10, 1) is True
    lower, upper = gibo.fallback_box(state, gibo.Config(), 2)
    assert lower == pytest.approx([0.2, 0.4]) and upper == pytest.approx([0.6, 0.8])
    shown = gibo.display(state, gibo.Config(), 9)
    assert shown is not None and shown.progress is not None and (shown.progress.done, shown.progress.total) == (2, 3)
    assert shown.centre == [0.4, 0.6] and shown.path == [[0.5, 0.5], [0.45, 0.55]]

    first_call = {"t": 0, "x_t": [0.5, 0.5], "phase": "batch", "n_start": 0, "batch": 3, "extra": 0, "hypers": {}}
    state, note = registry()["minucb"].load_state({"schema": 1, "data": {**first_call, "path": []}})
    assert note is None and state.hypers is None  # type: ignore[attr-defined]

    old_global = {"hypers": hypers, "n": 9, "lipschitz": {"L": None, "L_lb": 0.0, "t": 9, "known": False}}
    for name in ("ucb", "tei", "ar-ts"):
        state, note = registry()[name].load_state({"schema": 1, "data": old_global})
        assert note is None and state.n == 9  # type: ignore[attr-defined]
    state, note = registry()["ei"].load_state({"schema": 1, "data": {"hypers": {}, "n": 0}})
    assert note is None
    state, note = registry()["chaining-ucb"].load_state({"schema": 1, "data": {"hypers": hypers, "n": 4}})
    assert note is None and state.hypers is not None  # type: ignore[attr-defined]
    for name in ("random", "sobol"):
        state, note = registry()[name].load_state({"schema": 1, "data": {"drawn": 32}})
        assert note is None and state.drawn == 32  # type: ignore[attr-defined]
    for empty in (None, {}):
        state, note = gibo.load_state(empty)
        assert note is None and state == gibo.State()


@pytest.mark.parametrize("name", sorted(registry()))
def test_a_state_that_cannot_be_loaded_restarts_the_policy_with_a_note(name: str) -> None:
    cls = registry()[name]
    version = cls.State.version
    for saved in (
        {"schema": version + 1, "data": {}},  # written by a newer server
        {"schema": version, "data": {"no such key": 1}},  # a layout that does not validate
        {"schema": version - 1, "data": {}},  # older, and no migration
        {"data": {}},  # no version at all
    ):
        state, note = cls.load_state(saved)
        assert state == cls.State() and note, (name, saved)


def test_a_migration_brings_an_older_state_up_to_date() -> None:
    class Old(PolicyState):
        version = 2
        drawn: int = 0

        @classmethod
        def migrate(cls, raw: dict[str, Any], from_version: int) -> dict[str, Any]:
            return {"drawn": raw["count"]}

    class Policy2(registry()["random"]):  # type: ignore[misc, valid-type]
        State = Old

    state, note = Policy2.load_state({"schema": 1, "data": {"count": 5}})
    assert note is None and state == Old(drawn=5)
    assert Policy2.dump_state(state) == {"schema": 2, "data": {"drawn": 5}}
