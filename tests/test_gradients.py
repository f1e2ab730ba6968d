"""The gradient posterior of the GP (policies/gradients.py) against GPyTorch's own posterior.

The mean against autograd of the posterior mean, the covariance against finite differences of the
posterior cross-covariance, the trace after a batch against a GP conditioned on that batch.
"""

from __future__ import annotations

import pytest
import torch
from botorch.models import SingleTaskGP
from localbo.policies import gp
from localbo.policies.gradients import GradientTrace, KernelParams, gradient_posterior, gradient_trace_after

D = 4
TOL = 1e-5


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


@pytest.fixture(scope="module", params=["rbf", "matern52"])
def model(request: pytest.FixtureRequest) -> SingleTaskGP:
    """A MAP-fitted GP on 30 noisy points of a smooth function; y scaled so Standardize and the mean matter."""
    g = torch.Generator().manual_seed(0)
    X = torch.rand(30, D, generator=g, dtype=torch.float64)
    f = torch.sin(3 * X).sum(-1) + (X - 0.3).pow(2).sum(-1)
    y = 40.0 + 7.0 * (f + 0.01 * torch.randn(30, generator=g, dtype=torch.float64))
    return gp.fit_model(X, y, kernel=request.param)


def grad_cov_by_differences(model: SingleTaskGP, x: torch.Tensor, h: float = 1e-5) -> torch.Tensor:
    """Cov(grad f(x))_ij = d^2 k_post(a, b) / da_i db_j at a = b = x: autograd in a, central differences in b."""
    d = x.shape[-1]
    B = torch.cat([x + h * torch.eye(d, dtype=x.dtype), x - h * torch.eye(d, dtype=x.dtype)])  # 2d x d

    def cross(a: torch.Tensor) -> torch.Tensor:  # k_post(a, B_k) for every k: 2d
        return model.posterior(torch.cat([a.unsqueeze(0), B])).distribution.covariance_matrix[0, 1:]

    J = torch.autograd.functional.jacobian(cross, x)  # 2d x d: row k = d k_post(a, B_k) / da
    return ((J[:d] - J[d:]) / (2 * h)).T  # [i, j] = d/da_i d/db_j


def test_gradient_mean_is_the_autograd_gradient_of_the_posterior_mean(model: SingleTaskGP) -> None:
    # The posterior mean includes the fitted constant c, so this also checks that c is subtracted.
    x = torch.rand(5, D, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    xg = x.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(model.posterior(xg).mean.sum(), xg)
    mean, cov = gradient_posterior(model, x)
    assert mean.shape == (5, D) and cov.shape == (5, D, D)
    assert rel(mean, expected) < TOL


def test_gradient_covariance_is_the_mixed_derivative_of_the_posterior_covariance(model: SingleTaskGP) -> None:
    x = torch.rand(3, D, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    _, cov = gradient_posterior(model, x)
    for i in range(3):
        assert rel(cov[i], grad_cov_by_differences(model, x[i])) < TOL
        assert torch.allclose(cov[i], cov[i].T) and torch.linalg.eigvalsh(cov[i]).min() > 0


def test_trace_after_a_batch_is_that_of_the_gp_conditioned_on_the_batch(model: SingleTaskGP) -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.rand(D, generator=g, dtype=torch.float64)
    Z = torch.rand(2, 3, D, generator=g, dtype=torch.float64)  # batch x q x d
    after = gradient_trace_after(model, x, Z)
    before = gradient_posterior(model, x.unsqueeze(0))[1][0].trace()
    assert after.shape == (2,) and (after < before).all()
    model.posterior(x.unsqueeze(0))  # conditioning needs the prediction caches
    for b in range(2):
        values = torch.randn(3, 1, generator=g, dtype=torch.float64)  # the trace does not depend on them
        conditioned = model.condition_on_observations(Z[b], values)
        expected = grad_cov_by_differences(conditioned, x).trace()
        assert abs(float(after[b] - expected)) / float(expected) < TOL


def test_empty_batch_and_block_update_agree_with_a_fresh_factorisation(model: SingleTaskGP) -> None:
    params = KernelParams.from_model(model)
    A = model.train_inputs[0]
    g = torch.Generator().manual_seed(4)
    x = torch.rand(D, generator=g, dtype=torch.float64)
    Z = torch.rand(3, D, generator=g, dtype=torch.float64)
    scale = model.outcome_transform.stdvs.reshape(())
    trace = GradientTrace(params, A, x)
    assert abs(float(scale**2 * trace.trace / gradient_posterior(model, x.unsqueeze(0))[1][0].trace()) - 1) < 1e-10
    expected = float(trace.trace_after(Z.unsqueeze(0))[0])
    trace.extend(Z[:1])
    trace.extend(Z[1:])
    fresh = GradientTrace(params, torch.cat([A, Z]), x)
    assert abs(float(trace.trace) - float(fresh.trace)) < 1e-10 * float(fresh.trace)
    assert abs(float(trace.trace) - expected) < 1e-10 * expected
    assert rel(trace.W, fresh.W) < 1e-10
