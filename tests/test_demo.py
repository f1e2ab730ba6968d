"""``localbo demo``: a server and a simulated lab running a local policy in the background."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
from harness.processes import free_port
from localbo.demo import hartmann6


def test_hartmann6_is_the_known_function() -> None:
    best = {f"x{j}": v for j, v in enumerate((0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573))}
    assert abs(hartmann6(best) - (-3.32237)) < 1e-4


def test_the_demo_serves_a_study_that_fills_with_results(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "demo.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "localbo.cli", "demo", "--port", str(port), "--db", f"sqlite:///{tmp_path / 'd.db'}",
             "--trials", "8", "--delay", "0"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/api/v1/studies/demo-minucb/trials"
    trials: list = []
    try:
        deadline = time.monotonic() + 180  # bounded: seconds here, minutes on a loaded machine
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                trials = httpx.get(url, timeout=5).json().get("trials", [])
            except (httpx.HTTPError, ValueError):
                trials = []
            if sum(t["state"] == "complete" for t in trials) >= 8:
                break
            time.sleep(0.5)
    finally:
        proc.terminate()
        proc.wait(30)
    text = log.read_text()
    assert sum(t["state"] == "complete" for t in trials) >= 8, text[-3000:]
    assert {t["source"] for t in trials} <= {"minucb"}, "the policy planned every point"
    assert f"localbo listening on http://127.0.0.1:{port}" in text
    assert f"watch at http://127.0.0.1:{port}/#/study/demo-minucb" in text
