"""``failures: "avoid"`` (issue 30): the failure model (policies/failures.py) in turbo (SCBO), ei and ucb.

The loop below plays the engine on a 2-d problem whose evaluations fail inside a disc that holds the unconstrained
minimum: f(x) = |x - (0.55, 0.5)|^2, failing where |x - (0.45, 0.5)| <= 0.2, so the best point that does not fail is
f = 0.01 at (0.65, 0.5), on the disc's rim. A failed evaluation gives no value: it is left out of X and, when the
study avoids failures, handed to the policy in ``X_failed``. Without them the policy knows nothing of the disc (its
GP extrapolates the bowl into it; ei and ucb, whose points depend on (seed, observations), ask a failed point
again and again).

Measured (2 seeds x 24 evaluations): the points asked inside the disc, and those more than MARGIN inside it. The
deep count is the one compared against half: a policy that converges onto the rim puts about half of its last
points a hair inside (a rim optimum seen from either side), with or without the model, and those say nothing about
avoiding the region.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from localbo.policies import get_policy
from localbo.policies.base import SuggestRequest
from policy_requests import make_request

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CENTRE = torch.tensor([0.45, 0.5], dtype=torch.float64)
RADIUS = 0.2
TARGET = torch.tensor([0.55, 0.5], dtype=torch.float64)
OPTIMUM = 0.01  # at (0.65, 0.5), on the rim
MARGIN = 0.02  # "deep": further inside the disc than this

CONFIGS: dict[str, dict[str, Any]] = {
    "turbo": {"n_init": 4, "candidates": 256},
    "ei": {"n_init": 4, "candidates": 256, "local_candidates": 32, "restarts": 2},
    "ucb": {"n_init": 4, "candidates": 256, "local_candidates": 32, "restarts": 2},
}
SEEDS = (0, 1)
BUDGET = 24


def objective(X: torch.Tensor) -> torch.Tensor:
    return (X - TARGET).pow(2).sum(-1)


def depth(X: torch.Tensor) -> torch.Tensor:
    """How far inside the disc (> 0: the evaluation fails)."""
    return RADIUS - (X - CENTRE).norm(dim=-1)


def request(
    name: str,
    X: torch.Tensor,
    numbers: list[int],
    X_failed: torch.Tensor | None,
    *,
    C: torch.Tensor | None = None,
    config: dict[str, Any] | None = None,
    **kwargs: Any,
) -> SuggestRequest[Any, Any]:
    made = make_request(name, X, objective(X), config=config or CONFIGS[name], **kwargs)
    numbers_ = torch.tensor(numbers, dtype=torch.long).reshape(-1)
    return dataclasses.replace(made, numbers=numbers_, X_failed=X_failed, C=C)


@dataclasses.dataclass
class Run:
    inside: int  # points asked inside the disc
    deep: int  # of those, more than MARGIN inside
    best: float  # the best value of a completed point


def run(name: str, seed: int, avoid: bool, budget: int = BUDGET) -> Run:
    """One study of ``budget`` sequential evaluations, as the engine would run it (trial numbers count failures)."""
    policy, d = get_policy(name)(), 2
    X, failed = torch.zeros(0, d, dtype=torch.float64), torch.zeros(0, d, dtype=torch.float64)
    numbers: list[int] = []
    state, asked, inside, deep = None, 0, 0, 0
    while asked < budget:
        shown = failed if avoid else None
        made = request(name, X, numbers, shown, state=state, seed=seed, rng_seed=1000 * seed + asked)
        suggestion = policy.suggest(made)
        state, x = suggestion.state, suggestion.X[:1]
        asked += 1
        inside_by = float(depth(x)[0])
        if inside_by >= 0:
            inside, deep = inside + 1, deep + int(inside_by > MARGIN)
            failed = torch.cat([failed, x])
        else:
            X, numbers = torch.cat([X, x]), [*numbers, asked]
    best = float(objective(X).min()) if X.shape[0] else float("inf")
    return Run(inside, deep, best)


@pytest.mark.parametrize("name", ["turbo", "ei", "ucb"])
def test_handles_failures(name: str) -> None:
    assert "failures" in get_policy(name).handles


@pytest.mark.parametrize("name", ["turbo", "ei", "ucb"])
def test_the_failure_model_keeps_points_out_of_the_failure_region_at_no_cost_in_value(name: str) -> None:
    with_ = [run(name, seed, avoid=True) for seed in SEEDS]
    without = [run(name, seed, avoid=False) for seed in SEEDS]
    print(f"\n{name}: with X_failed {with_}\n{name}: without     {without}")
    inside_with, inside_without = sum(r.inside for r in with_), sum(r.inside for r in without)
    deep_with, deep_without = sum(r.deep for r in with_), sum(r.deep for r in without)
    assert deep_with <= 0.5 * deep_without, (deep_with, deep_without)
    assert inside_with < inside_without, (inside_with, inside_without)
    for seed, w, wo in zip(SEEDS, with_, without, strict=True):
        assert w.best <= min(wo.best, 10 * OPTIMUM) + 0.01, f"seed {seed}: {w.best} against {wo.best}"


def two_failures() -> tuple[torch.Tensor, list[int], torch.Tensor]:
    """Eight completed points around the disc and two failed inside it."""
    X = torch.tensor(
        [[0.1, 0.1], [0.9, 0.9], [0.9, 0.1], [0.1, 0.9], [0.7, 0.5], [0.68, 0.6], [0.5, 0.8], [0.2, 0.5]],
        dtype=torch.float64,
    )
    failed = torch.tensor([[0.5, 0.5], [0.6, 0.45]], dtype=torch.float64)
    return X, [1, 2, 3, 4, 6, 7, 8, 10], failed


@pytest.mark.parametrize("name", ["turbo", "ei", "ucb"])
def test_same_seed_same_points_the_global_rng_untouched_and_the_display_names_the_model(name: str) -> None:
    X, numbers, failed = two_failures()
    config = {**CONFIGS[name], "random_every": 0} if name != "turbo" else CONFIGS[name]
    made = lambda: request(name, X, numbers, failed, count=2, seed=3, config=config)  # noqa: E731
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    first, second = get_policy(name)().suggest(made()), get_policy(name)().suggest(made())
    assert torch.equal(torch.random.get_rng_state(), before), "no policy touches torch's global RNG"
    assert torch.equal(first.X, second.X)
    assert first.state.n_failed == 2 and first.state.failure_hypers is not None
    display = get_policy(name).display(first.state, get_policy(name).Config.model_validate(config), X.shape[0])
    assert display is not None and "failure model" in display.numbers
    assert "2 failed of 10" in str(display.numbers["failure model"])


@pytest.mark.parametrize("name", ["turbo", "ei", "ucb"])
def test_no_failed_points_yet_is_exactly_the_policy_without_failures(name: str) -> None:
    X, numbers, _ = two_failures()
    plain = get_policy(name)().suggest(request(name, X, numbers, None, count=2, seed=5))
    none_yet = torch.zeros(0, 2, dtype=torch.float64)
    empty = get_policy(name)().suggest(request(name, X, numbers, none_yet, count=2, seed=5))
    assert torch.equal(plain.X, empty.X)
    assert plain.state == empty.state


def test_turbo_serves_outcome_constraints_and_failures_together() -> None:
    """SCBO with an outcome constraint (x1 <= 0.75) and the failure model: points in the box, the centre the best
    feasible completed point, the failure model beside the constraint's GP."""
    X, numbers, failed = two_failures()
    C = (X[:, :1] - 0.75).clone()
    made = request("turbo", X, numbers, failed, C=C, count=3, seed=2)
    suggestion = get_policy("turbo")().suggest(made)
    state = suggestion.state
    feasible = (C <= 0).all(-1)
    assert state.region.centre == X[feasible][objective(X[feasible]).argmin()].tolist()
    assert len(state.constraint_hypers) == 1 and state.failure_hypers is not None
    lower, upper = torch.tensor(state.region.lower), torch.tensor(state.region.upper)
    assert bool(((suggestion.X >= lower - 1e-12) & (suggestion.X <= upper + 1e-12)).all())


def test_a_turbo_batch_of_failures_only_counts_as_a_failure_of_the_region() -> None:
    X, numbers, failed = two_failures()
    policy = get_policy("turbo")()
    first = policy.suggest(request("turbo", X, numbers, failed[:1], seed=1))
    assert first.state.region.failures == 0
    later = policy.suggest(request("turbo", X, numbers, failed, seed=1, state=first.state))  # one more failure
    assert later.state.region.failures == 1 and later.state.n_failed == 2
    again = policy.suggest(request("turbo", X, numbers, failed, seed=1, state=later.state))  # nothing new
    assert again.state.region.failures == 1


@pytest.mark.parametrize("name", ["ei", "ucb"])
def test_a_failed_design_point_is_not_asked_again(name: str) -> None:
    """The study-wide index counts the failed points: the design goes on past a point that failed."""
    empty = torch.zeros(0, 2, dtype=torch.float64)
    first = get_policy(name)().suggest(request(name, empty, [], None, seed=4)).X
    next_ = get_policy(name)().suggest(request(name, empty, [], first, seed=4)).X
    assert not torch.equal(first, next_)
