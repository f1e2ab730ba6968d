"""Policies under constraints (issue 30): every point inside the parameter constraints, SCBO's choices and
trust region, constrained EI and UCB, determinism and the untouched global RNG.

The property test draws 30 feasible polytopes (2..20 parameters, 1..5 constraints, equalities among them;
tests/polytopes.py) and checks every row of random, sobol, turbo, ei and the fallback points against them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from localbo.domain import StudySpace
from localbo.planning.fallback import fallback_points
from localbo.policies import get_policy
from localbo.policies.base import Polytope, SuggestRequest
from localbo.policies.polytope import violation
from localbo.space import SearchSpace
from policy_requests import make_request
from polytopes import cases

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOL = Polytope.TOLERANCE


def request(
    policy: str,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    C: torch.Tensor | None = None,
    polytope: Polytope | None = None,
    **kwargs: Any,
) -> SuggestRequest[Any, Any]:
    return dataclasses.replace(make_request(policy, X, y, **kwargs), C=C, polytope=polytope)


def inside(P: Polytope, X: torch.Tensor) -> bool:
    in_cube = bool(((X >= -TOL) & (X <= 1 + TOL)).all())
    return in_cube and bool((violation(P, X) <= TOL).all())


def unit_space(d: int) -> StudySpace:
    return StudySpace.continuous(SearchSpace.parse({f"x{i}": {"type": "float", "low": 0, "high": 1} for i in range(d)}))


# --- random, sobol, fallback points --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["random", "sobol"])
def test_random_and_sobol_stay_inside_random_polytopes_and_continue_their_sequence(name: str) -> None:
    policy = get_policy(name)()
    assert "parameter_constraints" in type(policy).handles
    for i, (P, x0) in enumerate(cases(30, seed=2)):
        d = x0.numel()
        first = policy.suggest(request(name, torch.zeros(0, d), torch.zeros(0), polytope=P, seed=i))
        again = policy.suggest(request(name, torch.zeros(0, d), torch.zeros(0), polytope=P, seed=i))
        later = policy.suggest(request(name, torch.zeros(0, d), torch.zeros(0), polytope=P, seed=i, state=first.state))
        assert inside(P, first.X) and inside(P, later.X), f"case {i}"
        assert torch.equal(first.X, again.X), "same study, same points"
        assert not torch.equal(first.X, later.X) and later.state.drawn > first.state.drawn


def test_sobol_keeps_the_sequence_points_that_satisfy_inequalities() -> None:
    P = Polytope(
        torch.ones(1, 2, dtype=torch.float64), torch.ones(1, dtype=torch.float64), torch.zeros(0, 2), torch.zeros(0)
    )
    made = get_policy("sobol")().suggest(request("sobol", torch.zeros(0, 2), torch.zeros(0), polytope=P, seed=4))
    plain = get_policy("sobol")().suggest(request("sobol", torch.zeros(0, 2), torch.zeros(0), seed=4))
    kept = plain.X[plain.X.sum(-1) <= 1]
    assert torch.equal(made.X[: kept.shape[0]], kept), "the same sequence, the points outside left out"
    assert made.state.drawn > made.X.shape[0], "the state counts the Sobol points used, accepted or not"


def test_fallback_points_lie_in_the_box_and_the_polytope_and_in_the_polytope_when_the_box_misses_it() -> None:
    for i, (P, x0) in enumerate(cases(30, seed=3)):
        d = x0.numel()
        box = ((x0 - 0.05).clamp(0, 1).tolist(), (x0 + 0.05).clamp(0, 1).tolist())
        points = fallback_points(unit_space(d), 16, torch.Generator().manual_seed(i), box, polytope=P)
        X = torch.tensor([p[0] for p in points], dtype=torch.float64)
        assert X.shape == (16, d) and inside(P, X), f"case {i}"
        assert bool(((X >= torch.tensor(box[0]) - TOL) & (X <= torch.tensor(box[1]) + TOL)).all())
    P = Polytope(
        torch.ones(1, 2, dtype=torch.float64),
        torch.tensor([0.5], dtype=torch.float64),
        torch.zeros(0, 2),
        torch.zeros(0),
    )
    points = fallback_points(unit_space(2), 8, torch.Generator().manual_seed(0), ([0.6, 0.6], [1.0, 1.0]), polytope=P)
    X = torch.tensor([p[0] for p in points], dtype=torch.float64)
    assert inside(P, X), "the box misses u1 + u2 <= 0.5: points of the polytope instead"
    unconstrained = fallback_points(unit_space(2), 8, torch.Generator().manual_seed(0), ([0.6, 0.6], [1.0, 1.0]))
    assert all(0.6 <= v <= 1.0 for p in unconstrained for v in p[0]), "without a polytope, as before"
