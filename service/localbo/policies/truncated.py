"""Acquisitions truncated by Lipschitz bounds (Ahmed, Vaswani, Schmidt, eqs. 8-10), minimisation form.

With f(x) ~ N(mu, sigma^2) under the posterior, y* the best observation and [f_l, f_u] the Lipschitz
bounds at x, an improvement f < y* is only possible for f in (a, b) with

    a = f_l(x),   b = min(y*, f_u(x))          (no improvement possible when b <= a)

    TPI(x)  = P(a < f < b)                             = Phi(u_b) - Phi(u_a)
    TEI(x)  = int_a^b (y* - f) N(f; mu, sigma^2) df     = (y* - mu)[Phi(u_b) - Phi(u_a)] + sigma[phi(u_b) - phi(u_a)]
    TLCB(x) = max(mu - sqrt(beta) sigma, f_l(x))        (to minimise; the paper's TUCB)

with u_v = (v - mu) / sigma. This is the paper's integral over (L_f, U_f) mapped to minimisation,
its missing case (best value beyond the bound, here y* <= f_l) included, and with the sign of TEI's
first term that its eq. 9 prints wrongly (algorithms.md 5). With f_l = -inf and f_u = +inf, TEI is
EI and TPI is PI. Accept-reject (AR-UCB, AR-TS) keeps a value g(x) only if f_l(x) <= g(x) <= f_u(x).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

_SQRT_2PI = math.sqrt(2 * math.pi)
MIN_SIGMA = 1e-12
_FAR = 40.0  # Phi(-40) and phi(40) are 0 in float64


def _pdf(u: Tensor) -> Tensor:
    return torch.exp(-0.5 * u.square()) / _SQRT_2PI


def _mass(u_a: Tensor, u_b: Tensor) -> Tensor:
    """Phi(u_b) - Phi(u_a) for u_a <= u_b, from the upper tail where both are positive (no cancellation)."""
    upper = torch.special.ndtr(-u_a) - torch.special.ndtr(-u_b)
    lower = torch.special.ndtr(u_b) - torch.special.ndtr(u_a)
    return torch.where(u_a > 0, upper, lower)


def _limits(mean: Tensor, sigma: Tensor, y_best: float, f_l: Tensor, f_u: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(u_a, u_b, open) with open = the interval (a, b) is not empty."""
    sigma = sigma.clamp_min(MIN_SIGMA)
    # a vacuous bound (-inf) as a finite one 40 sigma out: the same value, and gradients without inf * 0
    a = torch.where(f_l.isinf(), mean - _FAR * sigma, f_l)
    b = f_u.clamp(max=y_best)
    open_ = b > a
    b = torch.where(open_, b, a)  # an empty interval: a zero-width one, whose terms vanish
    return (a - mean) / sigma, (b - mean) / sigma, open_


def truncated_pi(mean: Tensor, sigma: Tensor, y_best: float, f_l: Tensor, f_u: Tensor) -> Tensor:
    """TPI = P(f_l < f < min(y*, f_u)); all tensors of one shape."""
    u_a, u_b, open_ = _limits(mean, sigma, y_best, f_l, f_u)
    return torch.where(open_, _mass(u_a, u_b).clamp_min(0.0), torch.zeros_like(mean))


def truncated_ei(mean: Tensor, sigma: Tensor, y_best: float, f_l: Tensor, f_u: Tensor) -> Tensor:
    """TEI = E[(y* - f) 1{f_l < f < min(y*, f_u)}]; all tensors of one shape."""
    u_a, u_b, open_ = _limits(mean, sigma, y_best, f_l, f_u)
    sigma = sigma.clamp_min(MIN_SIGMA)
    value = (y_best - mean) * _mass(u_a, u_b) + sigma * (_pdf(u_b) - _pdf(u_a))
    return torch.where(open_, value.clamp_min(0.0), torch.zeros_like(mean))


def truncated_lcb(mean: Tensor, sigma: Tensor, beta: float, f_l: Tensor) -> Tensor:
    """TLCB = max(mu - sqrt(beta) sigma, f_l), the lower confidence bound lifted to the Lipschitz floor."""
    return torch.maximum(mean - math.sqrt(beta) * sigma, f_l)


def accepted(g: Tensor, f_l: Tensor, f_u: Tensor) -> Tensor:
    """Accept-reject: True where f_l <= g <= f_u (a value outside either bound is rejected)."""
    return (g >= f_l) & (g <= f_u)
