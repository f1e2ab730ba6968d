"""The acquisition search (acqopt.maximize): precise on faces and under unequal lengthscales, and it starts from the
best observation."""

from __future__ import annotations

import torch
from localbo.policies.acqopt import maximize

D = 6
# lengthscales from 0.02 to 5, as a fitted ARD GP has them: the score's curvature spans 5 orders of magnitude
SCALE = torch.tensor([0.02, 0.05, 0.3, 1.0, 2.0, 5.0], dtype=torch.float64)
# the unconstrained maximiser: three coordinates inside the cube, three past a face (the optimum sits on it)
CENTRE = torch.tensor([0.3, -0.2, 0.6, 1.4, 0.45, -0.5], dtype=torch.float64)
OPTIMUM = CENTRE.clamp(0.0, 1.0)


def ill_conditioned(X: torch.Tensor) -> torch.Tensor:
    """A concave quadratic in x / SCALE: its maximiser in the cube is OPTIMUM."""
    return -(((X - CENTRE) / SCALE) ** 2).sum(-1)


def test_the_refinement_reaches_an_optimum_on_the_faces_when_preconditioned_by_the_lengthscales() -> None:
    found = maximize(ill_conditioned, D, seed=3, restarts=3, local=0, scale=SCALE)
    assert found is not None and found.refined
    assert float((found.x - OPTIMUM).abs().max()) < 1e-6  # on the faces exactly, the inner coordinates too
    faces = [1, 3, 5]
    assert found.x[faces].tolist() == OPTIMUM[faces].tolist()


def test_the_best_observation_is_a_start_of_its_own() -> None:
    """A peak too narrow for any candidate to land on (width 1e-3 in 6 dimensions): only a start at the best
    observation, which sits on it, finds it."""
    peak = torch.full((D,), 0.37, dtype=torch.float64)

    def narrow(X: torch.Tensor) -> torch.Tensor:
        return torch.exp(-((X - peak) ** 2).sum(-1) / 1e-6)

    far = torch.full((1, D), 0.9, dtype=torch.float64)
    found = maximize(narrow, D, seed=0, around=torch.cat([peak[None] + 1e-4, far]), local=64)
    assert found is not None and found.value > 0.9
    assert float((found.x - peak).abs().max()) < 1e-3
    missed = maximize(narrow, D, seed=0, around=torch.cat([far, peak[None] + 1e-4]), local=64)
    assert missed is not None and missed.value < 1e-3  # only the first row is a start: the candidates miss it


def test_a_best_observation_outside_the_search_box_is_not_a_start() -> None:
    """A trust region's box may exclude the best observation; the search keeps to the box."""
    box = torch.tensor([[0.5] * D, [0.8] * D], dtype=torch.float64)
    outside = torch.full((1, D), 0.1, dtype=torch.float64)
    found = maximize(lambda X: -((X - 0.1) ** 2).sum(-1), D, seed=1, bounds=box, around=outside, local=0)
    assert found is not None
    assert bool(((found.x >= 0.5) & (found.x <= 0.8)).all())
    assert torch.allclose(found.x, torch.full((D,), 0.5, dtype=torch.float64), atol=1e-6)
