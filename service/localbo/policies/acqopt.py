"""Global maximisation of an acquisition over [0, 1]^d that survives accept-reject discontinuities.

    1. score dense scrambled-Sobol candidates, plus Gaussian perturbations of given points (the best observations);
    2. from the best ``restarts`` finite candidates, refine each by L-BFGS-B (scipy) on the score, where a
       rejected point (-inf) counts as a very low finite value, so the line search backs off the rejected
       region instead of failing;
    3. keep a refined point only if its exact score is finite and not below its start's.

The score is a callable ``X: k x d -> k`` (float64, differentiable where finite) to maximise; -inf means
rejected. Returns None when every candidate is rejected, and the caller decides what to do then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

Score = Callable[[Tensor], Tensor]
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


def candidates(d: int, count: int, seed: int, around: Tensor | None, local: int, spread: float) -> Tensor:
    """``count`` scrambled Sobol points and ``local`` perturbations (std ``spread``) spread over ``around``: k x d."""
    C = torch.quasirandom.SobolEngine(d, scramble=True, seed=seed).draw(count, dtype=torch.float64)
    if around is not None and around.shape[0] and local:
        g = torch.Generator().manual_seed(seed + 1)
        centres = around[torch.arange(local) % around.shape[0]].cpu()
        noise = spread * torch.randn(local, d, generator=g, dtype=torch.float64)
        C = torch.cat([C, (centres + noise).clamp(0.0, 1.0)])
    return C


def _refine(score: Score, X0: Tensor, maxiter: int) -> Tensor:
    """L-BFGS-B from the rows of X0 (r x d), all at once, on -sum(score); a rejected row counts as REJECTED."""
    shape, like = X0.shape, X0

    def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
        X = torch.tensor(v, dtype=like.dtype, device=like.device).reshape(shape).requires_grad_(True)
        values = score(X)
        finite = torch.isfinite(values)
        total = torch.where(finite, values, torch.zeros_like(values)).sum()
        (grad,) = torch.autograd.grad(total, X)
        grad = torch.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0)
        loss = -float(total.detach()) - REJECTED * int((~finite).sum())
        return loss, -grad.reshape(-1).cpu().numpy()

    result = minimize(
        fun,
        X0.reshape(-1).cpu().numpy(),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * X0.numel(),
        options={"maxiter": maxiter},
    )
    return torch.tensor(result.x, dtype=like.dtype, device=like.device).reshape(shape).clamp(0.0, 1.0)


def maximize(
    score: Score,
    d: int,
    *,
    seed: int,
    n_candidates: int = 2048,
    restarts: int = 5,
    around: Tensor | None = None,
    local: int = 256,
    spread: float = 0.05,
    maxiter: int = 50,
    device: torch.device | None = None,
) -> Found | None:
    """The best point found for ``score`` (see the module's docstring), or None if all candidates are rejected."""
    C = candidates(d, n_candidates, seed, around, local, spread).to(device)
    values = score_all(score, C)
    finite = torch.isfinite(values)
    if not bool(finite.any()):
        return None
    accepted = float(finite.double().mean())
    order = torch.where(finite, values, torch.full_like(values, -torch.inf)).argsort(descending=True)
    starts = order[: min(restarts, int(finite.sum()))]
    best_x, best_v, refined = C[starts[0]], float(values[starts[0]]), False
    try:
        X = _refine(score, C[starts], maxiter)
    except (RuntimeError, ValueError):  # a numerical failure in the refinement leaves the candidates
        return Found(best_x, best_v, accepted, refined)
    for x, v, v0 in zip(X, score_all(score, X).tolist(), values[starts].tolist(), strict=True):
        if np.isfinite(v) and v >= v0 and v > best_v:  # an accepted point at least as good as its start
            best_x, best_v, refined = x, v, True
    return Found(best_x, best_v, accepted, refined)
