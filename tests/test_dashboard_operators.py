"""Issue 27, items 8-10, in real headless Chromium (Debian's, through Playwright) against a live server: the
study's metadata and a trial's attributes shown (escaped, bounded, nested JSON readable); a dark theme that
follows prefers-color-scheme (axe clean, the page and the charts dark); a timeline of trials per client_id."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from conftest import CONTRAST_ON_PANEL_JS, checked_page, unique
from harness.processes import ServerProcess
from test_dashboard_v2 import Api, axe_violations, no_page_overflow, open_page

pytestmark = pytest.mark.live

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


@pytest.fixture(scope="module")
def server(sqlite_server: ServerProcess) -> ServerProcess:
    return sqlite_server


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    with checked_page(browser, width=390, height=844) as page:
        yield page


# -- 9. metadata and attributes ----------------------------------------------------------------------


def test_the_study_metadata_and_a_trials_attributes_are_shown_escaped(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("meta")
    metadata = {"owner": HOSTILE, "rig": {"furnace": "F-7", "zones": [1, 2, 3]}, "batch": 17}
    api.create(name, metadata=metadata)
    trial = api.ask(name, client_id="rig-A")
    api.tell(name, trial["number"], 0.25)

    open_page(page, server.url, f"#/study/{name}", view="study")
    table = page.get_by_test_id("study-metadata")
    owner = table.locator("[data-key='owner'] [data-testid='attr-value']")
    assert owner.inner_text() == HOSTILE  # the markup is text
    nested = table.locator("[data-key='rig'] pre.json").inner_text()
    assert '"furnace": "F-7"' in nested and "\n" in nested  # indented JSON, one key a line
    assert table.locator("[data-key='batch'] [data-testid='attr-value']").inner_text() == "17"
    assert page.evaluate("window.pwned") is None and page.locator("main script, main img").count() == 0

    open_page(page, server.url, f"#/study/{name}/trial/{trial['number']}", view="trial")
    attrs = page.get_by_test_id("trial-attrs")
    value = lambda key: attrs.locator(f"[data-key='{key}'] [data-testid='attr-value']").inner_text()  # noqa: E731
    assert value("client_id") == "rig-A"
    assert value("state") == "complete"
    assert value("token") == trial["token"]
    assert "x0" in value("params")
    assert axe_violations(page) == []


def test_long_metadata_is_cut_and_fits_a_phone(server: ServerProcess, phone: Any) -> None:
    api, name = Api(server.url), unique("meta-long")
    api.create(name, metadata={"notes": "x" * 5000, **{f"k{i:03d}": i for i in range(80)}})
    open_page(phone, server.url, f"#/study/{name}", view="study")
    table = phone.get_by_test_id("study-metadata")
    assert table.locator("[data-testid='attr']").count() == 60  # bounded
    assert "more characters" in table.locator("[data-key='notes']").inner_text()
    scroll, width = no_page_overflow(phone)
    assert scroll <= width


# -- 10. the dark theme --------------------------------------------------------------------------------

# every chart colour's contrast on the panel's colour, as drawn (blended onto it)
DARK_CONTRAST = (
    """async () => {
  const { COLORS } = await import('./static/charts.js');
  const { valueColour, valueColourSmooth } = await import('./static/panels/scales.js');"""
    + CONTRAST_ON_PANEL_JS
    + """  const out = { panelLum: lum(rgb(panel)), axis: COLORS.axis };
  for (const k of ['point', 'best', 'running', 'failed', 'infeasible', 'stale', 'axis', 'text'])
    out[k] = ratio(COLORS[k]);
  COLORS.lines.forEach((c, k) => (out[`line ${k}`] = ratio(c)));
  for (let k = 0; k <= 10; k++) out[`value ${k / 10}`] = ratio(valueColour(k / 10));
  for (let k = 0; k <= 10; k++) out[`shade ${k / 10}`] = ratio(valueColourSmooth(k / 10));
  return out;
}"""
)

BACKGROUND_LUMINANCE = """() => {
  const c = getComputedStyle(document.body).backgroundColor.match(/[0-9.]+/g).slice(0, 3).map(Number);
  const linear = (v) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4);
  return c.map(linear).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
}"""


def busy_study(api: Api, name: str) -> int:
    """A study with complete, failed, running and stale-looking trials of two clients; the failed trial's number."""
    api.create(name, metadata={"lab": "B", "nested": {"a": [1, 2]}})
    for k in range(5):
        api.tell(name, api.ask(name, client_id="rig-A" if k % 2 else "rig-B")["number"], float(k) - 2.5)
    failed = api.ask(name, client_id="rig-A")["number"]
    api.fail(name, failed, "thermocouple <broke>")
    api.ask(name, client_id="rig-B")
    return failed


@pytest.mark.parametrize("width", [1366, 390])
def test_the_dark_scheme_is_dark_axe_clean_and_its_chart_colours_read(
    server: ServerProcess, browser: Any, width: int
) -> None:
    api, name = Api(server.url), unique("dark")
    failed = busy_study(api, name)
    with checked_page(browser, width=width, height=900) as page:
        page.emulate_media(color_scheme="dark")
        for fragment, view in (("", "list"), (f"#/study/{name}", "study"), (f"#/study/{name}/trial/{failed}", "trial")):
            open_page(page, server.url, fragment, view=view)
            assert page.evaluate(BACKGROUND_LUMINANCE) < 0.02, view  # a dark page, not a light one
            assert axe_violations(page) == [], (view, width)
            scroll, inner = no_page_overflow(page)
            assert scroll <= inner, (view, scroll, inner)
        ratios = page.evaluate(DARK_CONTRAST)
        assert ratios.pop("panelLum") < 0.02 and ratios.pop("axis") != "#555555"  # the charts read the dark set
        low = {k: round(v, 2) for k, v in ratios.items() if v < 3}
        assert not low, low


# -- 8. the timeline -----------------------------------------------------------------------------------


def test_the_timeline_draws_a_lane_per_client_with_its_bars_and_marks_a_failed_one(
    server: ServerProcess, page: Any
) -> None:
    api, name = Api(server.url), unique("timeline")
    api.create(name)
    for k in range(3):  # rig-A: 3 told
        api.tell(name, api.ask(name, client_id="rig-A")["number"], float(k))
    for k in range(2):  # rig-B: 2 told, 1 failed, 1 open
        api.tell(name, api.ask(name, client_id="rig-B")["number"], float(k))
    api.fail(name, api.ask(name, client_id="rig-B")["number"], "vacuum lost")
    api.ask(name, client_id="rig-B")
    api.tell(name, api.ask(name)["number"], 9.0)  # asked without a client

    open_page(page, server.url, f"#/study/{name}", view="study")
    canvas = page.get_by_test_id("timeline")
    page.wait_for_function("document.querySelector('#timeline')?.dataset.bars === '8'", timeout=10_000)
    assert canvas.get_attribute("data-lanes") == "3" and canvas.get_attribute("data-failed-bars") == "1"
    lanes = {
        row.get_attribute("data-client"): (row.get_attribute("data-bars"), row.get_attribute("data-failed-trials"))
        for row in page.get_by_test_id("timeline-lane").all()
    }
    assert lanes == {"rig-A": ("3", "0"), "rig-B": ("4", "1"), "no client": ("1", "0")}
    # "last asked or told" is the lane's latest moment (ms), not read as seconds: a date of this year, not of
    # the year 56,000 that made every lane read "0 s ago"
    year = str(datetime.now().year)
    for row in page.get_by_test_id("timeline-lane").all():
        assert year in (row.locator("td").last.get_attribute("title") or ""), row.inner_text()
    # the failed bar is drawn in the failed colour (its × beside it)
    failed_pixels = page.evaluate(
        """async () => {
          const { COLORS } = await import('./static/charts.js');
          const c = document.querySelector('#timeline');
          const probe = document.createElement('canvas').getContext('2d');
          probe.fillStyle = COLORS.failed; probe.fillRect(0, 0, 1, 1);
          const want = [...probe.getImageData(0, 0, 1, 1).data.slice(0, 3)];
          const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
          let n = 0;
          for (let i = 0; i < d.length; i += 4)
            if (Math.abs(d[i] - want[0]) + Math.abs(d[i + 1] - want[1]) + Math.abs(d[i + 2] - want[2]) < 6
                && d[i + 3] > 250) n++;
          return n;
        }"""
    )
    assert failed_pixels > 10

    # a new ask by a third rig shows up live, in a lane of its own
    api.ask(name, client_id="rig-C")
    page.wait_for_function("document.querySelector('#timeline')?.dataset.lanes === '4'", timeout=10_000)
    assert axe_violations(page) == []
