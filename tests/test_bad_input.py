"""Bad input: every refusal is a 4xx whose JSON ``detail`` names the field and what was expected,
and the study is exactly as it was before (study, trial list and JSON export compared).

Every test runs on SQLite and on the real Postgres (the ``api`` / ``db_url`` fixtures).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from conftest import unique

API = "/api/v1/studies"
JSON = {"content-type": "application/json"}
SPACE = {
    "x": {"type": "float", "low": -5, "high": 5},
    "lr": {"type": "float", "low": 1e-5, "high": 1, "log": True},
    "n": {"type": "int", "low": 1, "high": 8},
}
GOOD_PARAMS = {"x": 0.5, "lr": 0.01, "n": 3}


# -- helpers -----------------------------------------------------------------------------


def assert_error(resp: Any, status: int | tuple[int, ...], field: str | tuple[str, ...], *expected: str) -> str:
    """A JSON error answer with ``status`` whose detail starts with ``field:`` and mentions ``expected``.

    ``status`` and ``field`` may be tuples of acceptable alternatives.
    """
    statuses = status if isinstance(status, tuple) else (status,)
    fields = field if isinstance(field, tuple) else (field,)
    assert resp.status_code in statuses, resp.text
    assert resp.headers["content-type"].startswith("application/json"), resp.headers
    detail = resp.json()["detail"]
    assert isinstance(detail, str), detail
    assert any(detail.startswith(f"{f}:") for f in fields), f"detail does not name {fields}: {detail!r}"
    for text in expected:
        assert text in detail, f"{text!r} not in {detail!r}"
    return detail


def snapshot(api: Any, name: str) -> dict[str, Any]:
    """All that the API shows of one study: the study, its trials and its JSON export."""
    study = api.get(f"{API}/{name}")
    trials = api.get(f"{API}/{name}/trials", params={"limit": 10_000})
    export = api.get(f"{API}/{name}/export", params={"format": "json"})
    for resp in (study, trials, export):
        assert resp.status_code == 200, resp.text
    return {"study": study.json(), "trials": trials.json(), "export": export.json()}


def settle(api: Any, name: str, timeout: float = 120.0) -> None:
    """Wait until no background planning job of the study is under way in the in-process app (a plan started by an
    earlier tell that lands during the block would change the study without the block's doing)."""
    service = getattr(getattr(getattr(api, "app", None), "state", None), "service", None)
    if service is None:  # a live server in another process
        return
    from localbo.storage import repository as repo

    with service.db.begin() as conn:
        study = repo.get_study(conn, name)
    if study is None:
        return
    deadline = time.monotonic() + timeout
    while (job := service.planner.jobs.running(study.id)) is not None and time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # a failing plan is the planner's to record; this only waits
            job.result(timeout=max(0.0, deadline - time.monotonic()))


@contextmanager
def unchanged(api: Any, *names: str) -> Iterator[None]:
    """Asserts that the block leaves each named study exactly as it found it (its planning settled first)."""
    for name in names:
        settle(api, name)
    before = {name: snapshot(api, name) for name in names}
    yield
    after = {name: snapshot(api, name) for name in names}
    for name in names:
        assert after[name] == before[name], f"study {name!r} changed"


@contextmanager
def no_study_created(api: Any, name: str) -> Iterator[None]:
    """Asserts that the block creates no study: the list is the same and ``name`` is unknown."""
    before = api.get(API).json()
    yield
    assert api.get(API).json() == before
    assert api.get(f"{API}/{name}").status_code == 404


def create(api: Any, name: str | None = None, **fields: Any) -> str:
    name = name or unique("bad")
    body = {"name": name, "space": SPACE, "policy": "random", "seed": 7, **fields}
    resp = api.post(API, json=body)
    assert resp.status_code == 201, resp.text
    return name


def ask(api: Any, name: str, count: int = 1) -> list[dict[str, Any]]:
    resp = api.post(f"{API}/{name}/ask", json={"count": count})
    assert resp.status_code == 200, resp.text
    return resp.json()["trials"]


def tell(api: Any, name: str, number: int, **body: Any) -> Any:
    return api.post(f"{API}/{name}/trials/{number}/tell", json=body)


def trial(api: Any, name: str, number: int) -> dict[str, Any]:
    trials = api.get(f"{API}/{name}/trials", params={"limit": 10_000}).json()["trials"]
    return next(t for t in trials if t["number"] == number)


@pytest.fixture
def study(api: Any) -> str:
    """A study with trial 1 complete (value 0.5) and trial 2 running."""
    name = create(api)
    assert [t["number"] for t in ask(api, name, 2)] == [1, 2]
    assert tell(api, name, 1, value=0.5).status_code == 200
    return name


# -- tell ----------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [b'{"value": NaN}', b'{"value": Infinity}', b'{"value": -Infinity}'])
def test_tell_non_finite_value(api: Any, study: str, raw: bytes) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/trials/2/tell", content=raw, headers=JSON)
        assert_error(resp, 422, "value", "finite")
    assert trial(api, study, 2)["state"] == "running"


def test_tell_string_value(api: Any, study: str) -> None:
    with unchanged(api, study):
        assert_error(tell(api, study, 2, value="abc"), 422, "value", "number")


@pytest.mark.parametrize("value", ["0.25", True], ids=["numeric-string", "boolean"])
def test_tell_value_must_be_a_json_number(api: Any, study: str, value: Any) -> None:
    """A string or a boolean is not an objective value, even one that Python could convert."""
    with unchanged(api, study):
        assert_error(tell(api, study, 2, value=value), 422, "value", "number")


@pytest.mark.parametrize("value", ["0.25", True], ids=["numeric-string", "boolean"])
def test_external_trial_value_must_be_a_json_number(api: Any, study: str, value: Any) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/trials", json={"params": GOOD_PARAMS, "value": value})
        assert_error(resp, 422, "value", "number")


@pytest.mark.parametrize("body", [{}, {"value": None}, {"state": "complete"}], ids=["empty", "null", "state-only"])
def test_tell_missing_value(api: Any, study: str, body: dict) -> None:
    with unchanged(api, study):
        assert_error(tell(api, study, 2, **body), 422, "value", "finite number")


def test_tell_unknown_field(api: Any, study: str) -> None:
    with unchanged(api, study):
        assert_error(tell(api, study, 2, value=1.0, vlaue=1.0), 422, "vlaue", "not permitted")


def test_tell_bad_state(api: Any, study: str) -> None:
    with unchanged(api, study):
        assert_error(tell(api, study, 2, state="crashed"), 422, "state", "'complete' or 'failed'")


@pytest.mark.parametrize("number", [0, -1])
def test_tell_trial_number_below_one(api: Any, study: str, number: int) -> None:
    with unchanged(api, study):
        assert_error(tell(api, study, number, value=1.0), 422, "number", "greater than or equal to 1")


def test_tell_unknown_trial_number(api: Any, study: str) -> None:
    with unchanged(api, study):
        assert_error(tell(api, study, 3, value=1.0), 404, "number", "no trial 3")


def test_tell_trial_number_of_another_study(api: Any) -> None:
    a, b = create(api, unique("a")), create(api, unique("b"))
    assert [t["number"] for t in ask(api, a, 3)] == [1, 2, 3]
    assert [t["number"] for t in ask(api, b, 1)] == [1]
    with unchanged(api, a, b):
        assert_error(tell(api, b, 3, value=1.0), 404, "number", "no trial 3", b)
        resp = api.post(f"{API}/{b}/trials/3/heartbeat")
        assert_error(resp, 404, "number", "no trial 3", b)
        assert_error(tell(api, b, 3, state="failed", reason="x"), 404, "number", "no trial 3")
    assert trial(api, a, 3)["state"] == "running"


def test_second_tell_with_another_value_is_a_conflict_and_keeps_the_first(api: Any, study: str) -> None:
    with unchanged(api, study):
        assert_error(tell(api, study, 1, value=0.75), 409, "value", "already told 0.5")
    assert trial(api, study, 1)["value"] == 0.5
    assert api.get(f"{API}/{study}/best").json()["value"] == 0.5


def test_second_tell_with_the_same_value_is_a_no_op(api: Any, study: str) -> None:
    first = trial(api, study, 1)
    with unchanged(api, study):
        resp = tell(api, study, 1, value=0.5)
        assert resp.status_code == 200, resp.text
        assert resp.json() == first


def test_tell_value_after_failed_is_a_conflict(api: Any, study: str) -> None:
    assert tell(api, study, 2, state="failed", reason="sensor error").status_code == 200
    with unchanged(api, study):
        assert_error(tell(api, study, 2, value=1.0), 409, ("value", "state"), "trial 2", "failed", "sensor error")
    after = trial(api, study, 2)
    assert (after["state"], after["value"], after["reason"]) == ("failed", None, "sensor error")


def test_tell_failed_after_a_value_is_a_conflict(api: Any, study: str) -> None:
    with unchanged(api, study):
        resp = tell(api, study, 1, state="failed", reason="late")
        assert_error(resp, 409, ("state", "value"), "trial 1", "already told", "0.5")


# -- external trials -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "field", "expected"),
    [
        ({**GOOD_PARAMS, "zz": 1}, "params.zz", ("unknown parameter", "['x', 'lr', 'n']")),
        ({"x": 0.5, "lr": 0.01}, "params.n", ("missing", "['x', 'lr', 'n']")),
        ({**GOOD_PARAMS, "x": 5.5}, "params.x", ("[-5.0, 5.0]", "5.5")),
        ({**GOOD_PARAMS, "x": -6}, "params.x", ("[-5.0, 5.0]",)),
        ({**GOOD_PARAMS, "n": 9}, "params.n", ("[1, 8]",)),
        ({**GOOD_PARAMS, "n": 2.5}, "params.n", ("whole number", "2.5")),
        ({**GOOD_PARAMS, "lr": 0}, "params.lr", ("[1e-05, 1.0]",)),
        ({**GOOD_PARAMS, "lr": -0.1}, "params.lr", ("[1e-05, 1.0]",)),
        ({**GOOD_PARAMS, "lr": 2}, "params.lr", ("[1e-05, 1.0]",)),
        ({**GOOD_PARAMS, "x": "0.5"}, "params.x", ("expected a number",)),
        ({**GOOD_PARAMS, "x": True}, "params.x", ("expected a number",)),
        ({**GOOD_PARAMS, "x": None}, "params.x", ("expected a number",)),
    ],
    ids=[
        "unknown",
        "missing",
        "above-high",
        "below-low",
        "int-above-high",
        "int-fractional",
        "log-zero",
        "log-negative",
        "log-above-high",
        "string",
        "boolean",
        "null",
    ],
)
def test_external_trial_bad_params(api: Any, study: str, params: dict, field: str, expected: tuple) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/trials", json={"params": params, "value": 1.0})
        assert_error(resp, 422, field, *expected)


def test_external_trial_good_params_are_accepted(api: Any, study: str) -> None:
    """The control for the cases above: the same request with good params is stored."""
    resp = api.post(f"{API}/{study}/trials", json={"params": GOOD_PARAMS, "value": 1.0})
    assert resp.status_code == 201, resp.text
    assert (resp.json()["number"], resp.json()["source"]) == (3, "external")


@pytest.mark.parametrize(
    "raw",
    [
        b'{"params": {"x": 0.5, "lr": 0.01, "n": 3}, "value": NaN}',
        b'{"params": {"x": 0.5, "lr": 0.01, "n": 3}, "value": Infinity}',
        b'{"params": {"x": 0.5, "lr": 0.01, "n": 3}, "value": "abc"}',
        b'{"params": {"x": 0.5, "lr": 0.01, "n": 3}}',
    ],
    ids=["nan", "inf", "string", "missing"],
)
def test_external_trial_bad_value(api: Any, study: str, raw: bytes) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/trials", content=raw, headers=JSON)
        assert_error(resp, 422, "value")


def test_external_trial_params_not_an_object(api: Any, study: str) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/trials", json={"params": [0.5, 0.01, 3], "value": 1.0})
        assert_error(resp, 422, "params", "dictionary")


# -- malformed and oversized bodies ----------------------------------------------------------


@pytest.mark.parametrize("route", ["ask", "trials/2/tell", "trials"])
@pytest.mark.parametrize("raw", [b'{"value": 1', b"{'value': 1}"], ids=["truncated", "single-quotes"])
def test_malformed_json(api: Any, study: str, route: str, raw: bytes) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/{route}", content=raw, headers=JSON)
        assert_error(resp, 422, "body", "malformed JSON")


@pytest.mark.parametrize(
    ("route", "raw", "key"),
    [
        ("trials/2/tell", b'{"value": 1.0, "value": 2.0}', "value"),
        ("trials", b'{"params": {"x": 0.5, "x": 0.7}, "value": 1.0}', "x"),
    ],
    ids=["tell", "add-trial-params"],
)
def test_a_key_twice_in_one_object_is_refused_not_read_last_wins(
    api: Any, study: str, route: str, raw: bytes, key: str
) -> None:
    repeat = raw.rfind(b'"' + key.encode() + b'"')  # where the second one starts
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/{route}", content=raw, headers=JSON)
        assert_error(resp, 422, "body", "malformed JSON", f"the key '{key}' twice", f"at position {repeat}")


def test_a_key_twice_at_study_creation_is_refused(api: Any) -> None:
    raw = b'{"name": "twice", "space": {"x": {"type": "float", "low": 0, "high": 1}}, "name": "other"}'
    with no_study_created(api, "twice"), no_study_created(api, "other"):
        assert_error(api.post(API, content=raw, headers=JSON), 422, "body", "the key 'name' twice")


def test_malformed_json_at_study_creation(api: Any) -> None:
    with no_study_created(api, "broken"):
        resp = api.post(API, content=b'{"name": "broken", "space": {', headers=JSON)
        assert_error(resp, 422, "body", "malformed JSON")


def test_tell_without_body(api: Any, study: str) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/trials/2/tell")
        assert_error(resp, 422, "body", "missing", "JSON object")


def test_tell_body_not_an_object(api: Any, study: str) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/trials/2/tell", content=b"[1.0]", headers=JSON)
        assert_error(resp, 422, "body", "object")


def test_oversized_bodies_are_refused_with_413(api: Any, make_client: Any, study: str) -> None:
    small = make_client(max_body_bytes=2000)
    big_reason = {"state": "failed", "reason": "x" * 5000}
    with unchanged(api, study):
        resp = small.post(f"{API}/{study}/trials/2/tell", json=big_reason)
        assert_error(resp, 413, "body", "2000 bytes", "LOCALBO_MAX_BODY_BYTES")
        resp = small.post(f"{API}/{study}/trials", json={"params": {**GOOD_PARAMS, "pad": "y" * 5000}, "value": 1})
        assert_error(resp, 413, "body", "2000 bytes")
    name = unique("big")
    with no_study_created(api, name):
        resp = small.post(API, json={"name": name, "space": SPACE, "metadata": {"notes": "z" * 5000}})
        assert_error(resp, 413, "body", "2000 bytes")
    # The limit refuses only what is over it: a small tell through the same client is stored.
    assert small.post(f"{API}/{study}/trials/2/tell", json={"value": 0.25}).status_code == 200


def test_oversized_chunked_body_is_refused_with_413(api: Any, make_client: Any, study: str) -> None:
    """A body sent without Content-Length (chunked) is cut off at the limit too, with the same answer."""
    small = make_client(max_body_bytes=2000)

    def chunks() -> Iterator[bytes]:
        yield b'{"state": "failed", "reason": "'
        for _ in range(10):
            yield b"x" * 500
        yield b'"}'

    with unchanged(api, study):
        resp = small.post(f"{API}/{study}/trials/2/tell", content=chunks(), headers=JSON)
        assert_error(resp, 413, "body", "2000 bytes")


# -- study creation ------------------------------------------------------------------------


def test_unknown_policy_lists_the_valid_names(api: Any) -> None:
    name = unique("pol")
    with no_study_created(api, name):
        resp = api.post(API, json={"name": name, "space": SPACE, "policy": "no-such-policy"})
        assert_error(resp, 422, "policy", "no-such-policy", "'random'", "'sobol'")


@pytest.mark.parametrize(
    ("config", "field", "expected"),
    [
        ({"bogus": 1}, "policy_config.bogus", "not permitted"),
        ({"plan_ahead": 0}, "policy_config.plan_ahead", "greater than or equal to 1"),
        ({"plan_ahead": "many"}, "policy_config.plan_ahead", "integer"),
    ],
    ids=["unknown-key", "out-of-range", "wrong-type"],
)
def test_bad_policy_config(api: Any, config: dict, field: str, expected: str) -> None:
    name = unique("cfg")
    with no_study_created(api, name):
        resp = api.post(API, json={"name": name, "space": SPACE, "policy": "sobol", "policy_config": config})
        assert_error(resp, 422, field, expected)


@pytest.mark.parametrize(
    ("spec", "field", "expected"),
    [
        ({"type": "float", "low": 1, "high": 0}, "space.x.high", ("high >= low",)),
        ({"type": "int", "low": 5, "high": 2}, "space.x.high", ("high >= low",)),
        ({"type": "float", "low": 0, "high": 1, "log": True}, "space.x.low", ("low > 0", "log")),
        ({"type": "float", "low": -1, "high": 1, "log": True}, "space.x.low", ("low > 0",)),
        ({"type": "choice", "low": 0, "high": 1}, "space.x.type", ("'float', 'int' or 'categorical'", "choice")),
        ({"low": 0, "high": 1}, "space.x.type", ("'float', 'int' or 'categorical'",)),
        ({"type": "categorical", "low": 0, "high": 1}, "space.x", ("unknown keys", "choices")),
        ({"type": "categorical"}, "space.x.choices", ("expected a list",)),
        ({"type": "categorical", "choices": []}, "space.x.choices", ("1..1000",)),
        ({"type": "categorical", "choices": "abc"}, "space.x.choices", ("expected a list",)),
        ({"type": "categorical", "choices": ["a", {"b": 1}]}, "space.x.choices[1]", ("string, finite number",)),
        ({"type": "categorical", "choices": ["a", None]}, "space.x.choices[1]", ("string, finite number",)),
        ({"type": "categorical", "choices": ["a", "b", "a"]}, "space.x.choices[2]", ("twice",)),
        ({"type": "categorical", "choices": [1, 1.0]}, "space.x.choices[1]", ("twice",)),
        ({"type": "int", "low": 0.5, "high": 3}, "space.x", ("whole numbers",)),
        ({"type": "int", "low": 0, "high": 3.5}, "space.x", ("whole numbers",)),
        ({"type": "int", "low": 1, "high": 8, "log": True}, "space.x.log", ("float",)),
        ({"type": "float", "low": 0}, "space.x.high", ("missing",)),
        ({"type": "float", "low": "0", "high": 1}, "space.x.low", ("expected a number",)),
        ({"type": "float", "low": 0, "high": 1, "step": 0.1}, "space.x", ("unknown keys", "step")),
        ({"type": "float", "low": 0, "high": 1, "log": "yes"}, "space.x.log", ("true or false",)),
        ([0, 1], "space.x", ("expected an object",)),
    ],
    ids=[
        "float-high-below-low",
        "int-high-below-low",
        "log-low-zero",
        "log-low-negative",
        "unknown-type",
        "no-type",
        "categorical-with-bounds",
        "categorical-no-choices",
        "categorical-empty-choices",
        "categorical-choices-not-list",
        "categorical-object-choice",
        "categorical-null-choice",
        "categorical-repeated-choice",
        "categorical-repeated-number",
        "int-fractional-low",
        "int-fractional-high",
        "int-log",
        "missing-high",
        "string-bound",
        "unknown-key",
        "log-not-bool",
        "spec-not-object",
    ],
)
def test_bad_space_spec(api: Any, spec: Any, field: str, expected: tuple) -> None:
    name = unique("space")
    space = {"ok": {"type": "float", "low": 0, "high": 1}, "x": spec}
    with no_study_created(api, name):
        assert_error(api.post(API, json={"name": name, "space": space}), 422, field, *expected)


@pytest.mark.parametrize("space", [{}, [], "x"], ids=["empty", "list", "string"])
def test_bad_space(api: Any, space: Any) -> None:
    name = unique("space")
    with no_study_created(api, name):
        assert_error(api.post(API, json={"name": name, "space": space}), 422, "space")


@pytest.mark.parametrize("direction", ["up", "min", "MINIMIZE", 1])
def test_bad_direction(api: Any, direction: Any) -> None:
    name = unique("dir")
    with no_study_created(api, name):
        resp = api.post(API, json={"name": name, "space": SPACE, "direction": direction})
        assert_error(resp, 422, "direction", "'minimize' or 'maximize'")


@pytest.mark.parametrize(
    "name",
    ["beam one", "beam/one", "-beam", ".beam", "", "b" * 201, "beam?x=1", "strahl-ä"],
    ids=["space", "slash", "leading-dash", "leading-dot", "empty", "too-long", "query", "non-ascii"],
)
def test_bad_study_name(api: Any, name: str) -> None:
    with no_study_created(api, "unused-name"):
        resp = api.post(API, json={"name": name, "space": SPACE})
        assert_error(resp, 422, "name", "pattern", "A-Za-z0-9")
    assert all(s["name"] != name for s in api.get(API).json()["studies"])


def test_bad_study_name_in_the_path(api: Any) -> None:
    resp = api.get(f"{API}/beam%20one")
    assert_error(resp, 422, "study", "pattern")


def test_unknown_top_level_field_at_creation(api: Any) -> None:
    name = unique("extra")
    with no_study_created(api, name):
        resp = api.post(API, json={"name": name, "space": SPACE, "polcy": "sobol"})
        assert_error(resp, 422, "polcy", "not permitted")


@pytest.mark.parametrize("seed", [-1, 2**31, "seven"])
def test_bad_seed(api: Any, seed: Any) -> None:
    name = unique("seed")
    with no_study_created(api, name):
        assert_error(api.post(API, json={"name": name, "space": SPACE, "seed": seed}), 422, "seed")


def test_duplicate_study_name_is_a_conflict(api: Any, study: str) -> None:
    other_space = {"y": {"type": "int", "low": 0, "high": 3}}
    with unchanged(api, study):
        resp = api.post(API, json={"name": study, "space": other_space, "direction": "maximize", "policy": "sobol"})
        assert_error(resp, 409, "name", study, "already exists")
    assert [s["name"] for s in api.get(API).json()["studies"]].count(study) == 1


# -- ask, list, idempotency --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "expected"),
    [(0, "greater than or equal to 1"), (-3, "greater than or equal to 1"), (1001, "1..1000"), ("two", "integer")],
    ids=["zero", "negative", "above-max", "string"],
)
def test_ask_bad_count(api: Any, study: str, count: Any, expected: str) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/ask", json={"count": count})
        assert_error(resp, 422, "count", expected)


def test_ask_count_above_a_configured_max(make_client: Any, study: str) -> None:
    api = make_client(max_ask_count=3)
    with unchanged(api, study):
        assert_error(api.post(f"{API}/{study}/ask", json={"count": 4}), 422, "count", "1..3", "4")
    assert len(ask(api, study, 3)) == 3


def test_ask_unknown_field(api: Any, study: str) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/ask", json={"count": 1, "clientid": "x"})
        assert_error(resp, 422, "clientid", "not permitted")


@pytest.mark.parametrize(
    ("query", "field", "expected"),
    [
        ({"state": "done"}, "state", "'running', 'complete', 'failed' or 'stale'"),
        ({"after": -1}, "after", "greater than or equal to 0"),
        ({"limit": 0}, "limit", "greater than or equal to 1"),
        ({"limit": 10_001}, "limit", "less than or equal to 10000"),
        ({"after": "x"}, "after", "integer"),
    ],
    ids=["unknown-state", "negative-after", "zero-limit", "huge-limit", "string-after"],
)
def test_list_trials_bad_query(api: Any, study: str, query: dict, field: str, expected: str) -> None:
    with unchanged(api, study):
        resp = api.get(f"{API}/{study}/trials", params=query)
        assert_error(resp, 422, field, expected)


def test_export_unknown_format(api: Any, study: str) -> None:
    with unchanged(api, study):
        resp = api.get(f"{API}/{study}/export", params={"format": "xlsx"})
        assert_error(resp, 422, "format", "'csv' or 'json'")


def test_idempotency_key_reused_for_another_ask(api: Any, study: str) -> None:
    key = {"Idempotency-Key": "ask-key-1"}
    first = api.post(f"{API}/{study}/ask", json={"count": 1}, headers=key)
    assert first.status_code == 200, first.text
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/ask", json={"count": 2}, headers=key)
        assert_error(resp, 422, "Idempotency-Key", "ask-key-1", "different request")
        replay = api.post(f"{API}/{study}/ask", json={"count": 1}, headers=key)
        assert replay.status_code == 200, replay.text
        assert replay.json() == first.json()


def test_idempotency_key_reused_for_another_tell(api: Any, study: str) -> None:
    """Refused either as a reused key (422) or as a second tell with another value (409); the first stays."""
    key = {"Idempotency-Key": "tell-key-1"}
    first = api.post(f"{API}/{study}/trials/2/tell", json={"value": 1.5}, headers=key)
    assert first.status_code == 200, first.text
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/trials/2/tell", json={"value": 2.5}, headers=key)
        assert_error(resp, (409, 422), ("Idempotency-Key", "value"))
        replay = api.post(f"{API}/{study}/trials/2/tell", json={"value": 1.5}, headers=key)
        assert replay.status_code == 200, replay.text
        assert replay.json() == first.json()
    assert trial(api, study, 2)["value"] == 1.5


def test_idempotency_key_reused_for_another_external_trial(api: Any, study: str) -> None:
    key = {"Idempotency-Key": "add-key-1"}
    first = api.post(f"{API}/{study}/trials", json={"params": GOOD_PARAMS, "value": 1.0}, headers=key)
    assert first.status_code == 201, first.text
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/trials", json={"params": GOOD_PARAMS, "value": 2.0}, headers=key)
        assert_error(resp, 422, "Idempotency-Key", "add-key-1", "different request")


def test_idempotency_key_too_long(api: Any, study: str) -> None:
    with unchanged(api, study):
        resp = api.post(f"{API}/{study}/ask", json={"count": 1}, headers={"Idempotency-Key": "k" * 201})
        assert_error(resp, 422, "Idempotency-Key", "200")


def test_a_newcomer_s_mistakes_say_what_to_do(api) -> None:  # noqa: ANN001
    """Issue 28, item 12: a JSON body without its content-type, and a route that does not exist."""
    body = '{"name": "a", "space": {"x": {"type": "float", "low": 0, "high": 1}}}'
    resp = api.post("/api/v1/studies", content=body, headers={"content-type": "application/x-www-form-urlencoded"})
    assert resp.status_code == 422 and "content-type: application/json" in resp.json()["detail"], resp.text
    resp = api.get("/api/v1/studys")
    detail = resp.json()["detail"]
    assert resp.status_code == 404 and "GET /api/v1/studys" in detail and "/docs" in detail
    resp = api.get("/api/v1/studies/no-such-study")
    assert resp.status_code == 404 and "no-such-study" in resp.json()["detail"], "a missing study still names it"
