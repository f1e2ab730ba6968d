"""Constraints on the dashboard (issue 30): the series' ``feasible`` column (JSON booleans and null, on SQLite and
Postgres), and a constrained study's page: infeasible trials marked in the history, "best feasible" on the cards
with the feasible / infeasible counts, every metric and its bound on the trial page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import unique
from harness.processes import ServerProcess
from localbo.progress import Change
from test_dashboard_v2 import Api, axe_violations, new_page, no_page_overflow, open_page

API = "/api/v1/studies"
SPACE = {"a": {"type": "float", "low": 0, "high": 1}, "b": {"type": "float", "low": 0, "high": 2}}
REACTOR = {
    "objectives": [{"metric": "yield", "direction": "maximize"}],
    "constraints": [{"metric": "purity", "op": ">=", "bound": 0.95}, {"metric": "t_peak", "op": "<=", "bound": 450}],
}
# (values, feasible): trial 1 the highest yield but impure, 3 too hot, 2 and 4 feasible (4 the best of them)
TOLD = [
    ({"yield": 0.9, "purity": 0.90, "t_peak": 400}, False),
    ({"yield": 0.7, "purity": 0.97, "t_peak": 430}, True),
    ({"yield": 0.8, "purity": 0.99, "t_peak": 470}, False),
    ({"yield": 0.75, "purity": 0.96, "t_peak": 440}, True),
]


# -- the series ------------------------------------------------------------------------------------


def test_the_series_feasible_column_is_json_booleans_and_null(api: Any) -> None:
    """true / false for told trials of a constrained study, null for open and failed ones and for a study
    without constraints: JSON booleans on both databases (SQLite stores 1 / 0). The metrics column: each told
    trial's named values as a JSON object."""
    name = unique("feas")
    body = {"name": name, "space": SPACE, "policy": "turbo", "seed": 1} | REACTOR
    assert api.post(API, json=body).status_code == 201, body
    trials = api.post(f"{API}/{name}/ask", json={"count": 6}).json()["trials"]
    for trial, (values, _) in zip(trials, TOLD, strict=False):
        resp = api.post(f"{API}/{name}/trials/{trial['number']}/tell", json={"values": values})
        assert resp.status_code == 200, resp.text
    api.post(f"{API}/{name}/trials/5/tell", json={"state": "failed", "reason": "tripped"})
    resp = api.get(f"{API}/{name}/series")
    assert resp.status_code == 200, resp.text
    assert '"feasible":[false,true,false,true,null,null]' in resp.text.replace(" ", "")
    cols = resp.json()["trials"]
    assert cols["feasible"] == [False, True, False, True, None, None]
    assert all(v is None or type(v) is bool for v in cols["feasible"])
    assert cols["state"] == ["complete"] * 4 + ["failed", "running"]
    assert api.get(f"{API}/{name}/series?after=2").json()["trials"]["feasible"] == [False, True, None, None]
    assert cols["metrics"] == [values for values, _ in TOLD] + [None, None], "every metric, nested JSON"

    plain = unique("plain")
    assert api.post(API, json={"name": plain, "space": SPACE, "policy": "random", "seed": 1}).status_code == 201
    api.post(f"{API}/{plain}/ask", json={"count": 2})
    api.post(f"{API}/{plain}/trials/1/tell", json={"value": 1.0})
    plain_cols = api.get(f"{API}/{plain}/series").json()["trials"]
    assert plain_cols["feasible"] == [None, None] and plain_cols["metrics"] == [None, None]


def test_a_change_narrowed_to_some_trials_keeps_the_feasible_column() -> None:
    """The event stream's trials events reuse the series' columns; a viewer behind the broadcast gets them
    narrowed (``Change.only``), feasible included."""
    cols = {
        "number": [1, 2],
        "state": ["complete", "complete"],
        "value": [0.9, 0.7],
        "x": [[0.1, 0.2], [0.3, 0.4]],
        "source": ["turbo", "turbo"],
        "created": [1.0, 2.0],
        "completed": [1.5, 2.5],
        "feasible": [False, True],
        "metrics": [{"y": 1.0}, {"y": 2.0}],
        "reasons": {},
        "as_of": "2026-01-01T00:00:00",
    }
    change = Change("2026-01-01T00:00:00", {}, ((1, "complete"), (2, "complete")), json.dumps(cols))
    narrowed = json.loads(change.only([2]).columns)
    assert (narrowed["feasible"], narrowed["metrics"]) == ([True], [{"y": 2.0}])


# -- the page --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(f"sqlite:///{tmp_path_factory.mktemp('constraints') / 'localbo.db'}")
    yield server
    server.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh desktop page; any script error or console error on it fails the test."""
    context, page, errors = new_page(browser)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield page
    context.close()
    assert not errors, errors


@pytest.mark.live
def test_a_constrained_study_marks_infeasible_trials_and_shows_the_best_feasible(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("reactor")
    api.create(name, SPACE, policy="turbo", **REACTOR)
    for values, _ in TOLD:
        api.post(f"studies/{name}/trials/{api.ask(name)['number']}/tell", {"values": values})
    failed = api.ask(name)
    api.fail(name, failed["number"], "tripped")
    open_page(page, server.url, f"#/study/{name}", view="study")

    history = page.locator("#history")
    page.wait_for_function("document.querySelector('#history').dataset.drawn === '4'")
    assert history.get_attribute("data-infeasible") == "2", "the two infeasible trials drawn as such"
    legend = page.get_by_test_id("history-legend").inner_text()
    assert "infeasible" in legend and "best feasible so far" in legend
    cards = page.locator("#cards").inner_text()
    assert "best feasible (highest)" in cards, cards
    assert page.get_by_test_id("best-value").inner_text() == "0.75", "trial 4: the best feasible, not trial 1's 0.9"
    # the distribution holds every completed trial: its best says so (0.9 there is trial 1's, infeasible)
    head = page.get_by_test_id("edf-summary").locator("thead").inner_text()
    assert "best (feasible or not)" in head, head
    assert page.locator("#cards").get_by_role("link").inner_text() == "trial #4"
    assert (page.get_by_test_id("n-feasible").inner_text(), page.get_by_test_id("n-infeasible").inner_text()) == (
        "2",
        "2",
    )
    assert "subject to purity ≥ 0.95, t_peak ≤ 450" in page.locator("#meta").inner_text()

    # the constraints panel: each metric against its bound, the trials that broke it counted
    panel = page.get_by_test_id("constraints").get_by_test_id("constraint")
    assert [panel.nth(k).get_attribute("data-metric") for k in range(panel.count())] == ["purity", "t_peak"]
    assert [panel.nth(k).locator("canvas").get_attribute("data-violated") for k in range(2)] == ["1", "1"]
    assert [panel.nth(k).locator("canvas").get_attribute("data-drawn") for k in range(2)] == ["4", "4"]
    assert panel.nth(0).get_by_test_id("constraint-count").inner_text() == "broken by 1 of 4 completed trials"
    assert "purity ≥ 0.95" in panel.nth(0).inner_text()

    # the slices and the parallel coordinates mark them too
    assert page.get_by_test_id("slices").get_attribute("data-infeasible") == "2"
    assert "infeasible" in page.get_by_test_id("slices-legend").inner_text()
    assert page.locator("#parallel").get_attribute("data-infeasible") == "2"
    assert page.get_by_test_id("parallel-infeasible").is_visible()
    page.wait_for_function("document.querySelector('[data-testid=surface]')?.dataset.infeasible === '2'")
    assert page.get_by_test_id("surface-infeasible").is_visible()

    # the table: whether each trial was feasible, each constrained metric, a value past its bound marked
    table = page.get_by_test_id("trials")
    heads = table.locator("thead th").all_inner_texts()
    assert "feasible" in heads and "purity ≥ 0.95" in heads and "t_peak ≤ 450" in heads, heads
    first = table.locator("tr[data-number='1']")
    assert first.get_by_test_id("feasible").inner_text() == "no"
    cells = first.locator("td").all_inner_texts()
    assert "0.9 ✗" in cells and "400" in cells, cells
    assert table.locator("tr[data-number='2']").get_by_test_id("feasible").inner_text() == "yes"
    assert table.locator("tr[data-number='5']").get_by_test_id("feasible").inner_text() == ""  # failed

    # the tooltip of trial 1 (keyboard: Home) says it was infeasible
    history.focus()
    page.keyboard.press("Home")
    tip = page.locator("#tip")
    assert tip.is_visible() and "infeasible" in tip.inner_text(), tip.inner_text()
    page.keyboard.press("ArrowRight")
    assert "infeasible" not in tip.inner_text()
    assert axe_violations(page) == []

    # a trial arrives live: the chart and the cards follow (the event stream carries feasible)
    api.post(
        f"studies/{name}/trials/{api.ask(name)['number']}/tell",
        {"values": {"yield": 2.0, "purity": 0.5, "t_peak": 300}},
    )
    page.wait_for_function("document.querySelector('#history').dataset.drawn === '5'")
    assert history.get_attribute("data-infeasible") == "3"
    assert page.get_by_test_id("best-value").inner_text() == "0.75"
    assert page.get_by_test_id("n-infeasible").inner_text() == "3"
    assert panel.nth(0).locator("canvas").get_attribute("data-violated") == "2"  # purity 0.5

    # the trial page: every metric, its role and bound, and the verdict
    open_page(page, server.url, f"#/study/{name}/trial/1", view="trial")
    assert page.get_by_test_id("trial-feasible").inner_text() == "infeasible"
    rows = page.get_by_test_id("trial-metrics").get_by_test_id("metric")
    shown = {
        rows.nth(k).get_attribute("data-metric"): (
            rows.nth(k).get_by_test_id("metric-value").inner_text(),
            rows.nth(k).get_by_test_id("metric-bound").inner_text(),
            rows.nth(k).get_by_test_id("metric-status").inner_text(),
        )
        for k in range(rows.count())
    }
    assert shown == {
        "yield": ("0.9", "", ""),
        "purity": ("0.9", "≥ 0.95", "violated"),
        "t_peak": ("400", "≤ 450", "met"),
    }
    assert "value (yield)" in page.get_by_test_id("trial").inner_text()
    assert axe_violations(page) == []
    open_page(page, server.url, f"#/study/{name}/trial/2", view="trial")
    assert page.get_by_test_id("trial-feasible").inner_text() == "feasible"
    open_page(page, server.url, f"#/study/{name}/trial/{failed['number']}", view="trial")
    assert page.get_by_test_id("trial-feasible").count() == 0
    assert page.get_by_test_id("metrics-none").inner_text() == "A failed trial carries no metrics."


@pytest.mark.live
def test_a_study_without_constraints_keeps_its_cards_and_legend(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("plain")
    api.create(name)
    for value in (3.0, 1.0, 2.0):
        api.tell(name, api.ask(name)["number"], value)
    open_page(page, server.url, f"#/study/{name}", view="study")
    page.wait_for_function("document.querySelector('#history').dataset.drawn === '3'")
    assert page.locator("#history").get_attribute("data-infeasible") == "0"
    assert page.get_by_test_id("slices").get_attribute("data-infeasible") == "0"
    assert page.get_by_test_id("parallel-infeasible").count() == 0
    assert page.locator("#constraints-panel").is_hidden()
    assert "infeasible" not in page.get_by_test_id("history-legend").inner_text()
    cards = page.locator("#cards").inner_text()
    assert "best (lowest)" in cards and "feasible" not in cards
    assert page.get_by_test_id("best-value").inner_text() == "1"
    open_page(page, server.url, f"#/study/{name}/trial/1", view="trial")
    assert page.get_by_test_id("trial-metrics").count() == 0 and page.get_by_test_id("trial-feasible").count() == 0


@pytest.mark.live
def test_a_constrained_study_and_trial_fit_a_phone(server: ServerProcess, browser: Any) -> None:
    api, name = Api(server.url), unique("phone")
    api.create(name, SPACE, policy="turbo", **REACTOR)
    for values, _ in TOLD:
        api.post(f"studies/{name}/trials/{api.ask(name)['number']}/tell", {"values": values})
    context, page, errors = new_page(browser, 390, 844, has_touch=True, is_mobile=True, device_scale_factor=2)
    try:
        for fragment, view in ((f"#/study/{name}", "study"), (f"#/study/{name}/trial/1", "trial")):
            open_page(page, server.url, fragment, view=view)
            scroll, width = no_page_overflow(page)
            assert scroll <= width, (view, scroll, width)
            assert axe_violations(page) == [], view
    finally:
        context.close()
    assert not errors, errors


@pytest.mark.live
def test_the_study_line_says_the_parameter_constraints_and_that_failures_are_avoided(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("within")
    rules = [
        {"terms": {"a": 1, "b": 1}, "op": "<=", "bound": 1.5},
        {"terms": {"a": 2, "b": -1}, "op": ">=", "bound": 0},
    ]
    api.create(name, SPACE, policy="turbo", failures="avoid", parameter_constraints=rules)
    open_page(page, server.url, f"#/study/{name}", view="study")
    meta = page.locator("#meta").inner_text()
    assert "within a + b ≤ 1.5; 2 a − b ≥ 0" in meta, meta
    assert "failures avoided" in meta, meta
