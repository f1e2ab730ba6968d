"""The batched exploration (policies/exploration.py, gradients.RankOneTrace) against independent references.

The one-point trace reduction and its gradient against ``GradientTrace.reduction`` (a q x q Cholesky on
a fresh factorisation of the data and the chosen points) and autograd through it; the bordered update
against a fresh factorisation; the greedy batch against the one-point-at-a-time ``optimize_acqf`` search
it replaces, on the same seed.
"""

from __future__ import annotations

import pytest
import torch
from botorch.models import SingleTaskGP
from localbo.policies import gp
from localbo.policies.exploration import GradientInformation, ascend, explore, explore_sequential, local_box
from localbo.policies.gradients import GradientTrace, KernelParams, RankOneTrace

D = 8
TOL = 1e-8


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


@pytest.fixture(scope="module", params=["rbf", "matern52"])
def model(request: pytest.FixtureRequest) -> SingleTaskGP:
    """A MAP-fitted GP on 40 noisy points of a smooth function, clustered as a local run's are."""
    g = torch.Generator().manual_seed(0)
    X = (0.5 + 0.25 * (2 * torch.rand(40, D, generator=g, dtype=torch.float64) - 1)).clamp(0, 1)
    f = torch.sin(3 * X).sum(-1) + (X - 0.3).pow(2).sum(-1)
    y = f + 0.01 * torch.randn(40, generator=g, dtype=torch.float64)
    return gp.fit_model(X, y, kernel=request.param)


def test_reduction_and_gradient_match_the_conditioned_trace_through_every_bordered_update(model: SingleTaskGP) -> None:
    params = KernelParams.from_model(model)
    A = model.train_inputs[0]
    g = torch.Generator().manual_seed(1)
    x = A[0] + 0.05
    trace = RankOneTrace(params, A, x, capacity=2)  # five points: the reserved room grows twice
    inputs = A
    for _ in range(5):
        reference = GradientTrace(params, inputs, x)  # factorised afresh on the data and the points so far
        Z = (x + 0.2 * (2 * torch.rand(16, D, generator=g, dtype=torch.float64) - 1)).clamp(0, 1)
        Zg = Z.clone().requires_grad_(True)
        expected = reference.reduction(Zg.unsqueeze(-2))  # batch x q=1 x d -> batch
        (expected_grad,) = torch.autograd.grad(expected.sum(), Zg)
        value, grad = trace.reduction_and_grad(Z)
        assert rel(value, expected.detach()) < TOL and rel(trace.reduction(Z), expected.detach()) < TOL
        assert rel(grad, expected_grad) < TOL
        assert abs(float(trace.trace - reference.trace)) < TOL * float(reference.trace)
        assert torch.equal(trace.A, inputs)
        z = Z[int(value.argmax())]
        trace.extend(z)
        inputs = torch.cat([inputs, z.unsqueeze(0)])
    assert abs(float(trace.trace - GradientTrace(params, inputs, x).trace)) < TOL * float(trace.trace)


def test_reduction_at_a_data_point_is_no_more_than_its_noise_allows(model: SingleTaskGP) -> None:
    # z on top of an observed input: what it adds is one more noisy look at the same place, much less
    # than a fresh point nearby adds
    params = KernelParams.from_model(model)
    A = model.train_inputs[0]
    trace = RankOneTrace(params, A, A[0])
    values = trace.reduction(torch.stack([A[3], (A[3] + 0.2).clamp(0, 1)]))
    assert (values >= 0).all() and values[0] < values[1]


def test_the_batch_gains_at_least_what_the_one_point_search_gains_on_the_same_seed(model: SingleTaskGP) -> None:
    params = KernelParams.from_model(model)
    A = model.train_inputs[0]
    x = A[-1]
    box = local_box(x, 0.2)
    batched = explore(params, A, x, D, box, seed=11)
    reference = explore_sequential(params, A, x, D, box, seed=11, acquisition=GradientInformation)
    assert batched.trace_before == pytest.approx(reference.trace_before, rel=1e-10)
    gained, expected = batched.trace_before - batched.trace_after, reference.trace_before - reference.trace_after
    assert gained >= expected * (1 - 1e-3), f"batched {gained:.6f} < reference {expected:.6f}"
    assert batched.Z.shape == (D, D)
    assert ((batched.Z >= box[0]) & (batched.Z <= box[1])).all()
    # the reported trace is that of a fresh factorisation with the points
    fresh = GradientTrace(params, torch.cat([A, batched.Z]), x).trace
    assert batched.trace_after == pytest.approx(float(fresh), rel=1e-8)


def test_the_batch_is_deterministic_given_the_seed_and_leaves_the_global_rng_alone(model: SingleTaskGP) -> None:
    params = KernelParams.from_model(model)
    A = model.train_inputs[0]
    x = A[-1]
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = explore(params, A, x, 4, local_box(x, 0.2), seed=5)
    assert torch.equal(torch.get_rng_state(), before)
    torch.rand(10)  # the global stream moves; the batch does not
    assert torch.equal(explore(params, A, x, 4, local_box(x, 0.2), seed=5).Z, first.Z)
    assert not torch.equal(explore(params, A, x, 4, local_box(x, 0.2), seed=6).Z, first.Z)


def test_early_stop_after_the_second_point_unless_more_are_required(model: SingleTaskGP) -> None:
    params = KernelParams.from_model(model)
    A = model.train_inputs[0]
    x = A[-1]
    box = local_box(x, 0.2)
    assert explore(params, A, x, 6, box, epsilon=1e9).Z.shape[0] == 2  # every gain is below epsilon
    assert explore(params, A, x, 6, box, epsilon=1e9, min_count=4).Z.shape[0] == 4
    assert explore(params, A, x, 6, box, epsilon=0.0).Z.shape[0] == 6


def test_ascent_reaches_the_box_constrained_maximum_and_never_ends_below_a_start() -> None:
    centre = torch.tensor([0.3, 1.4, -0.2, 0.5], dtype=torch.float64)  # two coordinates outside the box

    def f(Z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return -(Z - centre).pow(2).sum(-1), -2 * (Z - centre)

    lo, hi = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    starts = torch.rand(6, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    Z, values = ascend(f, starts, lo, hi, 60)
    assert torch.allclose(Z, centre.clamp(0, 1).expand(6, 4), atol=1e-6)
    assert (values >= f(starts)[0]).all() and torch.equal(values, f(Z)[0])
    same, kept = ascend(f, starts, lo, hi, 0)
    assert torch.equal(same, starts) and torch.equal(kept, f(starts)[0])
