"""Issue 27, items 6 and 7, in real headless Chromium (Debian's, through Playwright) against live servers: notes
on the study and its trials shown at the top, in the table, the history's tooltip and the trial page, written
there with a write-scoped token and only shown to a read-only one; the trials table filtered by state, source,
a value range, a parameter's range or choice and a note's text, together and with brushing, the filters in the
URL. Axe finds nothing and nothing scrolls sideways at 390 px with the new controls open."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from conftest import checked_page, unique
from harness.processes import ServerProcess
from test_dashboard_v2 import axe_violations, no_page_overflow, open_page

pytestmark = pytest.mark.live

SPACE = {
    "x0": {"type": "float", "low": -2, "high": 2},
    "n": {"type": "int", "low": 1, "high": 8},
    "opt": {"type": "categorical", "choices": ["sgd", "adam", "lbfgs"]},
}
HOSTILE = '<img src=x onerror="window.pwned = 1">'
LONG_NOTE = "The sample sat in the open for 40 minutes before the assay; " * 3 + "END-OF-NOTE"
TOKENS = "rw=write:*;ro=read:*"


class Api:
    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def call(self, method: str, path: str, body: Any = None) -> Any:
        r = httpx.request(method, f"{self.url}/api/v1/studies{path}", json=body, headers=self.headers, timeout=60)
        assert r.status_code in (200, 201), r.text
        return r.json()

    def study(self, trials: int = 12) -> tuple[str, list[dict]]:
        """A study of ``trials`` told trials (value = x0 + n), trial 4 failed, one external trial and one running;
        its trials as the API lists them."""
        name = unique("notes")
        self.call("POST", "", {"name": name, "space": SPACE, "policy": "random", "seed": 5})
        for k in range(1, trials + 1):
            t = self.call("POST", f"/{name}/ask", {})["trials"][0]
            if k == 4:
                self.call("POST", f"/{name}/trials/{t['number']}/tell", {"state": "failed", "reason": "pump"})
            else:
                self.call("POST", f"/{name}/trials/{t['number']}/tell", {"value": t["params"]["x0"] + t["params"]["n"]})
        self.call("POST", f"/{name}/trials", {"params": {"x0": 0.25, "n": 3, "opt": "adam"}, "value": 3.25})
        self.call("POST", f"/{name}/ask", {})
        return name, self.call("GET", f"/{name}/trials")["trials"]

    def note(self, name: str, number: int | None, text: str | None) -> None:
        path = f"/{name}/note" if number is None else f"/{name}/trials/{number}/note"
        self.call("PUT", path, {"note": text})


@pytest.fixture(scope="module")
def server(sqlite_server: ServerProcess) -> ServerProcess:
    return sqlite_server


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with tokens: rw writes every study, ro reads them."""
    server = ServerProcess(f"sqlite:///{tmp_path_factory.mktemp('notes-tokens') / 'db.sqlite'}", LOCALBO_TOKENS=TOKENS)
    yield server
    server.stop()


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    with checked_page(browser, width=390, height=844) as page:
        yield page


def shown_rows(page: Any) -> list[int]:
    return sorted(int(n) for n in page.get_by_test_id("trials").locator("tbody tr").evaluate_all(
        "(rows) => rows.map((r) => r.dataset.number)"
    ))  # fmt: skip


SHOWS = """(expected) => {
  const shown = [...document.querySelectorAll('[data-testid=trials] tbody tr')].map((r) => Number(r.dataset.number));
  return JSON.stringify(shown.sort((a, b) => a - b)) === JSON.stringify(expected);
}"""


def wait_rows(page: Any, expected: list[int]) -> None:
    """The table shows exactly the trials ``expected`` (it redraws a frame after a change)."""
    try:
        page.wait_for_function(SHOWS, arg=sorted(expected), timeout=10_000)
    except Exception:  # noqa: BLE001 - say which trials it shows instead
        assert shown_rows(page) == sorted(expected)
        raise


def tooltip_of(page: Any, number: int) -> str:
    """The history's tooltip for trial ``number``, reached by keyboard (Home, then the arrow keys)."""
    page.locator("#history").focus()
    page.keyboard.press("Home")
    for _ in range(number - 1):
        page.keyboard.press("ArrowRight")
    tip = page.locator("#tip")
    assert f"#{number} " in tip.inner_text()
    return tip.inner_text()


# -- 6. notes ------------------------------------------------------------------------------------------------------


def test_notes_show_at_the_top_in_the_table_the_tooltip_and_the_trial_page(server: ServerProcess, page: Any) -> None:
    api = Api(server.url)
    name, _ = api.study(6)
    api.note(name, None, f"new thermocouple from trial 3 on {HOSTILE}")
    api.note(name, 2, "sample 2 was contaminated")
    api.note(name, 5, LONG_NOTE)
    open_page(page, server.url, f"#/study/{name}", view="study")

    assert page.get_by_test_id("study-note").inner_text() == f"new thermocouple from trial 3 on {HOSTILE}"
    assert page.evaluate("window.pwned") is None  # the markup is text
    table = page.get_by_test_id("trials")
    assert table.locator("th", has_text="note").count() == 1
    cell = lambda n: table.locator(f"tr[data-number='{n}'] [data-testid=note-cell]")  # noqa: E731
    assert cell(2).inner_text() == "sample 2 was contaminated"
    assert cell(1).inner_text() == ""
    long = cell(5).locator("details")
    assert not long.locator(".note-text").is_visible()  # long: its first words, expandable by keyboard
    long.locator("summary").focus()
    page.keyboard.press("Enter")
    assert long.locator(".note-text").inner_text() == LONG_NOTE
    assert "note: sample 2 was contaminated" in tooltip_of(page, 2)
    assert "note:" not in tooltip_of(page, 3)

    # a note written elsewhere arrives live (the study's event stream says notes_version moved)
    api.note(name, 3, "rerun: bubble in the line")
    page.wait_for_function(
        "() => document.querySelector(\"tr[data-number='3'] [data-testid=note-cell]\")?.textContent"
        " === 'rerun: bubble in the line'",
        timeout=15_000,
    )
    api.note(name, None, "cleaning on Friday")
    study_note = "() => document.querySelector('[data-testid=study-note]')?.textContent === 'cleaning on Friday'"
    page.wait_for_function(study_note, timeout=15_000)

    # the trial's page, reached from the table
    table.locator("tr[data-number='2']").get_by_role("link", name="2", exact=True).click()
    page.wait_for_selector("body[data-ready='1'][data-view='trial']")
    assert page.get_by_test_id("trial-note-text").inner_text() == "sample 2 was contaminated"


def test_the_trial_page_writes_and_clears_a_note_with_a_server_without_tokens(server: ServerProcess, page: Any) -> None:
    api = Api(server.url)
    name, _ = api.study(3)
    open_page(page, server.url, f"#/study/{name}/trial/2", view="trial")
    assert page.get_by_test_id("trial-note").inner_text().startswith("none")
    page.get_by_role("button", name="add a note").click()
    box = page.get_by_label("Note on trial 2")
    assert page.evaluate("document.activeElement.id") == "trial-note-input"
    box.fill("sample 2 was contaminated\nsecond line")
    assert axe_violations(page) == []  # the editor open
    page.get_by_role("button", name="Save note").click()
    page.get_by_test_id("trial-note-text").wait_for()
    assert page.get_by_test_id("trial-note-text").inner_text() == "sample 2 was contaminated\nsecond line"
    assert api.call("GET", f"/{name}/trials/2")["note"] == "sample 2 was contaminated\nsecond line"

    # too long: the API's refusal stays on screen with the text, nothing stored
    page.get_by_role("button", name="edit note").click()
    too_long = "(b) => { b.removeAttribute('maxlength'); b.value = 'x'.repeat(2001); }"  # past the box's own limit
    page.get_by_label("Note on trial 2").evaluate(too_long)
    page.get_by_role("button", name="Save note").click()
    status = page.get_by_test_id("note-status")
    page.wait_for_function("() => document.querySelector('[data-testid=note-status]').textContent.includes('Not')")
    assert "2000" in status.inner_text()
    assert api.call("GET", f"/{name}/trials/2")["note"] == "sample 2 was contaminated\nsecond line"
    # Escape leaves the editor as it was; an empty note clears it
    page.keyboard.press("Escape")
    assert page.get_by_test_id("trial-note-text").inner_text() == "sample 2 was contaminated\nsecond line"
    page.get_by_role("button", name="edit note").click()
    page.get_by_label("Note on trial 2").fill("")
    page.get_by_role("button", name="Save note").click()
    page.get_by_role("button", name="add a note").wait_for()
    assert api.call("GET", f"/{name}/trials/2")["note"] is None

    # the study's note, at the top of its page
    open_page(page, server.url, f"#/study/{name}", view="study")
    page.get_by_role("button", name="add a note to this study").click()
    page.get_by_label("Note on this study").fill("paused for cleaning")
    page.get_by_role("button", name="Save note").click()
    page.get_by_test_id("study-note").wait_for()
    assert page.get_by_test_id("study-note").inner_text() == "paused for cleaning"
    assert api.call("GET", f"/{name}")["note"] == "paused for cleaning"


def with_token(page: Any, token: str) -> None:
    page.add_init_script(f"sessionStorage.setItem('localbo-token', {token!r})")


def test_a_read_only_token_sees_notes_and_no_editor_a_write_token_edits(guarded: ServerProcess, browser: Any) -> None:
    api = Api(guarded.url, "rw")
    name, _ = api.study(3)
    api.note(name, None, "set up by the lab")
    api.note(name, 1, "sample 1 was contaminated")
    with checked_page(browser) as page:
        with_token(page, "ro")
        open_page(page, guarded.url, f"#/study/{name}", view="study")
        page.wait_for_timeout(500)  # the access check has answered
        assert page.get_by_test_id("study-note").inner_text() == "set up by the lab"
        assert page.get_by_role("button", name=re.compile("edit note|add a note")).count() == 0
        assert "sample 1 was contaminated" in page.get_by_test_id("trials").inner_text()
        open_page(page, guarded.url, f"#/study/{name}/trial/1", view="trial")
        assert page.get_by_test_id("trial-note-text").inner_text() == "sample 1 was contaminated"
        assert page.get_by_role("button", name=re.compile("edit note|add a note")).count() == 0
    with checked_page(browser) as page:
        with_token(page, "rw")
        open_page(page, guarded.url, f"#/study/{name}/trial/1", view="trial")
        page.get_by_role("button", name="edit note").click()
        page.get_by_label("Note on trial 1").fill("sample 1 was fine after all")
        page.get_by_role("button", name="Save note").click()
        page.get_by_role("button", name="edit note").wait_for()
        assert page.get_by_test_id("trial-note-text").inner_text() == "sample 1 was fine after all"
    assert api.call("GET", f"/{name}/trials/1")["note"] == "sample 1 was fine after all"


# -- 7. filters ----------------------------------------------------------------------------------------------------


def test_each_filter_alone_and_together_and_with_brushing_and_in_the_url(server: ServerProcess, page: Any) -> None:
    api = Api(server.url)
    name, trials = api.study(24)
    api.note(name, 2, "sample 2 was Contaminated")
    api.note(name, 7, "contaminated again")
    api.note(name, 9, "fine")
    everyone = [t["number"] for t in trials]
    open_page(page, server.url, f"#/study/{name}", view="study")
    wait_rows(page, everyone)
    form = page.get_by_test_id("filters")
    field = lambda key: form.locator(f"[name={key}]")  # noqa: E731

    def only(**keep: Any) -> list[int]:
        return [t["number"] for t in trials if all(test(t) for test in keep.values())]

    # each kind alone
    field("state").select_option("failed")
    wait_rows(page, only(state=lambda t: t["state"] == "failed"))
    field("state").select_option("running")
    wait_rows(page, only(state=lambda t: t["state"] == "running"))
    field("state").select_option("")
    field("source").select_option("external")
    wait_rows(page, only(source=lambda t: t["source"] == "external"))
    field("source").select_option("")
    field("value_min").fill("3")
    field("value_max").fill("6.5")
    in_range = lambda t: t["value"] is not None and 3 <= t["value"] <= 6.5  # noqa: E731
    wait_rows(page, only(value=in_range))
    assert "3 ≤ value ≤ 6.5" in page.get_by_test_id("filter-note").inner_text()
    field("value_min").fill("")
    field("value_max").fill("")
    field("param").select_option("x0")
    field("param_min").fill("-0.5")
    field("param_max").fill("1.25")
    x0_in = lambda t: -0.5 <= t["params"]["x0"] <= 1.25  # noqa: E731
    wait_rows(page, only(x0=x0_in))
    field("param").select_option("opt")  # a categorical: a choice instead of bounds
    assert field("param_min").is_hidden() and field("param_is").is_visible()
    field("param_is").select_option("adam")
    wait_rows(page, only(opt=lambda t: t["params"]["opt"] == "adam"))
    field("param").select_option("")
    field("note").fill("CONTAMINATED")  # any case
    wait_rows(page, [2, 7])

    # all together (AND): complete, from the policy, value >= 2, n <= 6, a note containing "contaminated"
    field("note").fill("")
    field("state").select_option("complete")
    field("source").select_option("random")
    field("value_min").fill("2")
    field("param").select_option("n")
    field("param_max").fill("6")
    together = only(
        state=lambda t: t["state"] == "complete",
        source=lambda t: t["source"] == "random",
        value=lambda t: t["value"] >= 2,
        n=lambda t: t["params"]["n"] <= 6,
    )
    assert 0 < len(together) < len(everyone)
    wait_rows(page, together)

    # in the URL: a fresh page at that address restores the filters and shows the same trials
    query = parse_qs(page.url.split("?", 1)[1])
    assert query == {
        "state": ["complete"], "source": ["random"], "value_min": ["2"], "param": ["n"], "param_max": ["6"]
    }  # fmt: skip
    shared = page.url
    with checked_page(page.context.browser) as other:
        open_page(other, server.url, shared.split("/dashboard/", 1)[1], view="study")
        wait_rows(other, together)
        restored = other.get_by_test_id("filters")
        assert restored.locator("[name=state]").input_value() == "complete"
        assert restored.locator("[name=source]").input_value() == "random"
        assert restored.locator("[name=param]").input_value() == "n"
        assert restored.locator("[name=param_max]").input_value() == "6"

    # with brushing: the brushed range and the filters both hold
    page.locator("#parallel").element_handle().evaluate("(c) => c.parallel.brush('x0', -1, 1)")
    both = [n for n in together if -1 <= next(t for t in trials if t["number"] == n)["params"]["x0"] <= 1]
    wait_rows(page, both)
    assert "the selection on the chart" in page.get_by_test_id("filter-note").inner_text()
    page.get_by_test_id("brush-clear").click()
    wait_rows(page, together)

    # clear: every trial, and the URL without a query
    form.get_by_role("button", name="clear filters").click()
    wait_rows(page, everyone)
    assert page.url.endswith(f"#/study/{name}")
    assert page.get_by_test_id("filter-note").inner_text() == ""


def test_a_filter_url_with_values_that_cannot_apply_shows_every_trial(server: ServerProcess, page: Any) -> None:
    api = Api(server.url)
    name, trials = api.study(3)
    bad = "?state=exploded&param=nope&param_min=1&value_min=abc&note="
    open_page(page, server.url, f"#/study/{name}{bad}", view="study")
    wait_rows(page, [t["number"] for t in trials])
    assert page.get_by_test_id("filters").locator("[name=state]").input_value() == ""


# -- every page still clean: axe at 1366 and 390 px, and no sideways scroll on a phone -------------------------


def test_axe_and_a_phone_with_notes_filters_and_the_editor(server: ServerProcess, page: Any, phone: Any) -> None:
    api = Api(server.url)
    name, _ = api.study(8)
    api.note(name, None, LONG_NOTE)
    api.note(name, 2, LONG_NOTE)
    api.note(name, 3, "short note")
    filtered = f"#/study/{name}?state=complete&param=x0&param_min=-1.5&note=note"
    for view in (page, phone):
        open_page(view, server.url, filtered, view="study")
        view.get_by_test_id("trials").locator("details.note summary").first.click()
        view.get_by_role("button", name="edit note").click()  # the study note's editor
        view.get_by_label("Note on this study").wait_for()
        assert axe_violations(view) == []
        scroll, width = no_page_overflow(view)
        assert scroll <= width, (scroll, width)
        open_page(view, server.url, f"#/study/{name}/trial/2", view="trial")
        view.get_by_role("button", name="edit note").click()
        assert axe_violations(view) == []
        scroll, width = no_page_overflow(view)
        assert scroll <= width, (scroll, width)
