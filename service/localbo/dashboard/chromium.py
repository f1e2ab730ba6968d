"""Headless Chromium for the dashboard's browser tests, benchmark and screenshots (Playwright).

Playwright's own browser download is not used: Debian's ``chromium`` package is (override the
path with ``LOCALBO_CHROMIUM``). Playwright is a dev dependency, imported by the caller.
"""

from __future__ import annotations

import os
from typing import Any

EXECUTABLE = os.environ.get("LOCALBO_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def launch(playwright: Any) -> Any:
    """A headless Chromium browser from a started ``sync_playwright()`` (or async) object."""
    return playwright.chromium.launch(executable_path=EXECUTABLE, args=ARGS)
