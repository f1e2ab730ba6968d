"""Output warping (issue 29.2): a GP on raw values models badly an objective whose values span orders of magnitude
(Rosenbrock: five), so a local policy may fit its GP to a monotone warp of y instead, as HEBO does:

    z = (y - mean_w) / std_w,   y' = YJ_lambda(z)    (Yeo-Johnson; lambda by maximum likelihood, scipy)

with mean_w, std_w and lambda from the values of the GP's window (the last n_max results), applied to every y.
The warp is increasing for every lambda, so which point is best, and every comparison of values, is unchanged;
only the model's view of the spread is. lambda is clipped to [-3, 3] (a window of a few points can ask for more).

``tested``: the warp only where the window's values need it: lambda is kept when the likelihood-ratio test against
lambda = 1 (the identity, up to standardising) rejects it at 5 % (2 (llf(lambda) - llf(1)) > 3.84, chi-square with
one degree of freedom), else y is left as it is. Values that span orders of magnitude (Rosenbrock) reject it
at once; near-Gaussian or mildly skewed ones (a GP sample, an RL return) keep their raw shape.
"""

from __future__ import annotations

import torch
from torch import Tensor

LAMBDA_BOUND = 3.0
LR_CRITICAL = 3.841  # chi-square(1) at 95 %: the likelihood-ratio test of lambda against 1


def power_warp(y: Tensor, window: Tensor, tested: bool = False) -> Tensor:
    """y warped by the Yeo-Johnson transform fitted to ``window`` (standardised first); y as it is when the window
    has no spread, or (``tested``) when the window's values do not reject lambda = 1."""
    from scipy import stats  # scipy: only where a study asks for the warp

    if window.numel() < 3:  # too few values to fit lambda (and one has no std: torch warns)
        return y
    mean, std = window.mean(), window.std()
    if not bool(std > 0):
        return y
    z = ((window - mean) / std).cpu().numpy()
    lam = min(max(float(stats.yeojohnson_normmax(z)), -LAMBDA_BOUND), LAMBDA_BOUND)
    if tested and 2.0 * (float(stats.yeojohnson_llf(lam, z)) - float(stats.yeojohnson_llf(1.0, z))) <= LR_CRITICAL:
        return y
    warped = stats.yeojohnson(((y - mean) / std).cpu().numpy(), lmbda=lam)
    return torch.as_tensor(warped, dtype=y.dtype, device=y.device)
