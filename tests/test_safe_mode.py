"""Safe mode (issue 30): the seeds are asked first, nothing is asked before a point is known safe, a late or failing
policy re-asks the safest known point (never a random one), and turbo asks only points predicted safe.

The API tests run on SQLite and on the real Postgres (the ``api`` fixture).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from conftest import unique
from localbo.policies import get_policy
from localbo.policies.requests import make_request
from localbo.safety import label_repeats
from test_constraints_api import API, SPACE, ask, refused

SAFE = {
    "objectives": [{"metric": "yield", "direction": "maximize"}],
    "constraints": [{"metric": "t_peak", "op": "<=", "bound": 450}],
}


def create(api: Any, **fields: Any) -> Any:
    return api.post(API, json={"name": unique(), "space": SPACE, "policy": "turbo", "seed": 3} | fields)


def test_seeds_are_checked_at_creation(api: Any) -> None:
    bad = {"max_violation_probability": 0.05, "seeds": [{"a": 0.5, "b": 7}]}
    refused(create(api, **SAFE, safety=bad), "safety.seeds[0].b", "[0")
    missing = {"max_violation_probability": 0.05, "seeds": [{"a": 0.5}]}
    refused(create(api, **SAFE, safety=missing), "safety.seeds[0].b", "missing")
    outside = {"max_violation_probability": 0.05, "seeds": [{"a": 0.9, "b": 1.9}]}
    rule = [{"terms": {"a": 1, "b": 1}, "op": "<=", "bound": 1.5}]
    refused(create(api, **SAFE, safety=outside, parameter_constraints=rule), "safety.seeds[0]", "parameter_constraints")
    refused(create(api, **SAFE, safety={"max_violation_probability": 0.9}), "safety.max_violation_probability")
    refused(create(api, safety={"max_violation_probability": 0.05}), "safety", "outcome constraints")


def test_the_seeds_are_asked_first_then_the_policy_asks_near_them(api: Any) -> None:
    seeds = [{"a": 0.2, "b": 0.4}, {"a": 0.25, "b": 0.5}]
    resp = create(api, **SAFE, safety={"max_violation_probability": 0.05, "seeds": seeds})
    assert resp.status_code == 201, resp.text
    name = resp.json()["name"]
    first = ask(api, name, 2)
    assert [t["source"] for t in first] == ["seed", "seed"] and [t["params"] for t in first] == seeds
    for trial, t_peak in zip(first, (400.0, 410.0), strict=True):
        told = {"yield": trial["params"]["a"], "t_peak": t_peak}
        assert api.post(f"{API}/{name}/trials/{trial['number']}/tell", json={"values": told}).status_code == 200
    (nxt,) = ask(api, name)
    assert nxt["source"] == "turbo", nxt
    display = api.get(f"{API}/{name}/policy").json()["display"]
    assert "safe share of candidates" in display["numbers"]


def test_a_policy_point_asked_before_says_it_is_a_repeat(api: Any) -> None:
    """One seed, nothing measured: the policy can only ask the running seed again; the lab is told so."""
    seeds = [{"a": 0.2, "b": 0.4}]
    name = create(api, **SAFE, safety={"max_violation_probability": 0.05, "seeds": seeds}).json()["name"]
    trials = ask(api, name, 3)
    assert [t["source"] for t in trials] == ["seed", "repeat-safe", "repeat-safe"], trials
    assert all(t["params"] == seeds[0] for t in trials)
    assert api.get(f"{API}/{name}").json()["summary"]["n_fallback"] == 0, "the policy's points, not fallbacks"
    for trial in trials:
        told = {"yield": 0.2, "t_peak": 400.0 + trial["number"]}
        assert api.post(f"{API}/{name}/trials/{trial['number']}/tell", json={"values": told}).status_code == 200
    (nxt,) = ask(api, name)
    assert nxt["source"] == "turbo" and nxt["params"] != seeds[0], nxt


def test_repeats_are_points_asked_before_or_earlier_in_the_plan() -> None:
    asked = [[0.2, 0.4], [0.5, 0.5]]
    plan = [([0.5, 0.5], "turbo", None), ([0.1, 0.1], "turbo", None), ([0.1, 0.1 + 1e-12], "turbo", None),
            ([0.1, 0.1 + 1e-6], "turbo", None)]  # fmt: skip
    sources = [source for _, source, _ in label_repeats(plan, asked)]
    assert sources == ["repeat-safe", "turbo", "repeat-safe", "turbo"]
    assert label_repeats([], asked) == []


def test_without_seeds_nothing_is_asked_until_a_feasible_trial_is_told(make_client: Any) -> None:
    api = make_client(ask_wait_seconds=0.5)
    name = create(api, **SAFE, safety={"max_violation_probability": 0.05}).json()["name"]
    resp = api.post(f"{API}/{name}/ask", json={"count": 1})
    assert resp.status_code == 409 and resp.json()["detail"].startswith("safety:"), resp.text
    assert "POST /api/v1/studies" in resp.json()["detail"]
    known = {"params": {"a": 0.3, "b": 0.3}, "values": {"yield": 0.3, "t_peak": 300.0}}
    assert api.post(f"{API}/{name}/trials", json=known).status_code == 201
    (trial,) = ask(api, name)
    assert trial["source"] in ("turbo", "fallback-safe"), trial
    assert api.get(f"{API}/{name}").json()["summary"]["n_trials"] == 2, "the 409 stored no trial"


def test_a_told_point_that_breaks_the_parameter_constraints_is_never_handed_out_again(make_client: Any) -> None:
    """A lab may tell a trial from outside the parameter constraints; safe mode must not re-ask it as the safest
    known point (it did: every ask was that point, as ``fallback-safe`` and as turbo's centre)."""
    api = make_client(ask_wait_seconds=0.5)
    rule = [{"terms": {"a": 1, "b": 1}, "op": "<=", "bound": 1}]
    name = create(api, **SAFE, safety={"max_violation_probability": 0.05}, parameter_constraints=rule).json()["name"]
    outside = {"params": {"a": 0.9, "b": 1.5}, "values": {"yield": 0.9, "t_peak": 100.0}}
    assert api.post(f"{API}/{name}/trials", json=outside).status_code == 201
    resp = api.post(f"{API}/{name}/ask", json={"count": 1})
    assert resp.status_code == 409 and resp.json()["detail"].startswith("safety:"), "nothing inside is known safe"
    assert "keeps the parameter_constraints" in resp.json()["detail"], "it says why the told trial does not count"
    inside = {"params": {"a": 0.3, "b": 0.3}, "values": {"yield": 0.3, "t_peak": 300.0}}
    assert api.post(f"{API}/{name}/trials", json=inside).status_code == 201
    trials = ask(api, name, 3)
    assert all(t["params"]["a"] + t["params"]["b"] <= 1 + 1e-9 for t in trials), trials
    assert all(t["source"] in ("turbo", "fallback-safe") for t in trials), trials  # fallback-safe: a late plan


def test_turbo_in_safe_mode_centres_on_a_told_point_that_keeps_the_parameter_constraints() -> None:
    """The best told point breaks u1 + u2 <= 1 (added by hand); safe mode re-asks its centre, so the centre is the
    best point inside them (turbo centred on the one outside, and every plan it made was refused)."""
    from localbo.policies.base import Polytope

    polytope = Polytope(
        torch.ones(1, 2, dtype=torch.float64), torch.ones(1, dtype=torch.float64), torch.zeros(0, 2), torch.zeros(0)
    )
    X = torch.tensor([[0.9, 0.9], [0.3, 0.3]], dtype=torch.float64)  # outside (the best), inside
    request = make_request("turbo", X, torch.tensor([-0.9, -0.3]), count=3, config={"candidates": 200})
    request = dataclasses.replace(
        request, C=torch.tensor([[-100.0], [-50.0]]), polytope=polytope, max_violation_probability=0.05
    )
    suggestion = get_policy("turbo")().suggest(request)
    assert bool((suggestion.X.sum(-1) <= 1 + 1e-9).all()), suggestion.X
    assert suggestion.state.region.centre == [0.3, 0.3], "the best told point inside the constraints"


def test_a_failing_policy_in_safe_mode_re_asks_the_safest_known_point(
    make_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Any, request: Any) -> Any:
        raise RuntimeError("the policy broke")

    monkeypatch.setattr(get_policy("turbo"), "suggest", broken)
    api = make_client()
    name = create(api, **SAFE, safety={"max_violation_probability": 0.05}).json()["name"]
    told = (({"a": 0.3, "b": 0.3}, 440.0), ({"a": 0.6, "b": 1.0}, 200.0), ({"a": 0.9, "b": 1.5}, 500.0))
    for params, t_peak in told:
        body = {"params": params, "values": {"yield": params["a"], "t_peak": t_peak}}
        assert api.post(f"{API}/{name}/trials", json=body).status_code == 201
    trials = ask(api, name, 3)
    assert [t["source"] for t in trials] == ["fallback-safe"] * 3
    feasible = [told[0][0], told[1][0]]
    assert all(t["params"] in feasible for t in trials), "never a random point, never the infeasible one"
    assert trials[-1]["params"] == {"a": 0.6, "b": 1.0}, "the widest margin to the bound"
    summary = api.get(f"{API}/{name}").json()["summary"]
    assert summary["n_fallback"] == 3 and "the policy broke" in api.get(f"{API}/{name}").json()["last_policy_error"]


def test_a_seed_told_infeasible_is_never_asked_again(make_client: Any) -> None:
    """The lab's seed broke a limit when measured: it is no longer known safe, so the study says nothing is (409)
    until a feasible trial is told (turbo re-asked it as its centre, the fallback as the first seed)."""
    api = make_client(ask_wait_seconds=0.5)
    seed = {"a": 0.7, "b": 1.4}
    name = create(api, **SAFE, safety={"max_violation_probability": 0.05, "seeds": [seed]}).json()["name"]
    (first,) = ask(api, name)
    assert first["source"] == "seed"
    told = {"values": {"yield": 0.7, "t_peak": 900.0}}  # far past 450
    assert api.post(f"{API}/{name}/trials/{first['number']}/tell", json=told).status_code == 200
    for _ in range(2):
        resp = api.post(f"{API}/{name}/ask", json={"count": 1})
        assert resp.status_code == 409 and "no seed not shown unsafe" in resp.json()["detail"], resp.text
    known = {"params": {"a": 0.3, "b": 0.3}, "values": {"yield": 0.3, "t_peak": 300.0}}
    assert api.post(f"{API}/{name}/trials", json=known).status_code == 201
    trials = ask(api, name, 2)
    assert all(t["params"] != seed for t in trials), trials


def test_a_queued_seed_shown_unsafe_meanwhile_is_not_handed_out(make_client: Any) -> None:
    """The seeds are queued at creation; one told infeasible from outside before it was asked is skipped (it was
    handed out as 'seed'), and so is a seed that expired stale after an infeasible result at it."""
    api = make_client(ask_wait_seconds=0.5)
    seeds = [{"a": 0.1, "b": 0.2}, {"a": 0.2, "b": 0.1}, {"a": 0.3, "b": 0.3}]
    name = create(api, **SAFE, safety={"max_violation_probability": 0.05, "seeds": seeds}).json()["name"]
    (first,) = ask(api, name)
    assert first["params"] == seeds[0]
    broke = {"params": seeds[1], "values": {"yield": 0.2, "t_peak": 900.0}}
    assert api.post(f"{API}/{name}/trials", json=broke).status_code == 201
    resp = api.post(f"{API}/{name}/ask", json={"count": 1})
    assert resp.status_code in (200, 409), resp.text
    if resp.status_code == 200:
        (nxt,) = resp.json()["trials"]
        assert nxt["params"] != seeds[1], nxt


def test_a_stale_retry_of_a_point_shown_unsafe_is_not_handed_out(make_client: Any) -> None:
    from localbo.storage import repository as repo
    from localbo.storage.models import utcnow
    from sqlalchemy import update

    api = make_client(ask_wait_seconds=0.5)
    seed = {"a": 0.7, "b": 1.4}
    name = create(api, **SAFE, safety={"max_violation_probability": 0.05, "seeds": [seed]}).json()["name"]
    first, second = ask(api, name, 2)  # the seed, then the seed again (nothing is known safe but it)
    assert first["params"] == second["params"] == seed
    told = {"values": {"yield": 0.7, "t_peak": 900.0}}
    assert api.post(f"{API}/{name}/trials/{second['number']}/tell", json=told).status_code == 200
    with api.app.state.service.write.begin() as conn:  # the first lease ran out (no clock games, no sleeps)
        study_id = repo.get_study(conn, name).id
        match = (repo.trials.c.study_id == study_id) & (repo.trials.c.number == first["number"])
        conn.execute(update(repo.trials).where(match).values(lease_expires_at=utcnow().replace(year=2000)))
    assert api.post(f"{API}/{name}/trials/{first['number']}/heartbeat").status_code == 409  # stale: offered again
    for _ in range(2):
        resp = api.post(f"{API}/{name}/ask", json={"count": 1})
        assert resp.status_code == 409 and "no point is known safe" in resp.json()["detail"], resp.text


def test_a_seed_that_failed_is_not_known_safe_when_failures_are_avoided(make_client: Any) -> None:
    api = make_client(ask_wait_seconds=0.5)
    seeds = [{"a": 0.7, "b": 1.4}, {"a": 0.2, "b": 0.2}]
    safety = {"max_violation_probability": 0.05, "seeds": seeds}
    name = create(api, **SAFE, safety=safety, failures="avoid").json()["name"]
    first, second = ask(api, name, 2)
    assert [first["params"], second["params"]] == seeds
    failed = api.post(f"{API}/{name}/trials/{first['number']}/tell", json={"state": "failed", "reason": "tripped"})
    assert failed.status_code == 200, failed.text
    for _ in range(2):  # the failed seed is not asked again, by the policy or as the safest known point
        resp = api.post(f"{API}/{name}/ask", json={"count": 1})
        assert resp.status_code in (200, 409), resp.text
        if resp.status_code == 200:
            assert resp.json()["trials"][0]["params"] != seeds[0], resp.json()
    from localbo.domain.outcomes import OutcomeConstraint, Outcomes
    from localbo.safety import safest_known

    outcomes = Outcomes(constraints=(OutcomeConstraint(metric="t", op="<=", bound=450),), failures="avoid")
    assert safest_known(outcomes, [], [[0.7, 0.7], [0.2, 0.1]], failed=[[0.7, 0.7]]) == [0.2, 0.1]
    assert safest_known(outcomes, [], [[0.7, 0.7]], failed=[[0.7, 0.7]]) is None
    assert safest_known(outcomes, [], [[0.7, 0.7]]) == [0.7, 0.7], "failures ignored: a failure says nothing"


def test_turbo_in_safe_mode_never_re_asks_a_centre_that_broke_a_limit() -> None:
    """Nothing feasible in the region's data and no candidate predicted safe: a PolicyError (the engine then asks
    the safest known point or answers 409), never the least violating point again."""
    from localbo.policies.base import PolicyError

    X = torch.tensor([[0.7, 0.7], [0.8, 0.6]], dtype=torch.float64)
    request = make_request("turbo", X, torch.tensor([-0.7, -0.8]), count=2, config={"candidates": 200})
    request = dataclasses.replace(request, C=torch.tensor([[450.0], [500.0]]), max_violation_probability=0.05)
    with pytest.raises(PolicyError, match="broke a limit"):
        get_policy("turbo")().suggest(request)


def test_the_safest_known_point_has_the_widest_relative_margin() -> None:
    from localbo.domain.outcomes import OutcomeConstraint, Outcomes
    from localbo.safety import safest_known

    outcomes = Outcomes(
        constraints=(
            OutcomeConstraint(metric="t", op="<=", bound=450),
            OutcomeConstraint(metric="p", op=">=", bound=0.9),
        )
    )

    class Row:
        def __init__(self, number: int, x: list[float], t: float, p: float) -> None:
            self.number, self.x, self.metrics = number, x, {"t": t, "p": p}

    done = [Row(1, [0.1], 100, 0.91), Row(2, [0.2], 400, 0.99), Row(3, [0.3], 460, 1.0)]
    # margins relative to max(1, |bound|): row 1 min(350/450, 0.01) = 0.01; row 2 min(50/450, 0.09) = 0.09
    assert safest_known(outcomes, done, [[0.9]]) == [0.2]
    assert safest_known(outcomes, [done[2]], [[0.9]]) == [0.9], "no feasible trial: the first seed"
    assert safest_known(outcomes, [], []) is None


def test_turbo_in_safe_mode_violates_rarely_and_still_improves() -> None:
    """Minimise the distance to (0.9, 0.9) with a safe disc of radius 0.35 around the seed (0.3, 0.3)."""
    target, seed = torch.tensor([0.9, 0.9], dtype=torch.float64), torch.tensor([0.3, 0.3], dtype=torch.float64)

    def f(x: torch.Tensor) -> torch.Tensor:
        return ((x - target) ** 2).sum(-1)

    def c(x: torch.Tensor) -> torch.Tensor:
        return ((x - seed) ** 2).sum(-1).sqrt() - 0.35

    X, state, violations = seed.reshape(1, 2), None, 0
    for _ in range(20):
        request = make_request("turbo", X, f(X), count=1, state=state, config={"candidates": 400})
        request = dataclasses.replace(request, C=c(X).reshape(-1, 1), max_violation_probability=0.05)
        suggestion = get_policy("turbo")().suggest(request)
        state, x = suggestion.state, suggestion.X[:1]
        violations += int(c(x) > 0)
        X = torch.cat([X, x])
    feasible = c(X) <= 0
    assert violations <= 2, f"{violations} of 20 points broke the constraint"  # measured: 0 of 30 at seed 0
    assert float(f(X)[feasible].min()) < 0.5 * float(f(seed)), "it moved towards the target inside the safe disc"


def test_a_local_policy_in_safe_mode_starts_at_the_first_seed(api: Any) -> None:
    seed = {"a": 0.2, "b": 0.4}
    body = {"name": unique(), "space": SPACE, "policy": "minucb", "seed": 3, **SAFE}
    resp = api.post(API, json=body | {"safety": {"max_violation_probability": 0.05, "seeds": [seed]}})
    assert resp.status_code == 201, resp.text
    study = resp.json()
    assert study["policy_config"]["x0"] == [0.2, 0.2], "x0 is the seed in the unit cube (b in [0, 2])"
    name = study["name"]
    (first,) = ask(api, name)
    assert first["source"] == "seed" and first["params"] == seed
    tell = {"values": {"yield": 0.2, "t_peak": 300.0}}
    assert api.post(f"{API}/{name}/trials/{first['number']}/tell", json=tell).status_code == 200
    # minucb's first batch measures its iterate x_0, the seed, again (MinUCB's resample of x_t), then explores
    again, explore = ask(api, name, 2)
    assert (again["source"], again["params"]) == ("repeat-safe", seed), again
    assert explore["source"] == "minucb" and explore["params"] != seed, explore


def test_a_safe_turbo_region_that_collapses_restarts_on_all_the_data() -> None:
    """A region below length_min restarts; in safe mode it keeps every result (else it has none to be safe by)."""
    from localbo.policies.turbo_region import Region, TurboState

    X = torch.tensor([[0.3, 0.3], [0.32, 0.31], [0.29, 0.33]], dtype=torch.float64)
    y = torch.tensor([1.0, 1.1, 1.05], dtype=torch.float64)  # no improvement: the region halves below length_min
    C = torch.tensor([[-0.2], [-0.1], [-0.15]], dtype=torch.float64)
    collapsing = Region(length=0.5**7 * 1.01, best=1.0, centre=[0.3, 0.3], failures=100, first_number=1)
    state = TurboState(region=collapsing, counted=[1])
    request = make_request("turbo", X, y, count=1, state=state, config={"candidates": 200, "failure_tolerance": 1})
    request = dataclasses.replace(request, C=C, max_violation_probability=0.05)
    suggestion = get_policy("turbo")().suggest(request)
    assert suggestion.state.restarts == 1 and suggestion.state.region.first_number == 1
    assert suggestion.state.region.centre == [0.3, 0.3], "the best feasible point of all the data"


def test_the_safe_probability_is_of_the_measured_value_with_the_fitted_noise() -> None:
    """A fit that calls part of its data noise is not sure of what will be measured: P(safe) uses the predictive
    sd with the noise (turbo's ``safe_probability`` and the local policies' ``Posterior`` in safe mode alike)."""
    from localbo.policies import gp
    from localbo.policies.closed_form import Posterior
    from localbo.policies.violation import safe_probability

    X = torch.rand(12, 2, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    c = X.sum(-1) - 1.2
    hypers = gp.Hypers(kernel="matern52", lengthscale=[0.5, 0.5], noise=0.3, mean=0.0)
    model = gp.build_model(X, c, "matern52", hypers)
    Z = torch.tensor([[0.3, 0.4], [0.5, 0.5]], dtype=torch.float64)
    with torch.no_grad():
        latent = model.posterior(Z.unsqueeze(-2))
        mu, var = latent.mean.reshape(-1), latent.variance.reshape(-1)
        noise = model.likelihood.noise.reshape(()) * model.outcome_transform.stdvs.reshape(()) ** 2
        measured = torch.distributions.Normal(0.0, 1.0).cdf(-mu / (var + noise).sqrt())
        sure = torch.distributions.Normal(0.0, 1.0).cdf(-mu / var.sqrt())
        assert torch.allclose(safe_probability([model], Z), measured, atol=1e-9)
        assert bool((measured < sure).all()), "the noise makes the model less sure"
        for flag, expected in ((True, var + noise), (False, var)):
            mean, sigma = Posterior(model, measured=flag)(Z)
            assert torch.allclose(mean, mu, atol=1e-8) and torch.allclose(sigma.pow(2), expected, rtol=1e-6)
