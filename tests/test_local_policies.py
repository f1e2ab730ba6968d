"""The local gradient policies (gibo, minucb, la-minucb, mpd) driven through suggest() by a loop acting as the engine.

The loop keeps a plan queue and a set of running trials: a worker asks when it is free (the plan
first; the policy only when the plan is short, with X_pending = running + planned), and the oldest
running trial is told next. Failed trials would simply never be told.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from localbo.policies import PolicyConfigError, Suggestion, SuggestRequest, get_policy, gp
from localbo.policies.exploration import local_box
from localbo.policies.local import LocalState, _seed
from localbo.policies.minucb import minucb_step, ucb
from policy_requests import make_request
from pydantic import ValidationError

NOISE = 0.01


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@dataclass
class Run:
    calls: list[tuple[SuggestRequest, Any]] = field(default_factory=list)  # (request, suggestion)
    X: torch.Tensor | None = None
    state: dict[str, Any] = field(default_factory=dict)  # the state's data, as the database stores it


def event(suggestion: Suggestion) -> str:
    """What a local policy's call did: start, step, retry (its iterate's path entry) or top-up."""
    state = suggestion.state
    assert isinstance(state, LocalState)
    return "top-up" if state.phase == "top-up" else str(state.path[-1].info["event"])


def drive(
    policy: str,
    f: Any,
    d: int,
    budget: int,
    *,
    workers: int = 1,
    seed: int = 0,
    config: dict[str, Any] | None = None,
    stop_after_calls: int | None = None,
) -> Run:
    """Evaluate ``budget`` points of f + N(0, NOISE^2) with ``workers`` parallel evaluators."""
    cls = get_policy(policy)
    cfg = cls.Config.model_validate(config or {})
    noise = torch.Generator().manual_seed(seed + 1)
    X, y = torch.empty(0, d, dtype=torch.float64), torch.empty(0, dtype=torch.float64)
    plan: list[torch.Tensor] = []
    running: list[torch.Tensor] = []
    run, asked = Run(), 0
    while asked < budget or running:
        if asked < budget and len(running) < workers:
            if not plan:
                pending = torch.stack(running) if running else torch.empty(0, d, dtype=torch.float64)
                request = make_request(cls, X, y, pending=pending, state=run.state, config=cfg, seed=seed, dim=d)
                suggestion = cls().suggest(request)
                assert suggestion.X.shape[0] >= 1 and suggestion.X.shape[1] == d
                assert ((suggestion.X >= 0) & (suggestion.X <= 1)).all(), "a point outside the unit cube"
                run.calls.append((request, suggestion))
                stored = json.loads(json.dumps(cls.dump_state(suggestion.state)))  # as the database stores it
                run.state = stored["data"]
                plan.extend(suggestion.X.unbind(0))
                if stop_after_calls is not None and len(run.calls) >= stop_after_calls:
                    break
            running.append(plan.pop(0))
            asked += 1
        else:
            x = running.pop(0)
            X = torch.cat([X, x.unsqueeze(0)])
            y = torch.cat([y, (f(x) + NOISE * torch.randn((), generator=noise, dtype=torch.float64)).reshape(1)])
    run.X = X
    return run


def quadratic(d: int, seed: int = 100) -> tuple[Any, torch.Tensor]:
    """f(x) = ||x - x*||^2 with x* = 0.5 +- 0.2 per coordinate (inside the cube, not the centre)."""
    signs = torch.randint(0, 2, (d,), generator=torch.Generator().manual_seed(seed)).double() * 2 - 1
    x_star = 0.5 + 0.2 * signs
    return (lambda x: (x - x_star).pow(2).sum(-1)), x_star


@pytest.mark.parametrize("policy", ["minucb", "gibo"])
def test_closes_ninety_percent_of_the_gap_on_a_noisy_10d_quadratic_in_200_evaluations(policy: str) -> None:
    d = 10
    f, _ = quadratic(d)
    run = drive(policy, f, d, 200, workers=2)
    x0 = torch.full((d,), 0.5, dtype=torch.float64)
    x_final = torch.tensor(run.state["x_t"], dtype=torch.float64)
    assert float(f(x_final)) <= 0.1 * float(f(x0)), f"f(x_t) = {float(f(x_final)):.4f} from {float(f(x0)):.4f}"
    events = [event(s) for _, s in run.calls]
    assert events[0] == "start" and "step" in events and "top-up" in events  # two workers outrun the batch


@pytest.mark.parametrize("policy", ["minucb", "gibo", "la-minucb", "mpd"])
def test_a_policy_rebuilt_from_the_stored_state_continues_identically(policy: str) -> None:
    d = 3
    f, _ = quadratic(d)
    run = drive(policy, f, d, 24, workers=3, seed=5)
    cls = get_policy(policy)
    assert {event(s) for _, s in run.calls} >= {"start", "step", "top-up"}
    for request, suggestion in run.calls:
        stored, note = cls.load_state(json.loads(json.dumps(cls.dump_state(request.state))))
        assert note is None
        again = cls().suggest(
            dataclasses.replace(
                request, X=request.X.clone(), y=request.y.clone(), X_pending=request.X_pending.clone(), state=stored
            )
        )
        assert torch.equal(again.X, suggestion.X)
        assert again.state == suggestion.state


def test_the_first_batch_is_x0_then_the_exploration_points_in_the_delta_box() -> None:
    d = 4
    cls = get_policy("minucb")
    config = cls.Config(resamples=2, x0=[0.1, 0.2, 0.95, 0.5])
    empty = torch.empty(0, d, dtype=torch.float64)
    request = make_request(cls, empty, torch.empty(0, dtype=torch.float64), config=config, seed=3)
    out = cls().suggest(request)
    state = out.state
    assert isinstance(state, LocalState)
    x0 = torch.tensor(config.x0, dtype=torch.float64)
    assert out.X.shape == (2 + d, d)  # b1 copies of x_0 + b2 = d exploration points
    assert torch.equal(out.X[:2], x0.expand(2, d))
    assert ((out.X - x0).abs() <= 0.2 + 1e-12).all() and ((out.X >= 0) & (out.X <= 1)).all()
    assert state.t == 0 and state.batch == 2 + d and state.x_t == config.x0
    # an ask for more than a batch gets at least that many points
    big = cls().suggest(dataclasses.replace(request, count=3 * d))
    assert big.X.shape[0] >= 3 * d


def test_the_minucb_step_does_not_raise_the_upper_bound() -> None:
    d = 5
    g = torch.Generator().manual_seed(7)
    f, _ = quadratic(d)
    x_t = torch.full((d,), 0.5, dtype=torch.float64)
    X = (x_t + 0.2 * (2 * torch.rand(30, d, generator=g, dtype=torch.float64) - 1)).clamp(0, 1)
    y = f(X) + NOISE * torch.randn(30, generator=g, dtype=torch.float64)
    model = gp.fit_model(X, y)
    with torch.no_grad():
        post = model.posterior(x_t.unsqueeze(0))
        direct = post.mean.reshape(()) + 3.0 * post.variance.sqrt().reshape(())
    assert torch.allclose(ucb(model, x_t.unsqueeze(0), 3.0), direct.reshape(1))  # beta multiplies sigma
    for half_width in (None, 0.05):
        lo, hi = (0.0, 1.0) if half_width is None else (0.5 - half_width, 0.5 + half_width)
        bounds = torch.tensor([[lo] * d, [hi] * d], dtype=torch.float64)
        x_next, info = minucb_step(model, x_t, 3.0, bounds)
        before, after = ucb(model, torch.stack([x_t, x_next]), 3.0).tolist()
        assert after <= before and info["moved"]
        assert ((x_next >= lo - 1e-12) & (x_next <= hi + 1e-12)).all()
        assert float(f(x_next)) < float(f(x_t))


@pytest.mark.parametrize("step_delta", [0.15, None])
def test_the_minucb_step_lands_on_the_minimum_of_the_bound_on_a_fine_grid(step_delta: float | None) -> None:
    """x_{t+1} of a whole suggest against an independent reference: mu + 3 sigma from BoTorch's posterior
    on a 201 x 201 grid of the step's search region, for the GP fitted as the policy fits it."""
    d, seed = 2, 4
    g = torch.Generator().manual_seed(3)
    x_t = torch.tensor([0.45, 0.6], dtype=torch.float64)
    X = (x_t + 0.25 * (2 * torch.rand(10, d, generator=g, dtype=torch.float64) - 1)).clamp(0, 1)
    y = (
        (X - torch.tensor([0.3, 0.7])).pow(2).sum(-1)
        + 0.3 * torch.sin(9 * X[:, 0])
        + 0.01 * torch.randn(10, generator=g)
    )
    cls = get_policy("minucb")
    config = cls.Config(step_delta=step_delta, num_restarts=2, raw_samples=16)
    state = LocalState(t=0, x_t=x_t.tolist(), n_start=0, batch=10)
    out = cls().suggest(make_request(cls, X, y, state=state, config=config, seed=seed))
    assert isinstance(out.state, LocalState) and out.state.t == 1 and out.state.x_t is not None
    x_next = torch.tensor(out.state.x_t, dtype=torch.float64)

    # the policy's fit: the last N_max = 5 d points, refitted from no hyperparameters, its generator
    model = gp.fit_model(X, y, "rbf", None, n_max=5 * d, generator=torch.Generator().manual_seed(_seed(seed, 1, 0)))
    bounds = local_box(x_t, step_delta) if step_delta is not None else torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    u = torch.linspace(0, 1, 201, dtype=torch.float64)
    grid = torch.cartesian_prod(u, u) * (bounds[1] - bounds[0]) + bounds[0]  # 201^2 x 2
    with torch.no_grad():
        post = model.posterior(grid.unsqueeze(-2))  # a batch of one-point posteriors: no 201^2 x 201^2 covariance
        bound = (post.mean.reshape(-1) + 3.0 * post.variance.clamp_min(1e-12).sqrt().reshape(-1)).double()
        at_next = model.posterior(x_next.unsqueeze(0))
        value = float(at_next.mean + 3.0 * at_next.variance.clamp_min(1e-12).sqrt())
    lowest, spread = float(bound.min()), float(bound.max() - bound.min())
    assert ((x_next >= bounds[0] - 1e-9) & (x_next <= bounds[1] + 1e-9)).all()
    assert abs(value - lowest) <= 1e-3 * spread, (value, lowest, grid[bound.argmin()].tolist(), x_next.tolist())


@pytest.mark.parametrize("policy", ["minucb", "gibo", "la-minucb", "mpd"])
def test_a_config_with_an_unknown_or_bad_key_is_refused(policy: str) -> None:
    cls = get_policy(policy)
    with pytest.raises(ValidationError, match="bogus"):
        cls.Config.model_validate({"bogus": 1})
    with pytest.raises(ValidationError):
        cls.Config.model_validate({"delta": -0.1})
    with pytest.raises(PolicyConfigError, match="x0"):
        cls.check_study(3, cls.Config(x0=[0.5, 0.5]))
    assert cls.Config().delta == 0.2 and cls.Config().samples_per_iteration is None


def test_a_fit_that_stops_in_its_line_search_keeps_where_it_got(monkeypatch) -> None:  # noqa: ANN001
    """L-BFGS-B ending ABNORMAL in its line search (at a noise floor of 1e-8 with clustered points, as on
    SpeedReducer; made certain here by relabelling every minimisation's end so) keeps its end point, a higher
    marginal likelihood than its start: BoTorch's default restores the start and the fit refitted from prior
    draws, keeping whatever they found (constrained_findings.md)."""
    import botorch.optim.core as core

    real_minimize, draws = core.minimize_with_timeout, []

    def stopped_in_line_search(*args: Any, **kwargs: Any) -> Any:
        raw = real_minimize(*args, **kwargs)
        raw.success, raw.message = False, "ABNORMAL: "
        return raw

    real_draw = gp._prior_draw
    monkeypatch.setattr(core, "minimize_with_timeout", stopped_in_line_search)
    monkeypatch.setattr(gp, "_prior_draw", lambda *a: draws.append(1) or real_draw(*a))
    g = torch.Generator().manual_seed(0)
    X = torch.rand(20, 3, generator=g, dtype=torch.float64)
    y = torch.sin(6 * X).sum(-1)

    def mll(model: Any) -> float:
        model.train()
        out = gp.ExactMarginalLogLikelihood(model.likelihood, model)(model(*model.train_inputs), model.train_targets)
        return float(out.detach())

    start = mll(gp.fit_model(X, y, noise_floor=1e-8, fit=False))
    fitted = gp.fit_model(X, y, noise_floor=1e-8)
    assert draws == [], "no refit from a prior draw"
    assert mll(fitted) > start + 0.01  # per point: the start, restored, would be level
