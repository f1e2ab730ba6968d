"""Screenshots of the dashboard for the README: the studies list and a real ``minucb`` run.

Starts a server on a fresh SQLite file, runs MinUCB on a d = 5 quadratic through the client
(``--trials``, 60 by default), adds a Sobol study with a failure and a running trial, and writes with
headless Chromium, on a desktop (1400 px wide): ``docs/dashboard-studies.png`` (the list),
``docs/dashboard-study.png`` (the study page down to its analysis panels) and
``docs/dashboard-analysis.png`` (importance, the pair surface, slices, parallel coordinates),
``docs/dashboard-compare.png`` (MinUCB beside random search on the same quadratic) and
``docs/dashboard-dark.png`` (the study page's top in the dark theme); on a
phone (390 x 844 CSS px, at 2x): ``docs/dashboard-phone.png`` (the study page's first two screens) and
``docs/dashboard-phone-analysis.png`` (two screens from its analysis panels down).

    .venv/bin/python scripts/screenshots.py [--trials 60] [--out docs]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from localbo.dashboard import chromium

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from harness.processes import ServerProcess  # noqa: E402
from localbo_client import Client
from playwright.sync_api import sync_playwright

SPACE = {f"x{i}": {"type": "float", "low": -2.0, "high": 2.0} for i in range(5)}
OPTIMUM = [0.7, -0.4, 1.1, 0.2, -1.3]


def quadratic(params: dict[str, float]) -> float:
    return sum((params[f"x{i}"] - c) ** 2 for i, c in enumerate(OPTIMUM))


def populate(url: str, trials: int) -> None:
    with Client(url) as client:
        study = client.create_study("quadratic-5d", space=SPACE, direction="minimize", policy="minucb", seed=1)
        study.optimize(quadratic, n_trials=trials)
        study.set_note("MinUCB from the box's centre; x4 re-zeroed before trial 20")
        study.set_trial_note(12, "sample 12 was contaminated")
        random = client.create_study("quadratic-5d-random", space=SPACE, direction="minimize", policy="random", seed=1)
        random.optimize(quadratic, n_trials=trials)
        sobol = client.create_study(
            "furnace-sobol",
            space={"temp": {"type": "float", "low": 300, "high": 900}, "time": {"type": "int", "low": 1, "high": 30}},
            direction="maximize",
            policy="sobol",
            seed=2,
        )
        for k in range(12):
            trial = sobol.ask()
            if k == 5:
                sobol.fail(trial, "thermocouple disconnected")
            else:
                sobol.tell(trial, 1.0 - ((trial.params["temp"] - 640) / 300) ** 2 + 0.01 * trial.params["time"])
        sobol.ask()  # left running


SHOTS = (
    "dashboard-studies.png",
    "dashboard-study.png",
    "dashboard-analysis.png",
    "dashboard-compare.png",
    "dashboard-dark.png",
    "dashboard-phone.png",
    "dashboard-phone-analysis.png",
)
# the analysis panels have drawn the server's answers (importance, the pair surface)
ANALYSIS_DRAWN = """() => document.querySelector('[data-testid=importance-panel]')?.dataset.bars !== undefined
  && ['contour', 'unavailable'].includes(document.querySelector('[data-testid=surface-panel]')?.dataset.state)"""


def open_study(page: Any, url: str) -> None:
    page.goto(f"{url}/dashboard/#/study/quadratic-5d")
    page.wait_for_selector("body[data-ready='1'][data-view='study']")
    page.wait_for_function(ANALYSIS_DRAWN, timeout=120_000)
    page.wait_for_timeout(500)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--out", type=Path, default=Path("docs"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(f"sqlite:///{tmp}/localbo.db", log_path=Path(tmp) / "server.log")
        try:
            populate(server.url, args.trials)
            with sync_playwright() as p:
                browser = chromium.launch(p)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.on("console", lambda m: print("console:", m.type, m.text))
                page.on("pageerror", lambda e: print("page error:", e))
                page.goto(f"{server.url}/dashboard/")
                page.wait_for_selector("body[data-ready='1'][data-view='list']")
                top = {"x": 0, "y": 0, "width": 1400, "height": 260}  # the table, not the empty page below
                page.screenshot(path=str(args.out / "dashboard-studies.png"), clip=top)
                open_study(page, server.url)
                # the liveness row, the charts and the policy panel, down to the analysis panels
                top = page.locator("#analysis").bounding_box()["y"]
                clip = {"x": 0, "y": 0, "width": 1400, "height": top}
                page.screenshot(path=str(args.out / "dashboard-study.png"), full_page=True, clip=clip)
                page.locator("#analysis").screenshot(path=str(args.out / "dashboard-analysis.png"))
                page.goto(f"{server.url}/dashboard/#/compare?studies=quadratic-5d,quadratic-5d-random")
                page.wait_for_selector("body[data-ready='1'][data-view='compare']")
                page.wait_for_timeout(500)
                page.locator("main").screenshot(path=str(args.out / "dashboard-compare.png"))
                dark = browser.new_context(viewport={"width": 1400, "height": 900}, color_scheme="dark").new_page()
                dark.on("pageerror", lambda e: print("page error (dark):", e))
                open_study(dark, server.url)
                dark.screenshot(path=str(args.out / "dashboard-dark.png"), clip={"x": 0, "y": 0, "width": 1400, "height": 900})
                phone = browser.new_context(
                    viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True
                ).new_page()
                phone.on("pageerror", lambda e: print("page error (phone):", e))
                open_study(phone, server.url)
                two_screens = {"x": 0, "y": 0, "width": 390, "height": 2 * 844}
                phone.screenshot(path=str(args.out / "dashboard-phone.png"), full_page=True, clip=two_screens)
                top = phone.locator("#analysis").bounding_box()["y"] + phone.evaluate("window.scrollY")
                analysis = {"x": 0, "y": top, "width": 390, "height": 2 * 844}
                phone.screenshot(path=str(args.out / "dashboard-phone-analysis.png"), full_page=True, clip=analysis)
                browser.close()
        finally:
            server.stop()
    for name in SHOTS:
        print(f"wrote {args.out / name}")


if __name__ == "__main__":
    main()
