"""``localbo serve`` and ``localbo worker`` in child processes: launchers for tests, benchmarks and scripts
(not part of the production package)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

# Where benchmarks make their throwaway Postgres databases (trust auth on the project's machines).
PG_ADMIN_URL = os.environ.get("LOCALBO_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# how long a server or a worker may take to come up: importing torch and BoTorch in a cold process takes seconds on
# a quiet machine and over a minute on a loaded one (the suite on two processes beside `stress --cpu 4`)
READY_TIMEOUT_S = 240.0


class ServerProcess:
    """Starts the server, waits for ``/healthz``; ``stop()`` ends it. Output goes to ``log_path``."""

    def __init__(
        self,
        db_url: str,
        log_path: Path | None = None,
        timeout: float = READY_TIMEOUT_S,
        args: tuple[str, ...] = (),
        port: int | None = None,  # a restart: the port the previous server had
        **env: str,
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = open(log_path or os.devnull, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "localbo.cli", "serve", "--port", str(self.port), *args],
            env={**os.environ, "LOCALBO_DATABASE_URL": db_url, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.close()
                tail = log_path.read_text()[-2000:] if log_path else ""
                raise RuntimeError(f"server exited with {self.proc.returncode}: {tail}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not answer /healthz within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


class WorkerProcess:
    """``localbo worker`` in its own process group; waits until Celery says it is ready.

    ``kill()`` sends SIGKILL to the whole group: the crash a late-acknowledged task must survive.
    """

    def __init__(
        self, log_path: Path, queues: tuple[str, ...] = ("cpu",), timeout: float = READY_TIMEOUT_S, **env: str
    ) -> None:
        self.log_path = log_path
        self._log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        queue_args = [arg for q in queues for arg in ("--queue", q)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "localbo.cli", "worker", *queue_args, "--device", "cpu"],
            env={**os.environ, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.close()
                raise RuntimeError(f"worker exited with {self.proc.returncode}: {self.log()[-2000:]}")
            if " ready." in self.log():
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"worker not ready within {timeout:.0f} s: {self.log()[-2000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=15)
        self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()


@contextmanager
def fresh_database(backend: str, workdir: Path, label: str) -> Iterator[str]:
    """A URL to a database made for this run only: an SQLite file in ``workdir``, or a new Postgres database."""
    if backend == "sqlite":
        yield f"sqlite:///{workdir / f'{label}-{uuid.uuid4().hex[:6]}.db'}"
        return
    from sqlalchemy import create_engine, text

    name = f"bench_{label}_{os.getpid()}_{uuid.uuid4().hex[:6]}".replace("-", "_")
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
