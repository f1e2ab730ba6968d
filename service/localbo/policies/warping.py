"""Output warping (issue 29.2): a GP on raw values models badly an objective whose values span orders of magnitude
(Rosenbrock: five), so a local policy may fit its GP to a monotone warp of y instead, as HEBO does:

    z = (y - mean_w) / std_w,   y' = YJ_lambda(z)    (Yeo-Johnson; lambda by maximum likelihood, scipy)

with mean_w, std_w and lambda from the values of the GP's window (the last n_max results), applied to every y.
The warp is increasing for every lambda, so which point is best, and every comparison of values, is unchanged;
only the model's view of the spread is. lambda is clipped to [-3, 3] (a window of a few points can ask for more).

``tail_only`` ("power_tail"): the warp of the bad tail only. YJ with lambda < 1 compresses the values above the
mean (the bad side, policies minimise) and stretches those below it, the good side, where an improvement is; on a
reward-like objective (Swimmer: most of a window's returns poor, a few good) the stretch made the model's best
point an outlier and minucb's steps timid (results/league_findings.md, "A warp of the bad tail only"). With it, z
<= 0 stays as standardised (YJ_lambda(z) = z + O(z^2) at 0, so the warp stays smooth and increasing), z > 0 is
warped where lambda < 1, and nothing is warped where lambda >= 1 (that would stretch the bad side).
"""

from __future__ import annotations

import torch
from torch import Tensor

LAMBDA_BOUND = 3.0


def power_warp(y: Tensor, window: Tensor, tail_only: bool = False) -> Tensor:
    """y warped by the Yeo-Johnson transform fitted to ``window`` (standardised first); y as it is when the window
    has no spread; ``tail_only``: only the values above the window's mean, and only where lambda < 1."""
    from scipy import stats  # scipy: only where a study asks for the warp

    if window.numel() < 3:  # too few values to fit lambda (and one has no std: torch warns)
        return y
    mean, std = window.mean(), window.std()
    if not bool(std > 0):
        return y
    fitted = stats.yeojohnson_normmax(((window - mean) / std).cpu().numpy())
    lam = min(max(float(fitted), -LAMBDA_BOUND), LAMBDA_BOUND)
    z = ((y - mean) / std).cpu().numpy()
    warped = stats.yeojohnson(z, lmbda=lam)
    if tail_only:
        warped = z if lam >= 1 else warped * (z > 0) + z * (z <= 0)
    return torch.as_tensor(warped, dtype=y.dtype, device=y.device)
