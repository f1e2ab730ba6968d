"""Output warping (issue 29.2): a GP on raw values models badly an objective whose values span orders of magnitude
(Rosenbrock: five), so a local policy may fit its GP to a monotone warp of y instead, as HEBO does:

    z = (y - mean_w) / std_w,   y' = YJ_lambda(z)    (Yeo-Johnson; lambda by maximum likelihood, scipy)

with mean_w, std_w and lambda from the values of the GP's window (the last n_max results), applied to every y.
The warp is increasing for every lambda, so which point is best, and every comparison of values, is unchanged;
only the model's view of the spread is. lambda is clipped to [-3, 3] (a window of a few points can ask for more).

The global policies may instead clip the bad tail (``winsorized``: Ax's Winsorize when minimising), which keeps the
best values and their order and caps only the outliers above Tukey's upper fence.
"""

from __future__ import annotations

import torch
from torch import Tensor

LAMBDA_BOUND = 3.0


def power_warp(y: Tensor, window: Tensor) -> Tensor:
    """y warped by the Yeo-Johnson transform fitted to ``window`` (standardised first); y as it is when the window
    has no spread."""
    from scipy import stats  # scipy: only where a study asks for the warp

    if window.numel() < 3:  # too few values to fit lambda (and one has no std: torch warns)
        return y
    mean, std = window.mean(), window.std()
    if not bool(std > 0):
        return y
    fitted = stats.yeojohnson_normmax(((window - mean) / std).cpu().numpy())
    lam = min(max(float(fitted), -LAMBDA_BOUND), LAMBDA_BOUND)
    warped = stats.yeojohnson(((y - mean) / std).cpu().numpy(), lmbda=lam)
    return torch.as_tensor(warped, dtype=y.dtype, device=y.device)


def winsorized(y: Tensor, bound: float | None = None) -> Tensor:
    """y (to minimise) clipped above Tukey's upper fence q3 + 1.5 (q3 - q1), as Ax's Winsorize: the best values and
    their order are kept, the bad outliers capped; y as it is below four values. With a ``bound`` (an objective's
    reference point, a constraint's limit) the fence is top + 1.5 (top - q1), top = max(q3, bound), as Ax's for an
    objective threshold: no value at or below the bound is changed."""
    if y.numel() < 4:
        return y
    q1 = torch.quantile(y, 0.25, interpolation="lower")
    q3 = torch.quantile(y, 0.75, interpolation="higher")
    top = q3 if bound is None else torch.clamp_min(q3, bound)
    return y.clamp_max(top + 1.5 * (top - q1))
