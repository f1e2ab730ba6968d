"""The posterior of the gradient of a GP at a point, exact for the RBF and Matérn-5/2 ARD kernels.

With k(x, x') = s2 * g(r), r^2 = sum_i (x_i - x'_i)^2 / l_i^2, noise variance n2, inputs A (n x d),
K = k(A, A) + n2 I and prior mean m (GIBO `src/model.py`; MinUCB paper, eq. 5; algorithms.md 1.1):

    dk(x, a)/dx_i        = s2 * h(r) * (x_i - a_i) / l_i^2      h = -exp(-r^2/2) (RBF), -5/3 (1 + sqrt5 r) e^{-sqrt5 r}
    grad mu(x)           = K'(x, A) K^{-1} (y - m)                 K'(x, A): d x n, the rows above
    Cov grad f(x)        = -s2 h(0) diag(l^-2) - K'(x, A) K^{-1} K'(x, A)^T
    tr Cov after Z       = tr Cov_A - tr(C S^{-1} C^T),  C = Cov_A(grad f(x), f(Z)): d x q,  S = Cov_A(f(Z)) + n2 I

The trace after a batch Z needs no values at Z. ``GradientTrace`` precomputes the parts that do not
depend on Z, so a batch of candidates costs O(n^2 q) each. Everything here is in the model's
(standardised) output units unless a function says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from torch import Tensor

KernelKind = Literal["rbf", "matern52"]
SQRT5 = math.sqrt(5.0)
MIN_SQ_DIST = 1e-30  # keeps sqrt differentiable where two points coincide


@dataclass(frozen=True)
class KernelParams:
    """Hyperparameters of a stationary ARD kernel plus Gaussian observation noise."""

    kind: KernelKind
    lengthscale: Tensor  # d
    outputscale: Tensor  # scalar s2 (1 without a ScaleKernel)
    noise: Tensor  # scalar n2, in the same units as s2

    @classmethod
    def from_model(cls, model: SingleTaskGP) -> KernelParams:
        """Read the kernel of a SingleTaskGP (RBF or Matérn-5/2, optionally inside a ScaleKernel)."""
        covar = model.covar_module
        outputscale = torch.ones((), dtype=model.train_inputs[0].dtype, device=model.train_inputs[0].device)
        if isinstance(covar, ScaleKernel):
            outputscale = covar.outputscale.detach().reshape(())
            covar = covar.base_kernel
        if isinstance(covar, RBFKernel):
            kind: KernelKind = "rbf"
        elif isinstance(covar, MaternKernel) and covar.nu == 2.5:
            kind = "matern52"
        else:
            raise TypeError(f"gradient posterior needs an RBF or Matérn-5/2 kernel, got {type(covar).__name__}")
        noise = model.likelihood.noise.detach().reshape(())
        return cls(kind, covar.lengthscale.detach().reshape(-1), outputscale, noise)

    @property
    def curvature(self) -> float:
        """-h(0): the prior gradient covariance is s2 * curvature * diag(l^-2)."""
        return 1.0 if self.kind == "rbf" else 5.0 / 3.0

    def _profile(self, r2: Tensor) -> tuple[Tensor, Tensor]:
        """(g(r), h(r)) from squared scaled distances r2: k = s2 g, dk/dx_i = s2 h (x_i - a_i) / l_i^2."""
        if self.kind == "rbf":
            g = torch.exp(-0.5 * r2)
            return g, -g
        r = r2.clamp_min(MIN_SQ_DIST).sqrt()
        e = torch.exp(-SQRT5 * r)
        return (1.0 + SQRT5 * r + 5.0 / 3.0 * r2) * e, -5.0 / 3.0 * (1.0 + SQRT5 * r) * e

    def kernel(self, X1: Tensor, X2: Tensor) -> Tensor:
        """k(X1, X2): ... x n1 x n2 for X1: ... x n1 x d, X2: ... x n2 x d."""
        return self.outputscale * self._profile(_scaled_sq_dist(X1, X2, self.lengthscale))[0]

    def kernel_grad(self, x: Tensor, X2: Tensor) -> Tensor:
        """dk(x, X2_j)/dx: ... x n2 x d for x: ... x d, X2: ... x n2 x d."""
        diff = (x.unsqueeze(-2) - X2) / self.lengthscale**2  # ... x n2 x d
        r2 = ((x.unsqueeze(-2) - X2) / self.lengthscale).pow(2).sum(-1)  # ... x n2
        return self.outputscale * self._profile(r2)[1].unsqueeze(-1) * diff

    def prior_grad_cov(self) -> Tensor:
        """Cov grad f(x) before any data: s2 * curvature * diag(l^-2), d x d."""
        return torch.diag(self.outputscale * self.curvature / self.lengthscale**2)


def _scaled_sq_dist(X1: Tensor, X2: Tensor, lengthscale: Tensor) -> Tensor:
    """sum_i (x1_i - x2_i)^2 / l_i^2 for all pairs: ... x n1 x n2 (centred first, as GPyTorch does)."""
    centre = X1.reshape(-1, X1.shape[-1]).mean(0)
    A, B = (X1 - centre) / lengthscale, (X2 - centre) / lengthscale
    sq = A.pow(2).sum(-1, keepdim=True) + B.pow(2).sum(-1).unsqueeze(-2) - 2.0 * A @ B.transpose(-1, -2)
    return sq.clamp_min(0.0)


def train_data(model: SingleTaskGP) -> tuple[Tensor, Tensor, Tensor]:
    """(inputs n x d, targets minus the prior mean n, output scale) of a SingleTaskGP, in model units."""
    A = model.train_inputs[0]
    resid = model.train_targets - model.mean_module.constant.detach().reshape(())
    transform = getattr(model, "outcome_transform", None)
    scale = transform.stdvs.reshape(()) if transform is not None else torch.ones((), dtype=A.dtype, device=A.device)
    return A, resid, scale


def chol(params: KernelParams, A: Tensor) -> Tensor:
    """Lower Cholesky factor of k(A, A) + n2 I: n x n."""
    K = params.kernel(A, A) + params.noise * torch.eye(A.shape[-2], dtype=A.dtype, device=A.device)
    return torch.linalg.cholesky(K)


def gradient_posterior(model: SingleTaskGP, x: Tensor) -> tuple[Tensor, Tensor]:
    """Mean (b x d) and covariance (b x d x d) of grad f at x (b x d), in the units of y.

    grad mu = K' K^{-1} (y - m) and Cov = prior - K' K^{-1} K'^T, scaled back by the Standardize
    transform (mean by its std, covariance by its variance). The prior mean m is subtracted.
    """
    params = KernelParams.from_model(model)
    A, resid, scale = train_data(model)
    L = chol(params, A)
    G = params.kernel_grad(x, A)  # b x n x d
    alpha = torch.cholesky_solve(resid.unsqueeze(-1), L)  # n x 1
    mean = (G.transpose(-1, -2) @ alpha).squeeze(-1)  # b x d
    W = torch.linalg.solve_triangular(L, G, upper=False)  # b x n x d
    cov = params.prior_grad_cov() - W.transpose(-1, -2) @ W
    return scale * mean, scale**2 * cov


class GradientTrace:
    """tr Cov(grad f(x) | inputs A and Z) for batches Z, in kernel units; A: n x d, x: d.

    Keeps Li = L^{-1} (L L^T = k(A, A) + n2 I) and W = Li K'(x, A)^T (n x d). ``trace`` is
    tr Cov given A; ``reduction(Z)`` (Z: batch x q x d -> batch) is tr(C S^{-1} C^T), so the
    trace after Z is ``trace - reduction(Z)``, differentiable in Z. ``extend(Z)`` adds Z to A
    by a block update of Li and W in O(n^2 q) instead of a new factorisation.
    """

    def __init__(self, params: KernelParams, A: Tensor, x: Tensor) -> None:
        self.params, self.A, self.x = params, A, x
        eye = torch.eye(A.shape[-2], dtype=A.dtype, device=A.device)
        self.Li = torch.linalg.solve_triangular(chol(params, A), eye, upper=False)  # n x n
        self.W = self.Li @ params.kernel_grad(x, A)  # n x d
        self.trace = params.prior_grad_cov().diagonal().sum() - self.W.pow(2).sum()

    def parts(self, Z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """V = Li k(A, Z) as ... x q x n, C = Cov_A(f(Z), grad f(x)): ... x q x d, S = Cov_A(f(Z)) + n2 I."""
        p, n, q = self.params, self.A.shape[-2], Z.shape[-2]
        flat = Z.reshape(-1, Z.shape[-1])  # (batch q) x d: one matmul for the whole batch
        V = (self.Li @ p.kernel(self.A, flat)).transpose(-1, -2)  # (batch q) x n
        C = p.kernel_grad(self.x, Z) - (V @ self.W).reshape(*Z.shape[:-1], -1)
        V = V.reshape(*Z.shape[:-1], n)
        eye = torch.eye(q, dtype=Z.dtype, device=Z.device)
        S = p.kernel(Z, Z) - V @ V.transpose(-1, -2) + p.noise * eye
        return V, C, S

    def reduction(self, Z: Tensor) -> Tensor:
        """tr(C^T S^{-1} C) for Z: batch x q x d -> batch."""
        _, C, S = self.parts(Z)
        return torch.linalg.solve_triangular(torch.linalg.cholesky(S), C, upper=False).pow(2).sum((-1, -2))

    def trace_after(self, Z: Tensor) -> Tensor:
        """tr Cov(grad f(x) | A, Z) for Z: batch x q x d -> batch."""
        return self.trace - self.reduction(Z)

    def extend(self, Z: Tensor) -> None:
        """Condition on Z (q x d) too: A <- [A; Z], with the block update of Li, W and the trace."""
        V, C, S = self.parts(Z)  # q x n, q x d, q x q
        L22i = torch.linalg.solve_triangular(torch.linalg.cholesky(S), torch.eye(Z.shape[-2]).to(Z), upper=False)
        n = self.A.shape[-2]
        bottom = torch.cat([-L22i @ V @ self.Li, L22i], dim=-1)  # q x (n + q)
        self.Li = torch.cat([torch.cat([self.Li, self.Li.new_zeros(n, Z.shape[-2])], dim=-1), bottom])
        W2 = L22i @ C  # q x d
        self.W = torch.cat([self.W, W2])
        self.trace = self.trace - W2.pow(2).sum()
        self.A = torch.cat([self.A, Z])


def gradient_trace_after(model: SingleTaskGP, x: Tensor, Z: Tensor) -> Tensor:
    """tr Cov(grad f(x) | data, noisy unobserved Z) in the units of y^2; x: d, Z: batch x q x d -> batch."""
    A, _, scale = train_data(model)
    return scale**2 * GradientTrace(KernelParams.from_model(model), A, x).trace_after(Z)
