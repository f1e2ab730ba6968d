"""``turbo`` with outcome constraints (SCBO, issue 30): a region that collapses restarts around the best feasible
point with the earlier results inside its box (no new design), or with a fresh design while nothing is feasible;
SCBO's candidates reach the faces of the cube that the box touches, unconstrained turbo's never do."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from localbo.policies.turbo import Turbo
from localbo.policies.turbo_region import Region, TurboState, region_data
from policy_requests import make_request

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONFIG = {"n_init": 4, "batch_size": 2, "success_tolerance": 2, "failure_tolerance": 2, "candidates": 64}
# nine results in 2-d: the best feasible one (row 2, y = 1.0) near the corner 0; row 0 is better but infeasible;
# rows 7 and 8 lie far from row 2 (outside a box of side 0.8 around it); row 8 is the new, failing result
X = torch.tensor(
    [[0.10, 0.10], [0.25, 0.15], [0.20, 0.20], [0.40, 0.30], [0.30, 0.45], [0.50, 0.50], [0.15, 0.35], [0.90, 0.90],
     [0.95, 0.80]],
    dtype=torch.float64,
)  # fmt: skip
y = torch.tensor([0.5, 2.0, 1.0, 3.0, 2.5, 4.0, 1.5, 0.2, 5.0], dtype=torch.float64)
FEASIBLE = torch.tensor([False, True, True, True, True, True, True, False, True])


def collapsing(C: torch.Tensor, pending: torch.Tensor | None = None):  # noqa: ANN201
    """The request after a tiny region's second failure in a row (failure_tolerance 2): its side halves below
    length_min, so the call restarts it."""
    tiny = Region(length=0.5**7 * 1.5, failures=1, best=1.0, centre=X[2].tolist())
    state = TurboState(region=tiny, counted=list(range(1, 9)))
    return make_request(Turbo, X, y, pending=pending, count=2, state=state, config=CONFIG, seed=3), C


def constraint(feasible: torch.Tensor) -> torch.Tensor:
    """n x 1: -1 where feasible, 0.5 where not."""
    return torch.where(feasible, -1.0, 0.5).to(torch.float64).unsqueeze(-1)


def test_a_collapsed_scbo_region_restarts_at_the_best_feasible_point_with_the_results_around_it() -> None:
    running = torch.tensor([[0.3, 0.2]], dtype=torch.float64)  # asked before the restart, told after it
    made, C = collapsing(constraint(FEASIBLE), pending=running)
    suggestion = Turbo().suggest(dataclasses.replace(made, C=C))
    state, region = suggestion.state, suggestion.state.region
    assert state.restarts == 1 and region.length == 0.8 and region.first_number == 10
    assert region.centre == X[2].tolist() and region.best == 1.0 and region.violation == 0.0, "the best feasible"
    assert region.kept_lower == [0.0, 0.0] and region.kept_upper == pytest.approx([0.6, 0.6])
    assert region.design_asked == 0 and suggestion.X.shape == (2, 2), "no new design: a batch from the region"
    lower, upper = torch.tensor(region.lower), torch.tensor(region.upper)
    assert bool(((suggestion.X >= lower) & (suggestion.X <= upper)).all())
    # later: the results inside the kept box, the running point's (numbered 10) and newer ones are the region's
    X_all = torch.cat([X, running, torch.tensor([[0.9, 0.1]], dtype=torch.float64)])
    y_all = torch.cat([y, torch.tensor([0.8, 9.0], dtype=torch.float64)])
    _, _, numbers = region_data(make_request(Turbo, X_all, y_all, state=state, config=CONFIG), region)
    assert numbers.tolist() == [1, 2, 3, 4, 5, 6, 7, 10, 11], "trials 8 and 9 lie outside the box around trial 3"
    display = Turbo.display(state, Turbo.Config.model_validate(CONFIG), 9)
    assert display is not None and display.phase == "trust region" and display.numbers["restarts"] == 1
    assert 0.0 <= display.numbers["candidates feasible in the sample"] <= 1.0


def test_a_collapsed_scbo_region_with_nothing_feasible_restarts_with_a_fresh_design_as_the_paper() -> None:
    made, C = collapsing(constraint(torch.zeros(9, dtype=torch.bool)))
    tiny = made.state.region.model_copy(update={"violation": 0.5})
    made = dataclasses.replace(made, state=made.state.model_copy(update={"region": tiny}))
    suggestion = Turbo().suggest(dataclasses.replace(made, C=C))
    region = suggestion.state.region
    assert suggestion.state.restarts == 1 and region.best is None and region.kept_lower is None
    assert region.first_number == 10 and suggestion.X.shape[0] == 4, "a new Sobol design of n_init points"


def test_the_restart_is_the_same_for_the_same_seed() -> None:
    made, C = collapsing(constraint(FEASIBLE))
    first = Turbo().suggest(dataclasses.replace(made, C=C))
    again = Turbo().suggest(dataclasses.replace(made, C=C))
    assert torch.equal(first.X, again.X) and first.state == again.state


def test_scbo_candidates_reach_the_faces_the_box_touches_and_unconstrained_ones_never() -> None:
    centre = torch.tensor([0.01, 0.5, 0.99, 0.5], dtype=torch.float64)
    lower = torch.tensor([0.0, 0.4, 0.9, 0.0], dtype=torch.float64)  # coordinate 3 spans the cube: both faces
    upper = torch.tensor([0.1, 0.6, 1.0, 1.0], dtype=torch.float64)
    plain = Turbo._candidates(centre, lower, upper, 2000, make_request(Turbo, X.new_zeros(0, 4), y[:0], seed=1))
    faces = Turbo._candidates(centre, lower, upper, 2000, make_request(Turbo, X.new_zeros(0, 4), y[:0], seed=1), True)
    assert not bool((plain[:, 0] == 0).any()) and not bool((plain[:, 2] == 1).any())
    on_lower, on_upper = faces[:, 0] == 0, faces[:, 2] == 1
    assert 0.2 < float(on_lower.double().mean()) < 0.3 and 0.2 < float(on_upper.double().mean()) < 0.3
    assert not bool(on_lower[::2].any()), "every other candidate is left as it was"
    assert bool((on_lower & on_upper).any()), "both faces at once: the corner"
    assert not bool(((faces[:, 1:4:2] == 0) | (faces[:, 1:4:2] == 1)).any()), "no face, or both: left alone"
    assert bool(((faces >= lower) & (faces <= upper)).all())
