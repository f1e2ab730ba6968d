"""Chaining-UCB's covers and bonus, and the policies on finite spaces (chaining-ucb, ucb, random), without a server."""

from __future__ import annotations

import itertools
import json
import math

import pytest
import torch
from localbo.policies import get_policy, registry
from localbo.policies.base import FiniteSpace, PolicyConfigError, PolicyState
from localbo.policies.covers import chaining_bonus, greedy_cover
from localbo.policies.finite_gp import FinitePosterior, Hypers
from policy_requests import make_request

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def matrix_distance(D: torch.Tensor):  # noqa: ANN201
    """sq_distance over indices into a given distance matrix."""
    return lambda a, b: D[a][:, b].square()


def random_points(n: int, seed: int) -> torch.Tensor:
    return torch.rand(n, 2, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def smallest_cover(D: torch.Tensor, eps: float) -> int:
    """Brute force: the size of the smallest eps-cover of all points with centres among them."""
    n = D.shape[0]
    near = D <= eps
    for size in range(1, n + 1):
        for centres in itertools.combinations(range(n), size):
            if near[list(centres)].any(0).all():
                return size
    return n


@pytest.mark.parametrize("seed", range(12))
def test_greedy_cover_covers_every_point_within_eps_and_within_the_greedy_bound_of_the_smallest(seed: int) -> None:
    X = random_points(11, seed)
    D = torch.cdist(X, X)
    eps = [0.15, 0.25, 0.4][seed % 3]
    points = torch.arange(11)
    centres = greedy_cover(matrix_distance(D), points, eps)
    assert (D[centres].min(0).values <= eps).all()  # an eps-cover
    assert len(set(centres.tolist())) == centres.numel()
    best = smallest_cover(D, eps)
    largest_degree = int((D <= eps).sum(1).max())
    assert best <= centres.numel() <= (1 + math.log(largest_degree)) * best


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.3])
def test_greedy_cover_is_the_same_from_a_dense_graph_stored_pairs_and_rows_recomputed_in_small_blocks(
    eps: float,
) -> None:
    X = random_points(300, 1)
    D = torch.cdist(X, X)
    points = torch.arange(0, 300, 2)  # a subset: local indices differ from candidate indices
    dense = greedy_cover(matrix_distance(D), points, eps)
    stored = greedy_cover(matrix_distance(D), points, eps, dense=0)
    streamed = greedy_cover(matrix_distance(D), points, eps, block=64, max_pairs=0, dense=0)
    assert torch.equal(stored, streamed)
    assert torch.equal(dense, stored)  # the same centres, ties broken alike
    assert set(stored.tolist()) <= set(points.tolist())
    assert (D[stored][:, points].min(0).values <= eps).all()


def posterior(n_candidates: int = 400, n_obs: int = 8, seed: int = 0) -> tuple[FinitePosterior, FiniteSpace]:
    C = random_points(n_candidates, seed)
    obs = torch.randperm(n_candidates, generator=torch.Generator().manual_seed(seed))[:n_obs]
    space = FiniteSpace(C, obs, torch.zeros(0, dtype=torch.long))
    hypers = Hypers(1.0, 0.05**2, 0.0, torch.tensor([0.1], dtype=torch.float64))
    y = torch.sin(6 * C[obs].sum(-1))
    return FinitePosterior(space, "rbf", hypers, obs, y, torch.float64), space


def test_the_chaining_bonus_grows_with_sigma_and_the_covers_are_nested_covers_at_each_level() -> None:
    post, _ = posterior()
    chaining = chaining_bonus(post.sq_distance, post.sigma, t=9, delta=0.05)
    order = torch.argsort(post.sigma)
    assert (torch.diff(chaining.bonus[order]) >= 0).all()  # monotone in sigma
    assert chaining.bonus.max() > chaining.bonus.min() >= 0
    assert chaining.sizes == sorted(chaining.sizes)  # T_i grows with i
    assert chaining.eps[0] == 1.0 and chaining.eps[-1] <= chaining.sigma_min < 2 * chaining.eps[-1]
    # H_i = eps_i sqrt(2 log((|T_i| + 1) i^2 t^2 pi^4 / (36 delta)))
    size = chaining.sizes[1]  # i = 2, t = 9
    expected = 0.5 * math.sqrt(2 * math.log((size + 1) * 2**2 * 9**2 * math.pi**4 / (36 * 0.05)))
    assert chaining.H[1] == pytest.approx(expected)


def test_distances_in_float32_blocks_match_float64() -> None:
    post64, space = posterior()
    hypers = Hypers(1.0, 0.05**2, 0.0, torch.tensor([0.1], dtype=torch.float64))
    y = torch.sin(6 * space.candidates[space.X_index].sum(-1))
    post32 = FinitePosterior(space, "rbf", hypers, space.X_index, y, torch.float32)
    a, b = torch.arange(0, 50), torch.arange(400)
    assert (post32.sq_distance(a, b).double() - post64.sq_distance(a, b)).abs().max() < 1e-4  # d > 0.01 resolved


def run(policy: str, config: dict, candidates: torch.Tensor, steps: int, count: int = 1, **space_kw) -> list[int]:  # noqa: ANN003
    """Ask/tell ``steps`` times directly on the policy; returns the candidate indices asked, in order."""
    cls = get_policy(policy)
    parsed = cls.Config.model_validate(config)
    asked: list[int] = []
    state: PolicyState | None = None
    f = torch.sin(5 * candidates[:, 0]) + candidates[:, 1]
    for _ in range(steps):
        done = torch.tensor(asked, dtype=torch.long)
        space = FiniteSpace(candidates, done, torch.zeros(0, dtype=torch.long), **space_kw)
        request = make_request(cls, candidates[done], f[done], count=count, state=state, config=parsed, seed=3,
                               dim=candidates.shape[1], finite=space)  # fmt: skip
        suggestion = cls().suggest(request)
        assert suggestion.index is not None and suggestion.index.numel() >= count
        assert torch.equal(suggestion.X, candidates[suggestion.index])
        asked += suggestion.index[:count].tolist()
        state = cls.load_state(json.loads(json.dumps(cls.dump_state(suggestion.state))))[0]  # as stored
    return asked


FIXED = {"lengthscale": 0.1, "outputscale": 1.0, "noise_std": 0.05, "n_init": 3}


@pytest.mark.parametrize(
    ("policy", "config"),
    [("chaining-ucb", FIXED), ("chaining-ucb", {"n_init": 3}), ("ucb", FIXED), ("random", {"plan_ahead": 1})],
)
def test_a_policy_never_asks_a_candidate_twice_until_all_are_asked(policy: str, config: dict) -> None:
    candidates = random_points(12, 4)
    asked = run(policy, config, candidates, 12)
    assert sorted(asked) == list(range(12))
    with pytest.raises(Exception, match="every candidate was asked"):
        run(policy, config, candidates, 13)


def test_pending_candidates_are_not_suggested_and_a_batch_holds_distinct_candidates() -> None:
    candidates = random_points(30, 5)
    cls = get_policy("chaining-ucb")
    done = torch.arange(5)
    pending = torch.tensor([5, 6, 7])
    space = FiniteSpace(candidates, done, pending)
    y = candidates[done, 0]
    request = make_request(
        cls, candidates[done], y, pending=candidates[pending], count=4, config={"n_init": 2}, finite=space
    )
    index = cls().suggest(request).index
    assert index is not None and len(set(index.tolist())) == 4
    assert not set(index.tolist()) & set(range(8))


def test_with_repeats_allowed_the_best_candidate_is_asked_again() -> None:
    candidates = random_points(6, 6)
    asked = run("ucb", {**FIXED, "beta": 1e-6}, candidates, 12, allow_repeats=True)
    assert len(set(asked)) < len(asked)


def test_a_precomputed_kernel_and_kernel_features_give_the_same_choices() -> None:
    F = torch.rand(40, 5, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    F = F / F.norm(dim=1, keepdim=True)
    candidates = torch.rand(40, 2, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    config = {"outputscale": 1.0, "noise_std": 0.05, "n_init": 3}
    by_matrix = run("chaining-ucb", config, candidates, 8, kernel=F @ F.T)
    by_features = run("chaining-ucb", config, candidates, 8, features=F)
    assert by_matrix == by_features
    fitted = run("chaining-ucb", {"n_init": 3}, candidates, 6, features=F)  # grid-fitted outputscale and noise
    assert len(set(fitted)) == 6


def test_continuous_only_policies_refuse_a_finite_space_and_name_the_ones_that_run_on_it() -> None:
    finite = sorted(name for name, cls in registry().items() if "finite" in cls.spaces)
    assert finite == ["auto", "chaining-ucb", "random", "ucb"]
    for name in ("minucb", "gibo", "ei", "sobol"):
        with pytest.raises(PolicyConfigError, match="chaining-ucb"):
            get_policy(name).check_space("finite")
    with pytest.raises(PolicyConfigError):
        get_policy("chaining-ucb").check_space("continuous")


def test_a_key_that_only_applies_to_the_other_kind_of_space_is_refused() -> None:
    ucb = get_policy("ucb")
    for key, value in (("lengthscale", 0.1), ("noise_std", 0.1), ("outputscale", 1.0), ("delta", 0.1)):
        config = ucb.Config.model_validate({key: value})
        ucb.check_space("finite", config)
        with pytest.raises(PolicyConfigError, match="only applies to finite search spaces") as info:
            ucb.check_space("continuous", config)
        assert info.value.field == f"policy_config.{key}"
        with pytest.raises(PolicyConfigError, match="only applies to finite"):
            ucb.check_space("categorical", config)
    for key, value in (("candidates", 64), ("restarts", 2), ("random_every", 0), ("liar", "min")):
        config = ucb.Config.model_validate({key: value})
        ucb.check_space("continuous", config)
        with pytest.raises(PolicyConfigError, match="only applies to continuous and categorical") as info:
            ucb.check_space("finite", config)
        assert info.value.field == f"policy_config.{key}"
    both = ucb.Config.model_validate({"beta": 2.0, "kernel": "rbf", "n_init": 4})  # keys of every kind of space
    for kind in ("continuous", "categorical", "finite"):
        ucb.check_space(kind, both)
        ucb.check_space(kind, ucb.Config())  # defaults are never refused, only keys the study set


@pytest.mark.parametrize("n_obs", [8, 40])
def test_the_chaining_bonus_is_the_same_however_the_levels_get_their_graphs(n_obs: int) -> None:
    post, _ = posterior(n_candidates=300, n_obs=n_obs)
    dense = chaining_bonus(post.sq_distance, post.sigma, t=9, delta=0.05)  # every level from the level codes
    ways = {
        "stored pairs, streamed levels above their radius": {"dense": 0},
        "pairs within a smaller radius": {"dense": 0, "max_pairs": 3000},
        "everything streamed": {"max_pairs": 0, "dense": 0, "block": 1000},
        "dense graphs per level where they fit, streamed elsewhere": {"max_pairs": 0, "dense": 20_000},
    }
    for name, kw in ways.items():
        other = chaining_bonus(post.sq_distance, post.sigma, t=9, delta=0.05, **kw)
        assert other.sizes == dense.sizes, name
        assert torch.equal(other.bonus, dense.bonus), name
