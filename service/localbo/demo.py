"""``localbo demo``: a server with a study that a simulated lab runs in the background, so the dashboard
shows a live local-BO run a minute after set-up.

The "lab" is the 6-parameter Hartmann function (minimum -3.32237 at a known point), measured with a
little noise and a pause per measurement, through the Python client like any user's script.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time

import httpx

log = logging.getLogger("localbo.demo")

# Hartmann-6 (Dixon & Szego): f(x) = -sum_i alpha_i exp(-sum_j A_ij (x_j - P_ij)^2) on [0, 1]^6
ALPHA = (1.0, 1.2, 3.0, 3.2)
A = (
    (10, 3, 17, 3.5, 1.7, 8),
    (0.05, 10, 17, 0.1, 8, 14),
    (3, 3.5, 1.7, 10, 17, 8),
    (17, 8, 0.05, 10, 0.1, 14),
)
P = (
    (0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886),
    (0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991),
    (0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650),
    (0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381),
)
SPACE = {f"x{j}": {"type": "float", "low": 0.0, "high": 1.0} for j in range(6)}


def hartmann6(params: dict[str, float]) -> float:
    x = [params[f"x{j}"] for j in range(6)]
    return -sum(a * math.exp(-sum(A[i][j] * (x[j] - P[i][j]) ** 2 for j in range(6))) for i, a in enumerate(ALPHA))


def wait_until_up(url: str, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the demo server did not answer at {url} within {limit:.0f} s")


def run_lab(url: str, study_name: str, policy: str, trials: int, delay: float, seed: int = 0) -> None:
    """Create (or continue) the study and measure ``trials`` points, ``delay`` seconds each."""
    from localbo_client import Client  # the user's side of the demo: the same client a lab script uses

    wait_until_up(url)
    study = Client(url).create_study(
        study_name, space=SPACE, direction="minimize", policy=policy, seed=seed, load_if_exists=True
    )
    noise = random.Random(seed)
    log.info(
        "demo: study %r (%s), %d measurements; watch at %s/#/study/%s", study_name, policy, trials, url, study_name
    )

    def measure(params: dict[str, float]) -> float:
        time.sleep(delay)
        return hartmann6(params) + noise.gauss(0.0, 0.01)

    study.optimize(measure, n_trials=trials)
    log.info("demo: %d measurements done; best %s", trials, study.best)


def start_lab(url: str, study_name: str, policy: str, trials: int, delay: float) -> threading.Thread:
    def lab() -> None:
        try:
            run_lab(url, study_name, policy, trials, delay)
        except Exception:  # the server goes on serving what was measured
            log.exception("demo: the simulated lab stopped")

    thread = threading.Thread(target=lab, name="localbo-demo-lab", daemon=True)
    thread.start()
    return thread
