"""The study page's analysis panels in real headless Chromium (Debian's, through Playwright) against a live
server: slices, parameter importance, the pair surface and parallel coordinates with brushing."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import unique
from harness.processes import ServerProcess

pytestmark = pytest.mark.live

SIX = {
    "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
    "x1": {"type": "float", "low": -2, "high": 2},
    "x2": {"type": "float", "low": -2, "high": 2},
    "x3": {"type": "float", "low": 0, "high": 10},
    "x4": {"type": "float", "low": -1, "high": 1},
    "x5": {"type": "float", "low": -1, "high": 1},
}
# painted pixels of an element's canvas, and those near a colour (a mark's colour, anti-aliasing aside)
PAINTED = """(el) => {
  const px = el.getContext("2d").getImageData(0, 0, el.width, el.height).data;
  let n = 0;
  for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
  return n;
}"""
NEAR = """([el, rgb]) => {
  const px = el.getContext("2d").getImageData(0, 0, el.width, el.height).data;
  let n = 0;
  for (let i = 0; i < px.length; i += 4)
    if (px[i + 3] > 200 &&
        Math.abs(px[i] - rgb[0]) + Math.abs(px[i + 1] - rgb[1]) + Math.abs(px[i + 2] - rgb[2]) < 60) n++;
  return n;
}"""
# pixels of the history's pale points (rgba(0, 0, 0, 0.12) on the transparent canvas): dark and faint
FAINT = """(el) => {
  const px = el.getContext("2d").getImageData(0, 0, el.width, el.height).data;
  let n = 0;
  for (let i = 0; i < px.length; i += 4)
    if (px[i + 3] >= 20 && px[i + 3] <= 45 && px[i] < 30 && px[i + 1] < 30 && px[i + 2] < 30) n++;
  return n;
}"""
FAILED_RGB = [0xC0, 0x3A, 0x00]  # panels/scales.js INK.failed
POINT_RGB = [0, 114, 178]  # the history chart's points


def six_value(p: dict[str, float]) -> float:
    return (math.log10(p["lr"]) + 2.5) ** 2 + p["x1"] ** 2 + 0.3 * p["x2"] + 0.01 * p["x3"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(f"sqlite:///{tmp_path_factory.mktemp('analysis') / 'localbo.db'}")
    yield server
    server.stop()


def post(server: ServerProcess, path: str, body: dict | None = None) -> Any:
    r = httpx.post(f"{server.url}/api/v1/{path}", json=body, timeout=120)
    assert r.status_code in (200, 201), r.text
    return r.json()


def told(
    server: ServerProcess, name: str, space: dict, policy: str, n: int, value: Any, fail_at: int | None = None
) -> list[dict]:
    post(server, "studies", {"name": name, "space": space, "policy": policy, "seed": 5})
    trials = []
    for k in range(n):
        trial = post(server, f"studies/{name}/ask")["trials"][0]
        if k == fail_at:
            post(server, f"studies/{name}/trials/{trial['number']}/tell", {"state": "failed", "reason": "sensor lost"})
        else:
            post(server, f"studies/{name}/trials/{trial['number']}/tell", {"value": value(trial["params"])})
        trials.append(trial)
    return trials


@pytest.fixture(scope="module")
def gp_study(server: ServerProcess) -> str:
    """Six parameters (one on a log scale), MinUCB (a GP and a centre), 20 told trials and one failed."""
    name = unique("six")
    told(server, name, SIX, "minucb", 21, six_value, fail_at=6)
    return name


def settled_count(page: Any, canvas: Any, rgb: list[int]) -> int:
    """Pixels near ``rgb`` once the canvas has stopped redrawing (the page draws it again as panels load and
    the layout settles): two reads a quarter second apart agree. Bounded: gives the last read after ~15 s."""
    last = page.evaluate(NEAR, [canvas, rgb])
    for _ in range(60):
        page.wait_for_timeout(250)
        now = page.evaluate(NEAR, [canvas, rgb])
        if now == last and now > 0:
            return now
        last = now
    return last


def open_study(page: Any, server: ServerProcess, name: str) -> None:
    page.goto(f"{server.url}/dashboard/#/study/{name}")
    page.wait_for_selector("body[data-ready='1'][data-view='study']", timeout=30_000)


def test_slices_show_every_parameter_with_failures_and_the_centre(
    server: ServerProcess, gp_study: str, page: Any
) -> None:
    open_study(page, server, gp_study)
    slices = page.locator("[data-testid=slices] canvas")
    assert slices.count() == 6
    assert [slices.nth(j).get_attribute("data-param") for j in range(6)] == list(SIX)
    assert page.get_by_test_id("slices").get_attribute("data-drawn") == "20"
    for j in range(6):
        canvas = slices.nth(j).element_handle()
        assert page.evaluate(PAINTED, canvas) > 3000, j
        assert page.evaluate(NEAR, [canvas, FAILED_RGB]) > 10, j  # the failed trial's cross, in vermillion
    assert "(log axis)" in slices.nth(0).get_attribute("aria-label")
    assert page.get_by_test_id("slices-centre").is_visible()  # MinUCB declares its centre: a dashed line each


def test_importance_shows_the_gp_and_the_forest_with_numbers(server: ServerProcess, gp_study: str, page: Any) -> None:
    open_study(page, server, gp_study)
    page.wait_for_selector("[data-testid=importance-panel][data-bars]:not([data-bars='0'])", timeout=60_000)
    served = httpx.get(f"{server.url}/api/v1/studies/{gp_study}/analysis/importance", timeout=120).json()
    key = page.get_by_test_id("importance-key").inner_text()
    assert "GP (model-based)" in key and served["gp_method"] in key
    table = page.get_by_test_id("importance")
    rows = table.locator("tbody tr")
    assert rows.count() == 6
    shown = {}
    for k in range(6):
        name = rows.nth(k).locator("th").inner_text()
        shown[name] = [float(t) for t in rows.nth(k).locator("[data-series]").all_inner_texts()]
    assert set(shown) == set(SIX)
    gp = dict(zip(served["parameters"], served["gp"], strict=True))
    for name, numbers in shown.items():  # the served numbers, as fmt writes them (4 or 5 significant digits)
        assert numbers[0] == pytest.approx(gp[name], rel=1e-3), name
    gp_order = [rows.nth(k).locator("th").inner_text() for k in range(6)]
    assert gp_order == sorted(gp, key=lambda n: -gp[n])  # the most important first
    if served["forest"] is not None:  # the model-free cross-check beside it, said to be model-free
        assert "random forest (model-free)" in key
        forest = dict(zip(served["parameters"], served["forest"], strict=True))
        for name, numbers in shown.items():
            assert numbers[1] == pytest.approx(forest[name], rel=1e-3, abs=1e-9), name
    assert served["note"] in page.get_by_test_id("importance-note").inner_text()


def test_the_surface_draws_the_gp_mean_and_says_why_when_there_is_none(
    server: ServerProcess, gp_study: str, page: Any
) -> None:
    open_study(page, server, gp_study)
    panel = page.get_by_test_id("surface-panel")
    # by default the pair is the two most important parameters by the GP (in the study's order)
    served = httpx.get(f"{server.url}/api/v1/studies/{gp_study}/analysis/importance", timeout=120).json()
    top = sorted(sorted(SIX, key=lambda n: -served["gp"][served["parameters"].index(n)])[:2], key=list(SIX).index)
    pair = "[...document.querySelectorAll('[data-testid=surface-panel] select')].map((s) => s.value).join()"
    page.wait_for_function(f"{pair} === '{','.join(top)}'", timeout=60_000)
    page.wait_for_selector("[data-testid=surface-panel][data-state=contour]", timeout=60_000)
    canvas = page.get_by_test_id("surface")
    assert canvas.get_attribute("data-contour") == "1" and int(canvas.get_attribute("data-levels")) > 0
    assert page.evaluate(PAINTED, canvas.element_handle()) > 100_000  # the shaded mean fills the plot
    assert "posterior mean" in panel.get_by_test_id("surface-note").inner_text()
    assert top[0] in canvas.get_attribute("aria-label") and top[1] in canvas.get_attribute("aria-label")
    # another pair: the server is asked again and the chart follows
    panel.locator("select[data-axis=y]").select_option("x3")
    page.wait_for_selector("[data-testid=surface-panel][data-state=contour]", timeout=60_000)
    assert "x3" in canvas.get_attribute("aria-label")

    plain = unique("plain")  # a policy without a GP: the trials only, and the server's reason in words
    told(server, plain, SIX, "random", 6, six_value)
    open_study(page, server, plain)
    ranks = httpx.get(f"{server.url}/api/v1/studies/{plain}/analysis/importance", timeout=120).json()
    scores = ranks["gp"] or ranks["forest"]
    if scores:  # the default pair follows the importance answer: wait for it, then for its surface's answer
        top = sorted(sorted(SIX, key=lambda n: -scores[ranks["parameters"].index(n)])[:2], key=list(SIX).index)
        page.wait_for_function(f"{pair} === '{','.join(top)}'", timeout=60_000)
    settled = """() => {
      const panel = document.querySelector('[data-testid=surface-panel]');
      const note = document.querySelector('[data-testid=surface-note]');
      return panel?.dataset.state === 'unavailable' && note?.innerText.startsWith('No model surface:');
    }"""
    page.wait_for_function(settled, timeout=60_000)
    served = httpx.get(
        f"{server.url}/api/v1/studies/{plain}/analysis/surface", params={"x": "lr", "y": "x1"}, timeout=60
    ).json()
    assert served["available"] is False and served["reason"]
    note = page.get_by_test_id("surface-note").inner_text()
    assert note.startswith("No model surface:") and served["reason"] in note
    assert page.get_by_test_id("surface").get_attribute("data-contour") == "0"
    assert int(page.get_by_test_id("surface").get_attribute("data-drawn")) == 6


def test_brushing_an_axis_filters_the_table_and_highlights_the_history(server: ServerProcess, page: Any) -> None:
    name = unique("brush")
    trials = told(server, name, SIX, "random", 30, six_value)
    open_study(page, server, name)
    table = page.get_by_test_id("trials").locator("tbody tr")
    assert table.count() == 30
    history = page.locator("#history").element_handle()
    settled_count(page, history, POINT_RGB)
    faint_before = page.evaluate(FAINT, history)

    # drag along the x1 axis (the second of seven) from 80 % of its height to 30 %, with the mouse
    canvas = page.locator("#parallel")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    left, right, top, bottom = 56, box["width"] - 34, 46, box["height"] - 22  # panels/parallel.js' layout
    x = box["x"] + left + (right - left) / 6
    page.mouse.move(x, box["y"] + top + 0.2 * (bottom - top))
    page.mouse.down()
    page.mouse.move(x, box["y"] + top + 0.5 * (bottom - top), steps=4)
    page.mouse.move(x, box["y"] + top + 0.7 * (bottom - top), steps=4)
    page.mouse.up()
    summary = page.get_by_test_id("brush-summary")
    summary.wait_for(timeout=10_000)
    text = summary.inner_text()
    match = re.search(r"x1 in (\S+) – (\S+) \((\d+) trials\)", text)
    assert match, text
    lo, hi, n = float(match[1]), float(match[2]), int(match[3])
    assert -2 < lo < hi < 2
    expected = [t["number"] for t in trials if lo <= t["params"]["x1"] <= hi]
    assert 0 < len(expected) < 30 and n == len(expected)
    page.wait_for_function(f"document.querySelectorAll('[data-testid=trials] tbody tr').length === {n}", timeout=10_000)
    assert sorted(int(r) for r in table.locator("td:first-child").all_inner_texts()) == expected
    assert "filtered by the selection" in page.locator("#brush-note").inner_text()
    # the history draws the rest pale (each a 5 x 5 square, some overlapping) and the chosen ones in blue
    assert page.evaluate(FAINT, history) - faint_before >= 10 * (30 - n)
    assert page.evaluate(NEAR, [history, POINT_RGB]) > 0

    # a second axis narrows it further (the ranges combine); clearing brings every trial back
    canvas.element_handle().evaluate("(c) => c.parallel.brush('value', -1e9, 1e9)")
    summary_says = "document.querySelector('[data-testid=brush-summary]').textContent.includes('value in')"
    page.wait_for_function(summary_says, timeout=10_000)
    assert page.get_by_test_id("trials").locator("tbody tr").count() == n
    page.get_by_test_id("brush-clear").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=trials] tbody tr').length === 30", timeout=10_000)
    assert page.get_by_test_id("brush").is_hidden()

    # the same by keyboard: an axis and a range in user units, typed into the form under the chart
    form = page.get_by_test_id("brush-form")
    form.get_by_label("axis").select_option("x1")
    form.get_by_label("from").fill("-0.5")
    form.get_by_label("to").fill("0.5")
    form.get_by_label("to").press("Enter")
    inside = [t["number"] for t in trials if -0.5 <= t["params"]["x1"] <= 0.5]
    rows = f"document.querySelectorAll('[data-testid=trials] tbody tr').length === {len(inside)}"
    page.wait_for_function(rows, timeout=10_000)
    assert sorted(int(r) for r in table.locator("td:first-child").all_inner_texts()) == inside
    assert "x1 in -0.5 – 0.5" in summary.inner_text()
    form.get_by_label("from").fill("low")
    form.get_by_label("to").press("Enter")
    assert "numbers" in page.get_by_test_id("brush-form-note").inner_text()


def test_axes_are_in_user_units_log_and_choices(server: ServerProcess, page: Any) -> None:
    page.goto(f"{server.url}/dashboard/")
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    axes = page.evaluate(
        """async () => {
          const { paramAxis } = await import(new URL("static/panels/scales.js", location.href).href);
          const log = paramAxis({ type: "float", low: 1e-4, high: 1e-1, log: true });
          const cat = paramAxis({ type: "categorical", choices: ["adam", "sgd", "rmsprop", true] });
          const int = paramAxis({ type: "int", low: 1, high: 12 });
          return {
            log: [log.log, log.ticks.map((t) => t.label), log.ticks.map((t) => t.pos), log.value(0.5)],
            cat: [cat.ticks.map((t) => t.label), cat.value(1), cat.pos(0.49)],
            int: [int.value(0), int.value(1), int.ticks.map((t) => t.label)],
          };
        }"""
    )
    assert axes["log"][0] is True and axes["log"][1] == ["1e-4", "0.001", "0.01", "0.1"]
    assert axes["log"][2] == pytest.approx([0, 1 / 3, 2 / 3, 1])  # decades equally spaced: a log axis
    assert axes["log"][3] == pytest.approx(10**-2.5)
    assert axes["cat"] == [["adam", "sgd", "rmsprop", "true"], True, pytest.approx(1 / 3)]
    assert axes["int"][:2] == [1, 12] and all(label.isdigit() for label in axes["int"][2])


def test_the_colour_scale_ends_read_in_three_digits(server: ServerProcess, page: Any) -> None:
    """fmt's five digits were cut to "0.00…" in the phone's legend, which reads as zero."""
    page.goto(f"{server.url}/dashboard/")
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    shown = page.evaluate(
        """async () => {
          const { legendNumber } = await import(new URL("static/panels/surface.js", location.href).href);
          return [0.0022574, 0.80464, 0, -12.3456, 123456.7, 2.5e-9, Infinity].map(legendNumber);
        }"""
    )
    assert shown[:6] == ["0.00226", "0.805", "0", "-12.3", "1.23e+5", "2.50e-9"], shown
