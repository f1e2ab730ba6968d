"""Bounded GP data (issue 29.3, ``policies/subsets.py``): past ``max_data`` results the global policies and turbo
fit their GPs on a subset that keeps the best results (and turbo the centre's neighbourhood), and at most
``max_data`` results they fit exactly what they fitted before; qlognehvi bounds its GPs by Pareto layer and its
baseline (``max_baseline``) to the front, thinned to points spread over it."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from localbo.policies import gp, registry
from localbo.policies.requests import make_request
from localbo.policies.subsets import best_and_spread, front_first, layer_rank, nearest

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_best_and_spread_keeps_the_best_half_and_spreads_the_rest() -> None:
    y = torch.tensor([5.0, 1.0, 9.0, 0.5, 7.0, 3.0, 8.0, 2.0, 6.0, 4.0], dtype=torch.float64)
    keep = best_and_spread(y, None, 6)
    assert keep.tolist() == sorted(keep.tolist()) and len(keep) == 6
    assert {1, 3, 7} <= set(keep.tolist())  # the best three: 1.0, 0.5, 2.0
    assert 0 in keep and 9 in keep  # the others evenly over the study's order: its first and last among them
    assert best_and_spread(y, None, 10).tolist() == list(range(10))


def test_under_constraints_the_best_feasible_are_kept_before_better_infeasible_ones() -> None:
    y = torch.tensor([0.0, 0.1, 5.0, 6.0, 7.0, 8.0], dtype=torch.float64)
    C = torch.tensor([[1.0], [2.0], [-1.0], [-1.0], [-1.0], [0.5]], dtype=torch.float64)
    keep = best_and_spread(y, C, 4).tolist()
    assert {2, 3} <= set(keep)  # the two best feasible, though rows 0 and 1 have lower values


def test_nearest_takes_the_rows_closest_to_the_centre() -> None:
    X = torch.tensor([[0.0, 0.0], [0.9, 0.9], [0.5, 0.5], [0.45, 0.5], [0.1, 0.9]], dtype=torch.float64)
    assert nearest(X, torch.tensor([0.5, 0.5], dtype=torch.float64), 2).tolist() == [2, 3]
    assert nearest(X, X[0], 9).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("policy", ["ei", "ucb", "turbo"])
def test_a_policy_fits_at_most_max_data_results_and_the_same_as_before_below_it(policy, monkeypatch) -> None:  # noqa: ANN001
    fitted: list[int] = []
    real = gp.fit_model

    def counting(X, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202  (the real fit, sizes recorded)
        fitted.append(X.shape[0])
        return real(X, *args, **kwargs)

    monkeypatch.setattr(gp, "fit_model", counting)
    import localbo.policies.turbo as turbo_module

    monkeypatch.setattr(turbo_module, "fit_model", counting)
    g = torch.Generator().manual_seed(1)
    X = torch.rand(80, 4, generator=g, dtype=torch.float64)
    y = (X - 0.3).pow(2).sum(-1)
    cls = registry()[policy]
    small = {"candidates": 64, "local_candidates": 0, "restarts": 1} if policy != "turbo" else {"candidates": 64}
    bounded = cls().suggest(make_request(policy, X, y, config={**small, "max_data": 30}, seed=2))
    assert fitted and max(fitted) == 30
    fitted.clear()
    cls().suggest(make_request(policy, X, y, config={**small, "max_data": None}, seed=2))
    assert max(fitted) == 80
    same = [cls().suggest(make_request(policy, X, y, config={**small, "max_data": m}, seed=2)).X for m in (80, None)]
    assert torch.equal(same[0], same[1])  # at most max_data results: the policy exactly as before
    assert bounded.X.shape == same[0].shape and bool(((bounded.X >= 0) & (bounded.X <= 1)).all())


def test_layer_rank_peels_pareto_layers_and_puts_the_infeasible_last() -> None:
    Y = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.5, 1.5], [2.0, 2.0], [-1.0, -1.0]], dtype=torch.float64)
    C = torch.tensor([[-1.0], [-1.0], [-1.0], [-1.0], [3.0]], dtype=torch.float64)  # the best row breaks a limit
    assert layer_rank(Y, C, 5).tolist() == [0.0, 0.0, 1.0, 2.0, 4.0]
    inf = float("inf")
    assert layer_rank(Y, None, 1).tolist() == [inf, inf, inf, inf, 0.0]  # feasible: row 4 dominates; peeled as needed


def test_front_first_keeps_whole_layers_and_thins_the_last_one_evenly() -> None:
    t = torch.linspace(0, 1, 21, dtype=torch.float64)
    front = torch.stack([t, 1 - t], -1)  # 21 points on a line front, in order
    Y = torch.cat([front, front + 0.5])  # and a dominated copy behind it
    keep = front_first(Y, None, 5).tolist()
    assert keep == [0, 5, 10, 15, 20], keep  # the ends and evenly between: no layer-two point
    assert front_first(Y, None, 25).tolist()[:21] == list(range(21))  # the whole front, then 4 of the next layer
    assert front_first(Y, None, 42).tolist() == list(range(42))


def test_qlognehvi_bounds_its_gps_and_baseline_and_is_unchanged_below_the_bounds(monkeypatch) -> None:  # noqa: ANN001
    import localbo.policies.qlognehvi as q_module
    from botorch.test_functions.multi_objective import DTLZ2

    fitted: list[int] = []
    baselines: list[int] = []
    real_fit, real_acq = q_module.fit_model, q_module.log_nehvi

    def counting_fit(X, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        fitted.append(X.shape[0])
        return real_fit(X, *args, **kwargs)

    def counting_acq(model, X_baseline, *args):  # noqa: ANN001, ANN002, ANN202
        baselines.append(X_baseline.shape[0])
        return real_acq(model, X_baseline, *args)

    monkeypatch.setattr(q_module, "fit_model", counting_fit)
    monkeypatch.setattr(q_module, "log_nehvi", counting_acq)
    g = torch.Generator().manual_seed(3)
    X = torch.rand(60, 3, generator=g, dtype=torch.float64)
    Y = DTLZ2(dim=3, num_objectives=2)(X)
    small = {"num_restarts": 1, "raw_samples": 16, "mc_samples": 16, "maxiter": 10}

    def suggest(**bounds: int | None):  # noqa: ANN202
        request = make_request("qlognehvi", X, Y[:, 0], config={**small, **bounds}, seed=2)
        request = dataclasses.replace(request, Y=Y, reference_point=torch.tensor([1.1, 1.1], dtype=torch.float64))
        return registry()["qlognehvi"]().suggest(request)

    bounded = suggest(max_data=40, max_baseline=20)
    assert set(fitted) == {40} and baselines == [20]
    assert bounded.state.bounded == "40, 20 of 60"
    fitted.clear()
    same = [suggest(max_data=m, max_baseline=m).X for m in (60, None)]
    assert set(fitted) == {60}  # at most the bounds: every result, the policy exactly as before
    assert torch.equal(same[0], same[1])
