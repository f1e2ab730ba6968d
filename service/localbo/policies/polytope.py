"""Points of a polytope inside a box: hit-and-run, with explicit randomness.

The region is P = {u : A_ub u <= b_ub, A_eq u == b_eq, lower <= u <= upper} (``Polytope`` in the unit cube; the
box a trust region, a fallback box, or the cube). ``sample`` draws n points of P by hit-and-run (Smith 1984):

    scale:    u = lower + W v, W = diag(upper - lower), so the box is the unit cube in v (a thin trust region
              is no thinner than the cube to the chain)
    reduce:   the equalities E v = A_eq W v = b_eq - A_eq lower hold on v = v0 + N z, v0 = E^+ (b_eq - A_eq lower),
              N: d x k an orthonormal basis of E's null space (SVD); the rest is G z <= h in R^k
    start:    the Chebyshev centre of {G z <= h}: max r s.t. G_i z + |G_i| r <= h_i (an LP, scipy's HiGHS)
    step:     from z, a direction s ~ N(0, I_k); the chord {z + t s} inside G z <= h is [t_min, t_max];
              z <- z + t s with t ~ U[t_min, t_max]  (uniform on P in the limit, whatever its shape)
    output:   ``chains`` chains run side by side from the centre; each discards ``burn_in`` steps, then keeps
              one point every ``thinning`` steps; rows mapped back to u, clipped to the box and projected onto
              the equalities, so every row satisfies P within ``Polytope.TOLERANCE``

Every random number comes from the caller's ``torch.Generator`` (BoTorch's ``sample_polytope`` and
``get_polytope_samples`` seed torch's process-global RNG; policies never touch it).
``feasible_or_none`` says whether box ∩ polytope is empty (None) and gives its Chebyshev centre otherwise;
``sobol_in`` keeps the rows of a scrambled Sobol sequence that satisfy inequalities only (rejection, bounded);
``design`` is a study's initial design inside the polytope (Sobol by rejection, else hit-and-run).

>>> P = Polytope(torch.ones(1, 2), torch.ones(1), torch.zeros(0, 2), torch.zeros(0))  # u1 + u2 <= 1
>>> U = sample(P, 100, torch.Generator().manual_seed(0))  # 100 x 2
>>> bool((violation(P, U) <= Polytope.TOLERANCE).all())
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import linprog
from torch import Tensor

from localbo.policies.base import PolicyError, Polytope

CHAINS = 32  # the fewest chains run side by side (a step costs about the same for 1 or 32)
RANK_TOLERANCE = 1e-10  # singular values of A_eq W below this times the largest: a dependent equality
SOBOL_MAX_DRAWS = 1 << 16  # the most Sobol points rejection may look at in one call
SOBOL_MIN_ACCEPTANCE = 0.01  # below this share of accepted Sobol points, hit-and-run instead
FLAT = 1e-9  # a Chebyshev radius below this: the region is flat in some direction (implicit equalities)
_LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


class EmptyRegion(PolicyError):
    """The box and the parameter constraints have no point in common."""


@dataclass(frozen=True)
class _Reduced:
    """P in reduced coordinates: u = lower + W (v0 + N z), P = {G z <= h}; ``centre`` its Chebyshev centre."""

    lower: np.ndarray  # d
    width: np.ndarray  # d, upper - lower
    v0: np.ndarray  # d
    N: np.ndarray  # d x k
    G: np.ndarray  # r x k (rows that do not depend on z dropped)
    h: np.ndarray  # r
    centre: np.ndarray  # k
    radius: float

    def to_u(self, Z: np.ndarray) -> np.ndarray:
        """Z: n x k -> n x d."""
        return self.lower + self.width * (self.v0 + Z @ self.N.T)


def _box(d: int, lower: Tensor | None, upper: Tensor | None) -> tuple[np.ndarray, np.ndarray]:
    lo = np.zeros(d) if lower is None else lower.detach().cpu().double().reshape(d).numpy()
    hi = np.ones(d) if upper is None else upper.detach().cpu().double().reshape(d).numpy()
    lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
    return lo, np.maximum(hi, lo)


def _as_numpy(polytope: Polytope, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    def arr(t: Tensor, shape: tuple[int, ...]) -> np.ndarray:
        return t.detach().cpu().double().reshape(shape).numpy()

    k, e = polytope.b_ub.numel(), polytope.b_eq.numel()
    return arr(polytope.A_ub, (k, d)), arr(polytope.b_ub, (k,)), arr(polytope.A_eq, (e, d)), arr(polytope.b_eq, (e,))


def _reduce(polytope: Polytope | None, lo: np.ndarray, hi: np.ndarray) -> _Reduced | None:
    """The reduced form of box ∩ polytope, or None when it is empty."""
    d = lo.shape[0]
    width = hi - lo
    if polytope is None:
        A_ub, b_ub, A_eq, b_eq = np.zeros((0, d)), np.zeros(0), np.zeros((0, d)), np.zeros(0)
    else:
        A_ub, b_ub, A_eq, b_eq = _as_numpy(polytope, d)
    scale = max(1.0, float(np.abs(A_eq).max(initial=0.0)), float(np.abs(b_eq).max(initial=0.0)))
    if A_eq.shape[0]:
        solved = _null_space(A_eq * width, b_eq - A_eq @ lo, scale)  # E v = rhs
        if solved is None:
            return None  # inconsistent equalities (within the box's fixed coordinates)
        v0, N = solved
    else:
        v0, N = np.zeros(d), np.eye(d)
    # inequalities in z: A_ub W (v0 + N z) <= b_ub - A_ub lo, and 0 <= v0 + N z <= 1
    G = np.concatenate([(A_ub * width) @ N, N, -N])
    h = np.concatenate([b_ub - A_ub @ lo - (A_ub * width) @ v0, 1.0 - v0, v0])
    region = _in_subspace(lo, width, v0, N, G, h, scale)
    if region is None or region.radius > FLAT or not region.G.shape[0]:
        return region
    # no ball fits: inequalities that hold with equality on the whole region (x >= 1 on [0, 1], or a + b <= 1 with
    # a + b >= 1) leave no room to a chain that steps off them; they join the equalities (each an LP, only here)
    G, h = region.G, region.h
    tight = np.array([_always_tight(G, h, i, scale) for i in range(G.shape[0])])
    if not tight.any():
        return region
    solved = _null_space(G[tight], h[tight], scale)
    if solved is None:
        return region
    z0, N2 = solved
    v0, N = v0 + N @ z0, N @ N2
    return _in_subspace(lo, width, v0, N, G[~tight] @ N2, h[~tight] - G[~tight] @ z0, scale)


def _null_space(E: np.ndarray, rhs: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray] | None:
    """E x = rhs as x = x0 + N z (N: an orthonormal basis of E's null space), or None when inconsistent."""
    _, S, Vt = np.linalg.svd(E)
    rank = int((S > RANK_TOLERANCE * max(float(S.max(initial=0.0)), 1e-300)).sum())
    x0 = np.linalg.lstsq(E, rhs, rcond=None)[0]
    if np.abs(E @ x0 - rhs).max(initial=0.0) > 1e-9 * scale:
        return None
    return x0, Vt[rank:].T


def _always_tight(G: np.ndarray, h: np.ndarray, i: int, scale: float) -> bool:
    """Whether row i of G z <= h holds with equality at every point of the region (min G_i z = h_i, an LP)."""
    res = linprog(G[i], A_ub=G, b_ub=h, bounds=[(None, None)] * G.shape[1], method="highs", options=_LP_OPTIONS)
    return res.status == 0 and res.fun is not None and float(res.fun) >= h[i] - 1e-9 * scale


def _in_subspace(
    lo: np.ndarray, width: np.ndarray, v0: np.ndarray, N: np.ndarray, G: np.ndarray, h: np.ndarray, scale: float
) -> _Reduced | None:
    """The region {G z <= h} of u = lo + W (v0 + N z): rows the free directions cannot change dropped (None when
    one of them is violated), and its Chebyshev centre."""
    norms = np.linalg.norm(G, axis=1)
    fixed = norms <= 1e-12 * max(1.0, float(norms.max(initial=0.0)))
    if (h[fixed] < -1e-9 * scale).any():
        return None  # a constraint the free directions cannot change, violated
    G, h, norms = G[~fixed], h[~fixed], norms[~fixed]
    k = N.shape[1]
    if k == 0 or G.shape[0] == 0:
        return _Reduced(lo, width, v0, N, G.reshape(-1, k), h, np.zeros(k), 0.0)
    # Chebyshev centre: max r  s.t.  G z + |G_i| r <= h,  0 <= r <= 1
    c = np.zeros(k + 1)
    c[-1] = -1.0
    bounds = [(None, None)] * k + [(0.0, 1.0)]
    res = linprog(c, A_ub=np.c_[G, norms], b_ub=h, bounds=bounds, method="highs", options=_LP_OPTIONS)
    if res.status != 0 or res.x is None:
        return None
    return _Reduced(lo, width, v0, N, G, h, res.x[:k], float(res.x[-1]))


def feasible_or_none(
    polytope: Polytope | None, lower: Tensor | None = None, upper: Tensor | None = None
) -> Tensor | None:
    """A point of box ∩ polytope (its Chebyshev centre, d), or None when they have no point in common (LP).

    ``lower``, ``upper``: d, the box's corners inside [0, 1]^d (the cube when None)."""
    d = _dim(polytope, lower, upper)
    lo, hi = _box(d, lower, upper)
    region = _reduce(polytope, lo, hi)
    if region is None:
        return None
    point = _finish(region.to_u(region.centre[None]), polytope, lo, hi)[0]
    if polytope is not None and float(violation(polytope, torch.from_numpy(point[None]))[0]) > Polytope.TOLERANCE:
        return None
    return torch.from_numpy(point)


def violation(polytope: Polytope, X: Tensor) -> Tensor:
    """``polytope.violation`` in float64 whatever the dtypes of the polytope and of X (n x d -> n)."""
    P = Polytope(
        *(t.detach().to(X.device, torch.float64) for t in (polytope.A_ub, polytope.b_ub, polytope.A_eq, polytope.b_eq))
    )
    return P.violation(X.to(torch.float64))


def _dim(polytope: Polytope | None, lower: Tensor | None, upper: Tensor | None) -> int:
    if polytope is not None:
        return int(polytope.A_ub.shape[-1] if polytope.A_ub.ndim == 2 else polytope.A_eq.shape[-1])
    if lower is not None:
        return int(lower.numel())
    if upper is not None:
        return int(upper.numel())
    raise ValueError("the dimension is unknown: give a polytope or a box")


def _finish(U: np.ndarray, polytope: Polytope | None, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """U: n x d, clipped to the box and projected onto the equalities (rounding only: a few 1e-16)."""
    U = np.clip(U, lo, hi)
    if polytope is not None and polytope.b_eq.numel():
        _, _, A_eq, b_eq = _as_numpy(polytope, U.shape[1])
        free = hi > lo  # coordinates the box lets move
        Af = A_eq[:, free]
        for _ in range(2):
            residual = U @ A_eq.T - b_eq  # n x e
            U[:, free] -= np.linalg.lstsq(Af, residual.T, rcond=None)[0].T
            U = np.clip(U, lo, hi)
    return U


def sample(
    polytope: Polytope | None,
    n: int,
    generator: torch.Generator,
    lower: Tensor | None = None,
    upper: Tensor | None = None,
    *,
    chains: int | None = None,
    burn_in: int | None = None,
    thinning: int | None = None,
) -> Tensor:
    """n x d points of box ∩ polytope by hit-and-run (the module's docstring), float64 on the CPU.

    ``lower``, ``upper``: d (the cube when None). ``burn_in`` steps per chain before the first kept point
    (default 20 + 5 k), then one point every ``thinning`` steps (default k, k the free dimension; candidates
    for an acquisition, which need cover more than independence, may take 1). ``chains`` run side by side
    (default: as many as make the burn-in cost about what the kept points cost, n thinning / burn_in, at
    least 32). Raises ``EmptyRegion`` when box ∩ polytope is empty. Deterministic given the generator's state.
    """
    d = _dim(polytope, lower, upper)
    lo, hi = _box(d, lower, upper)
    if n <= 0:
        return torch.zeros(0, d, dtype=torch.float64)
    region = _reduce(polytope, lo, hi)
    if region is None:
        raise EmptyRegion("the box and the parameter constraints have no point in common")
    k = region.N.shape[1]
    burn = 20 + 5 * k if burn_in is None else burn_in
    thin = max(1, k if thinning is None else thinning)
    chains = max(1, min(chains or max(CHAINS, n * thin // max(burn, 1)), n))
    per_chain = math.ceil(n / chains)
    steps = burn + (per_chain - 1) * thin + 1
    # every random number first, from the generator: directions steps x chains x k, positions steps x chains
    directions = torch.randn(steps, chains, k, generator=generator, dtype=torch.float64).numpy()
    positions = torch.rand(steps, chains, generator=generator, dtype=torch.float64).numpy()
    Z = np.repeat(region.centre[None], chains, axis=0)  # chains x k
    kept: list[np.ndarray] = []
    G, h = region.G, region.h
    for step in range(steps):
        if k and G.shape[0]:
            S = directions[step]  # chains x k
            slack = np.maximum(h[None] - Z @ G.T, 0.0)  # chains x r
            a = S @ G.T  # chains x r: the rate at which each row's slack is used along the direction
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = slack / a
            t_max = np.where(a > 1e-14, ratio, np.inf).min(axis=1)
            t_min = np.where(a < -1e-14, ratio, -np.inf).max(axis=1)
            ok = np.isfinite(t_max) & np.isfinite(t_min) & (t_max > t_min)
            t = np.where(ok, t_min + positions[step] * (t_max - t_min), 0.0)
            Z = Z + t[:, None] * S
        if step >= burn and (step - burn) % thin == 0:
            kept.append(Z.copy())
    Zs = np.stack(kept, axis=1).reshape(-1, k)[:n]  # chain-major: each chain's points in order
    U = _finish(region.to_u(Zs), polytope, lo, hi)
    if polytope is not None:
        bad = violation(polytope, torch.from_numpy(U)).numpy() > Polytope.TOLERANCE
        if bad.any():  # rounding beyond repair (huge coefficients): the centre instead
            centre = _finish(region.to_u(region.centre[None]), polytope, lo, hi)
            if float(violation(polytope, torch.from_numpy(centre))[0]) > Polytope.TOLERANCE:
                raise EmptyRegion("no point of the parameter constraints is found within their tolerance")
            U[bad] = centre[0]
    return torch.from_numpy(np.ascontiguousarray(U))


def sobol_in(
    polytope: Polytope,
    seed: int,
    skip: int,
    k: int,
    lower: Tensor | None = None,
    upper: Tensor | None = None,
    max_draws: int = SOBOL_MAX_DRAWS,
) -> tuple[Tensor, int] | None:
    """The first ``k`` points of the scrambled Sobol sequence (``seed``), from index ``skip`` on, that lie in
    box ∩ polytope (k x d), and the index after the last one used; None when the polytope has equalities (no
    Sobol point satisfies them) or fewer than ``k`` are accepted (share below ``SOBOL_MIN_ACCEPTANCE``, or
    more than ``max_draws`` points needed)."""
    if polytope.b_eq.numel():
        return None
    d = _dim(polytope, lower, upper)
    lo_np, hi_np = _box(d, lower, upper)
    lo, hi = torch.from_numpy(lo_np), torch.from_numpy(hi_np)
    engine = torch.quasirandom.SobolEngine(d, scramble=True, seed=seed)
    if skip:
        engine.fast_forward(skip)
    chunk = max(256, 4 * k)
    found: list[Tensor] = []
    accepted, drawn = 0, 0
    while drawn < max_draws:
        size = min(chunk, max_draws - drawn)
        X = lo + (hi - lo) * engine.draw(size, dtype=torch.float64)
        ok = violation(polytope, X) <= 0
        index = ok.nonzero()[:, 0]
        need = k - accepted
        if index.numel() >= need:
            found.append(X[index[:need]])
            return torch.cat(found), skip + drawn + int(index[need - 1]) + 1
        found.append(X[index])
        accepted += index.numel()
        drawn += size
        if drawn >= 4 * chunk and accepted < SOBOL_MIN_ACCEPTANCE * drawn:
            return None  # too few accepted: hit-and-run does better
    return None


def design(polytope: Polytope | None, d: int, seed: int, start: int, k: int) -> Tensor:
    """Points ``start`` .. ``start + k - 1`` of a study's space-filling design (k x d): of the scrambled Sobol
    sequence (``seed``) in the cube, or of its points inside the polytope (``sobol_in``), or, when rejection
    does not work there, hit-and-run samples from a generator seeded by (seed, start)."""
    if polytope is None:
        engine = torch.quasirandom.SobolEngine(d, scramble=True, seed=seed)
        if start:
            engine.fast_forward(start)
        return engine.draw(k, dtype=torch.float64)
    found = sobol_in(polytope, seed, 0, start + k)  # the accepted points from the start: designs are short
    if found is not None:
        return found[0][start:]
    generator = torch.Generator().manual_seed((seed * 1_000_003 + start) % 2**63)
    return sample(polytope, k, generator)
