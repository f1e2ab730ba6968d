"""The dashboard in real headless Chromium (Debian's, through Playwright) against live servers."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import checked_page, unique
from harness.processes import ServerProcess

pytestmark = pytest.mark.live

SPACE = {"x0": {"type": "float", "low": -2, "high": 2}, "x1": {"type": "float", "low": -2, "high": 2}}
TOKENS = "adm=admin;team=read:team-*"
PAINTED = """(id) => {
  const c = document.getElementById(id);
  const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
  return n;
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(f"sqlite:///{tmp_path_factory.mktemp('browser') / 'localbo.db'}")
    yield server
    server.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; any script error on it fails the test."""
    with checked_page(browser, height=768) as page:
        yield page


class Api:
    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def post(self, path: str, body: dict | None = None) -> Any:
        r = httpx.post(f"{self.url}/api/v1/{path}", json=body, headers=self.headers, timeout=60)
        assert r.status_code in (200, 201), r.text
        return r.json()

    def create(self, name: str, policy: str = "sobol", **extra: Any) -> None:
        self.post("studies", {"name": name, "space": SPACE, "policy": policy, "seed": 3, **extra})

    def ask(self, name: str) -> dict:
        return self.post(f"studies/{name}/ask")["trials"][0]

    def tell(self, name: str, number: int, value: float) -> None:
        self.post(f"studies/{name}/trials/{number}/tell", {"value": value})


def open_page(page: Any, url: str, fragment: str = "", view: str = "list") -> None:
    page.goto(f"{url}/dashboard/{fragment}")
    page.wait_for_selector(f"body[data-ready='1'][data-view='{view}']", timeout=15_000)


def test_the_list_shows_a_created_study_and_new_ones_live(server: ServerProcess, page: Any) -> None:
    api, name, later = Api(server.url), unique("list"), unique("later")
    api.create(name)
    api.tell(name, api.ask(name)["number"], 2.5)
    open_page(page, server.url)
    row = page.locator("[data-testid=studies] tr", has_text=name)
    assert row.locator("a").get_attribute("href") == f"#/study/{name}"
    assert "sobol" in row.inner_text() and "2.5" in row.inner_text()
    api.create(later)  # appears on the open page through the event stream
    page.locator("[data-testid=studies] tr", has_text=later).wait_for(timeout=30_000)


def test_the_study_page_draws_its_charts_and_shows_a_tell(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("mu")
    api.create(name, policy="minucb")
    for k in range(5):  # the first batch (x_0 and 2 exploration points) and a step to x_1
        api.tell(name, api.ask(name)["number"], 4.0 - k * 0.5)
    running = api.ask(name)
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert page.get_by_test_id("n-complete").inner_text() == "5"
    assert page.get_by_test_id("n-running").inner_text() == "1"
    for chart in ("history", "parallel", "path"):
        assert int(page.locator(f"#{chart}").get_attribute("data-drawn")) > 0, chart
        assert page.evaluate(PAINTED, chart) > 2000, chart
    # the policy panel from the served `display` block: phase, batch progress, named numbers, the centre
    assert page.get_by_test_id("policy-phase").inner_text() in ("exploration batch", "top-up", "step pending")
    assert " of " in page.get_by_test_id("policy-progress").inner_text()
    computed = page.get_by_test_id("policy-computed").inner_text()  # how old the shown state is
    assert re.match(r"^(\d+(\.\d+)? s|< 0\.01 s|\d+ min) ago, on [1-5] results?", computed), computed
    numbers = page.get_by_test_id("policy-numbers").inner_text()
    assert "iteration" in numbers and "1" in numbers, numbers
    centre = page.get_by_test_id("centre").locator("tbody tr")
    assert centre.count() == 2
    for k in range(2):  # in user units: x in [-2, 2] and its position in the range
        value, position = (float(t) for t in centre.nth(k).locator("td").all_inner_texts()[1:3])
        assert -2 <= value <= 2 and value == pytest.approx(-2 + 4 * position, abs=1e-3)
    assert page.locator("#parallel-centre").is_visible()

    api.tell(name, running["number"], 0.123456)  # how soon: test_the_study_page_shows_a_tell_within_3_s
    page.wait_for_function("document.querySelector('[data-testid=n-complete]').textContent === '6'", timeout=60_000)
    first_row = page.get_by_test_id("trials").locator("tbody tr").first.inner_text()
    assert first_row.startswith(f"{running['number']}") and "0.12346" in first_row and "complete" in first_row
    assert page.get_by_test_id("best-value").inner_text() == "0.12346"
    page.get_by_label("log scale").check()  # redraws on a log axis without errors
    assert int(page.locator("#history").get_attribute("data-drawn")) == 6


@pytest.mark.timing
def test_the_study_page_shows_a_tell_within_3_s(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("fast")
    api.create(name, policy="sobol")
    running = api.ask(name)
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert page.get_by_test_id("n-running").inner_text() == "1"
    told = time.monotonic()
    api.tell(name, running["number"], 1.5)
    page.wait_for_function("document.querySelector('[data-testid=n-complete]').textContent === '1'", timeout=3_000)
    assert time.monotonic() - told < 3


def test_with_tokens_the_page_asks_for_one_and_shows_only_readable_studies(page: Any, tmp_path: Path) -> None:
    server = ServerProcess(f"sqlite:///{tmp_path / 'auth.db'}", LOCALBO_TOKENS=TOKENS)
    try:
        admin = Api(server.url, "adm")
        admin.create("team-alpha")
        admin.create("secret-beta")
        open_page(page, server.url, view="auth")
        assert "A token is needed" in page.get_by_test_id("auth").inner_text()
        assert "team-alpha" not in page.content() and "secret-beta" not in page.content()

        page.get_by_label("Bearer token").fill("wrong")
        page.get_by_role("button", name="Use token").click()
        page.get_by_text("The server refused the token").wait_for()

        page.get_by_label("Bearer token").fill("team")
        page.get_by_role("button", name="Use token").click()
        page.wait_for_selector("body[data-ready='1'][data-view='list']")
        names = page.get_by_test_id("studies").inner_text()
        assert "team-alpha" in names and "secret-beta" not in names

        page.goto(f"{server.url}/dashboard/#/study/secret-beta")
        page.get_by_text("may not read study 'secret-beta'").wait_for()

        page.goto(f"{server.url}/dashboard/#/study/team-alpha")  # live with the token, too
        page.wait_for_selector("body[data-ready='1'][data-view='study']")
        admin.tell("team-alpha", admin.ask("team-alpha")["number"], 7.0)
        page.wait_for_function("document.querySelector('[data-testid=n-complete]').textContent === '1'", timeout=30_000)
        with page.expect_download() as download:  # the export link sends the token too
            page.get_by_role("link", name="CSV").click()
        csv_text = Path(download.value.path()).read_text()
        assert csv_text.startswith("number,state,value,x0,x1") and "\n1,complete,7.0," in csv_text
    finally:
        server.stop()


def test_a_lipschitz_policy_shows_its_l_estimate_in_words(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("lip")
    api.create(name, policy="ar-ucb", policy_config={"n_init": 3})
    for k in range(4):  # the initial design (n_init = 3 points), then one ar-ucb suggestion
        api.tell(name, api.ask(name)["number"], float((k - 1.5) ** 2))
    api.ask(name)
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert page.get_by_test_id("policy-phase").inner_text() == "model-based"
    numbers = page.get_by_test_id("policy-numbers").inner_text()
    assert "L\t" in numbers and "largest observed slope" in numbers and "observations\t4" in numbers, numbers
    assert page.get_by_test_id("centre").count() == 0 and page.locator("#path-panel").is_hidden()


def test_a_finite_space_study_page_draws_its_charts_without_errors(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("finite")
    candidates = [{"id": f"p{i}", "params": {"a": i % 4, "b": i // 4}} for i in range(16)]
    space = {"kind": "finite", "candidates": candidates}
    api.post("studies", {"name": name, "space": space, "policy": "ucb", "seed": 3, "policy_config": {"n_init": 3}})
    for k in range(5):
        api.tell(name, api.ask(name)["number"], float(k))
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert page.get_by_test_id("n-complete").inner_text() == "5"
    for chart in ("history", "parallel"):
        assert int(page.locator(f"#{chart}").get_attribute("data-drawn")) > 0, chart
    assert "2 parameters (a, b)" in page.locator("#meta").inner_text()


def test_a_categorical_study_shows_its_choices_in_the_table_and_draws_them(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("categorical")
    space = {
        "x": {"type": "float", "low": 0, "high": 1},
        "optimizer": {"type": "categorical", "choices": ["sgd", "adam", "<lbfgs>"]},  # escaped in the table
        "n": {"type": "int", "low": 1, "high": 3},
    }
    api.post("studies", {"name": name, "space": space, "policy": "random", "seed": 3})
    asked = []
    for k in range(6):
        trial = api.ask(name)
        asked.append(trial["params"])
        api.tell(name, trial["number"], float(k))
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert "3 parameters (x, optimizer, n)" in page.locator("#meta").inner_text()
    rows = page.get_by_test_id("trials").locator("tbody tr")
    assert rows.count() == 6
    for k, params in enumerate(reversed(asked)):  # newest first: the table's columns are x, optimizer, n
        cells = rows.nth(k).locator("td").all_inner_texts()
        assert cells[4] == params["optimizer"] and cells[5] == str(params["n"]), (cells, params)
    assert int(page.locator("#parallel").get_attribute("data-drawn")) == 6


# A policy view as GET .../policy serves it; `state` holds private keys the page must not read.
PRIVATE_STATE = {
    "x_t": [0.0, 0.0],
    "t": 99,
    "phase": "batch",
    "n_start": 0,
    "batch": 5,
    "path": [{"t": 0, "x": [0, 0]}],
}
DISPLAY = {
    "phase": "exploration batch",
    "progress": {"done": 1, "total": 3, "label": "exploration batch"},
    "centre": [0.75, 0.25],
    "box": {"lower": [0.5, 0.0], "upper": [1.0, 0.5]},
    "path": [[0.5, 0.5], [0.6, 0.4], [0.75, 0.25]],
    "numbers": {"iteration": 4, "gp noise": 0.0012345, "event": "step", "unknown yet": None},
}


def policy_view(display: Any, policy: str = "minucb") -> dict:
    planned = [{"params": {"x0": 0.5, "x1": -0.5}, "x": [0.625, 0.375], "source": policy}]
    return {
        "policy": policy,
        "policy_state_version": 7,
        "state_schema": 1,
        "state": PRIVATE_STATE,
        "display": display,
        "last_policy_error": None,
        "planned": planned,
    }


def serve_policy(page: Any, body: dict) -> None:
    """Answer the page's GET .../policy with ``body`` (the trials and the events come from the server)."""
    page.route("**/api/v1/studies/*/policy", lambda route: route.fulfill(json=body))


def told_study(server: ServerProcess, prefix: str, n: int = 4) -> str:
    api, name = Api(server.url), unique(prefix)
    api.create(name)
    for k in range(n):
        api.tell(name, api.ask(name)["number"], float(k))
    return name


def test_the_policy_panel_draws_the_display_block_in_user_units(server: ServerProcess, page: Any) -> None:
    name = told_study(server, "display")
    serve_policy(page, policy_view(DISPLAY))
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert page.get_by_test_id("policy-phase").inner_text() == "exploration batch"
    progress = page.get_by_test_id("policy-progress")
    assert progress.inner_text().strip() == "1 of 3"
    assert progress.locator("progress").get_attribute("value") == "1"
    assert progress.locator("progress").get_attribute("max") == "3"
    assert "exploration batch" in page.locator("#policy tr", has=progress).locator("th").inner_text()
    # cell by cell (a row's innerText joins its cells with a tab only once the table is laid out)
    rows = page.get_by_test_id("policy-numbers").locator("tr").all()
    numbers = [r.locator("th, td").all_text_contents() for r in rows]
    assert numbers == [["iteration", "4"], ["gp noise", "0.0012345"], ["event", "step"], ["unknown yet", "–"]]
    # the centre in user units (x in [-2, 2]: 0.75 -> 1, 0.25 -> -1), never the state's x_t (0 -> -2)
    rows = [r.locator("td").all_inner_texts() for r in page.get_by_test_id("centre").locator("tbody tr").all()]
    assert rows == [["x0", "1", "0.75", "0 – 2"], ["x1", "-1", "0.25", "-2 – 0"]]
    assert "t = 99" not in page.locator("#policy").inner_text()
    assert "1 point queued (next: minucb)" in page.locator("#policy").inner_text()
    # the path chart from display.path: 3 points x 2 parameters
    assert page.locator("#path-panel").is_visible()
    assert page.locator("#path").get_attribute("data-drawn") == "6"
    assert page.evaluate(PAINTED, "path") > 2000
    assert page.locator("#parallel-centre").is_visible() and page.locator("#parallel-box").is_visible()
    assert int(page.locator("#parallel").get_attribute("data-drawn")) == 4


def test_the_centre_and_box_mark_the_parallel_chart(server: ServerProcess, page: Any) -> None:
    name = told_study(server, "marks")
    serve_policy(page, policy_view(None))
    open_page(page, server.url, f"#/study/{name}", view="study")
    bare = page.evaluate(PAINTED, "parallel")
    page.unroute("**/api/v1/studies/*/policy")
    serve_policy(page, policy_view(DISPLAY))
    page.reload()  # the same address: a goto would only move within the document
    page.wait_for_selector("body[data-ready='1'][data-view='study']", timeout=15_000)
    assert page.locator("#parallel-centre").is_visible()
    assert page.evaluate(PAINTED, "parallel") > bare + 500  # the dashed centre line and the two bands


@pytest.mark.parametrize(
    "display",
    [
        None,
        {},
        {"numbers": {}},
        {"centre": [0.5], "box": {"lower": [0.1]}, "path": [[0.5], "x"], "progress": {"done": "?"}},  # malformed
    ],
    ids=["null", "empty", "no-numbers", "malformed"],
)
def test_without_a_display_the_panel_shows_nothing_policy_specific(
    server: ServerProcess, page: Any, display: Any
) -> None:
    name = told_study(server, "nodisplay", n=2)
    serve_policy(page, policy_view(display))
    open_page(page, server.url, f"#/study/{name}", view="study")  # the page fixture fails on any script error
    policy = page.locator("#policy").inner_text()
    assert "minucb" in policy and "1 point queued" in policy, policy
    for testid in ("centre", "policy-phase", "policy-progress", "policy-numbers", "policy-error"):
        assert page.get_by_test_id(testid).count() == 0, testid
    assert page.locator("#path-panel").is_hidden()
    assert page.locator("#parallel-centre").is_hidden() and page.locator("#parallel-box").is_hidden()
    assert int(page.locator("#parallel").get_attribute("data-drawn")) == 2


def test_the_policy_error_shows_beside_the_display(server: ServerProcess, page: Any) -> None:
    name = told_study(server, "perror", n=1)
    serve_policy(page, {**policy_view(DISPLAY), "last_policy_error": "RuntimeError: <boom>"})
    open_page(page, server.url, f"#/study/{name}", view="study")
    assert "RuntimeError: <boom>" in page.get_by_test_id("policy-error").inner_text()
    assert page.get_by_test_id("policy-phase").inner_text() == "exploration batch"


def test_a_categorical_centre_is_read_from_its_one_hot_block(server: ServerProcess, page: Any) -> None:
    api, name = Api(server.url), unique("catcentre")
    space = {
        "x": {"type": "float", "low": 0, "high": 1},
        "optimizer": {"type": "categorical", "choices": ["sgd", "adam", "<lbfgs>"]},
        "n": {"type": "int", "low": 1, "high": 3},
    }
    api.post("studies", {"name": name, "space": space, "policy": "random", "seed": 3})
    api.tell(name, api.ask(name)["number"], 1.0)
    # the unit cube has 5 columns: x, optimizer's one-hot block of 3, n
    display = {"centre": [0.5, 0.1, 0.8, 0.1, 0.9], "box": {"lower": [0.25, 0, 0, 0, 0], "upper": [0.75, 1, 1, 1, 1]}}
    serve_policy(page, policy_view(display, policy="random"))
    open_page(page, server.url, f"#/study/{name}", view="study")
    rows = [r.locator("td").all_inner_texts() for r in page.get_by_test_id("centre").locator("tbody tr").all()]
    assert rows == [["x", "0.5", "0.5", "0.25 – 0.75"], ["optimizer", "adam", "0.5", "–"], ["n", "3", "0.9", "1 – 3"]]
