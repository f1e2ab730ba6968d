"""Concurrent asks on one study, in one process, on SQLite and Postgres: an ask takes the study's row lock only
to number its trials (Postgres), so these check what the lock used to guard on its own: numbers without gaps
or repeats, each planned point handed out once, and a finite study's candidates never asked twice."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import make_settings
from local_service import LocalService
from localbo.errors import Conflict
from localbo.storage import repository as repo

THREADS = 8


def ask_many(service: LocalService, name: str, asks: int) -> list[dict]:
    def one_client(i: int) -> list[dict]:
        return [t for k in range(asks) for t in service.ask(name, 1, f"client-{i}-{k}", wait_seconds=60)["trials"]]

    with ThreadPoolExecutor(THREADS) as pool:
        return [t for trials in pool.map(one_client, range(THREADS)) for t in trials]


def test_concurrent_asks_number_trials_without_gaps_and_hand_out_each_point_once(db_url: str) -> None:
    service = LocalService(make_settings(db_url))
    try:
        space = {"a": {"type": "float", "low": 0, "high": 1}, "b": {"type": "float", "low": 0, "high": 1}}
        service.create_study("many", "minimize", space, "random", {"plan_ahead": 3}, seed=5)
        trials = ask_many(service, "many", 12)  # a client id per ask: every ask is a new trial
        numbers = sorted(t["number"] for t in trials)
        assert numbers == list(range(1, THREADS * 12 + 1))
        points = {tuple(sorted(t["params"].items())) for t in trials}
        assert len(points) == len(trials)  # no planned point went to two asks
        with service.db.connect() as conn:
            study = repo.get_study(conn, "many")
            assert study is not None and study.trial_count == len(trials)
    finally:
        service.close(wait=True)


def test_concurrent_asks_on_a_finite_study_never_hand_out_a_candidate_twice(db_url: str) -> None:
    service = LocalService(make_settings(db_url))
    try:
        space = {"kind": "finite", "candidates": [{"params": {"x": i}} for i in range(THREADS * 4)]}
        service.create_study("grid", "minimize", space, "random", {"plan_ahead": 2}, seed=5)
        trials = ask_many(service, "grid", 4)
        assert sorted(t["params"]["x"] for t in trials) == list(range(THREADS * 4))
        assert sorted(t["number"] for t in trials) == list(range(1, THREADS * 4 + 1))
        with pytest.raises(Conflict, match="candidates are left"):
            service.ask("grid", 1, "late")
    finally:
        service.close(wait=True)
