"""The failure model of ``failures: "avoid"`` (issue 30): where the rig faults, learnt from the failed trials.

A study created with ``"failures": "avoid"`` hands its policy the points of its failed trials
(``SuggestRequest.X_failed``: f x d). The policies that declare "failures" (turbo, ei, ucb) model them as one more
outcome constraint, with the convention of ``request.C`` (<= 0: holds):

    data:   every evaluated point, X (completed, n x d) and X_failed (failed, f x d)
    target: z = +1 at a failed point, -1 at a completed one
    model:  a GP on z, fitted as the outcome constraints' GPs are (``gp.fit_model``: ARD kernel, Standardize,
            MAP-fitted, warm-started from the last fit kept in the policy's state)
    use:    z(x) <= 0 reads "not predicted to fail": in turbo (SCBO) the failure GP's Thompson sample is one more
            constraint column over the candidates; in ei and ucb P(z(x) <= 0) = Phi(-mu_z(x) / sigma_z(x)) multiplies
            the acquisition exactly as an outcome constraint's probability of feasibility does

Why a GP on a +-1 indicator and not a GP classifier. A GP classifier (Bernoulli likelihood, a latent GP through a
probit or logistic link) is the principled model of a binary outcome, but its posterior is not Gaussian: it needs
an approximation (Laplace, EP, or variational inference with inducing points), which costs an iterative fit of its
own on every ask, is stochastic (the variational fit's seeds), and BoTorch has no ready model for it (gpytorch's
``ApproximateGP`` with a ``BernoulliLikelihood`` would need its own fit loop, its own hyperparameter state and its
own posterior sampling for SCBO's Thompson draws). The indicator GP is an exact GP regression: the same fit, state
and pathwise Thompson sampling (``ts.pathwise_path``) as the constraint GPs, so it drops into the constraint
machinery unchanged. Its probability P(z(x) <= 0) is calibrated enough to steer by: near failed points mu_z is
close to +1 and the probability small, far from any data it relaxes to the prior (the fitted constant mean, near
-1 while failures are rare) with a sigma that keeps some exploration, and between completed and failed points it
changes sign where the boundary of the failure region is likely to be.

Limits. It is a regression on labels: mu_z can leave [-1, 1] (overshoot next to a sharp boundary) and the
probabilities are not those of a classifier, only a ranking of "how likely to fail" that is right at the data and
sensible between; the noise model is Gaussian, so a rig that fails at random (the same point sometimes fails,
sometimes not) is modelled as a noisy value in between, not as a rate. It is an exact GP on all n + f evaluated
points (O((n + f)^3) per fit, as every other GP here), and its kernel is stationary: a failure region much smaller
than the spacing of the data is found only once a point falls in it. A study whose every point failed has a
constant target: the model then says "fails" (mu_z = +1) everywhere near the data and the policies still ask
(the least likely to fail first); points told as failures before the study avoided them are in X_failed too.
"""

from __future__ import annotations

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from localbo.policies import gp

FAILED = 1.0  # the indicator at a failed point
COMPLETED = -1.0  # the indicator at a completed one
LABEL = "indicator GP"  # what the policies' displays call the model


def failed_points(X_failed: Tensor | None, d: int) -> Tensor | None:
    """X_failed as f x d float64, or None when there are none (no failures to avoid, or none yet)."""
    if X_failed is None or X_failed.numel() == 0:
        return None
    return X_failed.to(torch.float64).reshape(-1, d)


def indicator_data(X: Tensor, X_failed: Tensor) -> tuple[Tensor, Tensor]:
    """(all evaluated points, z): (n + f) x d and n + f, z = -1 at the completed rows X, +1 at the failed X_failed."""
    X_all = torch.cat([X.to(X_failed), X_failed])
    z = torch.cat(
        [
            torch.full((X.shape[0],), COMPLETED, dtype=X_failed.dtype, device=X_failed.device),
            torch.full((X_failed.shape[0],), FAILED, dtype=X_failed.dtype, device=X_failed.device),
        ]
    )
    return X_all, z


def fit_failure_model(
    X: Tensor,
    X_failed: Tensor,
    kernel: gp.KernelKind,
    hypers: gp.Hypers | None,
    device: torch.device | None = None,
    generator: torch.Generator | None = None,
) -> SingleTaskGP:
    """The GP on the failure indicator over X (completed) and X_failed (failed), fitted as the constraint GPs."""
    X_all, z = indicator_data(X, X_failed)
    return gp.fit_model(X_all, z, kernel, hypers, device=device, generator=generator)


def describe(n_failed: int, n_evaluated: int) -> str:
    """The display's line for the failure model."""
    return f"{LABEL}, {n_failed} failed of {n_evaluated}"
