"""Fixtures that start real parts: SQLite files, a database on the real Postgres, live servers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from harness.processes import ServerProcess
from sqlalchemy import create_engine, text

# One OpenMP/BLAS thread in this process and every server, worker and benchmark it starts. The suite runs two
# processes on two cores, and most policy tests call torch from the main thread: there torch's default threads,
# beside a busy core, made a suggest or a GP fit 15-60x slower (results/torch_threads.md, "main-thread"), and
# four of the suite's files 5x slower. Set before torch loads (none of the imports above loads it).
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

PG_ADMIN_URL = os.environ.get("LOCALBO_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
BACKENDS = ["sqlite", "postgres"]


def _pg_available() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Small tensors run fastest, and safest on a busy 2-core machine, on one thread."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh database on the real Postgres for this test session, dropped afterwards."""
    if not _pg_available():
        pytest.fail("Postgres is not running on 127.0.0.1:5432 (start it; see .ci/run)")
    name = f"localbo_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each storage test runs twice: on an SQLite file and on the real Postgres."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'localbo.db'}"
    return request.getfixturevalue("pg_url")


def make_settings(db_url: str, **overrides: object):  # noqa: ANN201
    from localbo.config import Settings

    return Settings(database_url=db_url, **overrides)


@pytest.fixture
def make_client(db_url: str):  # noqa: ANN201
    """Build in-process API clients (FastAPI's TestClient) on the test's database."""
    from fastapi.testclient import TestClient
    from localbo.api import create_app
    from localbo.bootstrap import prepare_database

    made: list[TestClient] = []

    def make(**overrides: object) -> TestClient:
        settings = make_settings(db_url, **overrides)
        prepare_database(settings)
        client = TestClient(create_app(settings))
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
        # a plan still running would share the process's global torch RNG with the next test's policies
        client.app.state.service.close(wait=True)


@pytest.fixture
def api(make_client):  # noqa: ANN001, ANN201
    return make_client()


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run_benchmark(
    script: str, *args: str, timeout: float = 240, ok: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run ``benchmarks/<script> args`` in a child process (``env`` added to this one's); with ``ok``, fail the
    test unless it exits 0."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        cwd=BENCHMARKS.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env} if env else None,
    )
    if ok:
        tail = f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
        assert done.returncode == 0, f"exit {done.returncode}\n{tail}"
    return done


def unique(prefix: str = "s") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module", params=BACKENDS)
def live_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A live server on an SQLite file and one on the real Postgres, each shared by a module's tests (they make
    studies of their own names): a server's start imports torch and BoTorch, seconds of CPU each time."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('live') / 'localbo.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    server = ServerProcess(url)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One live server on its own SQLite file for a whole test module (its log beside the database)."""
    folder = tmp_path_factory.mktemp("server")
    server = ServerProcess(f"sqlite:///{folder / 'db.sqlite'}", log_path=folder / "server.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_env() -> dict[str, str]:
    """Settings for the real Redis on 127.0.0.1:6379: a database and queue names of this session's own."""
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1):
            pass
    except OSError:
        pytest.fail("Redis is not running on 127.0.0.1:6379 (start it; see .ci/run)")
    return {
        "LOCALBO_REDIS_URL": f"redis://127.0.0.1:6379/{1 + os.getpid() % 15}",
        "LOCALBO_CELERY_QUEUE_PREFIX": f"test-{uuid.uuid4().hex[:8]}-",
    }


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium through Playwright, one per test module (the dashboard's browser tests)."""
    from localbo.dashboard import chromium
    from playwright import sync_api as playwright_api

    if not Path(chromium.EXECUTABLE).exists():
        pytest.fail(f"{chromium.EXECUTABLE} is missing: apt-get install -y chromium (see .ci/run)")
    with playwright_api.sync_playwright() as p:
        browser = chromium.launch(p)
        yield browser
        browser.close()


# In-page helpers for contrast checks (WCAG): `panel` (the panels' colour), `rgb(c)` (c as drawn over it),
# `lum(rgb)` (relative luminance) and `ratio(c)` (c's contrast on the panel). Put at the top of a page function.
CONTRAST_ON_PANEL_JS = """
  const panel = getComputedStyle(document.documentElement).getPropertyValue('--panel').trim();
  const rgb = (c) => {
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.fillStyle = panel; ctx.fillRect(0, 0, 1, 1); ctx.fillStyle = c; ctx.fillRect(0, 0, 1, 1);
    return [...ctx.getImageData(0, 0, 1, 1).data.slice(0, 3)];
  };
  const linear = (v) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4);
  const lum = (c) => c.map(linear).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (c) => {
    const [a, b] = [lum(rgb(c)), lum(rgb(panel))];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  };
"""


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh desktop page (1366 x 900) in its own context; any script error on it fails the test."""
    with checked_page(browser, height=900) as page:
        yield page


@contextmanager
def checked_page(browser: Any, width: int = 1366, height: int = 768) -> Iterator[Any]:
    """A fresh page in its own browser context; any script error on it fails the test."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors
