"""``perturbed_coordinates`` (turbo, morbo): a candidate moves each coordinate of its centre with probability
min(1, p / d). The default (20, TuRBO's) moves every coordinate up to d = 20; p = 1 moves about one, so the point a
policy picks differs from its centre (turbo) or from a front point (morbo) in a few coordinates only."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from localbo.policies import get_policy
from policy_requests import make_request

pytestmark = pytest.mark.usefixtures("one_torch_thread")
D = 20


def moved(point: torch.Tensor, bases: torch.Tensor) -> int:
    """The fewest coordinates in which ``point`` differs from one of ``bases``."""
    return int((point != bases).sum(-1).min())


def data(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    X = torch.rand(n, D, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return X, torch.stack([(X - 0.25).pow(2).sum(-1), (X - 0.75).pow(2).sum(-1)], -1)


@pytest.mark.parametrize(("perturbed", "most", "least"), [(1.0, 6, 1), (None, D, D)])
def test_turbo_moves_about_p_coordinates_of_its_centre(perturbed: float | None, most: int, least: int) -> None:
    X, Y = data(3 * D)
    config = {"n_init": 2 * D, "candidates": 256, **({"perturbed_coordinates": perturbed} if perturbed else {})}
    got = get_policy("turbo")().suggest(make_request("turbo", X, Y[:, 0], config=config, seed=1))
    centre = X[int(Y[:, 0].argmin())].unsqueeze(0)
    assert least <= moved(got.X[0], centre) <= most  # Bin(20, 1/20), at least one: P(> 6) ~ 1e-5


@pytest.mark.parametrize(("perturbed", "most", "least"), [(1.0, 6, 1), (None, D, D)])
def test_morbo_moves_about_p_coordinates_of_a_front_point(perturbed: float | None, most: int, least: int) -> None:
    X, Y = data(3 * D)
    config = {"candidates": 256, **({"perturbed_coordinates": perturbed} if perturbed else {})}
    made = make_request("morbo", X, Y[:, 0], config=config, seed=1)
    got = get_policy("morbo")().suggest(dataclasses.replace(made, Y=Y, reference_point=Y.amax(0) + 0.1))
    assert least <= moved(got.X[0], X) <= most
