"""The polytope sampler (policies/polytope.py): every point inside, uniform where the answer is known, the box
respected, empty regions found by the LP, determinism from the caller's generator and nothing else.

Uniformity against closed forms: on the triangle u1 + u2 <= 1 the mean is (1/3, 1/3) and a quarter of the mass
has u1 > 1/2; on the simplex u1 + u2 + u3 = 1 the mean is (1/3, 1/3, 1/3).
"""

from __future__ import annotations

import pytest
import torch
from localbo.policies.base import Polytope
from localbo.policies.polytope import EmptyRegion, feasible_or_none, sample, sobol_in, violation
from polytopes import cases

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOL = Polytope.TOLERANCE


def poly(A_ub=(), b_ub=(), A_eq=(), b_eq=(), d: int = 2) -> Polytope:  # noqa: ANN001
    def t(rows, width: int | None) -> torch.Tensor:  # noqa: ANN001
        x = torch.tensor(rows, dtype=torch.float64)
        return x.reshape(-1, width) if width else x.reshape(-1)

    return Polytope(t(A_ub, d), t(b_ub, None), t(A_eq, d), t(b_eq, None))


def inside(P: Polytope, U: torch.Tensor, lower: torch.Tensor | None = None, upper: torch.Tensor | None = None) -> bool:
    lo = torch.zeros(U.shape[1], dtype=U.dtype) if lower is None else lower
    hi = torch.ones(U.shape[1], dtype=U.dtype) if upper is None else upper
    in_box = bool(((U >= lo - TOL) & (U <= hi + TOL)).all())
    return in_box and bool((violation(P, U) <= TOL).all())


def g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_every_point_of_random_polytopes_satisfies_them_within_the_tolerance() -> None:
    for i, (P, x0) in enumerate(cases(30, seed=1)):
        d = x0.numel()
        U = sample(P, 64, g(i))
        assert U.shape == (64, d) and inside(P, U), f"case {i}: d={d}, {P.b_ub.numel()} <=, {P.b_eq.numel()} =="
        # a trust region around x0 (so that it meets the polytope)
        lower, upper = (x0 - 0.1).clamp(0, 1), (x0 + 0.1).clamp(0, 1)
        V = sample(P, 32, g(i), lower, upper)
        assert inside(P, V, lower, upper), f"case {i} in a box"


def test_the_triangle_is_sampled_uniformly() -> None:
    P = poly([[1.0, 1.0]], [1.0])
    U = sample(P, 4000, g())
    assert torch.allclose(U.mean(0), torch.full((2,), 1 / 3, dtype=torch.float64), atol=0.02)
    assert abs(float((U[:, 0] > 0.5).double().mean()) - 0.25) < 0.03


def test_the_simplex_of_an_equality_is_sampled_uniformly_and_exactly() -> None:
    P = poly(A_eq=[[1.0, 1.0, 1.0]], b_eq=[1.0], d=3)
    U = sample(P, 3000, g())
    assert (U.sum(-1) - 1).abs().max() <= TOL and bool((U >= 0).all())
    assert torch.allclose(U.mean(0), torch.full((3,), 1 / 3, dtype=torch.float64), atol=0.02)
    assert abs(float((U[:, 0] > 0.5).double().mean()) - 0.25) < 0.03  # P(u1 > 1/2) = (1/2)^2 on the simplex


def test_a_thin_box_is_sampled_across_its_whole_width() -> None:
    # side 0.001 in one coordinate, 1 in the other: the chain works in the box's own scale
    P = poly([[1.0, 1.0]], [1.2])
    lower, upper = torch.tensor([0.5, 0.0], dtype=torch.float64), torch.tensor([0.501, 1.0], dtype=torch.float64)
    U = sample(P, 2000, g(), lower, upper)
    assert inside(P, U, lower, upper)
    assert float(U[:, 1].max()) > 0.69 and float(U[:, 1].min()) < 0.01  # u2 <= 1.2 - u1 ~ 0.7
    assert 0.45 < float(((U[:, 0] - 0.5) / 0.001).mean()) < 0.55


def test_a_box_with_a_fixed_coordinate_and_an_implicit_equality_still_gives_points_inside() -> None:
    P = poly([[1.0, 1.0, 0.0], [-1.0, -1.0, 0.0]], [0.8, -0.8], d=3)  # u1 + u2 == 0.8, written as two <=
    lower = torch.tensor([0.0, 0.0, 0.4], dtype=torch.float64)
    upper = torch.tensor([1.0, 1.0, 0.4], dtype=torch.float64)
    U = sample(P, 50, g(), lower, upper)
    assert inside(P, U, lower, upper) and bool((U[:, 2] == 0.4).all())


def test_empty_regions_are_found_by_the_lp() -> None:
    P = poly([[1.0, 1.0]], [0.5])
    assert feasible_or_none(P) is not None
    lower, upper = torch.tensor([0.4, 0.4], dtype=torch.float64), torch.ones(2, dtype=torch.float64)
    assert feasible_or_none(P, lower, upper) is None, "u1 + u2 >= 0.8 in the box"
    with pytest.raises(EmptyRegion):
        sample(P, 4, g(), lower, upper)
    assert feasible_or_none(poly(A_eq=[[1.0, 1.0]], b_eq=[2.5])) is None, "an equality the cube cannot meet"
    assert feasible_or_none(poly(A_eq=[[1.0, 0.0], [2.0, 0.0]], b_eq=[0.5, 0.3])) is None, "inconsistent"
    centre = feasible_or_none(poly(A_eq=[[1.0, 0.0], [2.0, 0.0]], b_eq=[0.5, 1.0]))  # dependent rows: fine
    assert centre is not None and abs(float(centre[0]) - 0.5) <= TOL


def test_the_same_generator_gives_the_same_points_and_the_global_rng_is_untouched() -> None:
    P, _ = cases(1, seed=3)[0]
    before = torch.random.get_rng_state()
    a, b = sample(P, 20, g(5)), sample(P, 20, g(5))
    assert torch.equal(a, b) and not torch.equal(a, sample(P, 20, g(6)))
    feasible_or_none(P)
    assert torch.equal(torch.random.get_rng_state(), before)


def test_sobol_rejection_continues_its_sequence_and_gives_way_to_hit_and_run() -> None:
    P = poly([[1.0, 1.0, 1.0]], [1.5], d=3)  # half the cube
    both = sobol_in(P, seed=7, skip=0, k=10)
    assert both is not None
    X, used = both
    first = sobol_in(P, seed=7, skip=0, k=4)
    assert first is not None
    rest = sobol_in(P, seed=7, skip=first[1], k=6)
    assert rest is not None and torch.equal(torch.cat([first[0], rest[0]]), X) and rest[1] == used
    assert inside(P, X) and 10 <= used < 40
    assert sobol_in(poly(A_eq=[[1.0, 1.0, 1.0]], b_eq=[1.0], d=3), 7, 0, 4) is None, "equalities: no Sobol point"
    assert sobol_in(poly([[1.0, 1.0, 1.0]], [0.01], d=3), 7, 0, 4) is None, "a corner holding 2e-7 of the cube"
