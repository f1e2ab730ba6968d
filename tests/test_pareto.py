"""Pareto fronts and hypervolumes (policies/pareto.py) against brute force: an exact count of unit cells on integer
fronts and a Monte Carlo estimate on random ones, 2 and 3 objectives, all minimised."""

from __future__ import annotations

import itertools

import pytest
import torch
from localbo.policies.pareto import (
    hypervolume,
    hypervolume_contributions,
    hypervolume_history,
    hypervolume_improvement,
    infer_reference_point,
    non_dominated,
    pareto_front,
)


def cell_count(Y: torch.Tensor, ref: torch.Tensor) -> int:
    """Exact HV of an integer front: the unit cells [a, a + 1] below ref that some row of Y is below (a >= y)."""
    k = Y.shape[1]
    low = int(Y.min())
    total = 0
    for a in itertools.product(*(range(low, int(ref[j])) for j in range(k))):
        cell = torch.tensor(a, dtype=torch.float64)
        total += int((Y <= cell).all(-1).any())
    return total


def monte_carlo(Y: torch.Tensor, ref: torch.Tensor, n: int, g: torch.Generator) -> float:
    low = Y.min(0).values
    U = low + (ref - low) * torch.rand(n, Y.shape[1], generator=g, dtype=torch.float64)
    dominated = (Y.unsqueeze(0) <= U.unsqueeze(1)).all(-1).any(-1)
    return float(dominated.double().mean() * (ref - low).prod())


def brute_non_dominated(Y: torch.Tensor) -> torch.Tensor:
    out = []
    for i in range(Y.shape[0]):
        dominated = ((Y <= Y[i]).all(-1) & (Y < Y[i]).any(-1)).any()
        repeated = (Y[:i] == Y[i]).all(-1).any()
        out.append(not bool(dominated) and not bool(repeated))
    return torch.tensor(out)


@pytest.mark.parametrize("k", [2, 3])
def test_hypervolume_of_integer_fronts_is_the_exact_cell_count(k: int) -> None:
    g = torch.Generator().manual_seed(k)
    for _ in range(6):
        Y = torch.randint(0, 7, (12, k), generator=g).double()
        ref = torch.full((k,), 7.0, dtype=torch.float64)
        ref[0] = 6.0  # some rows not below the reference point in one column: they must not count
        assert hypervolume(Y, ref) == pytest.approx(cell_count(Y, ref), abs=1e-9)


@pytest.mark.parametrize("k", [2, 3])
def test_hypervolume_of_random_fronts_matches_monte_carlo(k: int) -> None:
    g = torch.Generator().manual_seed(10 + k)
    Y = torch.rand(20, k, generator=g, dtype=torch.float64)
    Y = Y / Y.norm(dim=-1, keepdim=True)  # near a sphere: many non-dominated rows
    ref = torch.full((k,), 1.1, dtype=torch.float64)
    estimate = monte_carlo(Y, ref, 200_000, g)
    assert hypervolume(Y, ref) == pytest.approx(estimate, rel=0.02)


@pytest.mark.parametrize("k", [2, 3])
def test_improvements_contributions_and_history_agree_with_recomputed_hypervolumes(k: int) -> None:
    g = torch.Generator().manual_seed(20 + k)
    Y = torch.rand(15, k, generator=g, dtype=torch.float64)
    ref = torch.full((k,), 0.9, dtype=torch.float64)
    base = hypervolume(Y, ref)
    Z = torch.rand(8, k, generator=g, dtype=torch.float64) * 0.8
    expected = torch.tensor([hypervolume(torch.cat([Y, z[None]]), ref) - base for z in Z], dtype=torch.float64)
    assert torch.allclose(hypervolume_improvement(Z, Y, ref), expected, atol=1e-12)
    contributions = hypervolume_contributions(Y, ref)
    front = non_dominated(Y) & (Y < ref).all(-1)
    assert 2 <= int(front.sum()) and not bool(contributions[~front].any())
    for i in front.nonzero()[:, 0].tolist():
        without = hypervolume(Y[front & (torch.arange(Y.shape[0]) != i)], ref)  # the front less row i
        assert float(contributions[i]) == pytest.approx(base - without, abs=1e-12)
    history = hypervolume_history(Y, ref)
    assert history == pytest.approx([hypervolume(Y[: i + 1], ref) for i in range(Y.shape[0])], abs=1e-12)


def test_non_dominated_matches_brute_force_with_ties_and_constraints() -> None:
    g = torch.Generator().manual_seed(3)
    Y = torch.randint(0, 4, (30, 2), generator=g).double()  # many ties and repeats
    assert torch.equal(non_dominated(Y), brute_non_dominated(Y))
    C = torch.randn(30, 2, generator=g, dtype=torch.float64)
    ok = (C <= 0).all(-1)
    front = pareto_front(Y, C)
    assert not bool((front & ~ok).any())
    assert torch.equal(front[ok], brute_non_dominated(Y[ok]))
    ref = torch.full((2,), 4.0, dtype=torch.float64)
    history = hypervolume_history(Y, ref, C)
    assert history[-1] == pytest.approx(hypervolume(Y[ok], ref))


def test_reference_point_rule_and_one_objective() -> None:
    Y = torch.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]], dtype=torch.float64)  # the last is dominated
    assert torch.allclose(infer_reference_point(Y), torch.tensor([1.1, 1.1], dtype=torch.float64))
    assert hypervolume(Y, torch.tensor([2.0, 2.0])) == pytest.approx(3.0)
    y = torch.tensor([[3.0], [1.0], [2.0]], dtype=torch.float64)  # one objective: ref - best
    assert hypervolume(y, torch.tensor([2.5])) == pytest.approx(1.5)
    gain = hypervolume_improvement(torch.tensor([[0.5], [1.5], [9.0]]), y, torch.tensor([2.5]))
    assert torch.allclose(gain, torch.tensor([0.5, 0.0, 0.0], dtype=torch.float64))
    assert hypervolume(Y, torch.tensor([-1.0, -1.0])) == 0.0  # nothing below the reference point
