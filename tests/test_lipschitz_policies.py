"""Lipschitz BO pieces (bounds, L estimate, truncated acquisitions, accept-reject) and the global policies' protocol.

Pure: no server, no database. Small seeded problems; the numbers checked are exact properties.
"""

from __future__ import annotations

import math

import pytest
import torch
from botorch.acquisition.analytic import ExpectedImprovement, ProbabilityOfImprovement
from localbo.policies import Suggestion, SuggestRequest, get_policy, gp
from localbo.policies.global_bo import GlobalState
from localbo.policies.global_scores import Context, mean_sigma
from localbo.policies.lipschitz import LipschitzBounds, estimate, slope_lower_bound
from localbo.policies.truncated import accepted, truncated_ei, truncated_pi
from policy_requests import make_request
from scipy.integrate import quad
from scipy.stats import norm

pytestmark = pytest.mark.usefixtures("one_torch_thread")
GLOBAL = ["ucb", "ar-ucb", "tucb", "ei", "tei", "pi", "tpi", "ts", "ar-ts"]
LBO = ["ar-ucb", "tucb", "tei", "tpi", "ar-ts"]


def data(n: int, d: int = 2, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.float64)
    return X, 5 + 3 * (X - 0.3).pow(2).sum(-1) + 0.3 * torch.sin(7 * X).sum(-1)


def request(policy: str, X: torch.Tensor, y: torch.Tensor, **kw: object) -> SuggestRequest:
    return make_request(policy, X, y, **{"seed": 3, **kw})  # type: ignore[arg-type]


def state_of(suggestion: Suggestion) -> GlobalState:
    assert isinstance(suggestion.state, GlobalState)
    return suggestion.state


def brute_bounds(Xc: torch.Tensor, X: torch.Tensor, y: torch.Tensor, L: float) -> tuple[list[float], list[float]]:
    lower, upper = [], []
    for x in Xc.tolist():
        reach = [L * math.dist(x, xi) for xi in X.tolist()]
        lower.append(max(yi - r for yi, r in zip(y.tolist(), reach, strict=True)))
        upper.append(min(yi + r for yi, r in zip(y.tolist(), reach, strict=True)))
    return lower, upper


@pytest.mark.filterwarnings("ignore:ExpectedImprovement has known numerical issues")  # the legacy EI on purpose
def test_tei_is_ei_and_tpi_is_pi_when_the_bounds_are_infinite() -> None:
    X, y = data(12)
    model = gp.fit_model(X, y, "matern52")
    Xt = torch.rand(64, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    mean, sigma = mean_sigma(model, Xt)
    inf = torch.full_like(mean, math.inf)
    best = float(y.min())
    with torch.no_grad():
        best_f = torch.tensor(best, dtype=torch.float64)  # a Python float would become a float32 buffer
        ei = ExpectedImprovement(model, best_f=best_f, maximize=False)(Xt.unsqueeze(-2))
        pi = ProbabilityOfImprovement(model, best_f=best_f, maximize=False)(Xt.unsqueeze(-2))
        assert torch.allclose(truncated_ei(mean, sigma, best, -inf, inf), ei, rtol=1e-9, atol=1e-12)
        assert torch.allclose(truncated_pi(mean, sigma, best, -inf, inf), pi, rtol=1e-9, atol=1e-12)
    assert ei.max() > 1e-3  # not a comparison of zeros


@pytest.mark.parametrize(
    ("mean", "sigma", "best", "f_l", "f_u"),
    [
        (0.0, 1.0, 0.5, -1.0, 2.0),  # y* inside the bounds: integrate from f_l to y*
        (0.0, 1.0, 0.5, -3.0, 0.2),  # f_u below y*: integrate from f_l to f_u
        (0.0, 1.0, 0.5, 0.7, 2.0),  # y* below f_l: no improvement possible (the paper's missing case)
        (1.0, 0.3, 0.0, -5.0, 5.0),  # far in the tail
        (0.0, 2.0, 1.0, -0.5, 0.8),
        (3.0, 0.5, 2.9, 2.0, 4.0),  # y* just below the mean
    ],
)
def test_tei_and_tpi_match_numerical_integration(
    mean: float, sigma: float, best: float, f_l: float, f_u: float
) -> None:
    lo, hi = f_l, min(best, f_u)
    ei_ref = quad(lambda f: (best - f) * norm.pdf(f, mean, sigma), lo, hi)[0] if hi > lo else 0.0
    pi_ref = quad(lambda f: norm.pdf(f, mean, sigma), lo, hi)[0] if hi > lo else 0.0

    def t(v: float) -> torch.Tensor:
        return torch.tensor([v], dtype=torch.float64)

    assert float(truncated_ei(t(mean), t(sigma), best, t(f_l), t(f_u))) == pytest.approx(ei_ref, rel=1e-8, abs=1e-14)
    assert float(truncated_pi(t(mean), t(sigma), best, t(f_l), t(f_u))) == pytest.approx(pi_ref, rel=1e-8, abs=1e-14)


def test_bounds_match_their_definition_and_sandwich_a_function_with_its_true_constant() -> None:
    g = torch.Generator().manual_seed(2)
    X = torch.rand(15, 2, generator=g, dtype=torch.float64)

    def f(Z: torch.Tensor) -> torch.Tensor:  # |grad f| <= 2 sqrt(2) + 1 < 4 on the unit square
        return 2 * torch.sin(Z).sum(-1) + Z[:, 0]

    y = f(X)
    Xc = torch.rand(200, 2, generator=g, dtype=torch.float64)
    f_l, f_u = LipschitzBounds(X, y, 4.0)(Xc)
    lower, upper = brute_bounds(Xc, X, y, 4.0)
    assert torch.allclose(f_l, torch.tensor(lower, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(f_u, torch.tensor(upper, dtype=torch.float64), atol=1e-12)
    assert bool((f_l <= f(Xc) + 1e-12).all() and (f(Xc) <= f_u + 1e-12).all())


def test_accept_reject_rejects_exactly_the_points_outside_the_bounds() -> None:
    X, y = data(10)
    Xc = torch.rand(400, 2, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    bounds = LipschitzBounds(X, y, 3.0)
    f_l, f_u = bounds(Xc)
    g = torch.empty_like(f_l).uniform_(float(f_l.min()) - 1, float(f_u.max()) + 1)
    expected = [lo <= v <= hi for v, lo, hi in zip(g.tolist(), f_l.tolist(), f_u.tolist(), strict=True)]
    assert accepted(g, f_l, f_u).tolist() == expected
    assert 0 < sum(expected) < len(expected)
    # the ar-ucb score: -inf exactly where mu - sqrt(beta) sigma leaves [f_l, f_u], else -(mu - sqrt(beta) sigma)
    model = gp.fit_model(X, y, "matern52")
    cls = get_policy("ar-ucb")
    config = cls.Config(beta=4.0)
    ctx = Context(model, float(y.min()), 20, 10, 2, bounds, torch.Generator().manual_seed(0))
    score = cls().acquisition(ctx, config)(Xc)
    mean, sigma = mean_sigma(model, Xc)
    lcb = (mean - 2.0 * sigma).detach()
    inside = (lcb >= f_l) & (lcb <= f_u)
    assert torch.equal(torch.isinf(score), ~inside)
    assert torch.allclose(score[inside], -lcb[inside])
    assert 0 < int(inside.sum()) < len(inside)


def test_the_L_estimate_never_decreases_with_t_and_is_kappa_t_times_the_largest_slope() -> None:
    X, y = data(40, d=3, seed=5)
    previous = 0.0
    for t in range(2, 41):
        est = estimate(X[:t], y[:t], kappa=10.0)
        slopes = [abs(y[i] - y[j]) / torch.dist(X[i], X[j]) for i in range(t) for j in range(t) if i != j]
        assert est.L_lb == pytest.approx(float(max(slopes)), rel=1e-12)
        assert est.L == pytest.approx(10.0 * t * est.L_lb, rel=1e-12) and est.t == t and not est.known
        assert est.L >= previous
        previous = est.L
    # equivariant in y (the paper's "standardise y, divide L by its std"), and a known L is used as is
    assert slope_lower_bound(X, 3 * y - 7) == pytest.approx(3 * slope_lower_bound(X, y), rel=1e-12)
    assert estimate(X, y, known=2.5).L == 2.5
    assert math.isinf(estimate(X[:1], y[:1]).L) and math.isinf(estimate(X[:5], torch.ones(5)).L)


@pytest.mark.parametrize("policy", ["ar-ts", "tei"])
def test_the_protocol_sobol_first_then_every_fourth_point_random_and_lipschitz_checked(policy: str) -> None:
    X, y = data(2)
    cls = get_policy(policy)
    seen = []
    config = cls.Config(n_init=3)  # the design the assertions below count: d + 1 (the default is max(d + 1, 5))
    for _ in range(10):  # n_init = 3 initial points, then every 4th index random
        suggestion = cls().suggest(request(policy, X, y, config=config))
        state = state_of(suggestion)
        x, point = suggestion.X[0], state.points[0]
        seen.append(point.how)
        if point.how == "random":
            assert state.lipschitz is not None and state.lipschitz.L is not None
            lower, _ = LipschitzBounds(X, y, state.lipschitz.L)(x.unsqueeze(0))
            assert float(lower) <= float(y.min())  # could still improve
        X = torch.cat([X, x.unsqueeze(0)])
        y = torch.cat([y, data(1, seed=len(y))[1]])
    assert seen[0] == "init"  # index 2 < n_init = 3
    assert [h for t, h in enumerate(seen, start=2) if (t + 1) % 4 == 0] == ["random"] * 3
    assert {h for t, h in enumerate(seen, start=2) if t >= 3 and (t + 1) % 4} == {"acquisition"}


@pytest.mark.parametrize("policy", GLOBAL)
def test_every_policy_plans_distinct_in_cube_points_for_parallel_evaluators(policy: str) -> None:
    X, y = data(9)
    pending = torch.tensor([[0.31, 0.29]], dtype=torch.float64)  # near the minimum: the obvious next point
    config = {"random_every": 0, "candidates": 256, "local_candidates": 64, "restarts": 2}
    suggestion = get_policy(policy)().suggest(request(policy, X, y, pending=pending, count=3, config=config))
    Z = suggestion.X
    assert Z.shape == (3, 2) and bool(((Z >= 0) & (Z <= 1)).all())
    state = state_of(suggestion)
    assert [p.how for p in state.points] == ["acquisition"] * 3
    everything = torch.cat([Z, pending, X])
    gaps = torch.cdist(everything, everything) + torch.eye(len(everything), dtype=torch.float64)
    assert float(gaps[:3].min()) > 1e-4, "two points of the plan coincide"
    if policy in LBO:
        assert state.lipschitz is not None and state.lipschitz.L is not None and state.lipschitz.L > 0
    again = get_policy(policy)().suggest(request(policy, X, y, pending=pending, count=3, config=config))
    assert torch.equal(again.X, Z)  # seeded: the same request, the same points


def test_a_known_lipschitz_constant_is_used_as_is_and_bad_configs_are_refused() -> None:
    from localbo.errors import InvalidInput
    from localbo.studies import validate_policy

    X, y = data(6)
    suggestion = get_policy("ar-ucb")().suggest(request("ar-ucb", X, y, config={"lipschitz_constant": 7.5}))
    assert state_of(suggestion).model_dump()["lipschitz"] == {
        "L": 7.5,
        "L_lb": pytest.approx(slope_lower_bound(X, y)),
        "t": 6,
        "known": True,
    }
    assert validate_policy("tei", {}, 2)["kappa"] == 10.0
    for policy, config, field in [
        ("tei", {"kappa": -1}, "policy_config.kappa"),
        ("ar-ts", {"lipschitz_constant": 0}, "policy_config.lipschitz_constant"),
        ("ucb", {"kappa": 10}, "policy_config.kappa"),  # the classic policies have no Lipschitz settings
        ("ei", {"liar": "median"}, "policy_config.liar"),
    ]:
        with pytest.raises(InvalidInput) as info:
            validate_policy(policy, config, 2)
        assert info.value.field == field, info.value.message


def test_thompson_paths_of_both_samplers_scatter_around_the_posterior_in_the_units_of_y() -> None:
    from botorch.sampling.pathwise import draw_matheron_paths
    from localbo.policies.ts import pathwise_path, weight_space_path

    X, y = data(12)
    model = gp.fit_model(X, y, "matern52")
    Xt = torch.rand(40, 2, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    mean, sigma = (v.detach() for v in mean_sigma(model, Xt))
    torch.manual_seed(0)  # for BoTorch's own sampler, the reference; ours draw from explicit generators
    draws = 300
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        botorch_paths = draw_matheron_paths(model, sample_shape=torch.Size([draws]))(Xt).reshape(draws, -1)
        pathwise = torch.stack([pathwise_path(model, g)(Xt) for _ in range(draws)])
        weight_space = torch.stack([weight_space_path(model, 300, g)(Xt) for _ in range(draws)])
    for paths in (botorch_paths, pathwise, weight_space):  # the mean within ~7.5 standard errors, the spread 25 %
        assert float(((paths.mean(0) - mean).abs() / sigma).max()) < 7.5 / draws**0.5
        assert 0.75 < float(paths.std(0).mean() / sigma.mean()) < 1.25
