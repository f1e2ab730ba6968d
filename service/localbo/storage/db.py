"""Engines for SQLite (embedded default) and Postgres, and the schema upgrade through Alembic."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, func, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

import localbo

BUSY_TIMEOUT_MS = 30_000
_this_thread = threading.local()


class WouldWait(Exception):  # noqa: N818 - a signal to the caller, not a failure
    """A no-wait transaction met something it would have to wait for (SQLite's write lock held by another
    connection, or a slow first read): nothing was written; run it where waiting is fine."""


@contextmanager
def no_wait() -> Iterator[None]:
    """Transactions begun in this thread inside the block fail at once with ``WouldWait`` instead of waiting
    for SQLite's write lock (for a caller that must not block: the event loop)."""
    before = getattr(_this_thread, "no_wait", False)
    _this_thread.no_wait = True
    try:
        yield
    finally:
        _this_thread.no_wait = before


def may_wait() -> bool:
    return not getattr(_this_thread, "no_wait", False)


def db_now(conn: Connection) -> datetime:
    """The database's clock, aware UTC: what every host compares claims and leases with. SQLite's is this host's
    (every process using the file runs here); Postgres answers its own, so hosts' clocks may differ."""
    if conn.dialect.name == "sqlite":
        return datetime.now(UTC)
    return conn.execute(select(func.clock_timestamp())).scalar_one().astimezone(UTC)


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def make_engine(url: str, sqlite_synchronous: str = "FULL") -> Engine:
    """An engine whose ``begin()`` is a read transaction; see ``writer`` for writes."""
    if is_sqlite(url):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30.0}, pool_size=16)
        _setup_sqlite(engine, sqlite_synchronous)
        return engine
    # No pre-ping: it costs a round trip per transaction; recycle old connections instead.
    return create_engine(url, pool_size=16, max_overflow=16, pool_recycle=1800)


def writer(engine: Engine) -> Engine:
    """The same pool, but transactions take SQLite's write lock at BEGIN.

    A deferred SQLite transaction that reads and then writes can fail at once with
    "database is locked" when another writer committed in between; BEGIN IMMEDIATE
    waits for the lock (busy timeout) instead. On Postgres the option does nothing:
    row locks (FOR UPDATE) order the writers there.
    """
    return engine.execution_options(sqlite_begin="IMMEDIATE")


def _setup_sqlite(engine: Engine, synchronous: str) -> None:
    if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
        raise ValueError(f"LOCALBO_SQLITE_SYNCHRONOUS: expected OFF|NORMAL|FULL|EXTRA, got {synchronous}")

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # noqa: ANN001
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves, below
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA synchronous={synchronous.upper()}")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        if mode != "IMMEDIATE" or may_wait():
            conn.exec_driver_sql(f"BEGIN {mode}")
            return
        raw = conn.connection.driver_connection
        assert raw is not None  # a checked-out connection
        raw.execute("PRAGMA busy_timeout=0")
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        except OperationalError as exc:
            if "locked" in str(exc.orig) or "busy" in str(exc.orig):
                raise WouldWait("SQLite's write lock is held by another connection") from exc
            raise
        finally:
            raw.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")


def migrations_dir() -> Path:
    """``migrations/`` in a source checkout, or the copy packed into the wheel."""
    package = Path(localbo.__file__).resolve().parent
    for candidate in (package / "migrations", package.parents[1] / "migrations"):
        if (candidate / "env.py").exists():
            return candidate
    raise FileNotFoundError("alembic migrations not found next to the localbo package")


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply Alembic revisions up to ``revision``; safe to call from several processes."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # Several servers may start at once: one migrates, the others wait for it.
            conn.execute(text("SELECT pg_advisory_xact_lock(727274)"))
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
