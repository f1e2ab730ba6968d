"""The pure policy interface and the two baseline policies (no server, no database)."""

from __future__ import annotations

import torch
from localbo.policies import PolicyState, SuggestRequest, get_policy, registry
from policy_requests import make_request


def request(
    policy: str, *, count: int = 4, dim: int = 3, state: PolicyState | None = None, seed: int = 7
) -> SuggestRequest:
    empty = torch.empty(0, dim, dtype=torch.float64)
    return make_request(policy, empty, torch.empty(0, dtype=torch.float64), count=count, state=state, seed=seed)


def test_registry_lists_the_baselines() -> None:
    assert {"random", "sobol"} <= set(registry())


def test_sobol_is_one_scrambled_sequence_per_seed_continued_across_calls() -> None:
    sobol = get_policy("sobol")()
    whole = sobol.suggest(request("sobol", count=32)).X[:32]
    first = sobol.suggest(request("sobol", count=16))
    second = sobol.suggest(request("sobol", count=16, state=first.state))
    assert torch.equal(torch.cat([first.X, second.X])[:32], whole)
    other_seed = sobol.suggest(request("sobol", count=16, seed=8)).X
    assert not torch.equal(other_seed, whole[:16])
    # low discrepancy: 32 points put exactly 8 in each quadrant of the first two dimensions
    quadrants = ((whole[:, 0] > 0.5).int() * 2 + (whole[:, 1] > 0.5).int()).bincount(minlength=4)
    assert quadrants.tolist() == [8, 8, 8, 8]


def test_random_is_reproducible_per_seed_and_in_the_cube() -> None:
    policy = get_policy("random")()
    a = policy.suggest(request("random", count=5))
    b = policy.suggest(request("random", count=5))
    assert torch.equal(a.X, b.X) and a.X.shape[0] >= 5
    assert ((a.X >= 0) & (a.X <= 1)).all()
    c = policy.suggest(request("random", count=5, state=a.state))
    assert not torch.equal(c.X, a.X)


def test_a_policy_refuses_a_space_it_cannot_run_at_creation() -> None:
    from localbo.errors import InvalidInput
    from localbo.studies import validate_policy

    assert validate_policy("sobol", {}, 3) == {"plan_ahead": 64}
    try:
        validate_policy("sobol", {}, 30_000)
    except InvalidInput as exc:
        assert exc.field == "space" and "at most" in exc.message
    else:
        raise AssertionError("sobol accepted 30000 parameters")
