"""Several objectives (issue 31) and safe mode (issue 30) on the dashboard, in real headless Chromium against a
live server: the Pareto front panel (its marks and its front against ``/pareto``, brushing a rectangle filters the
trials table), the hypervolume over trials against the summary, the trade-off table, the cards and the studies
list (a hypervolume, never a ``/best`` request), the pairs of 3 objectives, a single-objective study that never
asks for ``/pareto``, the trial page's objectives, and the safe-mode line with its violations and the seeds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import unique
from harness.processes import ServerProcess
from test_dashboard_v2 import Api, axe_violations, new_page, open_page

pytestmark = pytest.mark.live

SPACE = {"a": {"type": "float", "low": 0, "high": 1}, "b": {"type": "float", "low": 0, "high": 2}}
YIELD_COST = [{"metric": "yield", "direction": "maximize"}, {"metric": "cost", "direction": "minimize"}]


def yield_cost(p: dict[str, float]) -> dict[str, float]:
    """More yield costs more: the trials that pay least for their yield make the front."""
    return {"yield": p["a"], "cost": p["a"] ** 2 + p["b"] / 2}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(f"sqlite:///{tmp_path_factory.mktemp('pareto') / 'localbo.db'}")
    yield server
    server.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh desktop page recording its API requests (page.requests); a script or console error fails the test."""
    context, page, errors = new_page(browser)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.requests = []
    page.on("request", lambda r: page.requests.append(r.url))
    yield page
    context.close()
    assert not errors, errors


def fill(api: Api, name: str, n: int, measure: Any) -> None:
    for _ in range(n):
        trial = api.ask(name)
        api.post(f"studies/{name}/trials/{trial['number']}/tell", {"values": measure(trial["params"])})


def get(server: ServerProcess, path: str) -> Any:
    resp = httpx.get(f"{server.url}/api/v1/{path}", timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def asked(page: Any, ending: str) -> list[str]:
    return [u for u in page.requests if "/api/v1/" in u and u.split("?")[0].endswith(ending)]


def close(text: str, value: float) -> bool:
    """A number as the page writes it (5 significant digits) against the API's."""
    return abs(float(text) - value) <= 1e-4 * max(1.0, abs(value))


def row_numbers(rows: Any) -> list[int]:
    return [int(n) for n in rows.evaluate_all("rows => rows.map(r => r.dataset.number)")]


def table_numbers(page: Any) -> set[int]:
    return set(row_numbers(page.get_by_test_id("trials").locator("tbody tr")))


def test_two_objectives_draw_the_front_the_hypervolume_the_trade_offs_and_brushing_filters_the_table(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("yield-cost")
    api.create(name, SPACE, policy="random", objectives=YIELD_COST)
    fill(api, name, 12, yield_cost)
    pareto = get(server, f"studies/{name}/pareto")
    summary = get(server, f"studies/{name}")["summary"]
    front = [t["number"] for t in pareto["trials"]]
    assert 2 <= len(front) < 12 and pareto["reference_point_inferred"] is True

    # the studies list: the hypervolume and the front's size, not a best value
    open_page(page, server.url)
    row = page.locator(f"tr[data-study='{name}']")
    assert close(row.get_by_test_id("list-hypervolume").inner_text(), summary["hypervolume"])
    assert row.get_by_test_id("list-front").inner_text() == str(len(front))
    assert "2 objectives" in row.inner_text()

    open_page(page, server.url, f"#/study/{name}", view="study")
    canvas = page.get_by_test_id("front")
    assert canvas.count() == 1, "two objectives: one scatter"
    page.wait_for_function(f"document.querySelector('[data-testid=front]').dataset.front === '{len(front)}'")
    assert canvas.get_attribute("data-drawn") == "12"
    label = canvas.get_attribute("aria-label")
    assert "yield (maximise)" in label and "cost (minimise)" in label
    assert "reference point" in page.get_by_test_id("front-legend").inner_text()
    assert page.get_by_test_id("front-note").inner_text().startswith(f"{len(front)} of 12 completed trials")

    # the hypervolume over trials: its last step is the summary's hypervolume, the reference point said inferred
    hv = page.get_by_test_id("hypervolume-chart")
    assert hv.get_attribute("data-steps") == str(len(summary["hypervolume_history"]))
    assert abs(float(hv.get_attribute("data-last")) - summary["hypervolume"]) <= 1e-12 * max(1, summary["hypervolume"])
    assert summary["hypervolume_history"][-1][1] == summary["hypervolume"]
    ref = page.get_by_test_id("reference-point").inner_text()
    assert ref.startswith("reference point: yield ") and ref.endswith("(inferred)"), ref

    # the cards: the hypervolume and the front's size instead of a best value
    assert close(page.get_by_test_id("hypervolume").inner_text(), summary["hypervolume"])
    assert page.get_by_test_id("pareto-size").inner_text() == str(len(front))
    assert page.get_by_test_id("best-value").count() == 0
    assert "maximise yield, minimise cost" in page.locator("#meta").inner_text()
    # the analysis panels model the first objective, and say so (their answers name it)
    assert page.locator("#importance-title").inner_text() == "What drives yield (the first of 2 objectives)"
    head = page.locator("#surface-title").locator("..").inner_text()  # the panel's head: its title and key
    assert "coloured by yield (the first of 2 objectives)" in head, head
    assert get(server, f"studies/{name}/analysis/importance")["objective"] == "yield"

    # the trade-off table: the front's trials, best yield first, each objective's value and a link to the trial
    table = page.get_by_test_id("tradeoff")
    rows = table.locator("tbody tr")
    by_yield = sorted(pareto["trials"], key=lambda t: -t["values"]["yield"])
    assert row_numbers(rows) == [t["number"] for t in by_yield]
    for k, trial in enumerate(by_yield):
        cells = rows.nth(k)
        assert close(cells.locator("[data-metric=yield]").inner_text(), trial["values"]["yield"])
        assert close(cells.locator("[data-metric=cost]").inner_text(), trial["values"]["cost"])
        assert cells.get_by_role("link").get_attribute("href") == f"#/study/{name}/trial/{trial['number']}"
    # sorted by keyboard: the cost column's button, Enter; the focus stays on it
    table.locator("[data-sort='1']").focus()
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('[data-testid=tradeoff] th[aria-sort] [data-sort=\"1\"]')")
    by_cost = sorted(pareto["trials"], key=lambda t: t["values"]["cost"])
    assert row_numbers(rows) == [t["number"] for t in by_cost]
    assert page.evaluate("document.activeElement.dataset.sort") == "1"
    assert table.locator("th[aria-sort]").get_attribute("aria-sort") == "ascending"

    # brushing: a rectangle over the six lowest yields, the full height, filters the trials table to them
    geometry = json.loads(canvas.get_attribute("data-geometry"))
    box, (xlo, xhi) = geometry["box"], geometry["x"]
    trials = get(server, f"studies/{name}/trials?limit=100")["trials"]
    px = sorted(
        (box["l"] + (t["values"]["yield"] - xlo) / (xhi - xlo) * (box["r"] - box["l"]), t["number"]) for t in trials
    )
    assert px[6][0] - px[5][0] >= 4, "a clear gap where the rectangle ends"
    expected = {n for _, n in px[:6]}
    canvas.scroll_into_view_if_needed()
    at = canvas.bounding_box()
    page.mouse.move(at["x"] + box["l"] + 2, at["y"] + box["t"] + 2)
    page.mouse.down()
    page.mouse.move(at["x"] + (px[5][0] + px[6][0]) / 2, at["y"] + box["b"] - 2, steps=6)
    page.mouse.up()
    page.wait_for_function("!document.querySelector('[data-testid=front-brush]').hidden")
    assert table_numbers(page) == expected
    assert page.get_by_test_id("front-brush-summary").inner_text().endswith("(6 trials).")
    # the trade-off table keeps the front's trials in the selection
    in_both = sorted(expected & set(front))
    tradeoff_rows = page.get_by_test_id("tradeoff").locator("tbody tr")
    assert sorted(int(n) for n in tradeoff_rows.evaluate_all("rs => rs.map(r => r.dataset.number)")) == in_both
    assert page.get_by_test_id("tradeoff-note").inner_text().startswith(f"{len(in_both)} of the front's {len(front)}")
    assert "filtered by the selection" in page.locator("#brush-note").inner_text()
    # the front itself, by a button; then the selection dropped
    page.get_by_test_id("front-select").click()
    page.wait_for_function(f"document.querySelectorAll('[data-testid=trials] tbody tr').length === {len(front)}")
    assert table_numbers(page) == set(front)
    page.get_by_test_id("front-brush-clear").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=trials] tbody tr').length === 12")
    page.wait_for_function(f"document.querySelectorAll('[data-testid=tradeoff] tbody tr').length === {len(front)}")
    assert axe_violations(page) == []
    values = {t["number"]: t["values"] for t in trials}
    # the trials table: a column per objective, named, not one unnamed value (the first objective's)
    heads = page.get_by_test_id("trials").locator("thead th").all_inner_texts()
    assert heads[2:4] == ["yield (max)", "cost (min)"], heads
    first_row = page.get_by_test_id("trials").locator("tbody tr").first
    cells = first_row.get_by_test_id("objective-cell").all_inner_texts()
    shown_number = int(first_row.get_attribute("data-number"))
    assert all(close(c, values[shown_number][m]) for c, m in zip(cells, ("yield", "cost"), strict=True)), cells
    # the slices show one objective at a time, named; the parallel coordinates' value axis names the first
    slices = page.get_by_test_id("slices")
    assert slices.get_attribute("data-objective") == "yield"
    page.get_by_test_id("slices-objective").select_option("1")
    page.wait_for_function("document.querySelector('[data-testid=slices]').dataset.objective === 'cost'")
    assert slices.locator("canvas").first.get_attribute("aria-label").startswith("cost against ")
    # the value filter names its objective: the trials whose cost is at most the median's, by cost, not by yield
    costs = sorted(v["cost"] for v in values.values())
    cheap = {n for n, v in values.items() if v["cost"] <= costs[5]}
    filters = page.get_by_test_id("filters")
    filters.get_by_label("value of").select_option("cost")
    filters.get_by_label("to", exact=True).first.fill(repr(costs[5]))
    page.wait_for_function("document.querySelectorAll('[data-testid=trials] tbody tr').length === 6")
    assert table_numbers(page) == cheap
    assert f"cost ≤ {costs[5]!r}" in page.get_by_test_id("filter-note").inner_text()
    assert "value_of=cost" in page.evaluate("location.hash")
    filters.get_by_role("button", name="clear filters").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=trials] tbody tr').length === 12")

    # the trial page: every objective's value, and whether it is on the front
    on, off = front[0], next(n for n in range(1, 13) if n not in front)
    for number, place in ((on, "on the front"), (off, "dominated")):
        open_page(page, server.url, f"#/study/{name}/trial/{number}", view="trial")
        shown = page.get_by_test_id("trial-objective")
        assert shown.count() == 2
        for k, metric in enumerate(("yield", "cost")):
            assert shown.nth(k).get_attribute("data-metric") == metric
            assert close(shown.nth(k).locator("b").inner_text(), values[number][metric])
        assert page.get_by_test_id("trial-front").inner_text() == place
    roles = page.get_by_test_id("trial-metrics").locator("tbody tr td:nth-child(3)").all_inner_texts()
    assert roles == ["objective 1 of 2 (maximise)", "objective 2 of 2 (minimise)"]
    heads = page.get_by_test_id("trial-metrics").locator("thead th").all_inner_texts()
    assert heads == ["metric", "value", "role"], heads  # no outcome constraints: no bound columns
    assert page.get_by_test_id("trial-client").inner_text() == "no client"  # as the timeline names it
    assert axe_violations(page) == []

    assert asked(page, f"/studies/{name}/pareto"), "the study and trial pages read the front"
    assert not asked(page, "/best"), "nothing asks /best of a study with several objectives (a 409 there)"


def test_three_objectives_draw_each_pair_and_a_single_objective_never_asks_for_the_front(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("three")
    objectives = [{"metric": "f1"}, {"metric": "f2"}, {"metric": "f3", "direction": "maximize"}]
    api.create(name, SPACE, policy="random", objectives=objectives, reference_point={"f1": 2, "f2": 3, "f3": -1})
    fill(api, name, 8, lambda p: {"f1": p["a"], "f2": p["b"] + (1 - p["a"]) ** 2, "f3": p["a"] * p["b"]})
    pareto = get(server, f"studies/{name}/pareto")
    open_page(page, server.url, f"#/study/{name}", view="study")
    n = len(pareto["trials"])
    page.wait_for_function(
        f"[...document.querySelectorAll('[data-testid=front]')].every(c => c.dataset.front === '{n}')"
    )
    charts = page.get_by_test_id("front")
    pairs = [
        (charts.nth(k).get_attribute("data-x"), charts.nth(k).get_attribute("data-y")) for k in range(charts.count())
    ]
    assert pairs == [("f1", "f2"), ("f1", "f3"), ("f2", "f3")]
    assert all(charts.nth(k).get_attribute("data-drawn") == "8" for k in range(3))
    assert page.get_by_test_id("reference-point").inner_text() == "reference point: f1 2, f2 3, f3 -1"
    heads = page.get_by_test_id("tradeoff").locator("thead th").all_inner_texts()
    assert [h.rstrip(" ▴▾") for h in heads] == ["trial", "f1 (minimise)", "f2 (minimise)", "f3 (maximise)"], heads
    assert page.get_by_test_id("tradeoff").locator("tbody tr").count() == n
    # a long metric name is shortened, never the direction hint after it
    title = page.evaluate(
        """async () => {
          const { axisTitle } = await import('./static/front-chart.js');
          const ctx = document.createElement('canvas').getContext('2d');
          ctx.font = '12px system-ui, sans-serif';
          return axisTitle(ctx, 'f3_a_long_metric_name_from_the_rig (maximise)', false, 120);
        }"""
    )
    assert title.startswith("f3_") and "…" in title and title.endswith(", better →"), title
    # a tell arrives live: the marks, the front and the trade-offs follow (the front is read again)
    fill(api, name, 1, lambda p: {"f1": 0.0, "f2": 0.0, "f3": 5.0})  # dominates every trial
    page.wait_for_function(
        "[...document.querySelectorAll('[data-testid=front]')]"
        ".every(c => c.dataset.drawn === '9' && c.dataset.front === '1')"
    )
    assert page.get_by_test_id("tradeoff").locator("tbody tr").count() == 1
    assert page.get_by_test_id("pareto-size").inner_text() == "1"
    assert not asked(page, "/best")

    single = unique("single")
    api.create(single, SPACE, policy="random", objectives=[{"metric": "loss"}])
    fill(api, single, 3, lambda p: {"loss": p["a"]})
    open_page(page, server.url, f"#/study/{single}", view="study")
    page.get_by_test_id("best-value").wait_for()
    assert page.locator("#front-panel").is_hidden() and page.locator("#hypervolume-panel").is_hidden()
    assert page.get_by_test_id("hypervolume").count() == 0 and page.get_by_test_id("pareto-size").count() == 0
    open_page(page, server.url, f"#/study/{single}/trial/1", view="trial")
    assert "value (loss)" in page.get_by_test_id("trial").inner_text()
    assert not [u for u in asked(page, "/pareto") if f"/studies/{single}/" in u], "a single objective has no front"


def test_a_hypervolume_past_the_double_range_says_why_there_is_none(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("huge")
    api.create(name, SPACE, policy="random", objectives=YIELD_COST)  # the reference point inferred
    values = iter([{"yield": 1e300, "cost": -1e300}, {"yield": -1e300, "cost": 1e300}, {"yield": 0.5, "cost": 2.0}])
    fill(api, name, 3, lambda _: next(values))
    note = get(server, f"studies/{name}/pareto")["hypervolume_note"]
    assert "double range" in note
    open_page(page, server.url, f"#/study/{name}", view="study")
    page.get_by_test_id("hypervolume").wait_for()
    assert page.get_by_test_id("hypervolume").inner_text() == "–"
    card = page.locator(".card", has=page.get_by_test_id("hypervolume")).inner_text()
    assert "double range" in card, card
    empty = page.get_by_test_id("hypervolume-empty")
    assert empty.is_visible() and "double range" in empty.inner_text(), empty.inner_text()


def test_safe_mode_says_so_counts_its_violations_and_labels_the_seeds(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("safe")
    seeds = [{"a": 0.2, "b": 0.4}, {"a": 0.3, "b": 0.5}]
    api.create(
        name,
        SPACE,
        policy="turbo",
        objectives=[{"metric": "yield", "direction": "maximize"}],
        constraints=[{"metric": "t_peak", "op": "<=", "bound": 450}],
        safety={"max_violation_probability": 0.05, "seeds": seeds},
    )
    first = api.post(f"studies/{name}/ask", {"count": 2})["trials"]
    assert [t["source"] for t in first] == ["seed", "seed"]
    # nothing measured yet: the policy can only ask a running seed again, and says so
    assert [t["source"] for t in api.post(f"studies/{name}/ask", {"count": 1})["trials"]] == ["repeat-safe"]
    for trial, t_peak in zip(first, (400.0, 480.0), strict=True):  # the second seed broke the bound
        api.post(f"studies/{name}/trials/{trial['number']}/tell", {"values": {"yield": 0.4, "t_peak": t_peak}})
    # told from outside, over the bound: not safe mode's choice, so not its violation
    api.post(f"studies/{name}/trials", {"params": {"a": 0.9, "b": 1.9}, "values": {"yield": 0.9, "t_peak": 500.0}})

    open_page(page, server.url, f"#/study/{name}", view="study")
    line = page.get_by_test_id("safe-mode")
    text = line.inner_text()
    assert "safe mode (δ = 0.05)" in text, text
    assert "every constraint is predicted to hold with probability at least 0.95" in text, text
    assert line.get_by_test_id("safe-violations").inner_text() == "safe-mode violations: 1 of 2"
    assert "(1 told from outside not counted)" in text and line.get_by_test_id("safe-seeds").inner_text() == "2 seeds"
    assert line.get_by_test_id("safe-repeats").inner_text().startswith("1 repeat (a known safe point asked again")
    sources = page.get_by_test_id("trials").get_by_test_id("source")
    labels = {
        int(n): s
        for n, s in sources.evaluate_all("b => b.map(e => [e.closest('tr').dataset.number, e.dataset.source])")
    }
    assert labels == {1: "seed", 2: "seed", 3: "repeat-safe", 4: "external"}
    assert page.get_by_test_id("trials").locator("tr[data-number='1'] [data-source=seed]").inner_text() == "seed"
    # the history's tooltip names the seed too
    page.locator("#history").focus()
    page.keyboard.press("Home")
    assert "seed" in page.locator("#tip").inner_text()
    assert not asked(page, "/pareto")
    assert axe_violations(page) == []
