"""Issue 26 ("Core v3"), items 7 and 8: CSV exports whose columns never collide and whose text cells never
reach a spreadsheet as formulas; contract leftovers (integral floats where the document says integer, the
ask body a plain optional ``AskRequest``, the studies list in a constant number of statements).

Every test that takes ``api`` runs on SQLite and on the real Postgres.
"""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from conftest import unique
from sqlalchemy import event
from test_bad_input import assert_error, unchanged

API = "/api/v1/studies"
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")
LINK = '=HYPERLINK("http://x")'  # a parameter's name


def create(api: Any, space: dict[str, Any], **fields: Any) -> str:
    name = unique("v3")
    resp = api.post(API, json={"name": name, "space": space, "policy": "random", "seed": 5, **fields})
    assert resp.status_code == 201, resp.text
    return name


def ask(api: Any, name: str, count: int = 1) -> list[dict[str, Any]]:
    resp = api.post(f"{API}/{name}/ask", json={"count": count})
    assert resp.status_code == 200, resp.text
    return resp.json()["trials"]


def tell(api: Any, name: str, number: int, **body: Any) -> dict[str, Any]:
    resp = api.post(f"{API}/{name}/trials/{number}/tell", json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def export_text(api: Any, name: str) -> str:
    resp = api.get(f"{API}/{name}/export", params={"format": "csv"})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/csv"), resp.text
    return resp.text


def export_rows(api: Any, name: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(export_text(api, name), newline="")))


def unguarded(cell: str) -> str:
    """What a reader does to a text cell (export.py's docstring): one leading quote dropped."""
    return cell[1:] if cell.startswith("'") else cell


def parameter_of(column: str) -> str:
    """A parameter column's name as the user gave it (export.py's docstring)."""
    name = unguarded(column)
    return name.removeprefix("params.") if name.startswith("params.") else name


# -- item 7: CSV columns ----------------------------------------------------------------------------


def test_parameters_named_like_bookkeeping_columns_get_their_own_columns(api: Any) -> None:
    space = {
        "value": {"type": "float", "low": -1, "high": 0},
        "number": {"type": "int", "low": 50, "high": 60},
        "state": {"type": "categorical", "choices": ["solid", "liquid"]},
        "params.x": {"type": "float", "low": 0, "high": 1},
        "x": {"type": "float", "low": 0, "high": 1},
    }
    name = create(api, space)
    first, second = ask(api, name, 2)
    tell(api, name, first["number"], value=0.25)
    text = export_text(api, name)
    header = next(csv.reader(io.StringIO(text, newline="")))
    assert len(set(header)) == len(header), f"duplicate columns: {header}"
    assert header[:3] == ["number", "state", "value"]
    assert header[3:8] == ["params.value", "params.number", "params.state", "params.params.x", "x"]
    assert [parameter_of(c) for c in header[3:8]] == list(space), "each column names its parameter back"

    by_number = {int(r["number"]): r for r in csv.DictReader(io.StringIO(text, newline=""))}
    done, running = by_number[first["number"]], by_number[second["number"]]
    assert (done["state"], done["value"]) == ("complete", "0.25"), "the trial's value, not the parameter's"
    assert (running["state"], running["value"]) == ("running", "")
    for row, trial in ((done, first), (running, second)):
        assert float(row["params.value"]) == trial["params"]["value"]
        assert int(row["params.number"]) == trial["params"]["number"]
        assert row["params.state"] == trial["params"]["state"]
        assert float(row["params.params.x"]) == trial["params"]["params.x"]
        assert float(row["x"]) == trial["params"]["x"]


def test_the_column_names_are_the_same_whatever_else_the_study_holds(api: Any) -> None:
    """Stable: a parameter's column depends on its own name only (a finite space's too)."""
    plain = create(api, {"a": {"type": "float", "low": 0, "high": 1}, "source": {"type": "float", "low": 0, "high": 1}})
    assert export_rows(api, plain)[0][:5] == ["number", "state", "value", "a", "params.source"]
    finite = {
        "kind": "finite",
        "candidates": [
            {"id": "p", "params": {"candidate": 1.0, "a": 2.0}},
            {"id": "q", "params": {"candidate": 3.0, "a": 4.0}},
        ],
    }
    name = create(api, finite)
    ask(api, name, 2)
    rows = export_rows(api, name)
    assert rows[0][:6] == ["number", "state", "value", "params.candidate", "a", "candidate"]
    assert sorted(r[5] for r in rows[1:]) == ["p", "q"]
    assert sorted(float(r[3]) for r in rows[1:]) == [1.0, 3.0]


def test_text_cells_that_a_spreadsheet_reads_as_formulas_are_guarded(api: Any) -> None:
    choices = ["=1+2", "+3", "-x", "@SUM(A1)", "\tt", "\rr", "'q", "plain", "a=b"]
    space = {
        LINK: {"type": "float", "low": -1, "high": -0.5},
        "opt": {"type": "categorical", "choices": choices},
        "k": {"type": "int", "low": -9, "high": -2},
        "n": {"type": "categorical", "choices": [-1, -0.5]},
    }
    name = create(api, space)
    trials = ask(api, name, 12)
    tell(api, name, trials[0]["number"], value=-0.5)
    tell(api, name, trials[1]["number"], state="failed", reason="=cmd|' /C calc'!A0")
    tell(api, name, trials[2]["number"], state="failed", reason="-2+3")
    rows = export_rows(api, name)
    header = rows[0]
    assert header[3:7] == ["'" + LINK, "opt", "k", "n"]
    by_number = {int(r[0]): dict(zip(header, r, strict=True)) for r in rows[1:]}
    for trial in trials:
        row = by_number[trial["number"]]
        opt = trial["params"]["opt"]
        assert row["opt"] == ("'" + opt if opt.startswith((*DANGEROUS, "'")) else opt)
        assert unguarded(row["opt"]) == opt
        # numbers stay numbers: negative floats and ints, in parameter columns and the value column
        assert row["'" + LINK] == repr(trial["params"][LINK])
        assert row["k"] == str(trial["params"]["k"]) and row["k"].startswith("-")
        assert row["n"] in ("-1", "-0.5")
    assert by_number[trials[0]["number"]]["value"] == "-0.5"
    assert by_number[trials[1]["number"]]["reason"] == "'=cmd|' /C calc'!A0"
    assert by_number[trials[2]["number"]]["reason"] == "'-2+3"
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "@", "\t", "\r")), f"{cell!r} reaches a spreadsheet as a formula"


def test_candidate_ids_are_guarded_too(api: Any) -> None:
    finite = {
        "kind": "finite",
        "candidates": [
            {"id": "=A1", "params": {"x": 1.0}},
            {"id": -7, "params": {"x": 2.0}},
            {"id": "c", "params": {"x": 3.0}},
        ],
    }
    name = create(api, finite)
    asked = ask(api, name, 3)
    rows = export_rows(api, name)
    candidate = rows[0].index("candidate")
    by_number = {int(r[0]): r for r in rows[1:]}
    ids = {t["candidate"]: by_number[t["number"]][candidate] for t in asked}
    assert ids == {"=A1": "'=A1", "-7": "'-7", "c": "c"}
    assert sorted(float(r[3]) for r in rows[1:]) == [1.0, 2.0, 3.0]


def test_the_cli_writes_the_same_guarded_csv(api: Any, tmp_path: Any) -> None:
    from localbo import export

    name = create(api, {"value": {"type": "categorical", "choices": ["=a", "b"]}})
    ask(api, name, 2)
    text = api.get(f"{API}/{name}/export", params={"format": "csv"}).text
    assert export.render(api.app.state.service.db, name, "csv") == text
    assert text.splitlines()[0].startswith("number,state,value,params.value,source")


# -- item 8: contract leftovers ------------------------------------------------------------------


def test_an_integral_float_count_is_the_integer_the_document_allows(api: Any) -> None:
    name = create(api, {"x": {"type": "float", "low": 0, "high": 1}})
    resp = api.post(f"{API}/{name}/ask", json={"count": 4.0})
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["trials"]) == 4
    (told,) = ask(api, name, 1)
    both = api.post(
        f"{API}/{name}/trials/{told['number']}/tell-and-ask", json={"tell": {"value": 1.0}, "ask": {"count": 2.0}}
    )
    assert both.status_code == 200, both.text
    assert len(both.json()["trials"]) == 2


@pytest.mark.parametrize(
    ("count", "expected"),
    [(2.5, "integer"), (0.0, "greater than or equal to 1"), (1001.0, "1..1000"), (True, "integer"), ("3", "integer")],
    ids=["fractional", "zero", "above-max", "boolean", "string"],
)
def test_a_count_that_is_not_a_whole_number_in_range_is_still_a_422(api: Any, count: Any, expected: str) -> None:
    name = create(api, {"x": {"type": "float", "low": 0, "high": 1}})
    with unchanged(api, name):
        assert_error(api.post(f"{API}/{name}/ask", json={"count": count}), 422, "count", expected)


def test_an_integral_float_seed_is_accepted_and_a_fractional_one_refused(api: Any) -> None:
    space = {"x": {"type": "float", "low": 0, "high": 1}}
    name = unique("v3")
    resp = api.post(API, json={"name": name, "space": space, "policy": "random", "seed": 12.0})
    assert resp.status_code == 201, resp.text
    assert resp.json()["seed"] == 12 and isinstance(resp.json()["seed"], int)
    refused = api.post(API, json={"name": unique("v3"), "space": space, "policy": "random", "seed": 12.5})
    assert_error(refused, 422, "seed", "integer")


def test_the_ask_body_is_documented_as_a_plain_optional_ask_request(api: Any) -> None:
    body = api.get("/openapi.json").json()["paths"][f"{API}/{{study}}/ask"]["post"]["requestBody"]
    assert body.get("required", False) is False
    assert body["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/AskRequest"}
    name = create(api, {"x": {"type": "float", "low": 0, "high": 1}})
    resp = api.post(f"{API}/{name}/ask")  # no body at all: the defaults
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["trials"]) == 1
    empty = api.post(f"{API}/{name}/ask", content=b"", headers={"content-type": "application/json"})
    assert empty.status_code == 200, empty.text


def test_the_studies_list_costs_a_constant_number_of_statements(api: Any) -> None:
    engine = api.app.state.service.studies.db
    finite = {"kind": "finite", "candidates": [{"id": str(i), "params": {"a": float(i)}} for i in range(4)]}

    def add(n: int) -> None:
        for i in range(n):
            name = create(api, finite if i % 2 else {"x": {"type": "float", "low": 0, "high": 1}})
            trials = ask(api, name, 2)
            tell(api, name, trials[0]["number"], value=float(i))

    def statements() -> int:
        seen: list[str] = []

        def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            seen.append(statement)

        event.listen(engine, "before_cursor_execute", count)
        try:
            resp = api.get(API)
        finally:
            event.remove(engine, "before_cursor_execute", count)
        assert resp.status_code == 200, resp.text
        return len(seen)

    add(2)
    few = statements()
    add(6)
    assert len(api.get(API).json()["studies"]) >= 8
    assert statements() == few, "each study added costs statements of its own"
    assert few <= 6


def test_list_summaries_pick_the_best_as_before(api: Any) -> None:
    """The grouped queries keep the per-study rules: the best is the best value, the lowest number on ties;
    trials_since_improvement counts the completed trials numbered after it."""
    for direction, values, since in (("minimize", [3.0, 1.0, 1.0, 2.0], 2), ("maximize", [1.0, 5.0, 0.0, 5.0], 2)):
        name = create(api, {"x": {"type": "float", "low": 0, "high": 1}}, direction=direction)
        trials = ask(api, name, 6)
        for trial, value in zip(trials, values, strict=False):
            tell(api, name, trial["number"], value=value)
        tell(api, name, trials[4]["number"], state="failed", reason="late")
        listed = {s["name"]: s["summary"] for s in api.get(API).json()["studies"]}[name]
        assert listed == api.get(f"{API}/{name}").json()["summary"]
        assert listed["trials_since_improvement"] == since
        assert listed["best_value"] == (1.0 if direction == "minimize" else 5.0)
        assert listed["candidates_remaining"] is None
    empty = create(api, {"x": {"type": "float", "low": 0, "high": 1}})
    ask(api, empty, 1)
    listed = {s["name"]: s["summary"] for s in api.get(API).json()["studies"]}[empty]
    assert listed["trials_since_improvement"] is None and listed["n_running"] == 1
    finite = {"kind": "finite", "candidates": [{"id": str(i), "params": {"a": float(i)}} for i in range(5)]}
    name = create(api, finite)
    asked = ask(api, name, 3)
    tell(api, name, asked[0]["number"], value=1.0)
    listed = {s["name"]: s["summary"] for s in api.get(API).json()["studies"]}[name]
    assert listed["candidates_remaining"] == 2 and listed["trials_since_improvement"] == 0
