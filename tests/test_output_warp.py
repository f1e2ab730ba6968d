"""Output warping (issue 29.2, ``policies/warping.py``): a monotone Yeo-Johnson warp of y fitted to the GP's window,
opt-in per local policy (``output_warp: "power"``), and Ax's Winsorize for the global ones (``winsorize``); the
defaults leave every policy as it was."""

from __future__ import annotations

import pytest
import torch
from localbo.policies import registry
from localbo.policies.requests import make_request
from localbo.policies.warping import power_warp, winsorized

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def rosenbrock(X: torch.Tensor) -> torch.Tensor:
    Z = X * 4 - 2
    return (100 * (Z[:, 1:] - Z[:, :-1] ** 2) ** 2 + (1 - Z[:, :-1]) ** 2).sum(-1)


def test_the_warp_keeps_the_order_and_tames_a_long_tail() -> None:
    g = torch.Generator().manual_seed(0)
    y = rosenbrock(torch.rand(60, 4, generator=g, dtype=torch.float64))
    warped = power_warp(y, y[-20:])
    assert torch.equal(warped.argsort(), y.argsort())  # increasing: the best point stays the best
    skew = lambda v: float((((v - v.mean()) / v.std()) ** 3).mean())  # noqa: E731
    assert skew(y) > 0.5 and abs(skew(warped)) < skew(y) / 2  # the long right tail of raw Rosenbrock values
    flat = torch.full((5,), 2.0, dtype=torch.float64)
    assert torch.equal(power_warp(flat, flat), flat)  # no spread: nothing to fit, y as it is


@pytest.mark.parametrize("policy", ["minucb", "la-minucb", "gibo"])
def test_a_local_policy_runs_on_warped_values_and_is_unchanged_without(policy: str) -> None:
    g = torch.Generator().manual_seed(1)
    X = torch.rand(30, 4, generator=g, dtype=torch.float64)
    y = rosenbrock(X)
    cls = registry()[policy]
    small = {"num_restarts": 2, "raw_samples": 16}
    plain = cls().suggest(make_request(policy, X, y, config=small, seed=3)).X
    same = cls().suggest(make_request(policy, X, y, config={**small, "output_warp": "none"}, seed=3)).X
    assert torch.equal(plain, same)
    warped = cls().suggest(make_request(policy, X, y, config={**small, "output_warp": "power"}, seed=3)).X
    assert warped.shape == plain.shape and bool(((warped >= 0) & (warped <= 1)).all())
    assert not torch.equal(warped, plain)  # the GP saw other values


def test_winsorize_caps_only_the_bad_outliers() -> None:
    y = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1e6], dtype=torch.float64)
    clipped = winsorized(y)
    q1, q3 = 3.0, 7.0  # the lower and higher quartiles of these nine values
    assert float(clipped[-1]) == q3 + 1.5 * (q3 - q1)  # Tukey's upper fence
    assert torch.equal(clipped[:-1], y[:-1])  # the best values and their order untouched
    assert torch.equal(winsorized(clipped), clipped)  # nothing left above the fence
    few = torch.tensor([1.0, 1e6, 2.0], dtype=torch.float64)
    assert torch.equal(winsorized(few), few)  # too few values for quartiles


def test_ei_fits_its_gp_to_winsorized_values_only_when_asked() -> None:
    g = torch.Generator().manual_seed(2)
    X = torch.rand(20, 3, generator=g, dtype=torch.float64)
    y = rosenbrock(X)
    y[0] = 1e7  # one far-off value, as a rig that misfires once
    ei = registry()["ei"]
    small = {"candidates": 64, "local_candidates": 16, "restarts": 2, "random_every": 0}
    plain = ei().suggest(make_request("ei", X, y, config=small, seed=4))
    same = ei().suggest(make_request("ei", X, y, config={**small, "winsorize": False}, seed=4))
    assert torch.equal(plain.X, same.X)  # the default is the policy as it was
    clipped = ei().suggest(make_request("ei", X, y, config={**small, "winsorize": True}, seed=4))
    assert bool(((clipped.X >= 0) & (clipped.X <= 1)).all())
    assert clipped.state.hypers != plain.state.hypers  # the GP saw the capped values
    on_capped = ei().suggest(make_request("ei", X, winsorized(y), config=small, seed=4))
    assert torch.equal(clipped.X, on_capped.X) and clipped.state.hypers == on_capped.state.hypers
