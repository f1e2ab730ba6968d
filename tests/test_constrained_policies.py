"""Policies under constraints (issue 30): every point inside the parameter constraints, SCBO's choices and
trust region, constrained EI and UCB, determinism and the untouched global RNG.

The property test draws 30 feasible polytopes (2..20 parameters, 1..5 constraints, equalities among them;
tests/polytopes.py) and checks every row of random, sobol, turbo, ei and the fallback points against them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
import torch
from localbo.domain import StudySpace
from localbo.errors import Conflict
from localbo.planning.fallback import fallback_points
from localbo.policies import get_policy
from localbo.policies.base import Polytope, SuggestRequest
from localbo.policies.polytope import violation
from localbo.space import SearchSpace
from policy_requests import make_request
from polytopes import cases

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOL = Polytope.TOLERANCE


def request(
    policy: str,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    C: torch.Tensor | None = None,
    polytope: Polytope | None = None,
    **kwargs: Any,
) -> SuggestRequest[Any, Any]:
    return dataclasses.replace(make_request(policy, X, y, **kwargs), C=C, polytope=polytope)


def inside(P: Polytope, X: torch.Tensor) -> bool:
    in_cube = bool(((X >= -TOL) & (X <= 1 + TOL)).all())
    return in_cube and bool((violation(P, X) <= TOL).all())


def unit_space(d: int) -> StudySpace:
    return StudySpace.continuous(SearchSpace.parse({f"x{i}": {"type": "float", "low": 0, "high": 1} for i in range(d)}))


# --- random, sobol, fallback points --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["random", "sobol"])
def test_random_and_sobol_stay_inside_random_polytopes_and_continue_their_sequence(name: str) -> None:
    policy = get_policy(name)()
    assert "parameter_constraints" in type(policy).handles
    for i, (P, x0) in enumerate(cases(30, seed=2)):
        d = x0.numel()
        first = policy.suggest(request(name, torch.zeros(0, d), torch.zeros(0), polytope=P, seed=i))
        again = policy.suggest(request(name, torch.zeros(0, d), torch.zeros(0), polytope=P, seed=i))
        later = policy.suggest(request(name, torch.zeros(0, d), torch.zeros(0), polytope=P, seed=i, state=first.state))
        assert inside(P, first.X) and inside(P, later.X), f"case {i}"
        assert torch.equal(first.X, again.X), "same study, same points"
        assert not torch.equal(first.X, later.X) and later.state.drawn > first.state.drawn


def test_sobol_keeps_the_sequence_points_that_satisfy_inequalities() -> None:
    P = Polytope(
        torch.ones(1, 2, dtype=torch.float64), torch.ones(1, dtype=torch.float64), torch.zeros(0, 2), torch.zeros(0)
    )
    made = get_policy("sobol")().suggest(request("sobol", torch.zeros(0, 2), torch.zeros(0), polytope=P, seed=4))
    plain = get_policy("sobol")().suggest(request("sobol", torch.zeros(0, 2), torch.zeros(0), seed=4))
    kept = plain.X[plain.X.sum(-1) <= 1]
    assert torch.equal(made.X[: kept.shape[0]], kept), "the same sequence, the points outside left out"
    assert made.state.drawn > made.X.shape[0], "the state counts the Sobol points used, accepted or not"


def test_fallback_points_lie_in_the_box_and_the_polytope_and_in_the_polytope_when_the_box_misses_it() -> None:
    for i, (P, x0) in enumerate(cases(30, seed=3)):
        d = x0.numel()
        box = ((x0 - 0.05).clamp(0, 1).tolist(), (x0 + 0.05).clamp(0, 1).tolist())
        points = fallback_points(unit_space(d), 16, torch.Generator().manual_seed(i), box, polytope=P)
        X = torch.tensor([p[0] for p in points], dtype=torch.float64)
        assert X.shape == (16, d) and inside(P, X), f"case {i}"
        assert bool(((X >= torch.tensor(box[0]) - TOL) & (X <= torch.tensor(box[1]) + TOL)).all())
    P = Polytope(
        torch.ones(1, 2, dtype=torch.float64),
        torch.tensor([0.5], dtype=torch.float64),
        torch.zeros(0, 2),
        torch.zeros(0),
    )
    points = fallback_points(unit_space(2), 8, torch.Generator().manual_seed(0), ([0.6, 0.6], [1.0, 1.0]), polytope=P)
    X = torch.tensor([p[0] for p in points], dtype=torch.float64)
    assert inside(P, X), "the box misses u1 + u2 <= 0.5: points of the polytope instead"
    unconstrained = fallback_points(unit_space(2), 8, torch.Generator().manual_seed(0), ([0.6, 0.6], [1.0, 1.0]))
    assert all(0.6 <= v <= 1.0 for p in unconstrained for v in p[0]), "without a polytope, as before"


def test_fallback_points_are_a_409_naming_the_constraints_when_no_point_holds_them_within_the_tolerance() -> None:
    """u1 + u2 == 1 and u1 + u2 <= 1 - 1e-7: an LP at its default tolerance calls this feasible; no point is within
    1e-9 of both, so no point can be asked (a study stored before creation checked this): a 409, not a 500."""
    P = Polytope(
        torch.ones(1, 2, dtype=torch.float64),
        torch.tensor([1 - 1e-7], dtype=torch.float64),
        torch.ones(1, 2, dtype=torch.float64),
        torch.ones(1, dtype=torch.float64),
    )
    with pytest.raises(Conflict, match="parameter_constraints"):
        fallback_points(unit_space(2), 4, torch.Generator().manual_seed(0), polytope=P)


# --- turbo as SCBO ----------------------------------------------------------------------------------------------


def quadratic(X: torch.Tensor) -> torch.Tensor:
    """f(x) = |x - 0.8|^2: its unconstrained minimum lies outside the ball below."""
    return (X - 0.8).pow(2).sum(-1)


def ball(X: torch.Tensor) -> torch.Tensor:
    """c(x) = |x - 0.2|^2 - 0.3 <= 0: a ball around 0.2; the constrained minimum (d = 3) is f = 0.2416 at
    x_i = 0.2 + sqrt(0.3 / 3)."""
    return ((X - 0.2).pow(2).sum(-1) - 0.3).unsqueeze(-1)


CONSTRAINED_OPTIMUM = 3 * (0.6 - (0.3 / 3) ** 0.5) ** 2


def run(name: str, seed: int, budget: int, d: int = 3, count: int = 1, **config: Any) -> tuple[torch.Tensor, Any]:
    """``budget`` evaluations of the quadratic under the ball constraint: (X, the last state)."""
    policy = get_policy(name)()
    X, state = torch.zeros(0, d, dtype=torch.float64), None
    while X.shape[0] < budget:
        made = request(name, X, quadratic(X), C=ball(X), count=count, state=state, config=config, seed=seed)
        suggestion = policy.suggest(made)
        X, state = torch.cat([X, suggestion.X[:count]]), suggestion.state
    return X[:budget], state


def best_feasible(X: torch.Tensor) -> float:
    feasible = (ball(X) <= 0).all(-1)
    return float(quadratic(X)[feasible].min()) if bool(feasible.any()) else float("inf")


def test_scbo_finds_a_better_feasible_point_than_random_and_centres_on_the_best_feasible() -> None:
    gaps = []
    for seed in range(7, -1, -1):  # seed 0 last: its state is checked below
        X, state = run("turbo", seed=seed, budget=30, count=3, batch_size=3, candidates=500)
        assert best_feasible(X) < best_feasible(run("random", seed=seed, budget=30)[0])
        gaps.append(best_feasible(X) - CONSTRAINED_OPTIMUM)
    # measured over these 8 seeds: 0.001-0.030, mean 0.013
    assert sum(gaps) / len(gaps) < 0.02, gaps
    seen = X[: len(state.counted)]  # the state is from before the last batch's results
    feasible = (ball(seen) <= 0).all(-1)
    centre = seen[feasible][quadratic(seen[feasible]).argmin()]
    assert state.region.centre == centre.tolist() and state.region.violation == 0.0
    display = get_policy("turbo").display(state, get_policy("turbo").Config(), X.shape[0])
    assert display is not None and display.numbers["active constraint"] == 0
    assert 0 < display.numbers["feasible share"] < 1


def test_the_region_centres_on_the_best_feasible_point_or_else_the_least_violating_one() -> None:
    X = torch.tensor([[0.1, 0.1], [0.9, 0.9], [0.5, 0.2], [0.3, 0.6], [0.7, 0.4]], dtype=torch.float64)
    y = torch.tensor([3.0, 0.0, 2.0, 1.0, 5.0], dtype=torch.float64)  # the lowest y is infeasible
    C = torch.tensor([[-1.0, -0.5], [2.0, -1.0], [-0.1, -0.2], [0.5, 0.1], [-1.0, -1.0]], dtype=torch.float64)
    config = {"n_init": 4, "candidates": 64}
    state = get_policy("turbo")().suggest(request("turbo", X, y, C=C, config=config)).state
    assert state.region.centre == X[2].tolist() and state.region.best == 2.0 and state.region.violation == 0.0
    assert state.active_constraint == 0 and state.feasible_share == pytest.approx(0.6)
    none = C.abs() + 0.05  # nothing feasible: the least total violation, row 2 (0.15 + 0.25)
    state = get_policy("turbo")().suggest(request("turbo", X, y, C=none, config=config)).state
    assert state.region.centre == X[2].tolist() and state.region.violation == pytest.approx(0.4)


def test_success_counts_feasibility_first() -> None:
    from localbo.policies.turbo_region import Region, TurboConfig, update

    config, one = TurboConfig(success_tolerance=9, failure_tolerance=9), torch.tensor
    feasible = Region(length=0.8, best=1.0, violation=0.0)
    infeasible = Region(length=0.8, best=1.0, violation=0.5)
    y, v = one([0.5, 2.0], dtype=torch.float64), one([0.3, 0.0], dtype=torch.float64)
    # a feasible 2.0 beats an infeasible centre, not a feasible 1.0 (the 0.5 is infeasible)
    assert update(infeasible, y, config, 2, 2, v).successes == 1
    assert update(feasible, y, config, 2, 2, v).failures == 1
    # nothing feasible: less violation than an infeasible centre is a success, never against a feasible one
    v_bad = one([0.3, 0.4], dtype=torch.float64)
    assert update(infeasible, y, config, 2, 2, v_bad).successes == 1
    assert update(feasible, y, config, 2, 2, v_bad).failures == 1
    assert update(infeasible, y, config, 2, 2, one([0.6, 0.7], dtype=torch.float64)).failures == 1
    # without constraints, as TuRBO
    assert update(feasible, one([0.5], dtype=torch.float64), config, 2, 1).successes == 1


MODEL_CONFIGS: dict[str, dict[str, Any]] = {
    "turbo": {"n_init": 4, "batch_size": 2, "candidates": 256},
    "ei": {"n_init": 4, "candidates": 256, "local_candidates": 32, "restarts": 2},  # point 8: random_every
    "ucb": {"n_init": 4, "candidates": 256, "local_candidates": 32, "restarts": 2},
}
# ei and ucb share their search (global_bo, acqopt), checked on 30 polytopes below: fewer cases here, as a GP
# fit and an SLSQP run take a second or two each on a busy machine
MODEL_CASES = {"turbo": 8, "ei": 6, "ucb": 4}


@pytest.mark.parametrize("name", sorted(MODEL_CONFIGS))
def test_model_based_policies_stay_inside_random_polytopes(name: str) -> None:
    """The design (no data yet) and the model's points (6 results, an outcome constraint) of random polytopes."""
    from localbo.policies.polytope import sample

    policy, config = get_policy(name)(), MODEL_CONFIGS[name]
    for i, (P, x0) in enumerate(cases(MODEL_CASES[name], seed=4)):
        d = x0.numel()
        design = policy.suggest(request(name, torch.zeros(0, d), torch.zeros(0), polytope=P, count=2, config=config))
        assert inside(P, design.X), f"case {i}: the design"
        X = sample(P, 6, torch.Generator().manual_seed(i))
        made = request(name, X, quadratic(X), C=(X[:, :1] - 0.5), polytope=P, count=2, config=config, seed=i)
        assert inside(P, policy.suggest(made).X), f"case {i}: d={d}, {P.b_ub.numel()} <=, {P.b_eq.numel()} =="


def test_the_acquisition_search_stays_inside_random_polytopes_even_when_pushed_against_them() -> None:
    """acqopt.maximize on a score whose maximiser lies outside the cube: the SLSQP refinement ends on the
    boundary of cube ∩ polytope, and its points must still satisfy every constraint within 1e-9."""
    from localbo.policies.acqopt import maximize

    for i, (P, x0) in enumerate(cases(30, seed=6)):
        d = x0.numel()
        target = 2.0 * (x0 > 0.5).double() - 0.5  # outside the cube, beyond x0's nearest corner

        def score(X: torch.Tensor, target: torch.Tensor = target) -> torch.Tensor:
            return -(X - target).pow(2).sum(-1)

        found = maximize(score, d, seed=i, n_candidates=128, restarts=3, around=x0.unsqueeze(0), local=16, polytope=P)
        assert found is not None and inside(P, found.x.unsqueeze(0)), f"case {i}"
        assert found.refined, f"case {i}: SLSQP improved on the best candidate"


# --- constrained EI and UCB ------------------------------------------------------------------------------------


def corner(X: torch.Tensor) -> torch.Tensor:
    """f = |x - (0.9, 0.9)|^2, best in the corner that c = x1 + x2 - 1 <= 0 rules out."""
    return (X - 0.9).pow(2).sum(-1)


@pytest.mark.parametrize("name", ["ei", "ucb"])
def test_constrained_ei_and_ucb_prefer_the_feasible_region(name: str) -> None:
    X = torch.quasirandom.SobolEngine(2, scramble=True, seed=0).draw(16, dtype=torch.float64)
    C = (X.sum(-1) - 1).unsqueeze(-1)
    config = {"n_init": 4, "random_every": 0}
    free = get_policy(name)().suggest(request(name, X, corner(X), config=config)).X[0]
    held = get_policy(name)().suggest(request(name, X, corner(X), C=C, config=config))
    x = held.X[0]
    assert float(free.sum()) > 1.2, "without the constraint: towards the corner"
    assert float(x.sum()) < 1.05 and float(corner(x)) < float(corner(X[C[:, 0] <= 0]).min()) + 0.05
    assert held.state.feasible_share == pytest.approx(float((C <= 0).double().mean()))


def test_the_constrained_ei_score_is_botorchs_log_constrained_ei() -> None:
    from botorch.acquisition.analytic import LogConstrainedExpectedImprovement
    from botorch.models import ModelListGP
    from localbo.policies import gp
    from localbo.policies.ei import EI
    from localbo.policies.global_scores import Context

    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 2, generator=g, dtype=torch.float64)
    C = torch.stack([X.sum(-1) - 1, X[:, 0] - 0.7], -1)
    model = gp.fit_model(X, corner(X), "matern52")
    constraints = tuple(gp.fit_model(X, C[:, j], "matern52") for j in range(2))
    y_best = float(corner(X)[(C <= 0).all(-1)].min())
    ctx = Context(model, y_best, 12, 12, 2, None, g, constraints, None)
    score = EI().acquisition(ctx, EI.Config())
    reference = LogConstrainedExpectedImprovement(
        ModelListGP(model, *constraints), y_best, 0, {1: (None, 0.0), 2: (None, 0.0)}, maximize=False
    )
    Z = torch.rand(50, 2, generator=g, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(score(Z), reference(Z.unsqueeze(-2)), rtol=1e-6, atol=1e-8)


# --- every policy: the same seed, the same points; torch's global RNG untouched --------------------------------


@pytest.mark.parametrize("name", ["random", "sobol", "turbo", "ei", "ucb"])
def test_same_seed_same_points_and_the_global_rng_untouched(name: str) -> None:
    P, x0 = cases(1, seed=5)[0]
    from localbo.policies.polytope import sample

    X = sample(P, 8, torch.Generator().manual_seed(0))
    config = MODEL_CONFIGS.get(name, {})
    made = lambda: request(name, X, quadratic(X), C=ball(X), polytope=P, count=2, config=config, seed=3)  # noqa: E731
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    first, second = get_policy(name)().suggest(made()), get_policy(name)().suggest(made())
    assert torch.equal(torch.random.get_rng_state(), before), "no policy touches torch's global RNG"
    assert torch.equal(first.X, second.X) and inside(P, first.X)


def test_every_policy_that_declares_parameter_constraints_keeps_them() -> None:
    """Whatever else declares "parameter_constraints" (pi, ts, the Lipschitz variants...), on a polytope with an
    equality: the policies above are checked more thoroughly."""
    from localbo.policies import registry
    from localbo.policies.polytope import sample

    polytopes = [(P, x0) for P, x0 in cases(40, seed=8) if P.b_eq.numel()][:1]
    config = {"n_init": 4, "candidates": 128, "local_candidates": 16, "restarts": 2}
    others = [p for p in registry().values() if "parameter_constraints" in p.handles and p.name not in MODEL_CONFIGS]
    assert others, "random and sobol at least"
    for cls in others:
        for i, (P, _) in enumerate(polytopes):
            X = sample(P, 7, torch.Generator().manual_seed(i))
            keys = {k: v for k, v in config.items() if k in cls.Config.model_fields}
            made = request(cls.name, X, quadratic(X), polytope=P, count=2, config=keys, seed=i)
            assert inside(P, cls().suggest(made).X), f"{cls.name}, case {i}"


# --- the noise floor: noise-free evaluations modelled as such -------------------------------------------------


@pytest.mark.parametrize("name", ["ei", "turbo"])
def test_a_lower_noise_floor_reaches_the_objective_and_constraint_gps_and_the_default_stays_botorchs(
    name: str,
) -> None:
    """On noise-free data the fits push the noise down to the floor (against its LogNormal prior, so not every
    GP gets there): BoTorch's 1e-4 by default, lower when the study's ``noise_floor`` allows it."""
    X = torch.quasirandom.SobolEngine(2, scramble=True, seed=1).draw(24, dtype=torch.float64)
    C = torch.stack([X.sum(-1) - 1, X[:, 0] - 0.7], -1)
    y = X[:, 0] + 2 * X[:, 1]  # linear, like the constraints: nothing for noise to explain
    base = {"n_init": 4, "random_every": 0} if name == "ei" else {"n_init": 4, "candidates": 200}
    noises = {}
    for floor in (None, 1e-6):
        config = base if floor is None else {**base, "noise_floor": floor}
        state = get_policy(name)().suggest(request(name, X, y, C=C, config=config)).state
        noises[floor] = [state.hypers.noise, *(h.noise for h in state.constraint_hypers)]
    assert len(noises[None]) == 3 and min(noises[None]) == pytest.approx(1e-4, rel=1e-6), noises
    assert 1e-6 <= min(noises[1e-6]) < 0.5e-4, noises


def test_a_stored_fit_below_the_floor_loads_at_the_floor() -> None:
    """A study whose floor is raised after a fit under a lower one: the stored noise is lifted to the floor."""
    from localbo.policies import gp

    X = torch.rand(10, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    low = gp.Hypers(kernel="matern52", lengthscale=[0.3, 0.4], noise=2e-6, mean=0.0)
    lowered = gp.build_model(X, X.sum(-1), "matern52", low, noise_floor=1e-6)
    assert float(lowered.likelihood.noise.detach()) == pytest.approx(2e-6)
    model = gp.build_model(X, X.sum(-1), "matern52", low)
    assert float(model.likelihood.noise.detach()) == pytest.approx(1e-4, rel=1e-6)


@pytest.mark.parametrize("name", ["ei", "ucb"])
def test_a_limit_spanning_orders_of_magnitude_is_told_apart_at_its_bound(name: str) -> None:
    """ei's and ucb's constraint GPs fit bilog(c / its typical size), as turbo's SCBO does. On a limit that spans
    -19 to 18,500 over the box, the raw values' GP put 29 % of 400 test points on the wrong side of the bound
    (measured), their bilog's 5 %; and the same limit in two units gives the same fit."""
    X = torch.quasirandom.SobolEngine(2, scramble=True, seed=3).draw(20, dtype=torch.float64)
    T = torch.quasirandom.SobolEngine(2, scramble=True, seed=9).draw(400, dtype=torch.float64)
    limit = lambda Z: torch.exp(9 * Z[:, 0] * (Z[:, 1] + 0.5)) - math.exp(3)  # noqa: E731
    config = {"n_init": 4, "random_every": 0}
    got = []
    for unit in (1.0, 7.0):
        C = (unit * limit(X)).unsqueeze(-1)
        got.append(get_policy(name)().suggest(request(name, X, corner(X), C=C, config=config)))
    fits = [torch.tensor(s.state.constraint_hypers[0].lengthscale) for s in got]
    assert torch.allclose(fits[0], fits[1], rtol=1e-3), "the constraint GP the same in either unit"
    cls = get_policy(name)
    (model,) = cls._fit_constraints(  # the policy's own constraint fit, as its acquisition uses it
        X, limit(X).unsqueeze(-1), cls.Config(**config), [], X.device, torch.Generator().manual_seed(0)
    )
    with torch.no_grad():
        predicted_feasible = model.posterior(T).mean.reshape(-1) <= 0
    assert float((predicted_feasible == (limit(T) <= 0)).double().mean()) >= 0.9
