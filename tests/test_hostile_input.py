"""Hostile input (issue 16, items 2, 4, 5 and 9): what a schema fuzzer and an adversary sent.

Every refusal is a 4xx naming the field, before anything is stored; a row stored before these checks
never turns a listing into a 500; the OpenAPI document says what the API does. Storage tests run on
SQLite and on the real Postgres (the ``api`` / ``db_url`` fixtures); the document's tests on SQLite.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import unique
from sqlalchemy import create_engine, text
from test_bad_input import API, GOOD_PARAMS, SPACE, ask, assert_error, create, no_study_created, tell, unchanged

JSON = {"content-type": "application/json"}
FINITE = {"kind": "finite", "candidates": [{"id": "a", "params": {"x": 1.0}}, {"id": "b", "params": {"x": 2.0}}]}


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def raw_body(name: str, **json_text: str) -> bytes:
    """A creation body with fields given as raw JSON text (NaN, 1e999, lone surrogates...)."""
    fields = {"name": json.dumps(name), "space": json.dumps(SPACE), "policy": '"random"', **json_text}
    return ("{" + ",".join(f'"{k}": {v}' for k, v in fields.items()) + "}").encode()


def post_raw(api: Any, path: str, body: bytes, content_type: str = "application/json") -> Any:
    return api.post(path, content=body, headers={"content-type": content_type})


@pytest.fixture
def study(api: Any) -> str:
    """A study with trial 1 complete and trial 2 running."""
    name = create(api)
    assert [t["number"] for t in ask(api, name, 2)] == [1, 2]
    assert tell(api, name, 1, value=0.5).status_code == 200
    return name


# -- item 2: free-form JSON is checked before anything is stored --------------------------------


UNSTORABLE = {
    "nested-256": ("metadata", json.dumps(nested(256)), "metadata" + ".a" * 32, "deeper than 32"),
    "lone-surrogate": ("metadata", '{"note": "\\udc80"}', "metadata.note", "surrogate"),
    "surrogate-key": ("metadata", '{"\\ud800x": 1}', "metadata", "surrogate"),
    "nul": ("metadata", '{"note": "a\\u0000b"}', "metadata.note", "NUL"),
    "nan": ("metadata", '{"v": NaN}', "metadata.v", "finite"),
    "infinity": ("metadata", '{"v": [1, -Infinity]}', "metadata.v[1]", "finite"),
    "1e999": ("metadata", '{"v": 1e999}', "metadata.v", "finite"),
    "int-beyond-float": ("metadata", '{"v": 1' + "0" * 400 + "}", "metadata.v", "range of a float"),
    "config-nan": ("policy_config", '{"plan_ahead": NaN}', "policy_config.plan_ahead", "finite"),
    "config-deep": ("policy_config", json.dumps(nested(40)), "policy_config" + ".a" * 32, "deeper than 32"),
}


@pytest.mark.parametrize("case", list(UNSTORABLE), ids=list(UNSTORABLE))
def test_unstorable_free_form_json_is_refused_before_storing(api: Any, case: str) -> None:
    field, raw, where, expected = UNSTORABLE[case]
    name = unique("hostile")
    with no_study_created(api, name):
        detail = assert_error(post_raw(api, API, raw_body(name, **{field: raw})), 422, where, expected)
    assert detail.encode("utf-8")  # the answer itself is valid Unicode
    assert api.get(API).status_code == 200


def test_metadata_size_is_bounded(api: Any) -> None:
    name = unique("hostile")
    with no_study_created(api, name):
        resp = api.post(API, json={"name": name, "space": SPACE, "policy": "random", "metadata": {"x": "a" * 70_000}})
        assert_error(resp, 422, "metadata", "at most 65536 bytes")


def test_metadata_that_fits_is_kept_exactly(api: Any) -> None:
    metadata = {"deep": nested(30), "text": "ünïcødé ✓ 𝄞", "n": 2**62, "f": 1e300, "list": [None, True, -0.5]}
    name = unique("ok")
    resp = api.post(API, json={"name": name, "space": SPACE, "policy": "random", "metadata": metadata})
    assert resp.status_code == 201, resp.text
    assert api.get(f"{API}/{name}").json()["metadata"] == metadata


@pytest.mark.parametrize(
    "space, where",
    [
        ('{"\\udc80": {"type": "float", "low": 0, "high": 1}}', "space"),
        ('{"x\\u0000": {"type": "float", "low": 0, "high": 1}}', "space"),
        ('{"x": {"type": "categorical", "choices": ["a", "\\udc80"]}}', "space.x.choices[1]"),
        ('{"kind": "finite", "candidates": [{"id": "\\udc80", "params": {"x": 1}}]}', "space.candidates[0].id"),
        ('{"kind": "finite", "candidates": [{"id": "a\\u0000", "params": {"x": 1}}]}', "space.candidates[0].id"),
        ('{"kind": "finite", "candidates": [{"params": {"\\udc80": 1}}]}', "space.candidates[0].params"),
    ],
    ids=["surrogate-name", "nul-name", "surrogate-choice", "surrogate-id", "nul-id", "surrogate-finite-name"],
)
def test_names_and_ids_that_cannot_be_stored(api: Any, space: str, where: str) -> None:
    name = unique("hostile")
    with no_study_created(api, name):
        assert_error(post_raw(api, API, raw_body(name, space=space)), 422, where)


def _store_raw_metadata(db_url: str, name: str, json_text: str) -> None:
    """What a row stored before the checks holds (the API refuses to store it now)."""
    engine = create_engine(db_url)
    value = "CAST(:m AS JSON)" if engine.dialect.name == "postgresql" else ":m"
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE studies SET user_metadata = {value} WHERE name = :n"), {"m": json_text, "n": name})
    engine.dispose()


@pytest.mark.parametrize(
    "stored",
    ['{"note": "\\udc80"}', json.dumps(nested(256))],
    ids=["lone-surrogate", "nested-256"],
)
def test_one_bad_stored_row_does_not_break_the_listing(api: Any, db_url: str, stored: str) -> None:
    good, bad = create(api), create(api)
    _store_raw_metadata(db_url, bad, stored)
    listing = api.get(API)
    assert listing.status_code == 200, listing.text
    shown = {s["name"]: s for s in listing.json()["studies"]}
    assert shown[good]["metadata"] == {}
    assert bad in shown  # shown degraded, not hidden
    assert json.dumps(shown[bad]["metadata"])
    for path in (f"{API}/{bad}", f"{API}/{bad}/export?format=json", f"{API}/{bad}/export?format=csv"):
        assert api.get(path).status_code == 200, path
    assert api.delete(f"{API}/{bad}").status_code == 204


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # Postgres never stored NaN in a JSON column
def test_non_standard_json_stored_on_sqlite_is_shown_degraded(make_client: Any, db_url: str) -> None:
    """SQLite stored NaN as the non-standard token; the listing shows null instead of failing."""
    api = make_client()
    bad = create(api)
    _store_raw_metadata(db_url, bad, '{"v": NaN, "w": Infinity}')
    resp = api.get(API)
    assert resp.status_code == 200, resp.text
    assert next(s for s in resp.json()["studies"] if s["name"] == bad)["metadata"] == {"v": None, "w": None}


ODD_NAMES = ["number", "value", "a,b", 'quote"d', "new\nline", "ünï 𝄞", "=cmd()", " padded ", "id"]


def test_exports_with_odd_parameter_names(api: Any) -> None:
    space = {n: {"type": "float", "low": 0, "high": 1} for n in ODD_NAMES}
    name = create(api, space=space)
    ask(api, name, 2)
    assert tell(api, name, 1, value=0.25).status_code == 200
    as_json = api.get(f"{API}/{name}/export", params={"format": "json"})
    assert as_json.status_code == 200, as_json.text
    assert set(as_json.json()["trials"][0]["params"]) == set(ODD_NAMES)
    as_csv = api.get(f"{API}/{name}/export", params={"format": "csv"})
    assert as_csv.status_code == 200, as_csv.text
    assert as_csv.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(as_csv.text)))
    # a bookkeeping column's name gets the params. prefix, a formula's a quote (export.CSV_COLUMNS)
    columns = ["params.number", "params.value", *ODD_NAMES[2:6], "'=cmd()", *ODD_NAMES[7:]]
    assert rows[0][3 : 3 + len(ODD_NAMES)] == columns
    assert len(rows) == 3 and all(len(r) == len(rows[0]) for r in rows)


# -- item 4: each 5xx the fuzzer found is a 4xx ---------------------------------------------------


@pytest.mark.parametrize("number", [2**31, 2**63, 2**64, 10**30])
def test_trial_numbers_beyond_the_database_integer(api: Any, study: str, number: int) -> None:
    with unchanged(api, study):
        assert_error(tell(api, study, number, value=1.0), 422, "number", "less than or equal to 2147483647")
        resp = api.post(f"{API}/{study}/trials/{number}/heartbeat")
        assert_error(resp, 422, "number", "2147483647")


@pytest.mark.parametrize("path", ["trials", "series", "events"])
@pytest.mark.parametrize("after", [2**31, 2**63, 2**64])
def test_after_beyond_the_database_integer(api: Any, study: str, path: str, after: int) -> None:
    assert_error(api.get(f"{API}/{study}/{path}", params={"after": after}), 422, "after", "2147483647")


FAR_TIMES = ["0001-01-01T00:00:00", "0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59-12:00", "9044-09-15T21:16+16:03"]


def test_events_since_far_past_or_future(live_server: Any) -> None:
    """The stream starts (a far past means everything finished, a far future nothing), never a 500."""
    name = unique("hostile")
    body = {"name": name, "space": SPACE, "policy": "random"}
    assert httpx.post(f"{live_server.url}{API}", json=body, timeout=30).status_code == 201
    for since in FAR_TIMES:
        url = f"{live_server.url}{API}/{name}/events"
        with httpx.stream("GET", url, params={"since": since}, timeout=30) as resp:
            assert resp.status_code == 200, (since, resp.read())
            first = next(line for line in resp.iter_lines() if line.startswith("event:"))
        assert first == "event: study", since


@pytest.mark.parametrize("text", ["x\ra,b\n1,2", "x\n" + "9" * 200_000], ids=["lone-carriage-return", "huge-field"])
def test_malformed_csv_space(api: Any, text: str) -> None:
    name = unique("hostile")
    with no_study_created(api, name):
        resp = api.post(API, json={"name": name, "space": {"kind": "finite", "csv": text}, "policy": "random"})
        assert_error(resp, 422, "space.csv", "malformed CSV")


BEYOND_FLOAT = "1" + "0" * 400


@pytest.mark.parametrize(
    "space, where",
    [
        ('{"x": {"type": "int", "low": 0, "high": ' + BEYOND_FLOAT + "}}", "space.x.high"),
        ('{"x": {"type": "float", "low": -' + BEYOND_FLOAT + ', "high": 1}}', "space.x.low"),
        ('{"kind": "finite", "candidates": [{"params": {"x": ' + BEYOND_FLOAT + "}}]}", "space.candidates[0].params.x"),
    ],
    ids=["int-bound", "float-bound", "finite-value"],
)
def test_integer_literals_beyond_float_range_in_spaces(api: Any, space: str, where: str) -> None:
    name = unique("hostile")
    with no_study_created(api, name):
        assert_error(post_raw(api, API, raw_body(name, space=space)), 422, where, "range of a float")


def test_integer_literal_beyond_float_range_in_params(api: Any, study: str) -> None:
    body = b'{"params": {"x": ' + BEYOND_FLOAT.encode() + b', "lr": 0.01, "n": 3}, "value": 1.0}'
    with unchanged(api, study):
        assert_error(post_raw(api, f"{API}/{study}/trials", body), 422, "params.x", "range of a float")


def test_nul_in_reason_client_id_and_params(api: Any, study: str) -> None:
    with unchanged(api, study):
        assert_error(tell(api, study, 2, state="failed", reason="oops\x00"), 422, "reason", "NUL")
        resp = api.post(f"{API}/{study}/ask", json={"client_id": "worker\x00"})
        assert_error(resp, 422, "client_id", "NUL")
        resp = api.post(f"{API}/{study}/trials", json={"params": {**GOOD_PARAMS, "x\x00": 1}, "value": 1.0})
        assert_error(resp, 422, "params", "NUL")


@pytest.mark.parametrize(
    "policy, config, where",
    [
        ("ucb", '{"beta": 1e999}', "policy_config.beta"),
        ("ucb", '{"beta": 1e308}', "policy_config.beta"),
        ("ucb", '{"beta": NaN}', "policy_config.beta"),
        ("tei", '{"kappa": 1e200}', "policy_config.kappa"),
        ("sobol", '{"plan_ahead": Infinity}', "policy_config.plan_ahead"),
    ],
)
def test_policy_configs_that_break_every_later_suggest(api: Any, policy: str, config: str, where: str) -> None:
    name = unique("hostile")
    with no_study_created(api, name):
        resp = post_raw(api, API, raw_body(name, policy=json.dumps(policy), policy_config=config))
        assert_error(resp, 422, where)


@pytest.mark.parametrize(
    "space, where",
    [
        ({"x": {"type": "int", "low": -1e308, "high": 1e308}}, "space.x.low"),
        ({"x": {"type": "int", "low": 0, "high": 2**60}}, "space.x.high"),
        ({"x": {"type": "float", "low": -1e308, "high": 1e308}}, "space.x.high"),
        ({"kind": "finite", "candidates": [{"params": {"x": -1e308}}, {"params": {"x": 1e308}}]}, "space.candidates"),
    ],
    ids=["int-1e308", "int-2^60", "float-width", "finite-width"],
)
def test_spaces_whose_every_point_would_be_broken(api: Any, space: dict, where: str) -> None:
    name = unique("hostile")
    with no_study_created(api, name):
        resp = api.post(API, json={"name": name, "space": space, "policy": "random"})
        detail = assert_error(resp, 422, (where, f"{where}[0].params.x"))
        assert "finite" in detail or "2^53" in detail


def test_wide_but_finite_float_bounds_still_work(api: Any) -> None:
    name = create(api, space={"x": {"type": "float", "low": -1e300, "high": 1e300}})
    point = ask(api, name)[0]["params"]["x"]
    assert -1e300 <= point <= 1e300
    assert tell(api, name, 1, value=1.0).status_code == 200


# -- item 9: strict input -------------------------------------------------------------------------


@pytest.mark.parametrize("count", ["5", True, 1.5, "1"], ids=["numeric-string", "true", "fraction", "one-string"])
def test_count_must_be_a_json_integer(api: Any, study: str, count: Any) -> None:
    with unchanged(api, study):
        assert_error(api.post(f"{API}/{study}/ask", json={"count": count}), 422, "count", "integer")


@pytest.mark.parametrize("seed", ["5", True])
def test_seed_must_be_a_json_integer(api: Any, seed: Any) -> None:
    name = unique("hostile")
    with no_study_created(api, name):
        resp = api.post(API, json={"name": name, "space": SPACE, "policy": "random", "seed": seed})
        assert_error(resp, 422, "seed", "integer")


@pytest.mark.parametrize("charset", ["utf-16", "latin-1", "UTF-32"])
def test_bodies_with_another_charset_are_refused(api: Any, study: str, charset: str) -> None:
    body = '{"count": 1}'.encode(charset)
    with unchanged(api, study):
        resp = post_raw(api, f"{API}/{study}/ask", body, f"application/json; charset={charset}")
        assert_error(resp, 415, "Content-Type", "UTF-8")


@pytest.mark.parametrize(
    "encoding", ["utf-16", "utf-16-le", "utf-32", "latin-1"], ids=["utf16-bom", "utf16-le", "utf32", "latin1"]
)
def test_bodies_that_are_not_utf8_are_refused(api: Any, study: str, encoding: str) -> None:
    body = '{"state": "failed", "reason": "café"}'.encode(encoding)
    with unchanged(api, study):
        assert_error(post_raw(api, f"{API}/{study}/trials/2/tell", body), 400, "body", "UTF-8")


def test_utf8_with_a_declared_charset_is_taken(api: Any, study: str) -> None:
    body = '{"state": "failed", "reason": "café ✓"}'.encode()
    resp = post_raw(api, f"{API}/{study}/trials/2/tell", body, "application/json; charset=UTF-8")
    assert resp.status_code == 200, resp.text
    assert resp.json()["reason"] == "café ✓"


# -- item 5: the OpenAPI document tells the truth ------------------------------------------------


@pytest.fixture
def doc_api(tmp_path: Path) -> Any:
    """An app with a token configured, on SQLite (the document does not depend on the database)."""
    from fastapi.testclient import TestClient
    from localbo.api import create_app
    from localbo.bootstrap import prepare_database
    from localbo.config import Settings

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'doc.db'}", tokens="doc-token=admin")
    prepare_database(settings)
    with TestClient(create_app(settings)) as client:
        yield client
        client.app.state.service.close(wait=True)


AUTH = {"Authorization": "Bearer doc-token"}


def _operation(spec: dict, path: str, method: str) -> dict:
    return spec["paths"][path][method]


def test_error_bodies_match_the_documented_schema(doc_api: Any) -> None:
    from localbo.api.schemas import ErrorOut

    spec = doc_api.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for code, response in operation["responses"].items():
                if code.startswith(("4", "5")):
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorOut"}, (path, method, code)
    answers = [
        doc_api.post(f"{API}", json={"name": "x"}, headers=AUTH),  # 422 with errors
        doc_api.get(f"{API}/nope", headers=AUTH),  # 404
        doc_api.get(API),  # 401
        post_raw(doc_api, f"{API}/nope/ask", b"{}", "application/json; charset=utf-16"),  # 401 before 415
    ]
    for resp in answers:
        assert resp.status_code in (401, 404, 422), resp.text
        ErrorOut.model_validate(resp.json())
        assert set(resp.json()) <= {"detail", "errors", "request_id"}
        assert resp.json()["request_id"] == resp.headers["x-request-id"]


def test_statuses_are_documented_where_they_happen(doc_api: Any) -> None:
    spec = doc_api.get("/openapi.json").json()
    create_op = _operation(spec, API, "post")["responses"]
    assert {"201", "400", "401", "403", "409", "413", "415", "422", "503"} <= set(create_op)
    tell_op = _operation(spec, API + "/{study}/trials/{number}/tell", "post")["responses"]
    assert {"200", "400", "401", "403", "404", "409", "413", "415", "422", "503"} <= set(tell_op)
    get_op = _operation(spec, API + "/{study}", "get")["responses"]
    assert {"200", "401", "403", "404", "422"} <= set(get_op)


def test_streams_and_csv_have_their_media_types(doc_api: Any) -> None:
    spec = doc_api.get("/openapi.json").json()
    for path in (API + "/{study}/events", "/api/v1/events"):
        assert list(_operation(spec, path, "get")["responses"]["200"]["content"]) == ["text/event-stream"]
    export = _operation(spec, API + "/{study}/export", "get")["responses"]["200"]["content"]
    assert set(export) == {"application/json", "text/csv"}


def test_free_form_fields_have_real_schemas(doc_api: Any) -> None:
    spec = doc_api.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    create_props = schemas["StudyCreate"]["properties"]
    assert create_props["space"]["allOf"] == [{"$ref": "#/components/schemas/SpaceIn"}]
    param = schemas["Space"]["additionalProperties"]
    assert param["discriminator"]["propertyName"] == "type"
    assert set(param["discriminator"]["mapping"]) == {"float", "int", "categorical"}
    assert {"$ref": "#/components/schemas/FiniteCandidates"} in schemas["SpaceIn"]["anyOf"]
    assert {"$ref": "#/components/schemas/FiniteSummary"} in schemas["SpaceOut"]["anyOf"]
    assert {"$ref": "#/components/schemas/GPUCBConfig"} in schemas["PolicyConfig"]["anyOf"]
    assert "beta" in schemas["GPUCBConfig"]["properties"]
    assert "ucb" in create_props["policy"]["enum"]
    for model, field in [("StudyOut", "metadata"), ("TrialOut", "params"), ("ExternalTrial", "params")]:
        assert "allOf" in json.dumps(schemas[model]["properties"][field]), (model, field)


def test_bearer_auth_is_declared(doc_api: Any) -> None:
    spec = doc_api.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "LOCALBO_TOKENS",
    }
    assert _operation(spec, API, "get")["security"] == [{"bearer": []}]
    assert _operation(spec, "/healthz", "get")["security"] == []


def test_docs_are_served_without_a_cdn(doc_api: Any) -> None:
    page = doc_api.get("/docs")
    assert page.status_code == 200
    assert "cdn" not in page.text.lower() and "http://" not in page.text and "https://" not in page.text
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert f"/docs/static/{asset}" in page.text
        resp = doc_api.get(f"/docs/static/{asset}")
        assert resp.status_code == 200 and len(resp.content) > 10_000, asset
    assert doc_api.get("/openapi.json").status_code == 200  # the page loads it without a token


def test_the_documented_space_schema_accepts_what_the_api_accepts(api: Any) -> None:
    """The schemas only describe: a space the engine takes (int bounds as 1.0, log false) still works."""
    space = {"n": {"type": "int", "low": 1.0, "high": 4, "log": False}, "c": {"type": "categorical", "choices": [1]}}
    name = create(api, space=space)
    assert api.get(f"{API}/{name}").json()["space"]["n"] == {"type": "int", "low": 1, "high": 4}
