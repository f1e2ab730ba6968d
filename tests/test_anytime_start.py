"""``first_samples`` (issue 29, anytime local BO): the first iterations' exploration batches start small and
double up to ``samples_per_iteration`` (d when unset), or (``batch_growth: on_stall``) stay small while each batch
improves the best value, so the first step comes after a few evaluations, not d + 1; unset, the batches are the
papers' from the start."""

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


def batch_values(policy: str, config: dict, d: int, iterations: int, f) -> list[torch.Tensor]:
    """Each iteration's values of f at its batch, every point told before the next suggest."""
    cls = registry()[policy]
    X, state, batches = torch.empty(0, d, dtype=torch.float64), None, []
    for _ in range(iterations):
        out = cls().suggest(make_request(policy, X, f(X), config={**SMALL, **config}, state=state, seed=5))
        batches.append(f(out.X))
        X, state = torch.cat([X, out.X]), out.state
    return batches


@pytest.mark.parametrize("policy", ["minucb", "gibo", "la-minucb"])
def test_on_stall_keeps_the_small_batch_while_batches_improve_and_takes_the_full_one_after_one_that_did_not(
    policy: str,
) -> None:
    config = {"first_samples": 2, "batch_growth": "on_stall"}
    batches = batch_values(policy, config, d=10, iterations=6, f=sphere)
    sizes = [b.shape[0] for b in batches]
    assert sizes[0] == 1 + 2
    for k in range(1, len(batches)):  # batch k's size follows whether batch k - 1 beat everything before it
        before = float(torch.cat(batches[: k - 1]).min()) if k > 1 else None
        improved = before is None or float(batches[k - 1].min()) < before - 1e-3 * abs(before)
        assert sizes[k] == (1 + 2 if improved else 1 + 10), (k, sizes)
    assert 1 + 2 in sizes[2:]  # on the sphere later steps improve too: the batch stays small there


def test_on_stall_takes_the_full_batch_when_nothing_improves() -> None:
    def flat(X: torch.Tensor) -> torch.Tensor:
        return torch.zeros(X.shape[0], dtype=torch.float64)

    batches = batch_values("minucb", {"first_samples": 2, "batch_growth": "on_stall"}, d=6, iterations=4, f=flat)
    # the first batch has nothing before it to beat; the second did not beat the first, nor any after it
    assert [b.shape[0] for b in batches] == [1 + 2, 1 + 2, 1 + 6, 1 + 6]
