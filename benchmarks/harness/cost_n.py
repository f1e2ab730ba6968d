"""A suggest's cost as the study grows (issue 29.3): the CPU seconds of one suggest after n results, for any
policy, with the state its previous suggest left (warm GP hyperparameters, as in a run)."""

from __future__ import annotations

import json
import time
from typing import Any

from localbo.policies import get_policy

from harness.local_data import iteration_request, make_data

LOCAL = ("minucb", "la-minucb", "gibo", "mpd")  # their iteration-ending suggest: local_data.iteration_request


def gp_points(policy: str, d: int, n: int, config: dict[str, Any]) -> int:
    """How many results the policy's GP fits at n (its window, or its max_data)."""
    if policy in LOCAL:
        return min(n, config.get("n_max") or 5 * d)
    cap = get_policy(policy).Config(**config).model_dump().get("max_data")
    return n if cap is None else min(n, cap)


def suggest_cost(policy: str, d: int, n: int, config: dict[str, Any]) -> dict[str, float]:
    """CPU and wall seconds of the suggest after n results (the previous suggest, after n - 1, not timed)."""
    cls = get_policy(policy)
    if policy in LOCAL:
        request = iteration_request(policy, d, n, config.get("n_max"))
    else:
        X, y = make_data(d, n)
        from localbo.policies.requests import make_request

        first = cls().suggest(make_request(cls, X[:-1], y[:-1], config=config, seed=1))
        state = json.loads(json.dumps(cls.dump_state(first.state)))  # as the engine stores it
        request = make_request(cls, X, y, state=cls.load_state(state)[0], config=config, seed=1)
    start, cpu_start = time.perf_counter(), time.process_time()
    out = cls().suggest(request)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    assert out.X.shape[0] >= 1 and out.X.shape[1] == d
    return {"cpu": cpu, "wall": wall}
