"""Issue 27, items 8-10, in real headless Chromium (Debian's, through Playwright) against a live server: the
study's metadata and a trial's attributes shown (escaped, bounded, nested JSON readable); a dark theme that
follows prefers-color-scheme (axe clean, the page and the charts dark); a timeline of trials per client_id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import checked_page, unique
from harness.processes import ServerProcess
from test_dashboard_v2 import Api, axe_violations, no_page_overflow, open_page

pytestmark = pytest.mark.live

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


@pytest.fixture(scope="module")
def server(sqlite_server: ServerProcess) -> ServerProcess:
    return sqlite_server


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; any script error on it fails the test."""
    with checked_page(browser, height=900) as page:
        yield page


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
