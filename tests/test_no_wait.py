"""The SQLite hot path's no-wait mode: a tell or an ask runs on the event loop only while it waits for
nothing; at the first thing it would wait for (another connection's write lock, a finite study's first
read of its candidates) it rolls back and goes to the writer thread, and still succeeds."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from conftest import make_settings
from local_service import LocalService
from localbo.planning.outcomes import Failed
from localbo.storage import plan_queue
from localbo.storage import repository as repo
from localbo.storage.db import BUSY_TIMEOUT_MS, WouldWait, make_engine, no_wait, writer
from localbo.transactions import Transactions
from sqlalchemy import Engine

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0}}


def hold_write_lock(path: Path) -> sqlite3.Connection:
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    return other


def table_db(tmp_path: Path) -> tuple[Path, Engine, Engine]:
    """An SQLite file with one table: its path, its engine and that engine's writer."""
    path = tmp_path / "lock.db"
    engine = make_engine(f"sqlite:///{path}")
    write = writer(engine)
    with write.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (v INTEGER)")
    return path, engine, write


def test_a_no_wait_transaction_gives_up_at_once_and_leaves_the_busy_timeout_as_it_was(tmp_path: Path) -> None:
    path, engine, write = table_db(tmp_path)
    other = hold_write_lock(path)
    try:
        started = time.monotonic()
        with no_wait(), pytest.raises(WouldWait), write.begin() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
        assert time.monotonic() - started < 20  # the busy timeout is 30 s: it did not wait for it
    finally:
        other.execute("ROLLBACK")
        other.close()
    with write.begin() as conn:  # the pooled connection waits again, and nothing was written
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == BUSY_TIMEOUT_MS
        conn.exec_driver_sql("INSERT INTO t VALUES (2)")
        assert conn.exec_driver_sql("SELECT v FROM t").scalars().all() == [2]
    engine.dispose()


def test_run_now_goes_to_the_writer_when_the_lock_is_held_and_succeeds(tmp_path: Path) -> None:
    path, engine, write = table_db(tmp_path)
    tx = Transactions(sqlite=True)
    ran_on: list[str] = []

    def insert(v: int) -> int:
        ran_on.append(threading.current_thread().name)
        with write.begin() as conn:
            conn.exec_driver_sql(f"INSERT INTO t VALUES ({v})")
        return v

    async def main() -> list[int]:
        free = await tx.run_now(insert, 1)  # nobody writes: on the loop itself
        other = hold_write_lock(path)
        threading.Timer(0.5, lambda: (other.execute("ROLLBACK"), other.close())).start()
        held = await tx.run_now(insert, 2)  # would wait: the writer thread waits instead
        return [free, held]

    try:
        assert asyncio.run(main()) == [1, 2]
    finally:
        tx.close()
    assert ran_on[0] == "MainThread"
    assert ran_on[-1].startswith("localbo-sqlite-writer")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT v FROM t ORDER BY v").scalars().all() == [1, 2]
    engine.dispose()


def test_a_finite_studys_first_ask_reads_its_candidates_on_the_writer(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'finite.db'}"
    first = LocalService(make_settings(url))
    space = {"kind": "finite", "candidates": [{"params": {"x": i / 10}} for i in range(11)]}
    first.create_study("grid", "minimize", space, "random")
    first.service.close()

    fresh = LocalService(make_settings(url))  # nothing cached: the candidates must be read
    try:
        with fresh.db.connect() as conn, no_wait():
            study = repo.get_study(conn, "grid")
            with pytest.raises(WouldWait):
                fresh.service.spaces.of(conn, study)
        trial = fresh.ask("grid", 1, "c1")["trials"][0]
        assert trial["params"]["x"] in {i / 10 for i in range(11)}
        told = fresh.tell("grid", trial["number"], 0.5)
        assert told["state"] == "complete"
    finally:
        fresh.service.close()


def test_planning_after_the_executor_closed_records_no_failure_on_the_study(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A planning job that outlives the server's executor (a shutdown) is stopped, not a failure: no fallback
    plan, no policy or planning error on the study, nothing logged at ERROR. It was both: the closed pool's
    "cannot schedule new futures" taken for the policy's failure, the cancelled job for the planner's."""
    svc = LocalService(make_settings(f"sqlite:///{tmp_path / 'closing.db'}"))
    try:
        space = {"x": {"type": "float", "low": 0, "high": 1}}
        svc.create_study("closing", "minimize", space, "minucb")
        svc.executor.close()
        with caplog.at_level("INFO", logger="localbo.planning"):
            outcome = svc.service.planner.plan(svc.study_id("closing"), 1, False)
        assert outcome == Failed("the server is shutting down")
        assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text
        with svc.db.connect() as conn:
            study = repo.get_study(conn, "closing")
            assert study is not None and study.last_policy_error is None
            assert plan_queue.count_plan(conn, study.id) == 0
    finally:
        svc.close()
