"""A suggest's cost as the study grows (issue 29.3): the CPU seconds of one suggest after n results, for any
policy, with the state its previous suggest left (warm GP hyperparameters, as in a run). With several objectives
the data is DTLZ2's (``front_data``): half the points on its Pareto front, so the front grows with n, as in a long
study of a policy that finds it."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import torch
from localbo.policies import get_policy

from harness.local_data import iteration_request, make_data

LOCAL = ("minucb", "la-minucb", "gibo", "mpd")  # their iteration-ending suggest: local_data.iteration_request


def gp_points(policy: str, d: int, n: int, config: dict[str, Any]) -> int:
    """How many results the policy's GP fits at n (its window, or its max_data): ``Policy.gp_points``."""
    cls = get_policy(policy)
    return cls.gp_points(cls.State(), cls.Config(**config), d, n)


def front_data(d: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n points of DTLZ2 (d, k objectives, minimised), the first half on its Pareto front (the last d - k + 1
    coordinates within 0.01 of 0.5), the rest uniform in the cube."""
    from botorch.test_functions.multi_objective import DTLZ2

    g = torch.Generator().manual_seed(0)
    X = torch.rand(n, d, generator=g, dtype=torch.float64)
    tail = d - k + 1
    X[: n // 2, k - 1 :] = 0.5 + 0.02 * (torch.rand(n // 2, tail, generator=g, dtype=torch.float64) - 0.5)
    return X, DTLZ2(dim=d, num_objectives=k)(X)


def suggest_cost(
    policy: str, d: int, n: int, config: dict[str, Any], objectives: int = 1, device: str = "cpu"
) -> dict[str, float]:
    """CPU and wall seconds of the suggest after n results (the previous suggest, after n - 1, not timed). On a
    GPU the wall seconds wait for the device's queue to drain, and a local policy's suggest runs once untimed
    first (the device's first kernels of a size compile and allocate)."""
    cls = get_policy(policy)
    Y = None  # several objectives: their values
    if policy in LOCAL:
        request = iteration_request(policy, d, n, config.get("n_max"), device)
        if device != "cpu":
            cls().suggest(request)
    else:
        from localbo.policies.requests import make_request

        if objectives > 1:
            X, Y = front_data(d, n, objectives)
            y = Y[:, 0]
        else:
            X, y = make_data(d, n)

        def request_at(m: int, state: Any = None) -> Any:
            request = make_request(cls, X[:m], y[:m], state=state, config=config, seed=1, device=device)
            if Y is None:
                return request
            return dataclasses.replace(request, Y=Y[:m], reference_point=torch.full((objectives,), 1.1).double())

        first = cls().suggest(request_at(n - 1))
        state = json.loads(json.dumps(cls.dump_state(first.state)))  # as the engine stores it
        request = request_at(n, cls.load_state(state)[0])
    start, cpu_start = time.perf_counter(), time.process_time()
    out = cls().suggest(request)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    assert out.X.shape[0] >= 1 and out.X.shape[1] == d
    if Y is None:
        return {"cpu": cpu, "wall": wall}
    from localbo.policies.pareto import non_dominated

    return {"cpu": cpu, "wall": wall, "front": int(non_dominated(Y).sum())}
