"""Issue 27 in real headless Chromium (Debian's, through Playwright) against a live server: an operator sees
trouble in seconds. A study holding values near the double range draws every panel; a panel that throws
shows its message while the rest of the page works; a study that stopped relative to its own cadence, with
trials past their lease, says so at the top and in the list; fallback points are flagged in the list, at the
top, in the history and the table; stale trials are drawn as stale; full precision on the trial page and in
tooltips; the importance panel's headline and its rough check.

Old times are written straight into the test server's SQLite file (a fake clock: no sleeps)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import checked_page, unique
from harness.processes import ServerProcess
from test_dashboard_v2 import Api, axe_violations, no_page_overflow, open_page

pytestmark = pytest.mark.live

PANELS = [  # every panel's section on a single-objective study (views/study.js)
    "policy-alert",
    "liveness",
    "cards",
    "history-panel",
    "policy",
    "importance-panel",
    "surface-panel",
    "slices-panel",
    "parallel-panel",
    "open-panel",
    "table-panel",
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trouble") / "localbo.db"


@pytest.fixture(scope="module")
def server(db: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(f"sqlite:///{db}")
    yield server
    server.stop()


def stamp(t: datetime) -> str:
    """A time as the server's SQLite columns hold it: naive UTC."""
    return t.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


def write(db: Path, sql: str, *args: Any) -> None:
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute(sql, args)


def study_id(db: Path, name: str) -> int:
    with sqlite3.connect(db, timeout=30) as conn:
        return conn.execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()[0]


def no_panel_failed(page: Any) -> None:
    failed = page.evaluate("[...document.querySelectorAll('[data-failed]')].map((e) => e.id)")
    assert failed == [], failed
    assert page.get_by_test_id("panel-error").count() == 0


# -- 1. values near the double range, and one panel's failure --------------------------------------


def test_a_study_told_plus_and_minus_1e308_draws_every_panel(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("huge")
    api.create(name)
    for value in (1e308, -1e308, 0.5, 1e308, -1.5e308, 2.0):
        api.tell(name, api.ask(name)["number"], value)
    api.ask(name)  # one running
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert "Something went wrong" not in page.content()
    no_panel_failed(page)
    assert page.get_by_test_id("n-complete").inner_text() == "6"
    assert page.get_by_test_id("best-value").inner_text() == "-1.500e+308"
    assert int(page.locator("#history").get_attribute("data-drawn")) == 6
    assert int(page.locator("#parallel").get_attribute("data-drawn")) == 6
    assert page.get_by_test_id("slices").get_attribute("data-drawn") == "6"
    assert page.get_by_test_id("trials").locator("tbody tr").count() == 7
    # the surface (trials only, or the GP's mean if the server could fit one) and the importance settle
    page.wait_for_selector(
        "[data-testid=surface-panel][data-state=contour], [data-testid=surface-panel][data-state=unavailable]",
        timeout=60_000,
    )
    page.wait_for_selector("[data-testid=importance-panel][data-bars]", timeout=60_000)
    assert int(page.get_by_test_id("surface").get_attribute("data-drawn")) == 6
    # the log scale over -1.8e308 .. 1e308, a brush on the value axis, the tooltip
    page.get_by_label("log scale").check()
    page.locator("[data-testid=brush-form] select[name=axis]").select_option("value")
    page.locator("[data-testid=brush-form] input[name=lo]").fill("-1e308")
    page.locator("[data-testid=brush-form] input[name=hi]").fill("1e308")
    page.locator("[data-testid=brush-form] button[type=submit]").click()
    page.get_by_test_id("brush").wait_for()
    page.locator("#history").focus()
    page.keyboard.press("Home")
    assert page.get_by_test_id("tip-value").inner_text() == "1e+308"
    page.wait_for_timeout(300)  # a redraw or two
    no_panel_failed(page)
    # the list and the trial page too
    open_page(page, server.url)
    assert "-1.500e+308" in page.locator("[data-testid=studies] tr", has_text=name).inner_text()
    open_page(page, server.url, f"#/study/{name}/trial/1", view="trial")
    assert page.get_by_test_id("trial-value").inner_text() == "1e+308"


THROWS_ON_DRAW = 'export function mount() { return { render() { throw new Error("boom while drawing"); } }; }'
THROWS_ON_MOUNT = 'export function mount() { throw new Error("boom while mounting"); }'


def test_a_panel_that_throws_shows_its_message_and_the_others_render(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("boom")
    api.create(name)
    for k in range(4):
        api.tell(name, api.ask(name)["number"], float(k))
    serve = lambda body: lambda route: route.fulfill(body=body, content_type="text/javascript")  # noqa: E731
    page.route("**/static/panels/slices.js", serve(THROWS_ON_DRAW))
    page.route("**/static/panels/importance.js", serve(THROWS_ON_MOUNT))
    open_page(page, server.url, f"#/study/{name}", view="study")
    for section, words in (("slices-panel", "boom while drawing"), ("importance-panel", "boom while mounting")):
        panel = page.locator(f"#{section}")
        assert panel.get_attribute("data-failed") == "1"
        assert words in panel.get_by_test_id("panel-error").inner_text()
    assert page.get_by_test_id("panel-error").count() == 2
    # the rest of the page works: the charts, the table, a live tell
    assert int(page.locator("#history").get_attribute("data-drawn")) == 4
    assert int(page.locator("#parallel").get_attribute("data-drawn")) == 4
    api.tell(name, api.ask(name)["number"], -1.0)
    page.wait_for_function("document.querySelector('[data-testid=n-complete]').textContent === '5'", timeout=30_000)
    assert page.get_by_test_id("trials").locator("tbody tr").count() == 5
    assert axe_violations(page) == []


# -- 2. a stopped study, trials past their lease ---------------------------------------------------


def stalled_study(server: ServerProcess, db: Path, fallbacks: int = 0, gap_s: float = 60) -> tuple[str, list[int]]:
    """8 results told one every ``gap_s`` seconds (a minute), the last 40 minutes ago; then one trial running 37
    minutes past its lease and one stale; ``fallbacks`` of the told trials marked as fallback points."""
    api, name = Api(server.url), unique("stalled")
    api.create(name)
    told = []
    for k in range(8):
        trial = api.ask(name, client_id="rig-1")
        api.tell(name, trial["number"], float((k * 3) % 5) + 0.25)
        told.append(trial["number"])
    late = api.ask(name, client_id="rig-1")["number"]
    stale = api.ask(name, client_id="rig-2")["number"]
    now = datetime.now(UTC)
    sid = study_id(db, name)
    write(db, "UPDATE studies SET created_at = ? WHERE id = ?", stamp(now - timedelta(hours=1)), sid)
    for k, number in enumerate(told):
        done = now - timedelta(minutes=40, seconds=(7 - k) * gap_s)  # steady, the last 40 minutes ago
        write(
            db,
            "UPDATE trials SET created_at = ?, completed_at = ?, lease_expires_at = NULL"
            " WHERE study_id = ? AND number = ?",
            stamp(done - timedelta(seconds=30)),
            stamp(done),
            sid,
            number,
        )
    asked = now - timedelta(minutes=39)
    write(
        db,
        "UPDATE trials SET created_at = ?, lease_expires_at = ? WHERE study_id = ? AND number = ?",
        stamp(asked),
        stamp(now - timedelta(minutes=37)),
        sid,
        late,
    )
    write(
        db,
        "UPDATE trials SET state = 'stale', created_at = ? WHERE study_id = ? AND number = ?",
        stamp(asked),
        sid,
        stale,
    )
    for number in told[:fallbacks]:
        write(db, "UPDATE trials SET source = 'fallback' WHERE study_id = ? AND number = ?", sid, number)
    return name, told


def test_a_study_stopped_relative_to_its_cadence_says_so_at_the_top_and_in_the_list(
    server: ServerProcess, db: Path, page: Any
) -> None:
    name, _ = stalled_study(server, db)
    api, lively = Api(server.url), unique("lively")  # told just now, steadily: not stopped
    api.create(lively)
    for k in range(6):
        api.tell(lively, api.ask(lively)["number"], float(k))

    open_page(page, server.url, f"#/study/{name}", view="study")
    stall = page.get_by_test_id("trouble-stall")
    assert stall.is_visible()
    text = stall.inner_text()
    # 40 min when written; the minutes round, so a slow (loaded) run may read 41 by the time it looks
    assert re.search(r"No result for 4[01] min", text), text
    assert "usual gap of 1 min" in text and "2 trials are still out" in text, text
    # at the top, not 2,400 px down (evaluate waits for the element: the page may re-render it between two reads)
    assert stall.evaluate("e => e.getBoundingClientRect().top + window.scrollY") < 400
    page.get_by_test_id("trouble-lease").filter(has_text="2 trials past their lease").wait_for(
        timeout=30_000
    )  # leases read
    lease = page.get_by_test_id("trouble-lease").inner_text()
    assert "2 trials past their lease" in lease and "1 stale" in lease and "1 still running past it" in lease, lease
    # the rate cannot hide the stop: 0 in the last hour... and none for 40 min, beside it
    assert page.locator(".liveness-row").get_attribute("data-stopped") == "1"
    assert re.fullmatch(r"but none for 4[01] min", page.get_by_test_id("per-hour-stop").inner_text())
    assert page.get_by_test_id("typical-gap").inner_text() == "1 min"
    # the history draws both open trials as stale (one is `stale`, the other running past its lease)
    page.wait_for_function("document.querySelector('#history').dataset.stale === '2'", timeout=30_000)
    assert page.locator("#history").get_attribute("data-running") == "0"
    assert page.get_by_test_id("legend-stale").is_visible()
    assert axe_violations(page) == []

    open_page(page, server.url)
    row = page.locator("[data-testid=studies] tr", has_text=name)
    assert row.get_attribute("data-trouble") == "1"
    assert re.fullmatch(r"stopped 4[01] min", row.get_by_test_id("stopped").inner_text())
    assert "1 stale" in row.get_by_test_id("stale-count").inner_text()
    calm = page.locator("[data-testid=studies] tr", has_text=lively)
    assert calm.get_by_test_id("stopped").count() == 0 and calm.get_attribute("data-trouble") == "0"
    assert axe_violations(page) == []


def test_a_study_whose_results_came_sub_second_reads_its_gap_and_no_absurd_ratio(
    server: ServerProcess, db: Path, page: Any
) -> None:
    """Results 0.3 s apart, then 40 minutes of silence: stopped by the rule's two-minute floor, not by 8,000x a gap
    that read "0 s"."""
    name, _ = stalled_study(server, db, gap_s=0.3)
    open_page(page, server.url, f"#/study/{name}", view="study")
    text = page.get_by_test_id("trouble-stall").inner_text()
    assert "its usual gap is 0.3 s" in text and "× its usual gap" not in text, text
    assert page.get_by_test_id("typical-gap").inner_text() == "0.3 s"
    shown = page.evaluate(
        """async () => {
          const { duration } = await import('./static/format.js');
          return [0, 0.004, 0.354, 5.26, 42, 150].map(duration);
        }"""
    )
    assert shown == ["0 s", "< 0.01 s", "0.35 s", "5.3 s", "42 s", "3 min"], shown


def test_a_stopped_study_fits_a_phone(server: ServerProcess, db: Path, browser: Any) -> None:
    name, _ = stalled_study(server, db, fallbacks=2)
    with checked_page(browser, width=390, height=844) as phone:
        for fragment, view in (("", "list"), (f"#/study/{name}", "study")):
            open_page(phone, server.url, fragment, view=view)
            scroll, inner = no_page_overflow(phone)
            assert scroll <= inner, (view, scroll, inner)
            assert axe_violations(phone) == [], view


# -- 3. fallback points ----------------------------------------------------------------------------


def test_fallback_points_are_flagged_in_the_list_at_the_top_in_the_history_and_the_table(
    server: ServerProcess, db: Path, page: Any
) -> None:
    name, told = stalled_study(server, db, fallbacks=3)
    open_page(page, server.url)
    row = page.locator("[data-testid=studies] tr", has_text=name)
    assert row.get_by_test_id("fallback-count").inner_text() == "3 fallback"

    open_page(page, server.url, f"#/study/{name}", view="study")
    top = page.get_by_test_id("trouble-fallback")
    assert "3 of 10 trials were fallback points" in top.inner_text()
    assert top.evaluate("e => e.getBoundingClientRect().top + window.scrollY") < 500
    assert page.locator("#history").get_attribute("data-fallbacks") == "3"
    assert page.get_by_test_id("legend-fallback").is_visible()
    flagged = page.get_by_test_id("trials").locator("tbody tr[data-fallback='1']")
    assert sorted(int(n) for n in flagged.evaluate_all("rows => rows.map((r) => r.dataset.number)")) == told[:3]
    for k in range(3):
        assert flagged.nth(k).locator("[data-source=fallback]").inner_text() == "fallback"
    # the history's tooltip names the source
    page.locator("#history").focus()
    page.keyboard.press("Home")
    assert "fallback" in page.locator("#tip").inner_text()


# -- 4. stale trials, plurals, full precision ------------------------------------------------------


def test_values_in_full_precision_on_the_trial_page_and_in_the_tooltip(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("exact")
    api.create(name)
    trial = api.ask(name)
    api.tell(name, trial["number"], -0.6999966)
    api.tell(name, api.ask(name)["number"], 0.123456789012345)  # 15 digits: what /series keeps on SQLite
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert page.get_by_test_id("best-value").inner_text() == "-0.7"  # the cards stay short
    page.locator("#history").focus()
    page.keyboard.press("Home")
    assert page.get_by_test_id("tip-value").inner_text() == "-0.6999966"
    page.keyboard.press("ArrowRight")
    assert page.get_by_test_id("tip-value").inner_text() == "0.123456789012345"
    tip = page.locator("#tip").inner_text()
    assert "x0 = " in tip and "x1 = " in tip

    open_page(page, server.url, f"#/study/{name}/trial/{trial['number']}", view="trial")
    value = page.get_by_test_id("trial-value")
    assert value.inner_text() == "-0.6999966"
    # copyable: one click selects the whole number
    assert value.locator(".exact").evaluate("(e) => getComputedStyle(e).userSelect") == "all"
    value.locator(".exact").click()
    assert page.evaluate("String(window.getSelection())") == "-0.6999966"
    params = {
        r.locator("td").nth(0).inner_text(): r.locator("td").nth(1).inner_text()
        for r in page.get_by_test_id("trial-params").locator("tbody tr").all()
    }
    assert params == {k: repr(v) for k, v in trial["params"].items()}


def test_one_queued_point_is_singular(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("plural")
    api.create(name)
    api.tell(name, api.ask(name)["number"], 1.0)
    planned = [{"params": {"x0": 0.5, "x1": -0.5}, "x": [0.625, 0.375], "source": "sobol"}]
    view = {"policy": "sobol", "policy_state_version": 1, "state_schema": 1, "state": {}, "display": None}
    page.route(
        "**/api/v1/studies/*/policy",
        lambda route: route.fulfill(json={**view, "last_policy_error": None, "planned": planned}),
    )
    open_page(page, server.url, f"#/study/{name}", view="study")
    text = page.locator("#policy").inner_text()
    assert "1 point queued" in text and "1 points" not in text, text


# -- 5. importance: the GP's estimate first, the forest a rough check ------------------------------

IMPORTANCE = {
    "parameters": ["x0", "x1"],
    "gp": [0.89, 0.11],
    "gp_method": "mean squared gradient of the GP's posterior mean",
    "forest": [0.55, 0.45],
    "forest_method": "a rough model-free check: out-of-bag permutation importance",
    "n_complete": 12,
    "note": "GP fitted to the last 12 of 12 completed trials",
}


def test_the_importance_panel_heads_with_the_gp_and_labels_the_forest_a_rough_check(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("importance")
    api.create(name)
    for _ in range(6):
        trial = api.ask(name)
        api.tell(name, trial["number"], 10 * trial["params"]["x0"])
    page.route("**/analysis/importance", lambda route: route.fulfill(json=IMPORTANCE))
    open_page(page, server.url, f"#/study/{name}", view="study")
    page.wait_for_selector("[data-testid=importance-panel][data-bars='4']", timeout=30_000)
    key = page.get_by_test_id("importance-key")
    assert key.locator("li").first.get_attribute("data-testid") == "importance-key-gp"  # the headline first
    assert "The estimate: GP (model-based)" in page.get_by_test_id("importance-key-gp").inner_text()
    check = page.get_by_test_id("importance-key-forest").inner_text()
    assert "A rough model-free check, not a second estimate: random forest (model-free)" in check
    disagreement = page.get_by_test_id("importance-disagreement")
    assert disagreement.get_attribute("data-count") == "2"
    words = disagreement.inner_text()
    assert (
        "disagrees with the GP" in words
        and "x0 (GP 0.89, forest 0.55)" in words
        and "x1 (GP 0.11, forest 0.45)" in words
    )
    rows = page.get_by_test_id("importance").locator("tbody tr")
    assert rows.first.locator("th").inner_text() == "x0"  # ordered by the GP's estimate
    assert axe_violations(page) == []

    page.unroute("**/analysis/importance")  # the server's own answer names its check the same way
    page.reload()
    page.wait_for_selector("body[data-ready='1'][data-view='study']", timeout=30_000)
    page.wait_for_selector("[data-testid=importance-panel][data-bars]:not([data-bars='0'])", timeout=60_000)
    assert "rough model-free check" in page.get_by_test_id("importance-key-forest").inner_text()
    assert "out-of-bag" in page.get_by_test_id("importance-key-forest").inner_text()
