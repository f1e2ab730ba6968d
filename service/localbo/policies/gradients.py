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

import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from torch import Tensor

from localbo.policies.base import KernelKind

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

    def _slope(self, r2: Tensor) -> Tensor:
        """q(r) = h'(r) / r: d/dz of dk(x, z)/dx is s2 (-q e e^T - h diag(l^-2)) with e = (x - z) / l^2."""
        if self.kind == "rbf":
            return torch.exp(-0.5 * r2)
        return 25.0 / 3.0 * torch.exp(-SQRT5 * r2.clamp_min(MIN_SQ_DIST).sqrt())

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


class RankOneTrace:
    """The trace reduction of ONE more point and its gradient, for k points at once; A: n x d, x: d.

    With K = k(A, A) + n2 I, M = K^{-1}, B = M K'(x, A)^T (n x d) and kz = k(A, z) (n), the Schur complement
    of K bordered by z gives (GradientTrace.reduction for q = 1, in kernel units):

        s(z) = k(z, z) + n2 - kz^T M kz        c(z) = dk(x, z)/dx - B^T kz  (d)        r(z) = |c|^2 / s

    and tr Cov(grad f(x) | A, z) = ``trace`` - r(z). The gradient in z needs no second n x n product:
    dr/dkz = -2 B c / s + 2 (r / s) M kz reuses M kz, and dkz/dz, d(dk(x, z)/dx)/dz are closed-form.
    ``extend(z)`` adds z to A by the bordered inverse, with u = M kz and (s, c) at z:

        M <- [[M + u u^T / s, -u / s], [-u^T / s, 1 / s]]     B <- [B - u c^T / s; c^T / s]     trace <- trace - r(z)

    in O(n^2) (no new factorisation, storage reserved up front for ``capacity`` more points).
    """

    def __init__(self, params: KernelParams, A: Tensor, x: Tensor, capacity: int = 0) -> None:
        self.params, self.x, self.n = params, x, A.shape[-2]
        size, d = self.n + capacity, x.shape[-1]
        self._M = A.new_zeros(size, size)
        self._B = A.new_zeros(size, d)
        self._A = A.new_zeros(size, d)
        G = params.kernel_grad(x, A)  # n x d
        if self.n:
            self._M[: self.n, : self.n] = torch.cholesky_inverse(chol(params, A))
            self._B[: self.n] = self._M[: self.n, : self.n] @ G
            self._A[: self.n] = A
        self.trace = params.prior_grad_cov().diagonal().sum() - (G * self._B[: self.n]).sum()

    @property
    def A(self) -> Tensor:
        """The inputs conditioned on: n x d."""
        return self._A[: self.n]

    def _terms(self, Z: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """(r2 = scaled squared distances k x n, kz k x n, m = kz M k x n, s k, c k x d) for Z: k x d."""
        p, n = self.params, self.n
        r2 = _scaled_sq_dist(Z, self.A, p.lengthscale)  # k x n
        kz = p.outputscale * p._profile(r2)[0]
        m = kz @ self._M[:n, :n]  # M is symmetric
        s = p.outputscale + p.noise - (kz * m).sum(-1)  # k(z, z) = s2 g(0) = s2
        c = p.kernel_grad(self.x, Z) - kz @ self._B[:n]
        return r2, kz, m, s, c

    def reduction(self, Z: Tensor) -> Tensor:
        """r(z) for Z: k x d -> k."""
        _, _, _, s, c = self._terms(Z)
        return c.pow(2).sum(-1) / s

    def reduction_and_grad(self, Z: Tensor) -> tuple[Tensor, Tensor]:
        """(r(z): k, dr/dz: k x d) for Z: k x d."""
        p, n, l2 = self.params, self.n, self.params.lengthscale**2
        r2, _, m, s, c = self._terms(Z)
        r = c.pow(2).sum(-1) / s
        a = 2.0 * c / s.unsqueeze(-1)  # dr/dc: k x d
        dk = -(a @ self._B[:n].T) + (2.0 * r / s).unsqueeze(-1) * m  # dr/dkz: k x n
        w = dk * p.outputscale * p._profile(r2)[1]  # dkz_j/dz = s2 h(r_j) (z - a_j) / l^2
        grad = (Z * w.sum(-1, keepdim=True) - w @ self.A) / l2
        e = (self.x - Z) / l2  # k x d
        rho2 = (e * (self.x - Z)).sum(-1)  # k
        h, q = p._profile(rho2)[1], p._slope(rho2)
        grad = grad + p.outputscale * (-q.unsqueeze(-1) * e * (e * a).sum(-1, keepdim=True) - h.unsqueeze(-1) * a / l2)
        return r, grad

    def extend(self, z: Tensor) -> None:
        """Condition on z (d) too: the bordered update of M, B, the trace and A."""
        n = self.n
        if n == self._M.shape[0]:  # out of reserved room: double it
            grown = self._M.new_zeros(2 * n + 1, 2 * n + 1)
            grown[:n, :n] = self._M
            self._M = grown
            self._B = torch.cat([self._B, self._B.new_zeros(n + 1, self._B.shape[-1])])
            self._A = torch.cat([self._A, self._A.new_zeros(n + 1, self._A.shape[-1])])
        _, _, u, s, c = (t.squeeze(0) for t in self._terms(z.reshape(1, -1)))  # u = M kz: n, s, c: d
        self._M[:n, :n].addr_(u, u, alpha=float(1.0 / s))
        self._M[n, :n] = self._M[:n, n] = -u / s
        self._M[n, n] = 1.0 / s
        self._B[:n].addr_(u, c, alpha=float(-1.0 / s))
        self._B[n] = c / s
        self._A[n] = z.reshape(-1)
        self.trace = self.trace - c.pow(2).sum() / s
        self.n = n + 1


def gradient_trace_after(model: SingleTaskGP, x: Tensor, Z: Tensor) -> Tensor:
    """tr Cov(grad f(x) | data, noisy unobserved Z) in the units of y^2; x: d, Z: batch x q x d -> batch."""
    A, _, scale = train_data(model)
    return scale**2 * GradientTrace(KernelParams.from_model(model), A, x).trace_after(Z)
