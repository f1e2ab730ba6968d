"""The README's quick start, followed literally (issue 20, item 4; issue 28, item 1): its two commands, then
the first study in Python (a local policy on float parameters) twice and the curl block twice against the
server that ``make run`` started. The commands and code are read from README.md, never copied here."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
URL = "http://127.0.0.1:8000"  # where the README says make run serves


def section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, flags=re.S | re.M)
    assert match is not None, title
    return match.group(1)


def blocks(text: str, language: str = "") -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def test_the_two_commands_are_make_run_and_make_test_and_ci_runs_the_same() -> None:
    assert [b.strip() for b in blocks(section("Two commands"))] == ["make run", "make test"]
    assert README.index("## Two commands") < README.index("## A first study in Python"), "the two commands first"
    assert "\nmake test\n" in (ROOT / ".ci" / "run").read_text()


def test_the_readme_is_a_short_quick_start_and_contributors_have_their_own_page() -> None:
    """Issue 28, item 1: at most about 300 lines; tests, lint, fuzz and the module tour live elsewhere."""
    assert len(README.splitlines()) <= 300, len(README.splitlines())
    (python,) = blocks(section("A first study in Python"), "python")
    assert re.search(r'policy="(minucb|la-minucb|gibo|mpd|turbo)"', python), "a local policy"
    assert '"type": "float"' in python and '"categorical"' not in python, "on float parameters"
    for words in ("schemathesis", "2-core", "pytest -m timing", "| `asking.py` |"):
        assert words not in README, words
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert "make lint" in contributing and "make fuzz" in contributing
    for page in ("development.md", "development-architecture.md", "development-benchmarks.md"):
        assert f"docs/{page}" in contributing, page
    architecture = (ROOT / "docs" / "development-architecture.md").read_text()
    assert "| `asking.py` |" in architecture and "## What we depend on, and why" in architecture
    assert "## What we depend on, and why" in README and "## How it is built" in README


def test_make_run_installs_only_what_serving_needs() -> None:
    """Issue 28, item 2: run and demo need the serve part only; the targets that need an extra add it."""
    plan = subprocess.run(["make", "-n", "-B", "run"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "scripts/setup.sh serve" in plan
    for extra in ("dev", "bench", "docs", "axe"):
        assert f"setup.sh {extra}" not in plan, extra
    for target, parts in (("test", {"dev", "bench", "docs", "axe"}), ("lint", {"dev"}), ("fuzz", {"dev"}),
                          ("docs", {"docs"}), ("bench", {"bench"})):  # fmt: skip
        plan = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True).stdout
        installed = set(re.findall(r"scripts/setup\.sh (\w+)", plan))
        assert parts <= installed and "serve" in installed, (target, installed)
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}" in setup, "the CPU wheel's pin stays where torch is installed"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """What ``make run`` reads, in a folder of its own (so ./localbo.db is not the developer's), with the
    installed .venv; files keep their times, so make sees the set-up as done."""
    for name in ("Makefile", "pyproject.toml", "README.md", "client/pyproject.toml", "requirements.lock",
                 "scripts/setup.sh"):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    plan = subprocess.run(["make", "-n", "run"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "setup.sh" not in plan, "the set-up is older than pyproject.toml: run make setup first"
    return tmp_path


def test_the_first_screen_works_as_written_twice(checkout: Path) -> None:
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 8000)) == 0:
            pytest.fail("something already listens on 127.0.0.1:8000, where the README's server goes")
    log = open(checkout / "serve.log", "w")  # noqa: SIM115 - closed below
    serve = blocks(section("Two commands"))[0]  # the README's first command (make run), as it is written
    server = subprocess.Popen(["bash", "-c", serve], cwd=checkout, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert server.poll() is None, (checkout / "serve.log").read_text()
            try:
                if httpx.get(f"{URL}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        # the server says so once its own probe of /healthz answers, which may come just after this one's
        said = "localbo listening on http://127.0.0.1:8000"
        while said not in (checkout / "serve.log").read_text() and time.monotonic() < deadline + 30:
            time.sleep(0.2)
        assert said in (checkout / "serve.log").read_text()

        (python,) = blocks(section("A first study in Python"), "python")
        for run in (1, 2):
            done = subprocess.run([sys.executable, "-c", python], cwd=checkout, capture_output=True, text=True,
                                  timeout=300)  # fmt: skip
            assert done.returncode == 0, f"run {run}: {done.stderr[-3000:]}"
            assert "Trial(number=" in done.stdout, done.stdout
        kiln = httpx.get(f"{URL}/api/v1/studies/kiln/trials", params={"limit": 1000}).json()["trials"]
        assert len(kiln) == 2 * 20 and all(t["state"] == "complete" for t in kiln), "both runs, one study"
        assert httpx.get(f"{URL}/api/v1/studies/kiln").json()["policy"] == "minucb"

        curl = blocks(section("REST, for lab equipment"))[0]
        outputs = [subprocess.run(["bash", "-c", curl], capture_output=True, text=True, timeout=60) for _ in (1, 2)]
        assert all(o.returncode == 0 for o in outputs), [o.stderr for o in outputs]
        assert '"number":1' in outputs[0].stdout.replace(" ", "")
        assert "a study named 'furnace' already exists" in outputs[1].stdout, outputs[1].stdout
        (trial,) = httpx.get(f"{URL}/api/v1/studies/furnace/trials").json()["trials"]
        assert (trial["number"], trial["state"], trial["value"]) == (1, "complete", 0.82), "told once, asked once"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
        log.close()


def test_the_benchmark_figures_are_what_the_results_files_say() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "readme_figures.py"), "--check"],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_make_run_on_a_fresh_clone_installs_what_serving_needs() -> None:
    """Issue 28, item 2: scripts/fresh_clone_check.sh's committed output (made by hand: two fresh installs):
    `make run` served, and its .venv holds none of the test, docs or benchmark tools."""
    results = (Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "fresh_clone.txt").read_text()
    now = results.split("\nnow (", 1)[1]
    assert "make run served /healthz" in now.splitlines()[0], now
    for extra in ("playwright", "schemathesis", "optuna-dashboard", "mkdocs", "mujoco"):
        assert f"has {extra}" not in now, extra
