"""The constraint models of safe mode (issue 30): each constraint's prior sits at its bound, values are put on a
scale where SCBO's bilog is smooth, and a model whose own data show it over-confident is widened.
"""

from __future__ import annotations

import torch
from localbo.policies.gp import fit_model
from localbo.policies.violation import bilog, loo_spread, safe_probability, typical_size

DTYPE = torch.float64


def near_a_corner(n: int = 8) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return 0.05 * torch.rand(n, 2, generator=g, dtype=DTYPE)


def test_a_constraint_model_with_its_prior_at_the_bound_does_not_call_the_unmeasured_far_side_safe() -> None:
    """Measured only near a corner, a constraint that rises towards its bound: c = -1 + 4 (x1 + x2), broken at the
    far corner (c = 6.6)."""
    X = near_a_corner()
    c = -1.0 + 4.0 * X.sum(-1)
    far = torch.tensor([[0.95, 0.95]], dtype=DTYPE)
    at_bound = fit_model(X, c, "matern52", mean_at=0.0)
    data_level = fit_model(X, c, "matern52")
    assert float(safe_probability([data_level], far)[0]) > 0.95, "the default model reverts to the data's level"
    assert float(safe_probability([at_bound], far)[0]) < 0.6, "with the prior at the bound it knows it does not know"
    near = X[:1] + 0.001
    assert float(safe_probability([at_bound], near)[0]) > 0.99, "beside a measured point it is still sure"


def test_the_prior_at_the_bound_is_fixed_not_fitted() -> None:
    X = near_a_corner()
    model = fit_model(X, -3.0 + X.sum(-1), "matern52", mean_at=0.0)
    assert float(model.mean_module.constant) == 0.0
    assert not model.mean_module.raw_constant.requires_grad
    transform = model.outcome_transform
    assert float(transform.means.reshape(())) == 0.0, "centred at the bound"
    rms = float((-3.0 + X.sum(-1)).pow(2).mean().sqrt())
    assert abs(float(transform.stdvs.reshape(())) - rms) < 1e-9, "scaled by the distance of the data from it"


def test_typical_size_is_each_constraints_median_magnitude_at_least_one() -> None:
    C = torch.tensor([[-4000.0, 0.02, 0.0], [1000.0, -0.01, 0.0], [-2500.0, 0.5, 0.0]], dtype=DTYPE)
    assert typical_size(C).tolist() == [2500.0, 1.0, 1.0], "below 1 (or always 0) a constraint keeps unit 1"
    assert typical_size(C, at_least=0.0).tolist() == [2500.0, 0.02, 1.0], "safe mode's: every one, 0 keeps unit 1"


def test_bilog_on_the_typical_scale_is_smooth_across_the_bound_and_keeps_the_sign() -> None:
    c = torch.linspace(-3000.0, 3000.0, 601, dtype=DTYPE)
    raw, scaled = bilog(c), bilog(c / typical_size(c.reshape(-1, 1))[0])
    assert torch.equal(raw.sign(), scaled.sign())
    step = lambda v: float(v.diff().abs().max() / (v.max() - v.min()))  # noqa: E731
    assert step(raw) > 0.1, "raw bilog of values in thousands jumps at the bound: 1/600 of the range, 15 % of its rise"
    assert step(scaled) < 0.02, "on the typical scale it does not"


def test_loo_spread_is_near_one_for_a_model_that_fits_and_large_for_one_that_does_not() -> None:
    g = torch.Generator().manual_seed(1)
    X = torch.rand(40, 2, generator=g, dtype=DTYPE)
    smooth = fit_model(X, (X - 0.3).pow(2).sum(-1), "matern52")
    assert loo_spread(smooth) < 1.5
    wiggly = torch.sin(40.0 * X[:, 0]) + torch.cos(37.0 * X[:, 1])
    too_sure = fit_model(X, wiggly, "matern52", fit=False)  # the prior's long lengthscales: over-confident
    too_sure.likelihood.noise = torch.tensor([1e-4], dtype=DTYPE)
    assert loo_spread(too_sure) > 2.0
