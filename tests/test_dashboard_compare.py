"""Issue 27, item 11, in real headless Chromium (Debian's, through Playwright) against a live server: the
distribution of a study's values (its EDF: steps, summary, direction, ±1e308, several objectives, no results
yet) and studies side by side (#/compare: ticked on the list, at most 4, best so far and the EDFs per
direction, a table of policy, trials, best value and fallback points; the link opens as it is); axe clean and
no sideways scroll at 390 px, in the light and the dark scheme."""

from __future__ import annotations

import sqlite3
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CONTRAST_ON_PANEL_JS, checked_page, unique
from harness.processes import ServerProcess
from test_dashboard_v2 import Api, axe_violations, no_page_overflow, open_page

pytestmark = pytest.mark.live

VALUES = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]  # 7 distinct values; median 3.5


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compare") / "localbo.db"


@pytest.fixture(scope="module")
def server(db: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(f"sqlite:///{db}")
    yield server
    server.stop()


def study(api: Api, name: str, values: list[float], **create: Any) -> None:
    api.create(name, **create)
    for v in values:
        api.tell(name, api.ask(name)["number"], v)


def mark_fallbacks(db: Path, name: str, numbers: list[int]) -> None:
    """Marks told trials as fallback points (what a failing policy hands out), straight in the database."""
    with sqlite3.connect(db, timeout=30) as conn:
        (sid,) = conn.execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
        for n in numbers:
            conn.execute("UPDATE trials SET source = 'fallback' WHERE study_id = ? AND number = ?", (sid, n))


def no_panel_failed(page: Any) -> None:
    assert page.evaluate("[...document.querySelectorAll('[data-failed]')].map((e) => e.id)") == []


# the EDF as drawn: its steps, and whether the curve's colour is on the canvas at points along it
DRAWN = """async ([x0, x1, f]) => {
  const { lastDrawn } = await import('./static/panels/edf.js');
  const { COLORS } = await import('./static/charts.js');
  const canvas = document.querySelector('#edf');
  const d = lastDrawn(canvas);
  const probe = document.createElement('canvas').getContext('2d');
  probe.fillStyle = COLORS.lines[0]; probe.fillRect(0, 0, 1, 1);
  const want = [...probe.getImageData(0, 0, 1, 1).data.slice(0, 3)];
  const ratio = canvas.width / canvas.clientWidth;
  const at = (x, y) => {  // the curve's colour within a pixel or two of (x, y) in CSS pixels
    const ctx = canvas.getContext('2d');
    for (let dy = -2; dy <= 2; dy++) {
      const p = ctx.getImageData(Math.round(x * ratio), Math.round((y + dy) * ratio), 1, 1).data;
      if (Math.abs(p[0] - want[0]) + Math.abs(p[1] - want[1]) + Math.abs(p[2] - want[2]) < 40) return true;
    }
    return false;
  };
  const mid = (d.sx(x0) + d.sx(x1)) / 2;
  return { steps: d.steps[0], onStep: at(mid, d.sy(f)), offStep: at(mid, d.sy(f + 0.25)) };
}"""


def test_the_edf_draws_a_step_per_distinct_value_and_its_summary_says_n_median_and_best(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("edf")
    study(api, name, VALUES)
    api.fail(name, api.ask(name)["number"], "no value")
    api.ask(name)  # one running: neither is in the distribution
    open_page(page, server.url, f"#/study/{name}", view="study")
    canvas = page.get_by_test_id("edf")
    assert canvas.get_attribute("data-n") == "8"
    assert canvas.get_attribute("data-steps") == "7"  # 1 twice: one step of 2/8
    assert float(canvas.get_attribute("data-median")) == statistics.median(VALUES) == 3.5
    summary = page.get_by_test_id("edf-summary")
    cell = lambda k: summary.get_by_test_id(f"edf-{k}").inner_text()  # noqa: E731
    assert (cell("n"), cell("best"), cell("quarter"), cell("median"), cell("worst")) == ("8", "1", "1", "3.5", "9")
    assert "median 3.5" in canvas.get_attribute("aria-label") and "best 1" in canvas.get_attribute("aria-label")
    assert "at most x" in page.get_by_test_id("edf-caption").inner_text()
    drawn = page.evaluate(DRAWN, [3, 4, 0.5])
    assert drawn["steps"] == [[1, 0.25], [2, 0.375], [3, 0.5], [4, 0.625], [5, 0.75], [6, 0.875], [9, 1]]
    assert drawn["onStep"] and not drawn["offStep"]  # between 3 and 4 the curve is at 1/2, drawn there
    # a new result arrives live
    api.tell(name, api.ask(name)["number"], 0.5)
    page.wait_for_function("document.querySelector('#edf').dataset.n === '9'", timeout=10_000)
    assert cell("best") == "0.5" and cell("median") == "3"
    assert axe_violations(page) == []


def test_maximising_the_edf_counts_values_at_least_x_from_the_best_on_the_right(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("edf-max")
    study(api, name, VALUES, direction="maximize")
    open_page(page, server.url, f"#/study/{name}", view="study")
    canvas = page.get_by_test_id("edf")
    assert canvas.get_attribute("data-direction") == "maximize" and canvas.get_attribute("data-best") == "9"
    summary = page.get_by_test_id("edf-summary")
    assert summary.get_by_test_id("edf-best").inner_text() == "9"
    assert summary.get_by_test_id("edf-quarter").inner_text() == "6"  # 2 of 8 are 6 or more
    assert "maximise" in page.get_by_test_id("edf-caption").inner_text()
    drawn = page.evaluate(DRAWN, [5, 6, 0.25])
    assert drawn["steps"] == [[9, 0.125], [6, 0.25], [5, 0.375], [4, 0.5], [3, 0.625], [2, 0.75], [1, 1]]
    assert drawn["onStep"] and not drawn["offStep"]


def test_the_edf_survives_values_near_the_double_range_and_says_so_when_there_is_none(
    server: ServerProcess, page: Any
) -> None:
    api, huge, empty = Api(server.url), unique("edf-huge"), unique("edf-none")
    study(api, huge, [1e308, -1e308, 0.5, 1e308, -1.5e308, 2.0])
    open_page(page, server.url, f"#/study/{huge}", view="study")
    no_panel_failed(page)
    canvas = page.get_by_test_id("edf")
    assert canvas.get_attribute("data-n") == "6" and canvas.get_attribute("data-steps") == "5"
    assert float(canvas.get_attribute("data-median")) == 1.25
    assert page.get_by_test_id("edf-best").inner_text() == "-1.5e+308"
    drawn = page.evaluate(DRAWN, [0.5, 2, 0.5])
    assert len(drawn["steps"]) == 5 and drawn["steps"][-1] == [1e308, 1]

    study(api, empty, [])
    api.ask(empty)
    open_page(page, server.url, f"#/study/{empty}", view="study")
    assert page.get_by_test_id("edf-empty").is_visible() and not page.get_by_test_id("edf").is_visible()
    api.tell(empty, 1, 4.0)  # the first result draws it
    page.wait_for_function("document.querySelector('#edf').dataset.n === '1'", timeout=10_000)
    assert page.get_by_test_id("edf").is_visible() and not page.get_by_test_id("edf-empty").is_visible()


def test_with_several_objectives_the_edf_shows_the_chosen_one_in_its_direction(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("edf-two")
    objectives = [{"metric": "cost"}, {"metric": "yield", "direction": "maximize"}]
    api.create(name, policy="random", objectives=objectives)
    for k in range(5):
        number = api.ask(name)["number"]
        api.post(f"studies/{name}/trials/{number}/tell", {"values": {"cost": float(k), "yield": 10.0 - 2 * k}})
    open_page(page, server.url, f"#/study/{name}", view="study")
    canvas = page.get_by_test_id("edf")
    assert canvas.get_attribute("data-direction") == "minimize" and canvas.get_attribute("data-best") == "0"
    page.get_by_test_id("edf-objective").select_option(label="yield (maximise)")
    page.wait_for_function("document.querySelector('#edf').dataset.direction === 'maximize'", timeout=10_000)
    assert canvas.get_attribute("data-best") == "10" and canvas.get_attribute("data-median") == "6"
    assert "yield" in canvas.get_attribute("aria-label")


# -- the comparison ---------------------------------------------------------------------------------


def three_studies(server: ServerProcess, db: Path) -> dict[str, Any]:
    """Two minimising studies of different policies (the second with 2 fallback points) and a maximising one."""
    api = Api(server.url)
    a, b, c = unique("cmp-a"), unique("cmp-b"), unique("cmp-c")
    study(api, a, [5.0, 3.0, 4.0, 2.5, 2.0], policy="sobol")
    study(api, b, [4.0, 1.5, 6.0, 7.0], policy="random")
    api.fail(b, api.ask(b)["number"], "broken")
    mark_fallbacks(db, b, [3, 4])
    study(api, c, [1.0, 8.0, 3.0], policy="random", direction="maximize")
    return {
        "names": [a, b, c],
        "best": {a: "2", b: "1.5", c: "8"},
        "policy": {a: "sobol", b: "random", c: "random"},
        "trials": {a: "5", b: "5", c: "3"},
        "fallback": {a: "0", b: "2", c: "0"},
    }


def check_comparison(page: Any, want: dict[str, Any]) -> None:
    rows = page.get_by_test_id("compare-table").locator("tbody tr")
    assert [rows.nth(k).get_attribute("data-study") for k in range(rows.count())] == want["names"]
    for name in want["names"]:
        row = page.get_by_test_id("compare-table").locator(f"tr[data-study='{name}']")
        assert row.get_by_test_id("compare-best-value").inner_text() == want["best"][name], name
        assert row.get_by_test_id("compare-policy").inner_text() == want["policy"][name]
        assert row.get_by_test_id("compare-trials").inner_text() == want["trials"][name]
        assert row.get_by_test_id("compare-fallback").inner_text() == want["fallback"][name]
    # different directions: said, and compared within each
    a, b, c = want["names"]
    assert "do not share a direction" in page.get_by_test_id("compare-directions").inner_text()
    groups = page.get_by_test_id("compare-group")
    assert [groups.nth(k).get_attribute("data-direction") for k in range(groups.count())] == ["minimize", "maximize"]
    best = page.locator("[data-testid=compare-best][data-direction=minimize]")
    assert best.get_attribute("data-curves") == "2"
    assert page.evaluate("JSON.parse(document.querySelector('[data-testid=compare-best]').dataset.best)") == {
        a: 2.0,
        b: 1.5,
    }
    edf = page.locator("[data-testid=compare-edf][data-direction=minimize]")
    assert page.evaluate("(e) => JSON.parse(e.dataset.n)", edf.element_handle()) == {a: 5, b: 4}
    maximise = page.locator("[data-testid=compare-best][data-direction=maximize]")
    assert page.evaluate("(e) => JSON.parse(e.dataset.best)", maximise.element_handle()) == {c: 8.0}
    no_panel_failed(page)


def test_ticking_studies_on_the_list_compares_them_and_a_fifth_is_refused(
    server: ServerProcess, db: Path, page: Any
) -> None:
    want = three_studies(server, db)
    api, extra = Api(server.url), [unique("cmp-d"), unique("cmp-e")]
    for name in extra:
        study(api, name, [1.0])
    open_page(page, server.url)
    tick = lambda name: page.get_by_label(f"compare {name}", exact=True)  # noqa: E731
    status = page.get_by_test_id("compare-status")
    tick(want["names"][0]).check()
    page.get_by_test_id("compare-button").click()  # one is not a comparison
    assert "at least 2" in status.inner_text() and page.evaluate("location.hash") in ("", "#/")
    for name in want["names"][1:] + extra[:1]:
        tick(name).check()
    assert "4 of at most 4" in status.inner_text()
    tick(extra[1]).click()  # a fifth
    assert not tick(extra[1]).is_checked()
    assert "At most 4 studies" in status.inner_text()
    tick(extra[0]).uncheck()
    page.get_by_test_id("compare-button").click()
    page.wait_for_selector("body[data-ready='1'][data-view='compare']", timeout=30_000)
    assert page.evaluate("location.hash") == f"#/compare?studies={','.join(want['names'])}"
    check_comparison(page, want)
    page.get_by_test_id("compare-by").select_option("results")  # by results so far: b's failed trial is not one
    assert page.evaluate("JSON.parse(document.querySelector('[data-testid=compare-best]').dataset.best)") == {
        want["names"][0]: 2.0,
        want["names"][1]: 1.5,
    }
    assert axe_violations(page) == []
    # back on the list, the ticks are kept
    page.go_back()
    page.wait_for_selector("body[data-ready='1'][data-view='list']", timeout=30_000)
    assert all(tick(name).is_checked() for name in want["names"])


def test_a_compare_link_opens_as_it_is_and_says_what_it_cannot_show(server: ServerProcess, db: Path, page: Any) -> None:
    want = three_studies(server, db)
    link = f"#/compare?studies={','.join(want['names'])}"
    open_page(page, server.url, link, view="compare")  # a fresh page straight on the link
    check_comparison(page, want)
    assert page.title().startswith("compare")

    # more than 4: the first 4, and why; one that does not exist: named, the others compared
    api, more = Api(server.url), [unique("cmp-f"), unique("cmp-g")]
    for name in more:
        study(api, name, [2.0])
    names = [*want["names"][:2], "no-such-study", *more]
    open_page(page, server.url, f"#/compare?studies={','.join(names)}", view="compare")
    assert "only the first 4" in page.get_by_test_id("compare-limit").inner_text()
    assert page.get_by_test_id("compare-missing").get_attribute("data-study") == "no-such-study"
    rows = page.get_by_test_id("compare-table").locator("tbody tr")
    assert [rows.nth(k).get_attribute("data-study") for k in range(rows.count())] == [*want["names"][:2], more[0]]
    assert page.get_by_test_id("compare-group").count() == 1  # all minimise: one pair of charts
    no_panel_failed(page)

    open_page(page, server.url, "#/compare", view="compare")
    assert page.get_by_test_id("compare-empty").is_visible()


def test_a_study_with_several_objectives_is_compared_by_its_first_and_says_so(server: ServerProcess, page: Any) -> None:
    api, single, two = Api(server.url), unique("cmp-one"), unique("cmp-two")
    study(api, single, [3.0, 2.0], policy="random")
    api.create(two, policy="random", objectives=[{"metric": "cost"}, {"metric": "yield", "direction": "maximize"}])
    for cost in (4.0, 1.0, 2.0):
        number = api.ask(two)["number"]
        api.post(f"studies/{two}/trials/{number}/tell", {"values": {"cost": cost, "yield": 10 - cost}})
    open_page(page, server.url, f"#/compare?studies={single},{two}", view="compare")
    assert "compared by its first, cost (minimise)" in page.get_by_test_id("compare-several").inner_text()
    assert page.get_by_test_id("compare-group").count() == 1  # both minimise (cost is the first objective)
    best = page.evaluate("JSON.parse(document.querySelector('[data-testid=compare-best]').dataset.best)")
    assert best == {single: 2.0, two: 1.0}
    row = page.get_by_test_id("compare-table").locator(f"tr[data-study='{two}']")
    assert row.get_by_test_id("edf-n").inner_text() == "3" and row.get_by_test_id("edf-median").inner_text() == "2"
    assert row.get_by_test_id("compare-best-value").inner_text() == "1"  # its first objective's best
    no_panel_failed(page)


def test_a_constrained_study_s_distribution_says_it_counts_infeasible_trials(server: ServerProcess, page: Any) -> None:
    api, plain, limited = Api(server.url), unique("cmp-plain"), unique("cmp-limit")
    study(api, plain, [3.0, 2.0], policy="random")
    api.create(limited, policy="turbo", objectives=[{"metric": "cost"}],
               constraints=[{"metric": "purity", "op": ">=", "bound": 0.9}])  # fmt: skip
    for k, (cost, purity) in enumerate(((1.0, 0.5), (2.5, 0.95), (4.0, 0.99))):  # the cheapest is impure; told
        params = {"x0": k / 4, "x1": k / 4}  # as trials of the lab's own (no GP fitted here)
        api.post(f"studies/{limited}/trials", {"params": params, "values": {"cost": cost, "purity": purity}})
    open_page(page, server.url, f"#/compare?studies={plain},{limited}", view="compare")
    note = page.get_by_test_id("compare-infeasible").inner_text()
    assert limited in note and plain not in note and "infeasible ones included" in note, note
    row = page.get_by_test_id("compare-table").locator(f"tr[data-study='{limited}']")
    assert row.get_by_test_id("compare-best-value").inner_text() == "2.5"  # feasible only
    assert row.get_by_test_id("edf-n").inner_text() == "3"  # every completed trial
    assert "(infeasible trials included)" in page.locator("[data-testid=compare-group] p.dim").nth(1).inner_text()
    no_panel_failed(page)


# colours of the study keys as drawn on the panel: at least 3:1, all different
KEY_CONTRAST = (
    "() => {"
    + CONTRAST_ON_PANEL_JS
    + """
  const keys = [...document.querySelectorAll('[data-testid=compare-legend] line')].map((l) => l.getAttribute('stroke'));
  return keys.map((k) => [k, ratio(k)]);
}"""
)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1366, 390])
def test_the_comparison_and_the_list_are_axe_clean_fit_a_phone_and_their_colours_read(
    server: ServerProcess, db: Path, browser: Any, width: int, scheme: str
) -> None:
    want = three_studies(server, db)
    api, fourth = Api(server.url), unique("cmp-h")
    study(api, fourth, [0.25, 3.0], policy="random")
    names = [*want["names"], fourth]
    with checked_page(browser, width=width, height=900) as page:
        page.emulate_media(color_scheme=scheme)
        for fragment, view in (
            ("", "list"),
            (f"#/compare?studies={','.join(names)}", "compare"),
            (f"#/study/{names[0]}", "study"),
        ):
            open_page(page, server.url, fragment, view=view)
            assert axe_violations(page) == [], (view, width, scheme)
            scroll, inner = no_page_overflow(page)
            assert scroll <= inner, (view, scroll, inner)
            if view == "compare":
                keys = page.evaluate(KEY_CONTRAST)
                assert len(keys) == 4 and len({k for k, _ in keys}) == 4, keys
                assert all(ratio >= 3 for _, ratio in keys), keys
