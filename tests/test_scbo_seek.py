"""``turbo`` with outcome constraints (SCBO, issue 30) while nothing is feasible yet: the batch's first point is the
candidate of least violation by the constraint models' posterior means, not by a Thompson sample (whose least
violating candidate wanders with the draw); once a point is feasible, the samples decide again, as in the paper."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from localbo.policies.turbo import Turbo
from localbo.policies.turbo_region import Region, TurboState
from policy_requests import make_request

pytestmark = pytest.mark.usefixtures("one_torch_thread")

D = 4
CONFIG = {"n_init": 12, "candidates": 256}


def problem(X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A bowl, and a ball of radius 0.3 around the corner 0 to stay in (far from the data below)."""
    return (X - 0.2).pow(2).sum(-1), (X.norm(dim=-1) - 0.3).unsqueeze(-1)


X = 0.4 + 0.6 * torch.rand(12, D, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
Y, C = problem(X)
CANDIDATES = torch.rand(256, D, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


def picks(C: torch.Tensor, monkeypatch: pytest.MonkeyPatch) -> list[list[float]]:
    """The first point of a one-point batch for five seeds, over the same candidates (so only the draws differ)."""
    monkeypatch.setattr(Turbo, "_candidates", staticmethod(lambda centre, *args, **kwargs: CANDIDATES.clone()))
    centre = int(C[:, 0].argmin())
    state = TurboState(
        region=Region(length=2.0, best=float(Y[centre]), centre=X[centre].tolist()), counted=[*range(1, 13)]
    )
    points = []
    for seed in range(5):
        request = make_request(Turbo, X, Y, count=1, state=state, config=CONFIG, seed=seed)
        points.append(Turbo().suggest(dataclasses.replace(request, C=C)).X[0].tolist())
    return points


def test_while_nothing_is_feasible_the_first_point_is_the_least_violating_by_the_models_means(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chosen = picks(C, monkeypatch)
    assert all(point == chosen[0] for point in chosen), "the same candidate whatever the draw"
    assert float(problem(torch.tensor([chosen[0]]))[1]) < float(C.min()), "it violates less than the centre"


def test_once_a_point_is_feasible_the_thompson_samples_decide_as_in_the_paper(monkeypatch: pytest.MonkeyPatch) -> None:
    feasible = C.clone()
    feasible[0, 0] = -0.1  # one result inside the limit
    chosen = picks(feasible, monkeypatch)
    assert len({tuple(point) for point in chosen}) > 1, "the draws differ, and so do their picks"
