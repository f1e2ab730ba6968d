"""``first_samples`` (issue 29, anytime local BO): the first iterations' exploration batches start small and
double up to ``samples_per_iteration`` (d when unset), so the first step comes after a few evaluations, not
d + 1; unset, the batches are the papers' from the start."""

from __future__ import annotations

import pytest
import torch
from localbo.policies import registry
from localbo.policies.requests import make_request

SMALL = {"num_restarts": 2, "raw_samples": 16, "ascent_steps": 10}


def sphere(X: torch.Tensor) -> torch.Tensor:
    return ((X - 0.3) ** 2).sum(-1)


def batch_sizes(policy: str, config: dict, d: int, iterations: int) -> tuple[list[int], list[float]]:
    """The batch of each iteration when every point of a batch is told before the next suggest."""
    cls = registry()[policy]
    X, state, sizes, steps = torch.empty(0, d, dtype=torch.float64), None, [], []
    for _ in range(iterations):
        out = cls().suggest(make_request(policy, X, sphere(X), config={**SMALL, **config}, state=state, seed=5))
        sizes.append(out.X.shape[0])
        steps.append(float(sphere(out.X[:1])[0]))  # the head of each batch is the iterate x_t
        X, state = torch.cat([X, out.X]), out.state
    return sizes, steps


@pytest.mark.parametrize("policy", ["minucb", "gibo", "la-minucb"])
def test_batches_start_at_first_samples_and_double_up_to_the_full_one(policy: str) -> None:
    sizes, steps = batch_sizes(policy, {"first_samples": 2}, d=10, iterations=5)
    assert sizes == [1 + 2, 1 + 4, 1 + 8, 1 + 10, 1 + 10]  # x_t and 2, 4, 8, then d = 10 exploration points
    assert min(steps[1:]) < steps[0]  # the iterate moved downhill from the centre after 3 evaluations


def test_a_set_samples_per_iteration_caps_the_doubling_and_unset_keeps_the_papers_batches() -> None:
    assert batch_sizes("minucb", {"first_samples": 3, "samples_per_iteration": 5}, d=10, iterations=3)[0] == [4, 6, 6]
    assert batch_sizes("minucb", {}, d=6, iterations=2)[0] == [7, 7]
