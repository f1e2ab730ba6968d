"""``turbo`` (TuRBO-1, issue 18): the box's shape, success/failure counting by trial number whatever
the order of tells, the restart that leaves the old data out, the state round trip, an API loop."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from localbo.policies.turbo import Turbo
from localbo.policies.turbo_region import Region, TurboState, region_data, trust_region
from policy_requests import make_request

from tests.conftest import unique

CONFIG = {"n_init": 4, "batch_size": 2, "success_tolerance": 2, "failure_tolerance": 2, "candidates": 64}


def request(X: torch.Tensor, y: torch.Tensor, numbers: list[int], state: TurboState | None, pending=None):  # noqa: ANN001, ANN201
    made = make_request(Turbo, X, y, pending=pending, count=2, state=state, config=CONFIG, seed=5)
    return dataclasses.replace(made, numbers=torch.tensor(numbers, dtype=torch.long))


def test_the_box_is_shaped_by_the_lengthscales_with_volume_length_to_the_d() -> None:
    lower, upper = trust_region(torch.full((3,), 0.5, dtype=torch.float64), torch.tensor([1.0, 2.0, 4.0]), 0.4)
    sides = upper - lower
    assert torch.allclose(sides, torch.tensor([0.2, 0.4, 0.8], dtype=torch.float64))
    assert torch.allclose(sides.prod(), torch.tensor(0.4**3, dtype=torch.float64))
    assert torch.allclose((lower + upper) / 2, torch.full((3,), 0.5, dtype=torch.float64))
    near_edge = trust_region(torch.tensor([0.05, 0.5, 0.99]), torch.ones(3), 0.4)
    assert near_edge[0].tolist()[0] == 0.0 and near_edge[1].tolist()[2] == 1.0, "clipped to the cube"


def test_successes_and_failures_count_each_result_once_whatever_the_order_of_tells() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(7, 2, generator=g, dtype=torch.float64)
    y = torch.tensor([3.0, 2.0, 4.0, 5.0, 9.0, 1.0, 0.5], dtype=torch.float64)
    design = Turbo().suggest(request(X[:0], y[:0], [], None))
    assert design.X.shape[0] == 4 and design.state.region.best is None  # the design: n_init points
    # the design's four results are in: the region starts at its best (2.0), nothing counted as new yet
    state = Turbo().suggest(request(X[:4], y[:4], [1, 2, 3, 4], design.state)).state
    assert (state.region.best, state.region.successes, state.region.failures) == (2.0, 0, 0)
    # trial 6 (told first) improves on 2.0; trial 5 is still running: one success
    state = Turbo().suggest(request(X[[0, 1, 2, 3, 5]], y[[0, 1, 2, 3, 5]], [1, 2, 3, 4, 6], state)).state
    assert (state.region.best, state.region.successes, state.region.failures) == (1.0, 1, 0)
    # trial 5's late result (9.0, worse) is the only new one: a failure; trial 6 is not counted again
    state = Turbo().suggest(request(X[:6], y[:6], [1, 2, 3, 4, 5, 6], state)).state
    assert (state.region.best, state.region.successes, state.region.failures) == (1.0, 0, 1)
    assert state.counted == [1, 2, 3, 4, 5, 6]
    # nothing new: nothing changes
    again = Turbo().suggest(request(X[:6], y[:6], [1, 2, 3, 4, 5, 6], state)).state
    assert (again.region.successes, again.region.failures, again.region.length) == (0, 1, state.region.length)
    # a second failure in a row halves the side length (failure_tolerance 2)
    worse = torch.cat([y[:6], torch.tensor([7.0], dtype=torch.float64)])
    halved = Turbo().suggest(request(X, worse, [1, 2, 3, 4, 5, 6, 7], state)).state
    assert halved.region.length == pytest.approx(state.region.length / 2) and halved.region.failures == 0


def test_a_collapsed_region_restarts_with_a_new_design_and_without_the_old_data() -> None:
    g = torch.Generator().manual_seed(1)
    X = torch.rand(6, 2, generator=g, dtype=torch.float64)
    y = torch.tensor([3.0, 2.0, 4.0, 5.0, 6.0, 7.0], dtype=torch.float64)
    running = torch.rand(1, 2, generator=g, dtype=torch.float64)  # asked before the restart, told after it
    tiny = Region(length=0.5**7 * 1.5, failures=1, best=2.0, centre=X[1].tolist())
    state = TurboState(region=tiny, counted=[1, 2, 3, 4, 5])
    restarted = Turbo().suggest(request(X, y, [1, 2, 3, 4, 5, 6], state, pending=running))
    region = restarted.state.region
    assert restarted.state.restarts == 1 and region.length == 0.8 and region.best is None
    assert region.first_number == 7 and region.excluded == running.tolist()
    assert restarted.X.shape[0] == 4, "a new Sobol design of n_init points"
    display = Turbo.display(restarted.state, Turbo.Config.model_validate(CONFIG), 6)
    assert display.phase == "initial design" and display.numbers["restarts"] == 1
    # later: the old trials, the one running at the restart (number 8 now told) and the new design's results
    X_all = torch.cat([X, running, restarted.X[:2]])
    y_all = torch.cat([y, torch.tensor([0.1, 1.0, 1.5], dtype=torch.float64)])
    later = request(X_all, y_all, [1, 2, 3, 4, 5, 6, 8, 9, 10], restarted.state)
    _, y_region, numbers = region_data(later, region)
    assert numbers.tolist() == [9, 10] and y_region.tolist() == [1.0, 1.5], "only the new region's own results"


def test_the_state_survives_the_json_round_trip() -> None:
    g = torch.Generator().manual_seed(2)
    X, y = torch.rand(6, 2, generator=g, dtype=torch.float64), torch.rand(6, generator=g, dtype=torch.float64)
    state = Turbo().suggest(request(X, y, [1, 2, 3, 4, 5, 6], None)).state
    state = Turbo().suggest(request(X, y, [1, 2, 3, 4, 5, 6], state)).state
    loaded, note = Turbo.load_state(json.loads(json.dumps(Turbo.dump_state(state))))
    assert note is None and loaded == state and state.region.lower is not None and state.hypers is not None


def test_an_api_loop_shrinks_the_box_around_the_minimum(api) -> None:  # noqa: ANN001
    name = unique("turbo")
    space = {f"x{i}": {"type": "float", "low": -2.0, "high": 2.0} for i in range(3)}
    body = {"name": name, "space": space, "policy": "turbo", "seed": 4, "policy_config": {"batch_size": 3}}
    assert api.post("/api/v1/studies", json=body).status_code == 201
    values = []
    for _ in range(12):
        trials = api.post(f"/api/v1/studies/{name}/ask", json={"count": 3}).json()["trials"]
        for t in trials:
            value = sum((v - 0.5) ** 2 for v in t["params"].values())
            values.append(value)
            told = api.post(f"/api/v1/studies/{name}/trials/{t['number']}/tell", json={"value": value})
            assert told.status_code == 200
    listed = api.get(f"/api/v1/studies/{name}/trials", params={"limit": 100}).json()["trials"]
    assert {t["source"] for t in listed} == {"turbo"}, "every point from the policy, none a fallback"
    assert min(values) < 0.1 < min(values[:6]), (min(values[:6]), min(values))
    view = api.get(f"/api/v1/studies/{name}/policy").json()
    display = view["display"]
    assert display["phase"] == "trust region" and len(display["box"]["lower"]) == 3
    assert set(display["numbers"]) >= {"side length", "successes", "failures", "restarts"}


@pytest.mark.parametrize(("name", "size"), [("turbo", 2 * 3), ("morbo", 2 * (3 + 1)), ("qlognehvi", 2 * (3 + 1))])
def test_the_design_s_progress_is_against_its_size(name: str, size: int) -> None:
    """The display read "k of k" whatever the design's size (its total was the points planned so far)."""
    from localbo.policies import get_policy
    from localbo.policies.requests import make_request

    empty = torch.zeros(0, 3, dtype=torch.float64)
    cls = get_policy(name)
    request = make_request(name, empty, empty[:, 0], count=1)
    if name != "turbo":
        request = dataclasses.replace(request, Y=empty[:, :2], reference_point=torch.zeros(2, dtype=torch.float64))
    out = cls().suggest(request)
    shown = cls.display(out.state, request.config, 0)
    assert shown is not None and shown.progress is not None
    assert (shown.progress.done, shown.progress.total) == (out.X.shape[0], size)


def test_bounded_warm_refits_run_between_full_ones_on_the_plain_path_only() -> None:
    from localbo.policies.turbo_region import refit_iterations

    config = Turbo.Config(warm_fit_iterations=25, full_fit_every=3)
    hypers = {"kernel": "matern52", "lengthscale": [0.5], "noise": 1e-3, "mean": 0.0}
    bounds = [refit_iterations(config, TurboState(hypers=hypers, fits=k), plain=True) for k in range(6)]
    assert bounds == [None, 25, 25, None, 25, 25]  # every third refit runs to convergence
    assert refit_iterations(config, TurboState(hypers=None, fits=1), plain=True) is None  # a fresh start or restart
    assert refit_iterations(config, TurboState(hypers=hypers, fits=1), plain=False) is None  # constraints, safe mode
    assert refit_iterations(Turbo.Config(), TurboState(hypers=hypers, fits=1), plain=True) is None  # the default


def test_a_bounded_refit_counts_its_fits_and_stays_a_valid_suggestion() -> None:
    g = torch.Generator().manual_seed(1)
    X = torch.rand(12, 3, generator=g, dtype=torch.float64)
    y = (X - 0.3).pow(2).sum(-1)
    config = {**CONFIG, "warm_fit_iterations": 2, "full_fit_every": 2}
    state, seen = None, []
    for n in (4, 6, 8, 10, 12):
        made = make_request(Turbo, X[:n], y[:n], count=2, state=state, config=config, seed=5)
        made = dataclasses.replace(made, numbers=torch.arange(1, n + 1))
        out = Turbo().suggest(made)
        assert out.X.shape == (2, 3) and bool(((out.X >= 0) & (out.X <= 1)).all())
        state = out.state
        seen.append(state.fits)
        assert json.loads(json.dumps(Turbo.dump_state(state)))["data"]["fits"] == state.fits  # stored with the state
    assert seen == [1, 2, 3, 4, 5]
