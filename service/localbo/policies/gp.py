"""The GP core of the local policies: a BoTorch SingleTaskGP, MAP-fitted and warm-started.

Model (BoTorch's own SingleTaskGP defaults since 0.12, i.e. Hvarfner et al. 2024; algorithms.md section 8):

    inputs X: n x d in [0, 1]^d (no input transform); outputs standardised (Standardize); float64
    f ~ GP(c, k),  k = RBF (GIBO's kernel, the default) or Matérn-5/2, ARD, no outputscale (s2 = 1 on standardised y)
    lengthscale l_i ~ LogNormal(sqrt(2) + log(d) / 2, sqrt(3)),  l_i >= 0.025
    noise variance  ~ LogNormal(-4, 1),  >= 1e-4;   constant mean c, flat prior (or fixed: ``mean_at``)

The noise floor 1e-4 is BoTorch's (``noise_floor`` lowers it): a measured value's noise is rarely smaller. For
noise-free evaluations (a simulator) it blurs the model near the optimum: a noise sd of 1 % of y's spread hides
improvements smaller than that, and an optimum on a constraint's bound is then found only to about that
precision. Optuna's GPSampler floors at 1e-6; a policy's ``noise_floor`` key (``noise_floor_field``) allows it.

These priors replace GIBO's U(0.01, 0.3) lengthscale prior and fixed noise (algorithms.md 1.5): on the
unit cube their modes (0.2 sqrt(d)) match the lengthscales of the synthetic benchmark (4.1) at d = 25..100.
Fit: MAP (fit_gpytorch_mll, L-BFGS-B) starting from the previous fit's hyperparameters, which the
policies keep in their state (``Hypers``, ``to_state`` / ``from_state``); data window: the last N_max points.
A fit the optimiser gives up on is retried (at most FIT_ATTEMPTS in all) from hyperparameters drawn from
their priors with an explicit generator, as BoTorch's fallback does with the global RNG.
"""

from __future__ import annotations

from typing import Annotated, Any

import torch
from botorch.exceptions import ModelFittingError
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import DEFAULT_WARNING_HANDLER, fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from botorch.models.utils.gpytorch_modules import (
    get_covar_module_with_dim_scaled_prior,
    get_gaussian_likelihood_with_lognormal_prior,
)
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import RBFKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.mlls import ExactMarginalLogLikelihood
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from torch import Tensor

from localbo.policies.gradients import KernelKind, KernelParams

FIT_ATTEMPTS = 5  # the first from the warm start, the others from prior draws
NOISE_FLOOR = 1e-4  # BoTorch's MIN_INFERRED_NOISE_LEVEL: the smallest noise variance (standardised y) a fit may find


def _stopped_in_line_search(warning: Any) -> bool:
    """BoTorch's handler, which also accepts an L-BFGS-B stop in its line search: at a noise floor, with points
    close together, no step lowers the loss by what the search asks, yet the point it stopped at is its best
    (the loss never rose). BoTorch counts that a failure and restores the start, so a study's fit would restart
    from a prior draw and keep whatever that finds, often a worse optimum (constrained_findings.md)."""
    if issubclass(warning.category, OptimizationWarning) and "ABNORMAL" in str(warning.message):
        return True
    return DEFAULT_WARNING_HANDLER(warning)


def noise_floor_field() -> Any:
    """The ``noise_floor`` key of a policy config whose GPs are fitted by ``fit_model``."""
    return Field(
        default=NOISE_FLOOR,
        ge=1e-8,
        le=1.0,
        description="The smallest noise variance the GPs may fit (on standardised values): 1e-4 (BoTorch's) suits "
        "measured values; 1e-6 (Optuna's GPSampler) lets them interpolate noise-free evaluations (a simulator), "
        "so that an optimum on a constraint's bound is found to more digits",
    )


class Hypers(BaseModel):
    """A fitted GP's hyperparameters (standardised-output units), as the policies keep them in their state."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kernel: KernelKind
    lengthscale: list[float]  # d
    noise: float  # variance
    mean: float  # the constant prior mean


def _empty_is_none(value: Any) -> Any:
    return None if value == {} else value


# A state field holding the last fit: None before any (older states stored {} for that).
StoredHypers = Annotated[Hypers | None, BeforeValidator(_empty_is_none)]


def window(X: Tensor, y: Tensor, n_max: int | None) -> tuple[Tensor, Tensor]:
    """The last ``n_max`` observations (all when None): X: n x d, y: n."""
    if n_max is None or X.shape[0] <= n_max:
        return X, y
    return X[-n_max:], y[-n_max:]


def likelihood(noise_floor: float = NOISE_FLOOR) -> GaussianLikelihood:
    """BoTorch's likelihood (LogNormal(-4, 1) prior on the noise variance) with its floor at ``noise_floor``."""
    if noise_floor == NOISE_FLOOR:
        return get_gaussian_likelihood_with_lognormal_prior()
    default = get_gaussian_likelihood_with_lognormal_prior()
    prior = default.noise_covar.noise_prior
    start = max(float(prior.mode), 2 * noise_floor)
    return GaussianLikelihood(
        noise_prior=prior, noise_constraint=GreaterThan(noise_floor, transform=None, initial_value=start)
    )


def prior_hypers(d: int, kernel: KernelKind) -> Hypers:
    """The hyperparameters before any fit: the modes of the priors (BoTorch's initial values)."""
    covar = get_covar_module_with_dim_scaled_prior(ard_num_dims=d, use_rbf_kernel=kernel == "rbf")
    noise = get_gaussian_likelihood_with_lognormal_prior().noise
    return Hypers(
        kernel=kernel,
        lengthscale=covar.lengthscale.detach().double().reshape(-1).tolist(),
        noise=float(noise.detach().double().reshape(())),
        mean=0.0,
    )


def _usable(hypers: Hypers | None, d: int, kernel: KernelKind) -> Hypers:
    """``hypers`` if they fit this study (same kernel and dimension), else the prior modes."""
    if hypers is not None and hypers.kernel == kernel and len(hypers.lengthscale) == d:
        return hypers
    return prior_hypers(d, kernel)


def kernel_params(
    hypers: Hypers | None, d: int, kernel: KernelKind, device: torch.device | None = None
) -> KernelParams:
    """KernelParams from stored hyperparameters (the prior modes when there are none), without data."""
    h = _usable(hypers, d, kernel)
    one = torch.ones((), dtype=torch.float64, device=device)
    return KernelParams(kernel, torch.tensor(h.lengthscale, dtype=torch.float64, device=device), one, h.noise * one)


def _kind(model: SingleTaskGP) -> KernelKind:
    return "rbf" if isinstance(model.covar_module, RBFKernel) else "matern52"


def to_state(model: SingleTaskGP) -> Hypers:
    """The model's hyperparameters (standardised-output units)."""
    covar = model.covar_module
    return Hypers(
        kernel=_kind(model),
        lengthscale=covar.lengthscale.detach().cpu().reshape(-1).tolist(),
        noise=float(model.likelihood.noise.detach().cpu().reshape(())),
        mean=float(model.mean_module.constant.detach().cpu().reshape(())),
    )


def from_state(model: SingleTaskGP, hypers: Hypers | None) -> None:
    """Load ``hypers`` (from ``to_state``) into ``model``; the prior modes if they do not fit it."""
    d = model.train_inputs[0].shape[-1]
    h = _usable(hypers, d, _kind(model))
    like = model.covar_module.lengthscale
    model.covar_module.lengthscale = torch.tensor(h.lengthscale, dtype=like.dtype, device=like.device).view_as(like)
    floor = float(model.likelihood.noise_covar.raw_noise_constraint.lower_bound)  # a fit under a higher floor
    model.likelihood.noise = torch.tensor([max(h.noise, floor)], dtype=like.dtype, device=like.device)
    model.mean_module.constant = torch.tensor(h.mean, dtype=like.dtype, device=like.device)


def _prior_draw(model: SingleTaskGP, generator: torch.Generator) -> None:
    """Lengthscales and noise drawn from their LogNormal priors (BoTorch's ``sample_all_priors``, seeded)."""
    for module, name in ((model.covar_module, "lengthscale"), (model.likelihood.noise_covar, "noise")):
        prior = getattr(module, f"{name}_prior")
        current = getattr(module, name)
        z = torch.randn(current.shape, generator=generator, dtype=torch.float64)
        value = (prior.loc.detach().cpu().double() + prior.scale.detach().cpu().double() * z).exp()
        bound = getattr(module, f"raw_{name}_constraint").lower_bound.detach().cpu().double()
        setattr(module, name, value.clamp_min(bound + 1e-6).to(current))


def build_model(
    X: Tensor,
    y: Tensor,
    kernel: KernelKind = "rbf",
    hypers: Hypers | None = None,
    device: torch.device | None = None,
    mean_at: float | None = None,
    noise_floor: float = NOISE_FLOOR,
) -> SingleTaskGP:
    """SingleTaskGP on X: n x d (unit cube), y: n, with ``hypers`` loaded (not fitted), in eval mode, on ``device``.

    ``mean_at``: the prior mean fixed at this value of y (not fitted; ``ScaledAbout``), as SafeOpt puts a
    constraint's prior at its bound: away from the data the model reverts to "do not know" (mean at the bound)
    instead of to the data's own, comfortable level."""
    X, Y = X.to(device, torch.float64), y.to(device, torch.float64).reshape(-1, 1)
    model = SingleTaskGP(
        X,
        Y,
        covar_module=get_covar_module_with_dim_scaled_prior(ard_num_dims=X.shape[-1], use_rbf_kernel=kernel == "rbf"),
        likelihood=likelihood(noise_floor),
        outcome_transform=Standardize(m=1) if mean_at is None else ScaledAbout(mean_at),
    ).to(X)
    from_state(model, hypers)
    if mean_at is not None:
        _fix_mean(model)
    return model.eval()


class ScaledAbout(Standardize):
    """Standardize with the centre held at ``centre`` and the scale the targets' root mean square about it: a GP
    with a zero prior mean on these targets has its prior mean at ``centre`` and a signal scale fitted to how far
    the data lie from it."""

    def __init__(self, centre: float) -> None:
        super().__init__(m=1)
        self.centre = centre

    def forward(self, Y: Tensor, Yvar: Tensor | None = None, X: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        if self.training:
            means = torch.full_like(Y[..., :1, :], self.centre)
            spread = (Y - means).pow(2).mean(dim=-2, keepdim=True).sqrt()
            self.means = means
            self.stdvs = spread.where(spread >= self._min_stdv, torch.ones_like(spread))
            self._stdvs_sq = self.stdvs.pow(2)
            self._is_trained = torch.tensor(True)
        return (Y - self.means) / self.stdvs, (Yvar / self._stdvs_sq if Yvar is not None else None)


def _fix_mean(model: SingleTaskGP) -> None:
    """The constant mean held at 0 (``ScaledAbout``'s centre) and left out of fits."""
    model.mean_module.constant = torch.zeros_like(model.mean_module.constant.detach())
    model.mean_module.raw_constant.requires_grad_(False)


def fit_model(
    X: Tensor,
    y: Tensor,
    kernel: KernelKind = "rbf",
    hypers: Hypers | None = None,
    n_max: int | None = None,
    fit: bool = True,
    device: torch.device | None = None,
    generator: torch.Generator | None = None,
    maxiter: int | None = None,
    mean_at: float | None = None,
    noise_floor: float = NOISE_FLOOR,
) -> SingleTaskGP:
    """The GP on the last ``n_max`` points, MAP-fitted from ``hypers`` (warm start) when ``fit``; ``maxiter``
    bounds the L-BFGS-B iterations of the fit (None: until it converges); ``mean_at``, ``noise_floor``: see
    ``build_model`` and ``likelihood``.

    X: n x d, y: n (n >= 1). The model lives on ``device`` (X's device when None). A fit that fails is
    retried from prior draws (``generator``; seeded with 0 when None); when all fail, ``hypers`` stay.
    """
    Xw, yw = window(X, y, n_max)
    model = build_model(Xw, yw, kernel, hypers, device, mean_at, noise_floor)
    if fit:
        generator = generator if generator is not None else torch.Generator().manual_seed(0)
        for attempt in range(FIT_ATTEMPTS):
            if attempt:
                _prior_draw(model, generator)
            try:
                bounded = {"options": {"maxiter": maxiter}} if maxiter else None
                mll = ExactMarginalLogLikelihood(model.likelihood, model)
                fit_gpytorch_mll(mll, max_attempts=1, optimizer_kwargs=bounded, warning_handler=_stopped_in_line_search)
                if all(bool(torch.isfinite(p).all()) for p in model.parameters()):
                    break
                raise ModelFittingError("the fit ended at non-finite hyperparameters")
            except ModelFittingError:
                from_state(model, hypers)
                if mean_at is not None:
                    _fix_mean(model)
    return model.eval()
