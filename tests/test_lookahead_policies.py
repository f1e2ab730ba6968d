"""la-minucb (the one-shot look-ahead of the minimum UCB) and mpd (the most probable descent walk).

The look-ahead value is checked against the discrete estimator of algorithms.md 3.5 (closed-form
fantasy means on a grid, plain Monte Carlo) and against BoTorch's own fantasy-model knowledge
gradient with the same value function; the policies run through the engine loop of
``test_local_policies`` and through the HTTP API.
"""

from __future__ import annotations

import math

import pytest
import torch
from botorch.acquisition.knowledge_gradient import qMultiFidelityKnowledgeGradient
from botorch.models import SingleTaskGP
from botorch.sampling.normal import SobolQMCNormalSampler
from conftest import unique
from localbo.policies import SuggestRequest, get_policy, gp
from localbo.policies.gradients import GradientTrace, KernelParams, gradient_posterior
from localbo.policies.la_minucb import LookaheadUCB, lookahead_batch
from localbo.policies.local import LocalState
from localbo.policies.minucb import NegativeUCB
from localbo.policies.mpd import DownhillQuadratic, GradientField, descent, mpd_walk
from policy_requests import make_request
from test_local_policies import drive, event, quadratic

pytestmark = pytest.mark.usefixtures("one_torch_thread")
BETA = 3.0


def branin_like_model(n: int = 12, seed: int = 0) -> SingleTaskGP:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 2, generator=g, dtype=torch.float64)
    y = torch.sin(5 * X[:, 0]) + (X[:, 1] - 0.4).pow(2) * 3 + 0.05 * torch.randn(n, generator=g, dtype=torch.float64)
    return gp.fit_model(X, y)


def grid(k: int = 41) -> torch.Tensor:
    t = torch.linspace(0, 1, k, dtype=torch.float64)
    return torch.cartesian_prod(t, t)


def discrete_estimate(model: SingleTaskGP, Z: torch.Tensor, C: torch.Tensor, samples: int) -> tuple[float, float]:
    """E_eps min_{x in C} mu_D(x) + a(x)' eps + beta sigma_{D+Z}(x) by Monte Carlo: (mean, its standard error).

    a(x) = L^{-1} Cov_D(f(Z), f(x)) with L L' = Cov_D(f(Z)) + noise (the posterior API, y units).
    """
    with torch.no_grad():
        post = model.posterior(torch.cat([C, Z]))
        mean, cov = post.mean.squeeze(-1).detach(), post.covariance_matrix.detach()
    m = C.shape[0]
    noise = (model.likelihood.noise.reshape(()) * model.outcome_transform.stdvs.reshape(()) ** 2).detach()
    S = cov[m:, m:] + noise * torch.eye(Z.shape[0], dtype=torch.float64)
    a = torch.linalg.solve_triangular(torch.linalg.cholesky(S), cov[m:, :m], upper=False)  # q x m
    sigma = (cov.diagonal()[:m] - a.pow(2).sum(0)).clamp_min(0).sqrt()
    eps = torch.randn(samples, Z.shape[0], generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    mins = (mean[:m] + eps @ a + BETA * sigma).min(-1).values
    return float(mins.mean()), float(mins.std() / math.sqrt(samples))


def test_the_one_shot_value_for_a_fixed_batch_agrees_with_the_discrete_estimator_and_botorch_fantasies() -> None:
    model = branin_like_model()
    Z = torch.tensor([[0.3, 0.4], [0.7, 0.45]], dtype=torch.float64)
    C, fantasies = grid(21), 128
    acq = LookaheadUCB(model, BETA, fantasies, seed=3)
    with torch.no_grad():
        # each fantasy's UCB on the grid: one one-shot input per grid point, all inner points there
        ucb = acq.fantasy_ucb(Z.expand(len(C), -1, -1), C.unsqueeze(-2).expand(-1, fantasies, -1))  # |C| x F
        best = ucb.min(0)
        x_inner = C[best.indices]  # F x 2: each fantasy's minimiser on the grid
        one_shot = -float(acq(torch.cat([Z, x_inner]).unsqueeze(0)))
    assert one_shot == pytest.approx(float(best.values.mean()), rel=1e-10)  # the forward is that mean
    one_shot_se = float(best.values.std()) / math.sqrt(fantasies)  # plain MC error; QMC is smaller
    estimate, estimate_se = discrete_estimate(model, Z, C, samples=20_000)
    tolerance = 4 * math.hypot(one_shot_se, estimate_se)
    assert abs(one_shot - estimate) <= tolerance, (one_shot, estimate, tolerance)

    # BoTorch's own one-shot KG (fantasy models) with the same -(mu + beta sigma) value function
    reference = qMultiFidelityKnowledgeGradient(
        model,
        num_fantasies=fantasies,
        sampler=SobolQMCNormalSampler(sample_shape=torch.Size([fantasies]), seed=3),
        valfunc_cls=NegativeUCB,
        valfunc_argfac=lambda model: {"beta": BETA},
    )
    with torch.no_grad():
        fantasy = model.fantasize(Z, reference.sampler)
        post = fantasy.posterior(C)
        botorch_ucb = post.mean.squeeze(-1) + BETA * post.variance.squeeze(-1).sqrt()  # F x |C|
        botorch_inner = C[botorch_ucb.argmin(-1)]
        botorch_value = -float(reference(torch.cat([Z, botorch_inner]).unsqueeze(0)))
    assert botorch_value == pytest.approx(float(botorch_ucb.min(-1).values.mean()), rel=1e-6)
    assert abs(botorch_value - estimate) <= tolerance, (botorch_value, estimate, tolerance)


def test_the_closed_form_fantasies_match_botorch_fantasy_models_for_the_same_outcomes() -> None:
    """With y_i = mu(Z) + L_S eps_i, BoTorch's conditioned model has our fantasy mean and sigma."""
    model = branin_like_model(seed=2)
    Z = torch.tensor([[0.2, 0.8], [0.6, 0.1], [0.9, 0.9]], dtype=torch.float64)
    x = torch.rand(5, 2, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    acq = LookaheadUCB(model, BETA, 5, seed=9)
    with torch.no_grad():
        ours = acq.fantasy_ucb(Z.unsqueeze(0), x.unsqueeze(0))[0]  # fantasy i evaluated at x_i: 5
        post = model.posterior(Z, observation_noise=True)
        L = torch.linalg.cholesky(post.covariance_matrix)
        y = post.mean.squeeze(-1) + acq.base_samples(3) @ L.T  # 5 x 3
        for i in range(5):
            cond = model.condition_on_observations(Z, y[i].unsqueeze(-1))
            p = cond.posterior(x[i : i + 1])
            expected = p.mean.reshape(()) + BETA * p.variance.reshape(()).sqrt()
            assert float(ours[i]) == pytest.approx(float(expected), rel=1e-6, abs=1e-8)


def la_request(d: int, n: int, config: dict, seed: int = 0) -> tuple[SuggestRequest, torch.Tensor]:
    f, _ = quadratic(d)
    g = torch.Generator().manual_seed(seed)
    X = (0.5 + 0.2 * (2 * torch.rand(n, d, generator=g, dtype=torch.float64) - 1)).clamp(0, 1)
    y = f(X) + 0.01 * torch.randn(n, generator=g, dtype=torch.float64)
    x_t = torch.full((d,), 0.5, dtype=torch.float64)
    state = {"t": 2, "x_t": x_t.tolist(), "phase": "batch", "n_start": 0, "batch": n, "extra": 0}
    request = make_request("la-minucb", X, y, state=state, config=config, seed=seed)
    return request, x_t


@pytest.mark.parametrize("region_delta", [None, 0.05])
def test_the_batch_is_the_ucb_step_then_points_in_the_configured_region(region_delta: float | None) -> None:
    d = 4
    request, x_t = la_request(d, 20, {"region_delta": region_delta, "step_delta": 0.1, "fantasies": 8})
    out = get_policy("la-minucb")().suggest(request)
    state = out.state
    assert isinstance(state, LocalState) and state.x_t is not None
    x_next = torch.tensor(state.x_t, dtype=torch.float64)
    info = state.path[-1].info
    assert info["event"] == "step" and out.X.shape == (1 + d, d)  # x_{t+1} once, then b = d points
    assert torch.equal(out.X[0], x_next) and state.t == 3
    assert ((x_next - x_t).abs() <= 0.1 + 1e-12).all(), "the step stays in x_t +- step_delta"
    Z = out.X[1:]
    assert ((Z >= 0) & (Z <= 1)).all()
    if region_delta is not None:
        lo, hi = (x_next - region_delta).clamp(0, 1), (x_next + region_delta).clamp(0, 1)
        assert ((Z >= lo - 1e-12) & (Z <= hi + 1e-12)).all(), "Z outside x_{t+1} +- region_delta"
    assert info["expected_min_ucb"] <= info["ucb_next"] + 0.05  # type: ignore[operator]  # looking ahead does not raise the bound


def test_the_optimised_batch_lowers_the_expected_minimum_below_its_starting_points() -> None:
    model = branin_like_model(seed=5)
    x = torch.tensor([0.5, 0.5], dtype=torch.float64)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    Z, after = lookahead_batch(model, x, 3, bounds, fantasies=16, restarts=2, maxiter=40, seed=1)
    acq = LookaheadUCB(model, BETA, 16, seed=1)
    with torch.no_grad():
        before = -float(acq(torch.cat([torch.full((3, 2), 0.5, dtype=torch.float64), x.expand(16, -1)]).unsqueeze(0)))
    assert Z.shape == (3, 2) and ((Z >= 0) & (Z <= 1)).all()
    assert after < before


@pytest.mark.parametrize("policy", ["la-minucb", "mpd"])
def test_descends_a_noisy_5d_quadratic_with_two_workers(policy: str) -> None:
    d = 5
    f, _ = quadratic(d)
    run = drive(policy, f, d, 72, workers=2, config={"fantasies": 8} if policy == "la-minucb" else None)
    x0 = torch.full((d,), 0.5, dtype=torch.float64)
    x_final = torch.tensor(run.state["x_t"], dtype=torch.float64)
    assert float(f(x_final)) <= 0.25 * float(f(x0)), f"f(x_t) = {float(f(x_final)):.4f} from {float(f(x0)):.4f}"
    events = [event(s) for _, s in run.calls]
    assert events[0] == "start" and "step" in events
    assert [p["t"] for p in run.state["path"]] == list(range(run.state["t"] + 1))  # x_t path for the dashboard


def test_the_downhill_quadratic_is_the_expected_quadratic_form_after_observing_z() -> None:
    d = 3
    g = torch.Generator().manual_seed(3)
    X = torch.rand(15, d, generator=g, dtype=torch.float64)
    model = gp.fit_model(X, (X - 0.3).pow(2).sum(-1))
    x = torch.full((d,), 0.5, dtype=torch.float64)
    params, A = KernelParams.from_model(model), model.train_inputs[0]
    mean, _ = GradientField(model)(x)
    z = torch.tensor([[0.6, 0.4, 0.55]], dtype=torch.float64)
    value = DownhillQuadratic(GradientTrace(params, A, x), mean)(z.unsqueeze(0))
    # the definition: Sigma_z = Cov(grad | A, z); A A' = Sigma - Sigma_z; E = mu' Sigma_z^-1 mu + tr(Sigma_z^-1 A A')
    before, after = GradientTrace(params, A, x), GradientTrace(params, torch.cat([A, z]), x)
    sigma = params.prior_grad_cov() - before.W.T @ before.W
    sigma_z = params.prior_grad_cov() - after.W.T @ after.W
    inv = torch.linalg.inv(sigma_z)
    expected = mean @ inv @ mean + torch.trace(inv @ (sigma - sigma_z))
    assert float(value) == pytest.approx(float(expected), rel=1e-6)


def test_the_mpd_walk_descends_while_the_direction_is_probable() -> None:
    d = 2
    g = torch.Generator().manual_seed(0)
    X = (0.5 + 0.15 * (2 * torch.rand(30, d, generator=g, dtype=torch.float64) - 1)).clamp(0, 1)
    f = lambda x: (x - torch.tensor([0.3, 0.6], dtype=torch.float64)).pow(2).sum(-1)  # noqa: E731
    model = gp.fit_model(X, f(X) + 0.001 * torch.randn(30, generator=g, dtype=torch.float64))
    x_t = torch.full((d,), 0.5, dtype=torch.float64)
    mean_y, cov_y = gradient_posterior(model, x_t.unsqueeze(0))
    direction, p = descent(mean_y[0], cov_y[0])
    assert p > 0.99 and float(direction @ mean_y[0]) < 0  # downhill, as the units do not matter
    x_next, info = mpd_walk(model, x_t)
    assert info["walk_steps"] >= 1 and info["p_end"] < 0.65 <= info["p_start"]
    assert float(f(x_next)) < float(f(x_t))
    assert float((x_next - x_t).norm()) <= 0.01 * info["walk_steps"] + 1e-12  # steps of 0.01, the path may bend
    _, code_info = mpd_walk(model, x_t, probability="code")  # the reference code's probability
    mean, cov = GradientField(model)(x_t)
    w = torch.linalg.solve(cov, mean)
    phi = lambda v: 0.5 * (1 + math.erf(math.sqrt(v / 2)))  # noqa: E731
    assert info["p_start"] == pytest.approx(phi(float(mean @ w)), abs=1e-6)
    assert code_info["p_start"] == pytest.approx(phi(float(mean @ w / w.norm())), abs=1e-6)
    short, short_info = mpd_walk(model, x_t, max_steps=3)
    assert short_info["walk_steps"] == 3 and float((short - x_t).norm()) == pytest.approx(0.03, rel=0.01)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("policy", ["la-minucb", "mpd"])
def test_a_policy_runs_through_the_service_and_shows_its_iterate_path(api, policy: str) -> None:  # noqa: ANN001
    space = {f"x{i}": {"type": "float", "low": -1, "high": 1} for i in range(3)}
    name = unique(policy)
    config = {"fantasies": 4, "lookahead_maxiter": 10} if policy == "la-minucb" else {}
    r = api.post("/api/v1/studies", json={"name": name, "space": space, "policy": policy, "policy_config": config})
    assert r.status_code == 201, r.text
    for _ in range(7):  # two iterations of 4 points (x_t and b = d = 3), in asks of two
        r = api.post(f"/api/v1/studies/{name}/ask", json={"count": 2})
        assert r.status_code == 200, r.text
        for trial in r.json()["trials"]:
            assert trial["source"] == policy, trial
            value = sum((v - 0.3) ** 2 for v in trial["params"].values())
            r = api.post(f"/api/v1/studies/{name}/trials/{trial['number']}/tell", json={"value": value})
            assert r.status_code == 200, r.text
    view = api.get(f"/api/v1/studies/{name}/policy").json()
    assert view["last_policy_error"] is None
    state = view["state"]
    assert state["t"] >= 2 and len(state["x_t"]) == 3
    assert [p["t"] for p in state["path"]] == list(range(state["t"] + 1))


def test_mpd_search_iterations_bounds_each_exploration_search_and_keeps_the_batch_in_its_box() -> None:
    """``search_iterations`` caps L-BFGS-B in each exploration point's search (about 4x cheaper at d = 25 in
    results/probes/*_mpd_search_iterations_100.md); unset, the search is BoTorch's default, the paper's."""
    d = 6
    X = 0.5 + 0.2 * (2 * torch.rand(20, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64) - 1)
    f, _ = quadratic(d)
    y = f(X)
    policy = get_policy("mpd")()
    batches = {}
    for iterations in (None, 1):
        config = {"num_restarts": 2, "raw_samples": 16, "search_iterations": iterations}
        out = policy.suggest(make_request("mpd", X, y, config=config, seed=3))
        assert out.X.shape == (1 + d, d)  # x_t and d exploration points
        assert bool(((out.X[1:] - out.X[0]).abs() <= 0.2 + 1e-12).all())  # inside x_t +- delta
        batches[iterations] = out.X
    assert not torch.equal(batches[None], batches[1])  # one iteration stops the searches short
    with pytest.raises(ValueError, match="search_iterations"):
        get_policy("mpd").Config.model_validate({"search_iterations": 0})
