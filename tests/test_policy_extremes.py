"""Policies on what a real study can tell them at the edges (found by a robustness pass): objectives near the double
range, a violation that overflows, and a local policy in safe mode whose first seed broke a limit. In the service a
raising policy becomes fallback points; these assert it does not raise, or that it refuses to start where nothing is
known safe."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from localbo.domain.outcomes import OutcomeConstraint
from localbo.policies import get_policy
from localbo.policies.base import PolicyError
from localbo.policies.requests import make_request
from localbo.policies.scalarise import chebyshev


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_the_chebyshev_scalar_of_values_near_the_double_range_is_finite() -> None:
    Y = rand(6, 2)
    Y[0, 0], Y[1, 0] = 1.5e308, -1.5e308  # max - min overflowed: inf / inf
    scalar = chebyshev(Y, torch.tensor([0.5, 0.5], dtype=torch.float64))
    assert bool(torch.isfinite(scalar).all()), scalar
    assert int(scalar.argmax()) == 0  # the largest first objective is still the worst


def test_qlognehvi_with_an_objective_at_1e300_asks_inside_the_cube() -> None:
    X, Y = rand(10, 3), rand(10, 2, seed=1)
    Y[0, 0], Y[1, 1] = 1e300, -1e300  # a lab's sentinel values: the posterior's covariance overflowed
    request = make_request("qlognehvi", X, Y[:, 0], count=2, config={"num_restarts": 2, "raw_samples": 64})
    request = dataclasses.replace(request, Y=Y, reference_point=torch.tensor([1e300, 1.1], dtype=torch.float64))
    points = get_policy("qlognehvi")().suggest(request).X
    assert points.shape == (2, 3) and bool(torch.isfinite(points).all())
    assert bool(((points >= 0) & (points <= 1)).all())


def test_a_violation_past_the_double_range_is_held_at_1e300() -> None:
    """1e308 told against a bound of -1e300 overflowed to inf, which no constraint model can fit."""
    below = OutcomeConstraint(metric="t", op="<=", bound=-1e300)
    assert below.violation(1.7e308) == 1e300 and below.violation(-1e300) == 0.0
    assert OutcomeConstraint(metric="p", op=">=", bound=1e300).violation(-1.7e308) == 1e300


@pytest.mark.parametrize("policy", ["minucb", "gibo", "la-minucb"])
def test_a_local_policy_in_safe_mode_does_not_start_at_a_seed_that_broke_a_limit(policy: str) -> None:
    """The engine starts a safe study's local policy at its first seed (x0); told infeasible there, the policy
    starts at the best feasible result instead, and with none it refuses (the engine's safe fallback follows)."""
    X = torch.tensor([[0.2, 0.4], [0.25, 0.5]], dtype=torch.float64)
    C = torch.tensor([[0.3], [-0.5]], dtype=torch.float64)  # the seed at x0 broke the limit, the other held
    request = make_request(policy, X, torch.tensor([0.1, 0.2]), count=2, config={"x0": [0.2, 0.4]})
    suggestion = get_policy(policy)().suggest(dataclasses.replace(request, C=C, max_violation_probability=0.05))
    assert suggestion.state.x_t == [0.25, 0.5], "started at the feasible result"
    assert not bool(((suggestion.X - X[0]).abs().amax(-1) <= 1e-12).any()), "never the point that broke it"
    broken = dataclasses.replace(request, C=torch.tensor([[0.3], [0.1]]), max_violation_probability=0.05)
    with pytest.raises(PolicyError, match="no x0 known safe"):
        get_policy(policy)().suggest(broken)
