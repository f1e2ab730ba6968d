"""The GP posterior on a finite candidate set, in row blocks, so that no N x N matrix need live in memory.

Prior covariance over the N candidates, first that applies: a given matrix K; given features F (k = s F F^T,
e.g. path-length histograms of unit norm: the normalised shortest-path kernel of graphs); else an isotropic
or ARD RBF / Matérn-5/2 kernel s k(x / l) on the candidates scaled to [0, 1]. Observations at candidates o
(n of them, repeats allowed) with noise variance s2n and constant prior mean m:

    L L^T = K_oo + s2n I,   V = L^-1 K_oX  (n x N),   alpha = L^-T L^-1 (y - m)
    mu(x) = m + K_xo alpha,   k_t(a, b) = k(a, b) - V_a . V_b,   sigma_t^2(x) = k(x, x) - |V_x|^2
    d_t(a, b) = sqrt(sigma_t^2(a) - 2 k_t(a, b) + sigma_t^2(b))      (Contal et al., eq. 2)

Means and variances are float64; distance blocks (``distance``) are computed in ``work_dtype`` (float32 by
default: distances down to 2^-10 or so are resolved, far below the noise-limited sigma_min of any study).

Hyperparameters: fixed by the config (``lengthscale``, ``outputscale``, ``noise_std``; y used as given, prior
mean 0: the paper's setting), or fitted each call on standardised y: by gp.py (BoTorch MAP) for the kernel on
the candidates, by marginal likelihood on a grid of (outputscale, noise) for a given K or F.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import torch
from pydantic import Field
from torch import Tensor

from localbo.policies import gp
from localbo.policies.base import FiniteSpace, PolicyConfig, only_on

FINITE = only_on("finite")

FiniteKernel = Literal["rbf", "matern52"]
BLOCK_ELEMENTS = 1 << 24  # entries of one block of distances (64 MB in float32)
GRID_OUTPUTSCALE = torch.logspace(-1, 1, 9, dtype=torch.float64)
GRID_NOISE = torch.logspace(-4, 0, 13, dtype=torch.float64)


class FiniteHypersConfig(PolicyConfig):
    """Fixed GP hyperparameters on a finite space (all unset: fitted each call) and the bound's confidence."""

    lengthscale: float | None = Field(
        default=None, gt=0.0, description="Finite spaces: fixed lengthscale (unit cube)", json_schema_extra=FINITE
    )
    outputscale: float | None = Field(
        default=None, gt=0.0, description="Finite spaces: fixed prior variance of f", json_schema_extra=FINITE
    )
    noise_std: float | None = Field(
        default=None, gt=0.0, description="Finite spaces: fixed noise std of y", json_schema_extra=FINITE
    )
    delta: float = Field(
        default=0.05,
        gt=0.0,
        lt=1.0,
        description="Finite spaces: confidence level of the bound",
        json_schema_extra=FINITE,
    )


class FiniteGPConfig(FiniteHypersConfig):
    """The GP of a finite space: fixed hyperparameters (all three set), or fitted each call."""

    kernel: FiniteKernel = Field(default="rbf", description="Kernel on the candidates (unless the space gives one)")
    n_init: int = Field(default=10, ge=1, le=100_000, description="Uniformly random candidates first")
    float64_distances: bool = Field(
        default=False, description="Distances in float64 (slower, twice the memory)", json_schema_extra=FINITE
    )

    def fixed(self, given_kernel: bool) -> bool:
        """Whether the hyperparameters are all fixed (a given kernel needs no lengthscale)."""
        return None not in (self.outputscale, self.noise_std) and (given_kernel or self.lengthscale is not None)


@dataclass
class Hypers:
    outputscale: float
    noise: float  # variance
    mean: float
    lengthscale: Tensor | None = None  # 1 or d, for the kernel on the candidates
    fitted: gp.Hypers | None = None  # gp.py's fit, for a warm start next call

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"outputscale": self.outputscale, "noise": self.noise, "mean": self.mean}
        if self.lengthscale is not None:
            out["lengthscale"] = self.lengthscale.reshape(-1).tolist()
        return out


class PriorKernel:
    """k(a, b) for candidate indices, from a given matrix, given features, or a stationary kernel."""

    def __init__(self, space: FiniteSpace, kernel: FiniteKernel, hypers: Hypers, dtype: torch.dtype) -> None:
        self.space, self.kernel, self.hypers, self.dtype = space, kernel, hypers, dtype
        device = space.candidates.device
        self.K = space.kernel.to(device, dtype) if space.kernel is not None else None
        self.F = space.features.to(device, dtype) if space.features is not None else None
        self.Z = None
        if self.K is None and self.F is None:
            assert hypers.lengthscale is not None
            self.Z = space.candidates.to(dtype) / hypers.lengthscale.to(device, dtype)

    def block(self, a: Tensor, b: Tensor | None = None) -> Tensor:
        """k(candidates[a], candidates[b]) (b: all when None): |a| x |b|."""
        s = self.hypers.outputscale
        if self.K is not None:
            rows = self.K[a]
            return s * (rows if b is None else rows[:, b])
        if self.F is not None:
            return s * (self.F[a] @ (self.F if b is None else self.F[b]).T)
        assert self.Z is not None
        r = torch.cdist(self.Z[a], self.Z if b is None else self.Z[b])
        if self.kernel == "rbf":
            return r.square_().mul_(-0.5).exp_().mul_(s)
        r5 = r.mul_(math.sqrt(5.0))
        return (1.0 + r5 + r5.square() / 3.0).mul_(torch.exp(-r5)).mul_(s)

    def diag(self) -> Tensor:
        s = self.hypers.outputscale
        if self.K is not None:
            return s * self.K.diagonal()
        if self.F is not None:
            return s * self.F.square().sum(-1)
        assert self.Z is not None
        return torch.full((self.Z.shape[0],), s, dtype=self.dtype, device=self.Z.device)


class FinitePosterior:
    """mu_t, sigma_t on every candidate (float64) and blocks of k_t and d_t on demand (``work_dtype``)."""

    def __init__(
        self, space: FiniteSpace, kernel: FiniteKernel, hypers: Hypers, obs: Tensor, y: Tensor, work_dtype: torch.dtype
    ) -> None:
        self.size = space.size
        self.prior = PriorKernel(space, kernel, hypers, torch.float64)
        self.work = PriorKernel(space, kernel, hypers, work_dtype) if work_dtype != torch.float64 else self.prior
        obs = obs.to(space.candidates.device)
        n = obs.shape[0]
        K_oo = self.prior.block(obs, obs) + hypers.noise * torch.eye(n, dtype=torch.float64, device=obs.device)
        L = torch.linalg.cholesky(K_oo + 1e-9 * torch.eye(n, dtype=torch.float64, device=obs.device))
        r = (y.to(obs.device, torch.float64) - hypers.mean).reshape(-1, 1)
        alpha = torch.cholesky_solve(r, L)  # n x 1
        means, variances, factors = [], [], []
        for rows in chunks(self.size, max(1, BLOCK_ELEMENTS // max(n, 1)), obs.device):
            K_ox = self.prior.block(obs, rows)  # n x r
            V = torch.linalg.solve_triangular(L, K_ox, upper=False)
            means.append(hypers.mean + (K_ox.T @ alpha).reshape(-1))
            variances.append(self.prior.diag()[rows] - V.square().sum(0))
            factors.append(V)
        self.mean = torch.cat(means)
        self.var = torch.cat(variances).clamp_min(0.0)
        self.sigma = self.var.sqrt()
        self.V = torch.cat(factors, dim=1).to(work_dtype)  # n x N
        self.var_work = self.var.to(work_dtype)

    def covariance(self, a: Tensor, b: Tensor) -> Tensor:
        """k_t(a, b): |a| x |b| in the work dtype."""
        return torch.addmm(self.work.block(a, b), self.V[:, a].T, self.V[:, b], alpha=-1.0)

    def sq_distance(self, a: Tensor, b: Tensor) -> Tensor:
        """d_t(a, b)^2: |a| x |b|, in place on one block (rounding may leave ~1e-7 where a and b coincide)."""
        d2 = self.work.block(a, b).mul_(-2.0)
        d2.addmm_(self.V[:, a].T, self.V[:, b], alpha=2.0)
        return d2.add_(self.var_work[a, None]).add_(self.var_work[None, b]).clamp_min_(0.0)


def chunks(n: int, size: int, device: torch.device) -> list[Tensor]:
    """0..n-1 as index tensors of at most ``size``."""
    return [torch.arange(s, min(s + size, n), device=device) for s in range(0, n, size)]


def standardise(y: Tensor) -> tuple[Tensor, float, float]:
    """(y - mean) / std with BoTorch's Standardize conventions (unbiased std; 1 when it is 0 or n < 2)."""
    mean = float(y.mean()) if y.numel() else 0.0
    std = float(y.std()) if y.numel() > 1 else 1.0
    std = std if std > 1e-12 and math.isfinite(std) else 1.0
    return (y - mean) / std, mean, std


def grid_fit(prior: PriorKernel, obs: Tensor, y: Tensor) -> tuple[float, float]:
    """(outputscale, noise variance) maximising the marginal likelihood of y (standardised, mean 0) on a grid."""
    K = prior.block(obs, obs)
    n = obs.shape[0]
    eye = torch.eye(n, dtype=torch.float64, device=K.device)
    best, arg = -math.inf, (1.0, 1e-2)
    r = y.to(K.device, torch.float64).reshape(-1, 1)
    for s in GRID_OUTPUTSCALE.tolist():
        for noise in GRID_NOISE.tolist():
            L, info = torch.linalg.cholesky_ex(s * K + (noise + 1e-9) * eye)
            if int(info):
                continue
            z = torch.linalg.solve_triangular(L, r, upper=False)
            ll = -0.5 * float(z.square().sum()) - float(L.diagonal().log().sum())
            if ll > best:
                best, arg = ll, (s, noise)
    return arg


def fit_hypers(
    space: FiniteSpace,
    config: FiniteGPConfig,
    obs: Tensor,
    y: Tensor,
    warm: gp.Hypers | None,
    generator: torch.Generator | None = None,
) -> tuple[Hypers, Tensor]:
    """The hyperparameters and the y (to minimise) in the units the posterior will use."""
    device = space.candidates.device
    given = space.kernel is not None or space.features is not None
    if config.fixed(given):
        assert config.outputscale and config.noise_std
        ls = None if given else torch.tensor([config.lengthscale], dtype=torch.float64, device=device)
        return Hypers(config.outputscale, config.noise_std**2, 0.0, ls), y
    ys, _, _ = standardise(y)
    if given:
        prior = PriorKernel(space, config.kernel, Hypers(1.0, 0.0, 0.0), torch.float64)
        s, noise = grid_fit(prior, obs, ys)
        return Hypers(s, noise, 0.0), ys
    X = space.candidates[obs.to(device)].to(torch.float64)
    model = gp.fit_model(X, y.to(device, torch.float64), config.kernel, warm, device=device, generator=generator)
    fit = gp.to_state(model)
    ls = torch.tensor(fit.lengthscale, dtype=torch.float64, device=device)
    return Hypers(1.0, fit.noise, fit.mean, ls, fitted=fit), ys
