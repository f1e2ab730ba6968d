"""The local policies under constraints (issue 30): gibo, minucb and la-minucb with parameter constraints, outcome
constraints, failures to avoid and safe mode (policies/local_constraints.py states the rules).

The loop below plays the engine in its simplest form: it asks, evaluates the whole batch the policy returns, and
asks again (the batch's results are then in, so the next call steps). A failed evaluation (inside the failure disc)
gives no value: it is left out of X and handed back in X_failed when the study avoids failures.

Measured on this machine (printed by the tests; one seed each, float64, one torch thread):
- random polytopes (2..20 parameters, 1..5 constraints, equalities among them): every row of the batches, steps and
  top-ups inside within 1e-9 (the largest violation seen ~1e-15);
- the ball problem below from the feasible start (0.3, 0.3), f = 0.5, 8 iterations (24 evaluations): the centre ends
  feasible at f ~0.09-0.19 (gibo slowest), the constrained optimum being 0.0905;
- safe mode (delta = 0.05) from the same start, 8 iterations (22 evaluations): 0 to 2 points violate (minucb 2,
  gibo 0, la-minucb 2 on seed 1), against 4 to 10 of 24 outside safe mode;
- the failure disc, 36 evaluations from (0.85, 0.5): minucb asks 9 points inside with X_failed against 21 without
  (deep ones 4 against 14), gibo 6 against 19 (3 against 15), at the same best value.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest
import torch
from localbo.policies import PolicyError, Suggestion, SuggestRequest, get_policy, gp
from localbo.policies.base import Polytope
from localbo.policies.closed_form import Posterior
from localbo.policies.exploration_region import ExplorationRegion
from localbo.policies.local import LocalState
from localbo.policies.local_constraints import Constraints, Demands, fit_constraints, scaled
from localbo.policies.polytope import sample, violation
from localbo.policies.polytope_steps import into_polytope
from localbo.policies.requests import make_request
from localbo.policies.violation import SAFE_MARGIN
from polytopes import cases

pytestmark = pytest.mark.usefixtures("one_torch_thread")

POLICIES = ["gibo", "minucb", "la-minucb"]
TOL = Polytope.TOLERANCE
FAST = {"num_restarts": 2, "raw_samples": 16, "ascent_steps": 10}
OWN: dict[str, dict[str, Any]] = {
    "gibo": {},
    "minucb": {"step_restarts": 3},
    "la-minucb": {"step_restarts": 3, "fantasies": 4, "lookahead_maxiter": 10},
}


def config(name: str, **more: Any) -> dict[str, Any]:
    return {**FAST, **OWN[name], **more}


def request(
    name: str,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    C: torch.Tensor | None = None,
    polytope: Polytope | None = None,
    X_failed: torch.Tensor | None = None,
    delta: float | None = None,
    **kwargs: Any,
) -> SuggestRequest[Any, Any]:
    made = make_request(name, X, y, **kwargs)
    return dataclasses.replace(made, C=C, polytope=polytope, X_failed=X_failed, max_violation_probability=delta)


def worst(P: Polytope, X: torch.Tensor) -> float:
    """The largest violation of the polytope or of the cube by any row of X."""
    return max(float(violation(P, X).max()), float((-X).max()), float((X - 1).max()))


# --- the problem: a quadratic whose unconstrained minimum lies outside a ball ----------------------------------


def quadratic(X: torch.Tensor) -> torch.Tensor:
    return (X - 0.8).pow(2).sum(-1)


def ball(X: torch.Tensor) -> torch.Tensor:
    """c(x) = |x - 0.2|^2 - 0.3 <= 0; in 2-d the constrained minimum is f = 0.0905 at x_i = 0.2 + sqrt(0.15)."""
    return ((X - 0.2).pow(2).sum(-1) - 0.3).unsqueeze(-1)


OPTIMUM = 2 * (0.6 - 0.15**0.5) ** 2
START = [0.3, 0.3]  # feasible (c = -0.28), f = 0.5


@functools.cache
def run(name: str, iterations: int, *, seed: int = 0, delta: float | None = None) -> tuple[torch.Tensor, LocalState]:
    """``iterations`` batches of the ball problem, each evaluated whole before the next ask: (X, the last state);
    kept for the next test that asks for the same run (do not modify)."""
    policy, cfg = get_policy(name)(), config(name, x0=START)
    X, state = torch.zeros(0, 2, dtype=torch.float64), None
    for _ in range(iterations):
        made = request(name, X, quadratic(X), C=ball(X), delta=delta, state=state, config=cfg, seed=seed)
        suggestion = policy.suggest(made)
        X, state = torch.cat([X, suggestion.X]), suggestion.state
    assert isinstance(state, LocalState)
    return X, state


# --- capabilities, and nothing changes without constraints ----------------------------------------------------


@pytest.mark.parametrize("name", POLICIES)
def test_the_local_policies_declare_every_constraint_capability(name: str) -> None:
    assert {"constraints", "parameter_constraints", "failures", "safety"} <= get_policy(name).handles
    assert "constraints" not in get_policy("mpd").handles, "mpd's walk has no constrained form"


@pytest.mark.parametrize("name", POLICIES)
def test_without_constraints_the_request_takes_the_unconstrained_path(name: str) -> None:
    """A request with no C, polytope, X_failed or safe mode: the same points and state as a policy that declares no
    capability (so ignores all of them) given a constrained request; no X_failed yet is no failure model; the state
    dumps as before (no ``constraints`` key)."""
    cls = get_policy(name)
    blind = type("Blind", (cls,), {"handles": frozenset()})  # not registered: a plain subclass
    X = torch.quasirandom.SobolEngine(3, scramble=True, seed=1).draw(6, dtype=torch.float64)
    y, cfg = quadratic(X), config(name)
    P = Polytope(
        torch.ones(1, 3, dtype=torch.float64), torch.ones(1, dtype=torch.float64), torch.zeros(0, 3), torch.zeros(0)
    )
    plain = cls().suggest(request(name, X, y, config=cfg, seed=2, count=2))
    ignored = blind().suggest(request(name, X, y, C=ball(X), polytope=P, delta=0.1, config=cfg, seed=2, count=2))
    no_failures = cls().suggest(request(name, X, y, X_failed=X[:0], config=cfg, seed=2, count=2))
    assert torch.equal(plain.X, ignored.X) and torch.equal(plain.X, no_failures.X)
    assert plain.state == ignored.state == no_failures.state
    assert "constraints" not in cls.dump_state(plain.state)["data"]


# --- parameter constraints: every point inside ------------------------------------------------------------------


@pytest.mark.parametrize("name", POLICIES)
def test_every_batch_step_and_top_up_stays_inside_random_polytopes(name: str) -> None:
    """Random polytopes, 2..20 parameters, 1..5 constraints (equalities among them): the first batch (x_0 the cube's
    centre, moved inside when it is not), a step on evaluated data (with an outcome constraint on every other case)
    and a top-up while a point is pending, every row inside the polytope and the cube within 1e-9."""
    policy = get_policy(name)()
    cfg = config(name, refit="never", samples_per_iteration=3, ascent_steps=5, fantasies=2, lookahead_maxiter=3)
    cfg = {k: v for k, v in cfg.items() if k in policy.Config.model_fields}
    seen = 0.0
    for i, (P, x0) in enumerate(cases(8, seed=11)):
        d = x0.numel()
        C_of = (lambda X: X[:, :1] - 0.5) if i % 2 else (lambda X: torch.zeros(X.shape[0], 0, dtype=X.dtype))
        first = policy.suggest(request(name, torch.zeros(0, d), torch.zeros(0), polytope=P, config=cfg, seed=i))
        X = torch.cat([first.X, sample(P, 4, torch.Generator().manual_seed(i))])
        step = policy.suggest(
            request(name, X, quadratic(X), C=C_of(X), polytope=P, state=first.state, config=cfg, seed=i, count=2)
        )
        done, out = torch.cat([X, step.X[:-1]]), step.X[-1:]
        top_up = policy.suggest(
            request(
                name, done, quadratic(done), C=C_of(done), polytope=P, pending=out, state=step.state, config=cfg, seed=i
            )
        )
        assert step.state.path[-1].info["event"] == "step" and top_up.state.phase == "top-up"
        for what, points in (("batch", first.X), ("step", step.X), ("top-up", top_up.X)):
            assert worst(P, points) <= TOL, f"case {i} (d={d}, {P.b_ub.numel()} <=, {P.b_eq.numel()} ==): {what}"
            seen = max(seen, worst(P, points))
    print(f"\n{name}: the largest violation of 8 random polytopes: {seen:.2e}")


@pytest.mark.parametrize(("name", "iterations", "more"), [("gibo", 10, {"lr": 1.0}), ("minucb", 8, {})])
def test_the_step_slides_along_the_polytope_to_the_constrained_minimum(name: str, iterations: int, more: dict) -> None:
    """f = |x - (0.9, 0.5)|^2 under u1 + u2 <= 0.8: the minimum is f = 0.18 at (0.6, 0.2), on the boundary; from
    (0.2, 0.2) the projected steps (gibo) and the constrained UCB steps (minucb) go along it, not stop on it."""
    target = torch.tensor([0.9, 0.5], dtype=torch.float64)
    one = torch.ones(1, dtype=torch.float64)
    P = Polytope(one.expand(1, 2), 0.8 * one, torch.zeros(0, 2), torch.zeros(0))
    policy, cfg = get_policy(name)(), config(name, x0=[0.2, 0.2], **more)
    X, state = torch.zeros(0, 2, dtype=torch.float64), None
    for _ in range(iterations):
        suggestion = policy.suggest(request(name, X, (X - target).pow(2).sum(-1), polytope=P, state=state, config=cfg))
        X, state = torch.cat([X, suggestion.X]), suggestion.state
        assert worst(P, suggestion.X) <= TOL
    x_t = torch.tensor(state.x_t, dtype=torch.float64)
    print(f"\n{name}: the centre {x_t.tolist()}, f = {float((x_t - target).pow(2).sum()):.4f} (the minimum 0.18)")
    assert float((x_t - target).pow(2).sum()) < 0.19 and float(x_t.sum()) > 0.78


def test_into_polytope_brings_points_inside_along_their_segment_and_leaves_inside_ones_alone() -> None:
    for i, (P, x0) in enumerate(cases(20, seed=12)):
        d = x0.numel()
        anchor = sample(P, 1, torch.Generator().manual_seed(i))[0]
        X = torch.rand(16, d, generator=torch.Generator().manual_seed(i), dtype=torch.float64) * 1.4 - 0.2
        lo, hi = torch.zeros(d, dtype=torch.float64), torch.ones(d, dtype=torch.float64)
        out = into_polytope(P, X, anchor, lo, hi)
        assert worst(P, out) <= TOL, f"case {i}"
        inner = sample(P, 8, torch.Generator().manual_seed(100 + i))
        assert torch.allclose(into_polytope(P, inner, anchor, lo, hi), inner, atol=1e-9), f"case {i}"


# --- outcome constraints ------------------------------------------------------------------------------------------


def test_the_constraint_models_fit_a_limit_in_thousands_on_bilog_of_its_typical_size() -> None:
    """As turbo's SCBO: a limit measured in thousands (welded_beam's stresses) is fitted as bilog(c / median |c|),
    so the bound is not a step lost next to values far from it; the sign of every value is kept, so feasibility
    and P(c <= 0) mean what they meant."""
    g = torch.Generator().manual_seed(3)
    X = torch.rand(12, 2, generator=g, dtype=torch.float64)
    C = 1000 * torch.expm1(8 * ball(X))  # from about -900 near the centre to 2e6 in the far corner
    demands = Demands(C, None, None, None)

    def fit_outcome(c: torch.Tensor, hypers: Any) -> Any:
        return gp.fit_model(X, c, "rbf", hypers)

    cons = fit_constraints(demands, X, fit_outcome, "rbf", None, 2.0, g, True, 50)
    size = C.abs().median()
    expected = torch.sign(C) * torch.log1p(C.abs() / size)
    assert cons.C is not None and torch.allclose(cons.C, expected)
    assert torch.equal(cons.C <= 0, C <= 0)
    (model,) = cons.models
    target = expected[:, 0]  # as the model holds it: standardised (its Standardize outcome transform)
    assert torch.allclose(model.train_targets.reshape(-1), (target - target.mean()) / target.std())
    assert float(scaled(C, safe=False).abs().max()) < 10  # 2e6 / median becomes about 9 after bilog
    small = torch.tensor([[-0.2], [0.1], [0.3]], dtype=torch.float64)
    assert torch.allclose(scaled(small, safe=False), torch.sign(small) * small.abs().log1p()), "below 1: not scaled"
    assert torch.allclose(scaled(small, safe=True), torch.sign(small) * (small.abs() / 0.2).log1p())  # safe: all


def test_the_closed_form_posterior_is_the_models() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 3, generator=g, dtype=torch.float64)
    for kernel in ("rbf", "matern52"):
        model = gp.fit_model(X, ball(X)[:, 0], kernel)
        Z = torch.rand(20, 3, generator=g, dtype=torch.float64)
        mean, sigma = Posterior(model)(Z)
        with torch.no_grad():
            posterior = model.posterior(Z)
        assert torch.allclose(mean, posterior.mean.reshape(-1), atol=1e-8)
        assert torch.allclose(sigma, posterior.variance.clamp_min(1e-12).sqrt().reshape(-1), atol=1e-6)


@pytest.mark.parametrize("name", POLICIES)
def test_a_run_ends_at_a_feasible_centre_better_than_its_feasible_start(name: str) -> None:
    X, state = run(name, 8)
    x_t = torch.tensor([state.x_t], dtype=torch.float64)
    f_t, c_t = float(quadratic(x_t)[0]), float(ball(x_t)[0, 0])
    feasible = (ball(X) <= 0).all(-1)
    best = float(quadratic(X[feasible]).min())
    print(f"\n{name}: centre f = {f_t:.4f}, c = {c_t:.4f}; best feasible {best:.4f} (optimum {OPTIMUM:.4f}, start 0.5)")
    assert c_t <= 1e-3, "the centre is feasible (within 1e-3 of a constraint of scale 0.3)"
    assert f_t < 0.25, "and well below the start's 0.5"
    assert best < OPTIMUM + 0.1
    assert state.constraints is not None and 0 < (state.constraints.feasible_share or 0) <= 1
    display = get_policy(name).display(state, get_policy(name).Config(), X.shape[0])
    assert display is not None
    assert display.numbers["active constraint"] == 0 and "feasible share" in display.numbers
    assert "P(feasible) at x_t" in display.numbers and "centre" in display.numbers


@pytest.mark.parametrize("name", POLICIES)
def test_safe_mode_asks_few_violating_points_from_a_safe_start(name: str) -> None:
    X, state = run(name, 8, delta=0.05)
    free, free_state = run(name, 8)  # the run of the test above
    violating, free_violating = int((ball(X) > 0).sum()), int((ball(free) > 0).sum())
    print(f"\n{name}: safe mode {violating} of {X.shape[0]} violate, outside it {free_violating} of {free.shape[0]}")
    assert violating <= 0.1 * X.shape[0] and violating <= free_violating
    assert torch.equal(X[0], torch.tensor(START, dtype=torch.float64)), "the first point is the safe seed"
    assert float(quadratic(torch.tensor([state.x_t], dtype=torch.float64))[0]) < 0.5, "and it moves on from there"
    assert state.constraints is not None and free_state.constraints is not None
    held = [h.mean for h in state.constraints.constraint_hypers]
    assert held == [0.0], "safe mode: the constraint's prior mean held at its bound (SafeOpt's), not fitted"
    assert [h.mean for h in free_state.constraints.constraint_hypers] != [0.0], "outside it: fitted"
    display = get_policy(name).display(state, get_policy(name).Config(), X.shape[0])
    assert display is not None and display.numbers["max violation probability"] == 0.05
    share = display.numbers["safe share of the box"]
    assert isinstance(share, float) and 0 < share <= 1


def test_on_the_way_to_feasibility_the_models_mean_violation_leads_not_their_doubt() -> None:
    """Restoration (nothing meets the step's bounds; the centre when nothing is likely feasible) ranks points by
    the models' mean violation, as turbo's SCBO does before its first feasible point: a point far from the data
    has the higher PF only because its sigma is the prior's. In safe mode safety (PF) still leads."""

    def posterior(X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # near the data (x < 0.5): sure, close
        near = X[:, 0] < 0.5
        return torch.where(near, 0.1, 0.5).to(X), torch.where(near, 0.05, 1.0).to(X)

    A, B = [0.4, 0.5], [0.9, 0.5]  # mean violation 0.1, PF 0.02; mean violation 0.5, PF 0.31
    pool = torch.tensor([A, B], dtype=torch.float64)
    free = Constraints(polytope=None, delta=None, beta=2.0, outcome=(posterior,))  # type: ignore[arg-type]
    assert int(free.restoration(pool).argmin()) == 0 and int(free.log_pf(pool).argmax()) == 1
    safe = dataclasses.replace(free, delta=0.05)
    assert int(safe.restoration(pool).argmin()) == 1, "safe mode: the most likely feasible"
    # x_t and the step far from the data, nothing likely feasible: the centre goes to the observation near it
    x_t, x_star = torch.tensor(B, dtype=torch.float64), torch.tensor([0.95, 0.5], dtype=torch.float64)
    X_obs = torch.tensor([[0.3, 0.5]], dtype=torch.float64)
    centre, info = free.centre(x_t, x_star, None, X_obs, torch.zeros(1))
    assert info["centre"] == "safest known point" and torch.equal(centre, X_obs[0])


def test_safe_mode_asks_at_the_contracts_delta_with_turbos_margin_and_stacks_no_row_on_an_unmeasured_centre() -> None:
    """In safe mode a point is safe at PF >= 1 - delta / SAFE_MARGIN (turbo's margin). An exploration row that no
    pull-back makes safe goes to the known-safe point of the box nearest to x_t, not onto x_t: x_t is a step's
    point, not measured yet, and rows stacked on it share its risk. Outside safe mode nothing changes."""
    safe = Constraints(
        polytope=None,
        delta=0.05,
        beta=2.0,
        blind=True,
        known_safe=torch.tensor([[0.5, 0.5], [0.2, 0.9], [0.9, 0.9]], dtype=torch.float64),
    )
    assert safe.threshold == pytest.approx(1 - 0.05 / SAFE_MARGIN) and SAFE_MARGIN == 10
    assert Constraints(polytope=None, delta=None, beta=2.0).threshold == 0.5
    anchor = torch.tensor([0.3, 0.8], dtype=torch.float64)
    region = ExplorationRegion(safe, anchor)
    lo, hi = torch.tensor([0.1, 0.6], dtype=torch.float64), torch.tensor([0.5, 1.0], dtype=torch.float64)
    Z = torch.tensor([[0.45, 0.95], [0.15, 0.65]], dtype=torch.float64)
    out = region.admit(Z, lo, hi)  # blind: nothing is safe, so every row falls back
    assert torch.equal(out, torch.tensor([[0.2, 0.9], [0.2, 0.9]], dtype=torch.float64)), (
        "nearest known safe in the box"
    )
    far = ExplorationRegion(
        dataclasses.replace(safe, known_safe=torch.tensor([[0.9, 0.1]], dtype=torch.float64)), anchor
    )
    assert torch.equal(far.admit(Z, lo, hi), anchor.expand(2, -1)), "none in the box: x_t, as before"


def test_safe_mode_without_results_asks_the_seed_only_and_without_a_seed_nothing() -> None:
    empty, none = torch.zeros(0, 2), torch.zeros(0, 1)
    for name in POLICIES:
        made = request(name, empty, empty[:, 0], C=none, delta=0.05, config=config(name, x0=START), count=3)
        X = get_policy(name)().suggest(made).X
        assert torch.equal(X, torch.tensor([START] * 3, dtype=torch.float64)), name
        unseeded = request(name, empty, empty[:, 0], C=none, delta=0.05, config=config(name))
        with pytest.raises(PolicyError, match="nothing is known safe"):
            get_policy(name)().suggest(unseeded)


# --- failures to avoid ------------------------------------------------------------------------------------------

DISC, RADIUS = torch.tensor([0.45, 0.5], dtype=torch.float64), 0.2
TARGET = torch.tensor([0.55, 0.5], dtype=torch.float64)  # f's minimum, inside the disc; the best rim point f = 0.01


def disc_run(name: str, avoid: bool, budget: int = 36) -> tuple[int, int, float]:
    """(points asked inside the disc, of those more than 0.02 inside, the best completed value)."""
    policy, cfg = get_policy(name)(), config(name, x0=[0.85, 0.5])
    X, failed = torch.zeros(0, 2, dtype=torch.float64), torch.zeros(0, 2, dtype=torch.float64)
    state, asked, inside, deep = None, 0, 0, 0
    while asked < budget:
        y = (X - TARGET).pow(2).sum(-1)
        suggestion = policy.suggest(request(name, X, y, X_failed=failed if avoid else None, state=state, config=cfg))
        state, Z = suggestion.state, suggestion.X
        depth = RADIUS - (Z - DISC).norm(dim=-1)
        asked, inside, deep = asked + Z.shape[0], inside + int((depth >= 0).sum()), deep + int((depth > 0.02).sum())
        X, failed = torch.cat([X, Z[depth < 0]]), torch.cat([failed, Z[depth >= 0]])
    return inside, deep, float((X - TARGET).pow(2).sum(-1).min())


@pytest.mark.parametrize("name", ["gibo", "minucb"])
def test_the_failure_model_steers_the_points_away_from_the_failure_disc(name: str) -> None:
    with_, without = disc_run(name, avoid=True), disc_run(name, avoid=False)
    print(f"\n{name}: inside / deep / best with X_failed {with_}, without {without}")
    assert with_[0] < without[0] and with_[1] <= 0.5 * without[1]
    assert with_[2] <= without[2] + 0.005


def test_the_failure_model_shows_in_the_display_and_the_state() -> None:
    X = torch.tensor([[0.8, 0.5], [0.9, 0.6], [0.7, 0.4], [0.85, 0.3]], dtype=torch.float64)
    failed = torch.tensor([[0.5, 0.5], [0.55, 0.45]], dtype=torch.float64)
    state = None
    for _ in range(2):  # the first call starts, the second steps
        made = request("minucb", X, (X - TARGET).pow(2).sum(-1), X_failed=failed, state=state, config=config("minucb"))
        state = get_policy("minucb")().suggest(made).state
    assert isinstance(state, LocalState) and state.constraints is not None
    assert state.constraints.n_failed == 2 and state.constraints.failure_hypers is not None
    display = get_policy("minucb").display(state, get_policy("minucb").Config(), X.shape[0])
    assert display is not None and "2 failed of 6" in str(display.numbers["failure model"])


# --- determinism ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", POLICIES)
def test_same_seed_same_points_and_the_global_rng_untouched(name: str) -> None:
    """Everything at once (a polytope, an outcome constraint, failures, safe mode): the batch, the step and a
    top-up twice from the same request, and torch's global RNG as it was."""
    P, _ = cases(1, seed=5, d_max=4)[0]
    d = P.A_ub.shape[-1] if P.A_ub.numel() else P.A_eq.shape[-1]
    X = sample(P, 8, torch.Generator().manual_seed(0))
    failed = sample(P, 2, torch.Generator().manual_seed(1))
    cfg = config(name, samples_per_iteration=2)
    C = ball(X)
    C[0, 0] = -0.1  # safe mode starts at a feasible result (with none, nothing is known safe: it refuses)

    def calls() -> list[Suggestion]:
        policy, out, state = get_policy(name)(), [], None
        for pending in (None, None, X[:1]):
            made = request(
                name, X, quadratic(X), C=C, polytope=P, X_failed=failed, delta=0.2, pending=pending,
                state=state, config=cfg, seed=3, count=2,
            )  # fmt: skip
            out.append(policy.suggest(made))
            state = out[-1].state
        return out

    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    first, second = calls(), calls()
    assert torch.equal(torch.random.get_rng_state(), before), "no policy touches torch's global RNG"
    for a, b in zip(first, second, strict=True):
        assert torch.equal(a.X, b.X) and a.state == b.state and worst(P, a.X) <= TOL
    assert d == X.shape[1]
