"""Dashboard v2 in real headless Chromium (Debian's, through Playwright) against live servers: liveness and
stale trials, readable failures, finite studies, small screens, keyboard and screen-reader use, axe-core."""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import unique
from harness.processes import ServerProcess

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[1]
AXE = ROOT / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
SPACE = {"x0": {"type": "float", "low": -2, "high": 2}, "x1": {"type": "float", "low": -2, "high": 2}}
LEASE_S = 2  # the stale server's lease: the test waits past it by whole seconds
LONG_REASON = (
    "RuntimeError: the <simulator> diverged at step 4711 after the solver's residual grew past 1e6; "
    "the mesh was too coarse near the inlet, so the run was stopped and its partial output discarded "
    "(see /scratch/runs/beam-7/solver.log, lines 120-180) — END-OF-REASON"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(f"sqlite:///{tmp_path_factory.mktemp('v2') / 'localbo.db'}")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stale_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server whose leases run out after LEASE_S seconds."""
    db = tmp_path_factory.mktemp("v2stale") / "localbo.db"
    server = ServerProcess(f"sqlite:///{db}", LOCALBO_LEASE_SECONDS=str(LEASE_S))
    yield server
    server.stop()


def new_page(browser: Any, width: int = 1366, height: int = 768, **options: Any) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": width, "height": height}, **options)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return context, page, errors


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh desktop page; any script error on it fails the test."""
    context, page, errors = new_page(browser, accept_downloads=True)
    yield page
    context.close()
    assert not errors, errors


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    """A fresh 390 x 844 touch page (a phone); any script error on it fails the test."""
    context, page, errors = new_page(browser, 390, 844, has_touch=True, is_mobile=True, device_scale_factor=2)
    yield page
    context.close()
    assert not errors, errors


class Api:
    def __init__(self, url: str) -> None:
        self.url = url

    def request(self, method: str, path: str, body: dict | None = None) -> Any:
        r = httpx.request(method, f"{self.url}/api/v1/{path}", json=body, timeout=60)
        assert r.status_code in (200, 201), r.text
        return r.json()

    def post(self, path: str, body: dict | None = None) -> Any:
        return self.request("POST", path, body)

    def create(self, name: str, space: dict | None = None, policy: str = "sobol", **extra: Any) -> None:
        self.post("studies", {"name": name, "space": space or SPACE, "policy": policy, "seed": 3, **extra})

    def ask(self, name: str, client_id: str | None = None) -> dict:
        body = {"client_id": client_id} if client_id else None
        return self.post(f"studies/{name}/ask", body)["trials"][0]

    def tell(self, name: str, number: int, value: float) -> None:
        self.post(f"studies/{name}/trials/{number}/tell", {"value": value})

    def fail(self, name: str, number: int, reason: str) -> None:
        self.post(f"studies/{name}/trials/{number}/tell", {"state": "failed", "reason": reason})


def open_page(page: Any, url: str, fragment: str = "", view: str = "list") -> None:
    page.goto(f"{url}/dashboard/{fragment}")
    try:
        page.wait_for_selector(f"body[data-ready='1'][data-view='{view}']", timeout=30_000)
    except Exception as error:  # say what the page shows instead (an error view, another view, still loading)
        shown = page.evaluate(
            "({...document.body.dataset, hash: location.hash, "
            "main: document.getElementById('main').innerText.slice(0, 400)})"
        )
        raise AssertionError(f"the {view} view did not get ready: {shown}") from error


def assert_aborted(page: Any, aborted: list[str], path: str) -> None:
    """A request to ``path`` failed (was aborted); Playwright reports it a moment after the fact."""
    for _ in range(100):
        if any(path in url for url in aborted):
            return
        page.wait_for_timeout(100)
    pytest.fail(f"no aborted request to {path}: {aborted}")


def no_page_overflow(page: Any) -> tuple[int, int]:
    return page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")


# -- liveness --------------------------------------------------------------------------------------


def test_a_running_trial_past_its_lease_and_a_stale_one_are_highlighted_with_their_client(
    stale_server: ServerProcess, page: Any
) -> None:
    api, name = Api(stale_server.url), unique("stale")
    api.create(name)
    held = api.ask(name, client_id="rig-7")
    time.sleep(LEASE_S + 1.5)  # past the lease by whole seconds; no ask since, so it is still `running`
    open_page(page, stale_server.url, f"#/study/{name}", view="study")
    row = page.get_by_test_id("open-trials").locator("tbody tr", has_text="rig-7")
    row.wait_for(timeout=30_000)
    assert row.get_attribute("data-stale") == "1" and "is-stale" in row.get_attribute("class")
    assert "lease expired" in row.inner_text() and "expired" in row.locator("td").nth(4).inner_text()
    assert "1 stale or past their lease" in page.get_by_test_id("open-count").inner_text()

    fresh = api.ask(name, client_id="rig-8")  # the ask expires the old lease: trial 1 becomes `stale`
    page.wait_for_function(
        "document.querySelectorAll('[data-testid=open-trials] tbody tr').length === 2", timeout=30_000
    )
    rows = page.get_by_test_id("open-trials").locator("tbody tr")
    first, second = rows.nth(0), rows.nth(1)
    assert first.locator("td").first.inner_text() == str(held["number"]) and "rig-7" in first.inner_text()
    page.wait_for_function(
        "document.querySelector('[data-testid=open-trials] tbody tr').innerText.includes('stale')", timeout=30_000
    )
    assert first.get_attribute("data-stale") == "1"
    assert second.locator("td").first.inner_text() == str(fresh["number"]) and "rig-8" in second.inner_text()
    # the studies list says so too
    open_page(page, stale_server.url)
    listed = page.locator("[data-testid=studies] tr", has_text=name)
    assert "1 stale" in listed.get_by_test_id("stale-count").inner_text()


def test_the_study_page_and_list_say_when_the_last_result_came_and_trials_since_the_best(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("alive")
    api.create(name)
    for value in (5.0, 3.0, 4.0, 6.0):  # minimize: the best is the 2nd, two completed trials since
        api.tell(name, api.ask(name)["number"], value)
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert page.get_by_test_id("since-improvement").inner_text() == "2"
    assert page.get_by_test_id("per-hour").inner_text() == "4"
    assert page.get_by_test_id("last-result").inner_text().endswith(" s ago")
    api.tell(name, api.ask(name)["number"], 1.0)  # a new best, live
    page.wait_for_function("document.querySelector('[data-testid=since-improvement]').textContent === '0'")
    assert page.get_by_test_id("per-hour").inner_text() == "5"
    open_page(page, server.url)
    row = page.locator("[data-testid=studies] tr", has_text=name)
    assert row.get_by_test_id("since-improvement").inner_text() == "0"
    assert row.get_by_test_id("per-hour").inner_text() == "5"
    assert row.get_by_test_id("last-result").inner_text().endswith(" ago")


# -- failures --------------------------------------------------------------------------------------


def count_redraws(page: Any, element_id: str) -> None:
    """From now on, count the times the element's children are replaced (a redraw by ``render``)."""
    page.evaluate(
        """(id) => {
      window.redraws = window.redraws || {};
      window.redraws[id] = 0;
      new MutationObserver(() => window.redraws[id]++).observe(document.getElementById(id), {childList: true});
    }""",
        element_id,
    )


def redraws(page: Any, element_id: str) -> int:
    return page.evaluate("(id) => window.redraws[id]", element_id)


def study_with_a_failure(api: Api, prefix: str) -> tuple[str, dict]:
    """A new study with trial 1 complete and trial 2 failed with LONG_REASON; its name and trial 2."""
    name = unique(prefix)
    api.create(name)
    api.tell(name, api.ask(name)["number"], 1.0)
    failed = api.ask(name)
    api.fail(name, failed["number"], LONG_REASON)
    return name, failed


def test_a_failure_reason_is_fully_readable_in_the_table_the_tooltip_and_the_trial_page(
    server: ServerProcess, page: Any
) -> None:
    api = Api(server.url)
    name, failed = study_with_a_failure(api, "failing")
    api.tell(name, api.ask(name)["number"], 2.0)
    open_page(page, server.url, f"#/study/{name}", view="study")
    row = page.get_by_test_id("trials").locator(f"tbody tr[data-number='{failed['number']}']")
    reason = row.get_by_test_id("reason")
    full = reason.locator(".reason-full")
    assert not full.is_visible()  # long: its first words, expandable
    reason.locator("summary").focus()  # by keyboard
    page.keyboard.press("Enter")
    assert full.is_visible() and full.inner_text() == LONG_REASON
    # wrapped inside its cell, not cut off (both boxes read in one go: the table may redraw as panels load)
    inside = page.evaluate(
        """(n) => {
      const row = document.querySelector(`[data-testid=trials] tbody tr[data-number='${n}']`);
      const box = row.querySelector('.reason-full').getBoundingClientRect();
      const cell = row.querySelectorAll('td')[1].getBoundingClientRect();
      return box.width > 0 && box.right <= cell.right + 1;
    }""",
        failed["number"],
    )
    assert inside

    # the history's tooltip: the reason and the parameters (the failed trial sits in the "failed" lane)
    page.locator("#history").scroll_into_view_if_needed()
    drawn = page.evaluate("""() => {
      const c = document.getElementById('history');
      const r = c.getBoundingClientRect();
      return {left: r.left, top: r.top, width: r.width, height: r.height};
    }""")
    n, left, right = 3, drawn["left"] + 64, drawn["left"] + drawn["width"] - 12
    x = left + (failed["number"] - 0.5) / n * (right - left)
    page.mouse.move(x, drawn["top"] + drawn["height"] - 50)
    tip = page.locator("#tip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert f"#{failed['number']} failed" in text and LONG_REASON in text and "x0 = " in text and "x1 = " in text

    # by keyboard: the chart takes focus, the arrow keys step through the trials, Enter opens one
    page.locator("#history").focus()
    page.keyboard.press("Home")
    assert "#1 complete" in tip.inner_text()
    for _ in range(failed["number"] - 1):
        page.keyboard.press("ArrowRight")
    assert LONG_REASON in tip.inner_text() and f"#{failed['number']} failed" in tip.inner_text()
    page.keyboard.press("ArrowRight")
    assert f"#{failed['number'] + 1} complete" in tip.inner_text()
    page.keyboard.press("Escape")
    assert tip.is_hidden()

    # its own page, reached from the table's link
    row.get_by_role("link", name=str(failed["number"])).click()
    page.wait_for_selector("body[data-ready='1'][data-view='trial']")
    assert page.url.endswith(f"#/study/{name}/trial/{failed['number']}")
    assert page.get_by_test_id("trial-reason").inner_text() == LONG_REASON
    assert page.get_by_test_id("trial-state").inner_text() == "failed"
    params = [r.locator("td").all_inner_texts() for r in page.get_by_test_id("trial-params").locator("tbody tr").all()]
    assert [p[0] for p in params] == ["x0", "x1"]
    for (_, shown), key in zip(params, ("x0", "x1"), strict=True):
        assert float(shown) == pytest.approx(failed["params"][key], abs=1e-3)
    assert page.evaluate("document.activeElement.tagName") == "H1"  # focus moved to the new page's heading


def test_the_trials_table_keeps_its_rows_when_the_stream_resends_what_it_shows_and_keeps_what_was_opened(
    server: ServerProcess, page: Any
) -> None:
    # the stream's first read resends the trials finished just before the page's own read (its clock slack): the
    # table drew them already, and replacing its rows under the pointer loses a click pressed on the old link and
    # released on the new one (a flake of the test above, under load)
    api = Api(server.url)
    name, failed = study_with_a_failure(api, "resent")
    running = api.ask(name)["number"]  # shown as running from the start
    open_page(page, server.url, f"#/study/{name}", view="study")
    count_redraws(page, "table")
    row = page.get_by_test_id("trials").locator(f"tbody tr[data-number='{failed['number']}']")
    row.get_by_test_id("reason").locator("summary").click()
    assert row.locator(".reason-full").is_visible()
    # one real change (the running trial completes): the table is redrawn once for it, and not for the resend
    api.tell(name, running, 2.0)
    page.get_by_test_id("trials").locator(f"tbody tr[data-number='{running}'] .badge.complete").wait_for()
    assert redraws(page, "table") == 1
    assert row.locator(".reason-full").is_visible()  # what the viewer opened stays open over the redraw


def test_the_studies_list_is_not_redrawn_when_its_timer_finds_nothing_new(server: ServerProcess, page: Any) -> None:
    # the list redraws every 10 s for the ages it shows; with the same markup it keeps its nodes (and a click on them)
    api, name = Api(server.url), unique("quiet")
    api.create(name)
    api.tell(name, api.ask(name)["number"], 1.0)
    # the page's clock three hours on, its timers run forward below instead of waited for: its ages ("3 h ago") do
    # not change in the 25 s run
    page.clock.install(time=time.time() + 3 * 3600)
    open_page(page, server.url)
    page.get_by_test_id("studies").get_by_role("link", name=name).wait_for()
    count_redraws(page, "studies")
    page.clock.run_for(25_000)  # two ticks of its 10 s timer
    assert redraws(page, "studies") == 0


def test_the_trial_page_shows_client_times_lease_and_source_live(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("trialpage")
    api.create(name)
    trial = api.ask(name, client_id="bench-<3>")
    open_page(page, server.url, f"#/study/{name}/trial/{trial['number']}", view="trial")
    assert page.get_by_test_id("trial-client").inner_text() == "bench-<3>"  # escaped, shown as typed
    assert page.get_by_test_id("trial-state").inner_text() == "running"
    assert page.get_by_test_id("trial-source").inner_text() == trial["source"]
    assert page.get_by_test_id("trial-completed").inner_text() == "not yet"
    assert "(in " in page.get_by_test_id("trial-lease").inner_text()
    api.tell(name, trial["number"], 0.25)  # live: the page follows the trial's state
    page.wait_for_function("document.querySelector('[data-testid=trial-state]').textContent === 'complete'")
    assert page.get_by_test_id("trial-value").inner_text() == "0.25"
    assert page.get_by_test_id("trial-completed").inner_text() != "not yet"
    open_page(page, server.url, f"#/study/{name}/trial/99", view="error")
    assert "not found" in page.locator("[role=alert]").inner_text()


def test_the_study_pages_ageing_tick_leaves_the_open_trials_and_liveness_alone_when_no_age_moved(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("ticking")
    api.create(name)
    api.tell(name, api.ask(name)["number"], 1.0)
    running = api.ask(name)
    page.clock.install(time=time.time() + 3 * 3600)  # the ages read in hours: none moves in the 25 s below
    open_page(page, server.url, f"#/study/{name}", view="study")
    page.get_by_test_id("open-trials").locator(f"a[href$='/trial/{running['number']}']").wait_for()
    for panel in ("open-panel", "liveness"):
        count_redraws(page, panel)
    page.clock.run_for(25_000)  # two ticks of the page's 10 s timer (the open trials are read again)
    assert [redraws(page, panel) for panel in ("open-panel", "liveness")] == [0, 0]


def test_an_open_trial_page_is_redrawn_only_when_something_on_it_changed(server: ServerProcess, page: Any) -> None:
    # an open trial's page redraws every 10 s for its lease's clock; a redraw with the same markup would drop the
    # viewer's selection and a click in progress
    api, name = Api(server.url), unique("opentrial")
    api.create(name)
    trial = api.ask(name)
    page.clock.install(time=time.time() + 3 * 3600)  # past its lease: "3 h ago" does not move in the 25 s below
    open_page(page, server.url, f"#/study/{name}/trial/{trial['number']}", view="trial")
    count_redraws(page, "main")
    page.clock.run_for(25_000)  # two ticks of its 10 s timer
    assert redraws(page, "main") == 0
    api.tell(name, trial["number"], 0.5)  # something new: drawn
    page.wait_for_function("document.querySelector('[data-testid=trial-state]').textContent === 'complete'")
    assert redraws(page, "main") == 1
    assert page.get_by_test_id("trial-value").inner_text() == "0.5"


# -- finite studies --------------------------------------------------------------------------------


def test_a_finite_study_shows_candidate_ids_and_exports_a_correct_csv(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("finite")
    candidates = [{"id": f"g-{i}", "params": {"a": i % 4, "b": i // 4}} for i in range(16)]
    space = {"kind": "finite", "candidates": candidates}
    api.create(name, space=space, policy="random")
    told = {}
    for k in range(5):
        trial = api.ask(name)
        told[trial["number"]] = trial
        api.tell(name, trial["number"], float(10 - k))  # minimize: the last is the best
    open_page(page, server.url, f"#/study/{name}", view="study")
    rows = page.get_by_test_id("trials").locator("tbody tr")
    shown = {int(r.get_attribute("data-number")): r.get_by_test_id("candidate").inner_text() for r in rows.all()}
    assert shown == {n: t["candidate"] for n, t in told.items()}
    assert all(c.startswith("g-") for c in shown.values())
    best = max(told)
    assert page.get_by_test_id("best-candidate").inner_text() == told[best]["candidate"]
    assert page.get_by_test_id("candidates-left").inner_text() == "11"
    # a new trial's candidate arrives live
    running = api.ask(name)
    page.wait_for_selector(f"[data-testid=trials] tbody tr[data-number='{running['number']}']")
    cell = f"[data-testid=trials] tr[data-number='{running['number']}'] [data-testid=candidate]"
    live = "([s, id]) => document.querySelector(s).textContent === id"
    page.wait_for_function(live, arg=[cell, running["candidate"]])

    # the export: a plain link on a server without tokens, and what it downloads is the study's trials
    link = page.get_by_role("link", name="CSV")
    assert link.get_attribute("href") == f"/api/v1/studies/{name}/export?format=csv"
    with page.expect_download() as download:
        link.click()
    rows_out = list(csv.reader(io.StringIO(Path(download.value.path()).read_text())))
    assert rows_out[0][:6] == ["number", "state", "value", "a", "b", "candidate"]
    by_number = {int(r[0]): r for r in rows_out[1:]}
    for n, t in told.items():
        assert by_number[n][5] == t["candidate"] and by_number[n][1] == "complete"
        assert (float(by_number[n][3]), float(by_number[n][4])) == (t["params"]["a"], t["params"]["b"])
    assert by_number[running["number"]][1] == "running"
    assert httpx.get(f"{server.url}{link.get_attribute('href')}").status_code == 200  # not a dead link


# -- any screen, any user --------------------------------------------------------------------------

WIDE = {
    f"a_rather_long_parameter_name_{k}": {"type": "float", "low": 0.001, "high": 1000, "log": True} for k in range(12)
}


def test_no_horizontal_overflow_at_390_on_the_list_a_study_and_a_trial(server: ServerProcess, phone: Any) -> None:
    api, name = Api(server.url), unique("a-study-with-a-long-name-that-must-wrap-somewhere")
    api.create(name, space=WIDE)
    for k in range(6):
        api.tell(name, api.ask(name)["number"], float(k))
    failed = api.ask(name)
    api.fail(name, failed["number"], LONG_REASON.replace(" ", "_"))  # one long word
    api.ask(name, client_id="a-client-id-that-is-long-enough-to-overflow-a-narrow-cell")
    for fragment, view in (
        ("", "list"),
        (f"#/study/{name}", "study"),
        (f"#/study/{name}/trial/{failed['number']}", "trial"),
    ):
        open_page(phone, server.url, fragment, view=view)
        scroll, inner = no_page_overflow(phone)
        assert scroll <= inner, (view, scroll, inner)
        assert axe_violations(phone) == [], view
    # the wide trials table scrolls inside its panel instead
    open_page(phone, server.url, f"#/study/{name}", view="study")
    scrolls = """() => {
      const e = document.querySelector('#table .scroll');
      return e && e.scrollWidth > e.clientWidth && getComputedStyle(e).overflowX === 'auto';
    }"""
    phone.wait_for_function(scrolls, timeout=15_000)  # the table may still be redrawing as the panels load


def test_sorting_keeps_focus_sets_aria_sort_on_the_header_and_the_pager_follows(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("sorting")
    api.create(name)
    for k in range(55):  # two pages
        api.tell(name, api.ask(name)["number"], float((k * 7) % 11))
    open_page(page, server.url, f"#/study/{name}", view="study")
    table = page.get_by_test_id("trials")
    number_th = table.locator("th", has=page.locator("[data-sort=number]"))
    assert number_th.get_attribute("aria-sort") == "descending"
    assert table.locator("button[aria-sort]").count() == 0  # on the <th>, not the button
    pager = page.locator("#table .pager")
    assert "‹ newer" in pager.inner_text() and "older ›" in pager.inner_text()
    finished = table.locator("tbody tr").first.locator("td").last.inner_text()
    assert any(ch in finished for ch in "/.-") and ":" in finished  # a date as well as a time

    value_button = table.locator("[data-sort=value]")
    value_button.focus()
    page.keyboard.press("Enter")  # ascending by value: lowest first
    page.wait_for_function("document.querySelector('th[aria-sort]').querySelector('[data-sort=value]') !== null")
    assert page.evaluate("document.activeElement.dataset.sort") == "value"
    value_th = page.get_by_test_id("trials").locator("th", has=page.locator("[data-sort=value]"))
    assert value_th.get_attribute("aria-sort") == "ascending"
    assert page.get_by_test_id("trials").locator("th[aria-sort]").count() == 1
    assert "‹ lower values" in pager.inner_text() and "higher values ›" in pager.inner_text()
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('th[aria-sort]').getAttribute('aria-sort') === 'descending'")
    assert page.evaluate("document.activeElement.dataset.sort") == "value"
    assert "‹ higher values" in pager.inner_text()


def test_an_empty_study_says_no_trials_yet_instead_of_empty_axes(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("empty")
    api.create(name)
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert page.get_by_test_id("history-empty").is_visible() and page.locator("#history").is_hidden()
    assert page.get_by_test_id("parallel-empty").is_visible() and page.locator("#parallel").is_hidden()
    assert page.get_by_test_id("table-empty").inner_text() == "No trials yet."
    api.tell(name, api.ask(name)["number"], 1.0)  # the chart appears with the first result
    page.wait_for_selector("#history", state="visible", timeout=30_000)
    assert page.get_by_test_id("history-empty").is_hidden()


def test_navigation_moves_focus_to_the_heading_and_the_token_button_fits_the_server(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("nav")
    api.create(name)
    open_page(page, server.url)
    assert page.locator("#token-button").is_hidden()  # this server asks for no token: nothing to enter
    page.locator("[data-testid=studies] a", has_text=name).click()
    page.wait_for_selector("body[data-ready='1'][data-view='study']")
    assert page.evaluate("[document.activeElement.tagName, document.activeElement.textContent]") == ["H1", name]
    page.go_back()
    page.wait_for_selector("body[data-ready='1'][data-view='list']")
    assert page.evaluate("document.activeElement.tagName") == "H1"


def test_with_tokens_the_export_is_a_download_with_the_header_not_a_dead_link(browser: Any, tmp_path: Path) -> None:
    server = ServerProcess(f"sqlite:///{tmp_path / 'tokens.db'}", LOCALBO_TOKENS="adm=admin")
    context, page, errors = new_page(browser, accept_downloads=True)
    try:
        headers = {"Authorization": "Bearer adm"}
        r = httpx.post(
            f"{server.url}/api/v1/studies", json={"name": "tok", "space": SPACE, "policy": "sobol"}, headers=headers
        )
        assert r.status_code == 201, r.text
        open_page(page, server.url, "#/study/tok", view="auth")
        assert page.locator("#token-button").is_hidden()  # the form is on the page
        assert axe_violations(page) == []
        page.get_by_label("Bearer token").fill("adm")
        page.get_by_role("button", name="Use token").click()
        page.wait_for_selector("body[data-ready='1'][data-view='study']")
        assert page.locator("#token-button").inner_text() == "change token…"
        link = page.get_by_role("link", name="JSON")
        assert link.get_attribute("href") is None  # no plain href the browser would send without the token
        assert httpx.get(f"{server.url}/api/v1/studies/tok/export?format=json").status_code == 401
        link.focus()
        with page.expect_download() as download:
            page.keyboard.press("Enter")  # by keyboard, too
        assert '"name": "tok"' in Path(download.value.path()).read_text().replace('":"', '": "')
        aborted: list[str] = []
        page.on("requestfailed", lambda request: aborted.append(request.url))
        page.locator("#token-button").click()  # forget the token: the study's stream ends, the form shows
        page.wait_for_selector("body[data-ready='1'][data-view='auth']")
        assert_aborted(page, aborted, "/studies/tok/events")
    finally:
        context.close()
        server.stop()
    assert not errors, errors


CONTRAST = """async () => {
  const { COLORS } = await import('./static/charts.js');
  const { valueColour, valueColourSmooth } = await import('./static/panels/scales.js');
  const rgb = (c) => {
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, 1, 1); ctx.fillStyle = c; ctx.fillRect(0, 0, 1, 1);
    return [...ctx.getImageData(0, 0, 1, 1).data.slice(0, 3)];  // blended on white, as drawn
  };
  const linear = (v) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4);
  const lum = (c) => c.map(linear).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (c) => 1.05 / (lum(rgb(c)) + 0.05);
  const out = {};
  for (const k of ['point', 'best', 'running', 'failed', 'infeasible']) out[k] = ratio(COLORS[k]);
  COLORS.lines.forEach((c, k) => (out[`line ${k}`] = ratio(c)));
  for (let k = 0; k <= 10; k++) out[`value ${k / 10}`] = ratio(valueColour(k / 10));
  for (let k = 0; k <= 10; k++) out[`shade ${k / 10}`] = ratio(valueColourSmooth(k / 10));
  return out;
}"""


def test_chart_colours_have_at_least_3_to_1_contrast_on_white(server: ServerProcess, page: Any) -> None:
    open_page(page, server.url)
    ratios = page.evaluate(CONTRAST)
    low = {k: round(v, 2) for k, v in ratios.items() if v < 3}
    assert not low, low
    assert ratios["value 0"] >= 3 and ratios["value 1"] >= 3  # the best lines were viridis yellow: 1.26:1


def axe_violations(page: Any) -> list[dict]:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run make setup (it installs axe-core from the npm registry)")
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result
        if v["impact"] in ("critical", "serious")
    ]


def test_axe_finds_nothing_critical_or_serious_on_the_list_a_study_and_a_trial(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("axe")
    api.create(name)
    for k in range(4):
        api.tell(name, api.ask(name)["number"], float(k))
    failed = api.ask(name)
    api.fail(name, failed["number"], LONG_REASON)
    api.ask(name, client_id="rig-1")
    for fragment, view in (
        ("", "list"),
        (f"#/study/{name}", "study"),
        (f"#/study/{name}/trial/{failed['number']}", "trial"),
    ):
        open_page(page, server.url, fragment, view=view)
        assert axe_violations(page) == [], view


# -- code shape ------------------------------------------------------------------------------------

STATIC = ROOT / "service" / "localbo" / "dashboard" / "static"


def test_only_the_template_helper_writes_html() -> None:
    """Every interpolation goes through html`` (escaping) because nothing else assigns markup."""
    writers = {
        str(path.relative_to(STATIC))
        for path in STATIC.rglob("*.js")
        for line in path.read_text().splitlines()
        if any(sink in line for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"))
    }
    assert writers == {"html.js"}, writers


def test_markup_in_a_reason_or_client_id_is_shown_as_text(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("escape")
    api.create(name)
    hostile = '<img src=x onerror="window.pwned = 1">'
    api.fail(name, api.ask(name, client_id=hostile)["number"], hostile)
    api.ask(name, client_id=hostile)
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert page.get_by_test_id("trials").get_by_test_id("reason").inner_text() == hostile
    page.get_by_test_id("open-trials").get_by_text(hostile).wait_for()
    open_page(page, server.url, f"#/study/{name}/trial/1", view="trial")
    assert page.get_by_test_id("trial-client").inner_text() == hostile
    assert page.evaluate("window.pwned") is None and page.locator("main img").count() == 0


def test_leaving_a_study_aborts_its_requests_and_its_event_stream(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("leave")
    api.create(name)
    api.tell(name, api.ask(name)["number"], 1.0)
    aborted: list[str] = []
    page.on("requestfailed", lambda request: aborted.append(request.url))
    open_page(page, server.url, f"#/study/{name}", view="study")
    page.locator("#crumbs").get_by_role("link", name="studies").click()
    page.wait_for_selector("body[data-ready='1'][data-view='list']")
    assert_aborted(page, aborted, f"/studies/{name}/events")
    api.tell(name, api.ask(name)["number"], 0.5)  # the old view is gone: nothing of it redraws
    page.wait_for_timeout(1500)
    assert page.locator("#history").count() == 0 and page.get_by_test_id("studies").is_visible()


def test_the_page_preloads_every_module() -> None:
    """index.html names every module for modulepreload, so the browser fetches them at once, not in the
    four rounds their imports take (app -> views -> panels -> charts); a new module goes on the list."""
    page = (STATIC / "index.html").read_text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="static/([^"]+)">', page))
    modules = {str(p.relative_to(STATIC)) for p in STATIC.rglob("*.js")} - {"app.js"}
    assert preloaded == modules, {"missing": modules - preloaded, "gone": preloaded - modules}
