"""Maximising acquisitions over a box (the unit cube, or a trust region inside it), with explicit randomness.

``maximize``: a global search that survives accept-reject discontinuities,

    1. score dense scrambled-Sobol candidates in ``bounds``, plus Gaussian perturbations of given points
       (the best observations), clipped to ``bounds``;
    2. from the best ``restarts`` finite candidates and the best observation, refine each by L-BFGS-B (scipy) on
       the score, preconditioned by the GP's lengthscales, where a rejected point (-inf) counts as a very low
       finite value, so the line search backs off the rejected region instead of failing;
    3. keep a refined point only if its exact score is finite and not below its start's.

The score is a callable ``X: k x d -> k`` (float64, differentiable where finite) to maximise; -inf means
rejected. Returns None when every candidate is rejected, and the caller decides what to do then.

With linear parameter constraints (``polytope``: A_ub u <= b_ub, A_eq u == b_eq) every point stays inside them:

    1. the Sobol candidates become hit-and-run samples of bounds ∩ polytope (``polytope.sample``), and the
       perturbations move within the equalities' null space, those leaving the region dropped;
    2. the refinement is SLSQP (scipy) with the constraints and bounds, as BoTorch's ``optimize_acqf`` does with
       ``inequality_constraints`` / ``equality_constraints``;
    3. a refined point is clipped and projected onto the equalities (rounding), pulled back along the segment
       from its start when SLSQP left it outside (the region is convex, the start inside), and kept only if it
       then satisfies the polytope within ``Polytope.TOLERANCE``.

``initial_conditions``: starts for BoTorch's ``optimize_acqf`` (passed as ``batch_initial_conditions``),
chosen as BoTorch's ``initialize_q_batch`` does (the best raw sample, the others Boltzmann-sampled on
the standardised values) but from an explicit generator: BoTorch's own initialisation seeds and draws
from torch's process-global RNG, which concurrent plans share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from botorch.acquisition import AcquisitionFunction
from scipy.optimize import minimize
from torch import Tensor

from localbo.policies.base import Polytope
from localbo.policies.polytope import feasible_or_none, sample, violation

Score = Callable[[Tensor], Tensor]
ETA = 1.0  # Boltzmann temperature of the starts, on standardised values (BoTorch's default)
REJECTED = -1e12  # what L-BFGS-B sees at a rejected point
_CHUNK = 4096


@dataclass(frozen=True)
class Found:
    x: Tensor  # d
    value: float
    accepted: float  # the fraction of candidates with a finite score
    refined: bool  # the refinement improved on the best candidate


def score_all(score: Score, C: Tensor) -> Tensor:
    with torch.no_grad():
        return torch.cat([score(C[i : i + _CHUNK]) for i in range(0, C.shape[0], _CHUNK)])


def unit_bounds(d: int, device: torch.device | None = None) -> Tensor:
    """The unit cube as bounds: 2 x d."""
    return torch.stack(
        [torch.zeros(d, dtype=torch.float64, device=device), torch.ones(d, dtype=torch.float64, device=device)]
    )


def candidates(bounds: Tensor, count: int, seed: int, around: Tensor | None, local: int, spread: float) -> Tensor:
    """``count`` scrambled Sobol points in ``bounds`` (2 x d) and ``local`` perturbations (std ``spread``)
    spread over ``around``, clipped to ``bounds``: k x d, on the CPU."""
    lo, hi = bounds[0].cpu().double(), bounds[1].cpu().double()
    d = lo.shape[0]
    C = lo + (hi - lo) * torch.quasirandom.SobolEngine(d, scramble=True, seed=seed).draw(count, dtype=torch.float64)
    if around is not None and around.shape[0] and local:
        g = torch.Generator().manual_seed(seed + 1)
        centres = around[torch.arange(local) % around.shape[0]].cpu()
        noise = spread * torch.randn(local, d, generator=g, dtype=torch.float64)
        C = torch.cat([C, torch.maximum(torch.minimum(centres + noise, hi), lo)])
    return C


def polytope_candidates(
    bounds: Tensor, count: int, seed: int, around: Tensor | None, local: int, spread: float, polytope: Polytope
) -> Tensor:
    """``candidates`` inside ``polytope``: ``count`` hit-and-run samples of bounds ∩ polytope (of the cube ∩ polytope
    when bounds miss it), and perturbations of ``around`` along the equalities that stay inside: k x d, on the CPU."""
    lo, hi = bounds[0].cpu().double(), bounds[1].cpu().double()
    d = lo.shape[0]
    g = torch.Generator().manual_seed(seed)
    if feasible_or_none(polytope, lo, hi) is None:
        lo, hi = torch.zeros(d, dtype=torch.float64), torch.ones(d, dtype=torch.float64)
    C = sample(polytope, count, g, lo, hi, thinning=1)  # candidates: cover, not independence
    if around is not None and around.shape[0] and local:
        centres = around[torch.arange(local) % around.shape[0]].cpu().double()
        noise = spread * torch.randn(local, d, generator=g, dtype=torch.float64)
        A_eq = polytope.A_eq.detach().cpu().double().reshape(-1, d)
        if A_eq.shape[0]:  # the noise's component in the equalities' null space
            noise = noise - (torch.linalg.pinv(A_eq) @ (A_eq @ noise.T)).T
        moved = centres + noise
        ok = ((moved >= lo) & (moved <= hi)).all(-1) & (violation(polytope, moved) <= Polytope.TOLERANCE)
        C = torch.cat([C, moved[ok]])
    return C


def _refine(score: Score, X0: Tensor, bounds: Tensor, maxiter: int, scale: Tensor | None = None) -> Tensor:
    """L-BFGS-B in ``bounds`` from the rows of X0 (r x d), all at once, on -sum(score); a rejected row counts as
    REJECTED. With ``scale`` (d, the GP's lengthscales) the search runs on z = x / scale, where the kernel is
    isotropic: the curvature is alike along every axis and L-BFGS-B converges in fewer steps (Optuna's GPSampler
    preconditions so)."""
    shape, like = X0.shape, X0
    s = torch.ones(shape[-1], dtype=like.dtype, device=like.device) if scale is None else scale.to(like)
    lo = bounds[0].to(like).expand(shape)
    hi = bounds[1].to(like).expand(shape)

    def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
        Z = torch.tensor(v, dtype=like.dtype, device=like.device).reshape(shape).requires_grad_(True)
        values = score(Z * s)
        finite = torch.isfinite(values)
        total = torch.where(finite, values, torch.zeros_like(values)).sum()
        (grad,) = torch.autograd.grad(total, Z)
        grad = torch.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0)
        loss = -float(total.detach()) - REJECTED * int((~finite).sum())
        return loss, -grad.reshape(-1).cpu().numpy()

    result = minimize(
        fun,
        (X0 / s).reshape(-1).cpu().numpy(),
        jac=True,
        method="L-BFGS-B",
        bounds=list(zip((lo / s).reshape(-1).tolist(), (hi / s).reshape(-1).tolist(), strict=True)),
        options={"maxiter": maxiter},
    )
    x = torch.tensor(result.x, dtype=like.dtype, device=like.device).reshape(shape) * s
    return torch.maximum(torch.minimum(x, hi), lo)


def _constraint_arrays(polytope: Polytope, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    def arr(t: Tensor, width: int | None) -> np.ndarray:
        x = t.detach().cpu().double().numpy()
        return x.reshape(-1, width) if width else x.reshape(-1)

    return arr(polytope.A_ub, d), arr(polytope.b_ub, None), arr(polytope.A_eq, d), arr(polytope.b_eq, None)


def _refine_in_polytope(score: Score, X0: Tensor, bounds: Tensor, maxiter: int, polytope: Polytope) -> Tensor:
    """SLSQP in ``bounds`` ∩ polytope from the rows of X0 (r x d), all at once (block-diagonal constraints), on
    -sum(score); rows brought back inside (see the module's docstring) or left at their start: r x d."""
    r, d = X0.shape
    like = X0
    lo = bounds[0].to(like).expand(r, d)
    hi = bounds[1].to(like).expand(r, d)
    A_ub, b_ub, A_eq, b_eq = _constraint_arrays(polytope, d)
    eye = np.eye(r)
    constraints = []
    if A_ub.shape[0]:
        G, h = np.kron(eye, A_ub), np.tile(b_ub, r)  # (r k) x (r d)
        constraints.append({"type": "ineq", "fun": lambda v: h - G @ v, "jac": lambda v: -G})
    if A_eq.shape[0]:
        E, f = np.kron(eye, A_eq), np.tile(b_eq, r)
        constraints.append({"type": "eq", "fun": lambda v: E @ v - f, "jac": lambda v: E})

    def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
        X = torch.tensor(v, dtype=like.dtype, device=like.device).reshape(r, d).requires_grad_(True)
        values = score(X)
        finite = torch.isfinite(values)
        total = torch.where(finite, values, torch.zeros_like(values)).sum()
        (grad,) = torch.autograd.grad(total, X)
        grad = torch.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0)
        return -float(total.detach()) - REJECTED * int((~finite).sum()), -grad.reshape(-1).cpu().numpy()

    result = minimize(
        fun,
        X0.reshape(-1).cpu().numpy(),
        jac=True,
        method="SLSQP",
        bounds=list(zip(lo.reshape(-1).tolist(), hi.reshape(-1).tolist(), strict=True)),
        constraints=constraints,
        options={"maxiter": maxiter},
    )
    X = torch.tensor(result.x, dtype=torch.float64).reshape(r, d)
    return inside(X, X0.cpu().double(), lo[0].cpu().double(), hi[0].cpu().double(), polytope).to(like)


def inside(X: Tensor, X0: Tensor, lo: Tensor, hi: Tensor, polytope: Polytope) -> Tensor:
    """Each row of X (r x d) clipped and projected onto the equalities; if still outside the polytope, moved
    back along the segment to its start X0 (inside) as far as the inequalities need; else the start itself."""
    d = X.shape[1]
    A_ub, b_ub, A_eq, b_eq = (torch.from_numpy(a) for a in _constraint_arrays(polytope, d))
    X = torch.maximum(torch.minimum(X, hi), lo)
    if A_eq.shape[0]:
        X = X - (torch.linalg.pinv(A_eq) @ (X @ A_eq.T - b_eq).T).T
        X = torch.maximum(torch.minimum(X, hi), lo)
    out = X.clone()
    for i in range(X.shape[0]):
        if float(violation(polytope, X[i : i + 1])[0]) <= Polytope.TOLERANCE:
            continue
        step = X[i] - X0[i]
        rate, room = A_ub @ step, b_ub - A_ub @ X0[i]  # the rows' use of their slack along the segment
        limits = torch.where(rate > 0, room / rate, torch.full_like(rate, np.inf))
        lam = float(limits.min().clamp(0, 1)) * (1 - 1e-9) if limits.numel() else 1.0
        moved = X0[i] + lam * step
        fine = float(violation(polytope, moved[None])[0]) <= Polytope.TOLERANCE
        out[i] = moved if fine and bool(((moved >= lo) & (moved <= hi)).all()) else X0[i]
    return out


def maximize(
    score: Score,
    d: int,
    *,
    seed: int,
    bounds: Tensor | None = None,
    n_candidates: int = 2048,
    restarts: int = 5,
    around: Tensor | None = None,
    local: int = 256,
    spread: float = 0.05,
    maxiter: int = 200,
    device: torch.device | None = None,
    polytope: Polytope | None = None,
    scale: Tensor | None = None,
) -> Found | None:
    """The best point in ``bounds`` (2 x d; the unit cube when None) found for ``score`` (see the module's
    docstring), or None if all candidates are rejected; inside ``polytope`` when given. Deterministic given
    ``seed``. The first row of ``around`` (the best observation) is a start of its own besides the best
    ``restarts`` candidates, as GPSampler warm-starts from its best trial: an optimum on a face or at a sharp
    corner is where the Sobol and perturbed candidates rarely land. ``scale``: see ``_refine``."""
    box = (unit_bounds(d) if bounds is None else bounds).to(device, torch.float64)
    if polytope is None:
        C = candidates(box, n_candidates, seed, around, local, spread).to(device)
    else:
        C = polytope_candidates(box, n_candidates, seed, around, local, spread, polytope).to(device)
    values = score_all(score, C)
    finite = torch.isfinite(values)
    if not bool(finite.any()):
        return None
    accepted = float(finite.double().mean())
    order = torch.where(finite, values, torch.full_like(values, -torch.inf)).argsort(descending=True)
    starts = order[: min(restarts, int(finite.sum()))]
    best_x, best_v, refined = C[starts[0]], float(values[starts[0]]), False
    X0, v0s = C[starts], values[starts]
    if around is not None and around.shape[0]:
        warm = around[:1].to(C)
        v_warm = score_all(score, warm)
        in_box = bool(((warm >= box[0]) & (warm <= box[1])).all())
        in_polytope = polytope is None or float(violation(polytope, warm.cpu())[0]) <= Polytope.TOLERANCE
        if in_box and in_polytope and bool(torch.isfinite(v_warm).all()):
            X0, v0s = torch.cat([X0, warm]), torch.cat([v0s, v_warm])
    try:
        if polytope is None:
            X = _refine(score, X0, box, maxiter, scale)
        else:
            X = _refine_in_polytope(score, X0, box, maxiter, polytope)
    except (RuntimeError, ValueError):  # a numerical failure in the refinement leaves the candidates
        return Found(best_x, best_v, accepted, refined)
    for x, v, v0 in zip(X, score_all(score, X).tolist(), v0s.tolist(), strict=True):
        if np.isfinite(v) and v >= v0 and v > best_v:  # an accepted point at least as good as its start
            best_x, best_v, refined = x, v, True
    return Found(best_x, best_v, accepted, refined)


def initial_conditions(
    acquisition: AcquisitionFunction | Score,
    bounds: Tensor,
    q: int,
    num_restarts: int,
    raw_samples: int,
    generator: torch.Generator,
) -> Tensor:
    """num_restarts x q x d starts in ``bounds`` (2 x d) for ``optimize_acqf``, from ``raw_samples`` Sobol q-batches.

    ``acquisition`` maps b x q x d to b (to maximise). The best raw sample always starts; the others are
    drawn without replacement with weights exp(ETA z) (z: the standardised values; uniform when they are
    all equal, zero where not finite), all from ``generator``.
    """
    d = bounds.shape[-1]
    raw = max(raw_samples, num_restarts)
    seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
    U = torch.quasirandom.SobolEngine(q * d, scramble=True, seed=seed).draw(raw, dtype=torch.float64)
    lo, hi = bounds[0].double(), bounds[1].double()
    X = lo + (hi - lo) * U.to(bounds.device).reshape(raw, q, d)
    with torch.no_grad():
        values = torch.cat([acquisition(X[i : i + _CHUNK]).reshape(-1) for i in range(0, raw, _CHUNK)]).cpu()
    finite = torch.isfinite(values)
    if num_restarts >= raw:
        return X
    if not bool(finite.any()):
        weights = torch.ones(raw, dtype=torch.float64)
    else:
        v = values[finite]
        std = v.std() if v.numel() > 1 else v.new_zeros(())
        z = (values - v.mean()) / std if bool(std > 0) else torch.zeros_like(values)
        weights = torch.where(finite, (ETA * z.clamp(max=50.0)).exp(), torch.zeros_like(values))
    best = int(torch.where(finite, values, torch.full_like(values, -torch.inf)).argmax()) if bool(finite.any()) else 0
    weights[best] = 0.0
    others = raw - 1
    k = num_restarts - 1
    positive = int((weights > 0).sum())
    if positive < k:  # too few finite values: fill with uniform picks among the rest
        weights = torch.where(weights > 0, weights, torch.full_like(weights, 1e-300))
        weights[best] = 0.0
    chosen = torch.multinomial(weights, min(k, others), replacement=False, generator=generator) if k else None
    index = torch.tensor([best]) if chosen is None else torch.cat([torch.tensor([best]), chosen])
    return X[index.to(X.device)]
