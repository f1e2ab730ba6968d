"""A Python user's path to a finite study: the client against a live server, on SQLite and the real Postgres."""

from __future__ import annotations

import threading
from pathlib import Path

from conftest import unique
from localbo_client import Client, finite_space, finite_space_from_csv


def test_a_csv_of_candidates_is_optimised_by_parallel_workers_without_a_repeat(live_server, tmp_path: Path) -> None:  # noqa: ANN001
    path = tmp_path / "candidates.csv"
    rows = [f"m{i},{i % 7},{i // 7}" for i in range(49)]
    path.write_text("id,a,b\n" + "\n".join(rows) + "\n")
    with Client(live_server.url) as client:
        study = client.create_study(unique("csv"), space=finite_space_from_csv(path), policy="ucb", seed=1)
        asked: list[str] = []
        lock = threading.Lock()

        def worker() -> None:
            for _ in range(6):
                trial = study.ask()
                with lock:
                    asked.append(trial.candidate)
                assert trial.params == {"a": int(trial.candidate[1:]) % 7, "b": int(trial.candidate[1:]) // 7}
                study.tell(trial, (trial.params["a"] - 4) ** 2 + (trial.params["b"] - 2) ** 2)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(asked) == 24 and len(set(asked)) == 24
        assert study.best.candidate in asked


def test_candidates_with_ids_and_a_cosine_kernel_through_the_client(live_server) -> None:  # noqa: ANN001
    histograms = [{"len1": i % 5 + 1, "len2": i % 3, "len3": i % 2} for i in range(30)]
    space = finite_space(histograms, ids=[f"g{i}" for i in range(30)], kernel="cosine")
    with Client(live_server.url) as client:
        study = client.create_study(unique("graphs"), space=space, policy="chaining-ucb", direction="maximize")
        study.optimize(lambda p: p["len1"] - p["len2"], n_trials=15)
        trials = study.trials()
        assert len({t.candidate for t in trials}) == 15
        assert all(t.params == histograms[int(t.candidate[1:])] for t in trials)
        assert study.refresh()["last_policy_error"] is None
