"""``ucb``, ``ar-ucb``, ``tucb``: GP-UCB and its Lipschitz variants (Ahmed, Vaswani, Schmidt, eq. 2, 10 and AR).

Minimisation form: the paper's UCB of the reward is our lower confidence bound of f,

    ucb:     x = argmin_x LCB(x),  LCB = mu - sqrt(beta_t) sigma,  beta_t = 0.2 d log(2t)  (Kandasamy et al. 2017,
             the schedule the paper cites; t = observations), or a constant ``beta`` from the config
    ar-ucb:  the same, with x rejected unless f_l(x) <= LCB(x) <= f_u(x)
    tucb:    x = argmin_x max(LCB(x), f_l(x))

beta follows the paper and BoTorch (the multiplier on sigma is sqrt(beta)), so beta = 1e16 is its
"too large" case: sigma times 1e8.

With outcome constraints (``request.C``, continuous spaces), ucb weights the optimistic bound by the
probability of feasibility, after shifting it positive as BoTorch's constrained objectives do with the
infeasible cost M (global_bo.py: y_M = max over the observed X of mu + 6 sigma):

    x = argmax_x log(y_M - LCB(x)) + sum_j log P(c_j(x) <= 0)

With failures to avoid (``request.X_failed``, continuous spaces) the failure model's P(z(x) <= 0), the
probability of not failing (failures.py), is one more term of that sum, with or without outcome constraints. On a
finite space a failed candidate is never asked again (the engine blocks it), and X_failed is not modelled there.

>>> request = make_request("ucb", X, y)                 # X: n x d, y: n to minimise
>>> request = dataclasses.replace(request, C=C)          # C: n x m, <= 0 where each constraint holds
>>> UCB().suggest(request).X                             # 1 x d
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field
from torch import Tensor

from localbo.policies import register
from localbo.policies.base import PolicyError, Suggestion, SuggestRequest
from localbo.policies.finite import suggest_finite
from localbo.policies.finite_gp import FiniteGPConfig, FiniteHypersConfig, FinitePosterior
from localbo.policies.global_bo import GlobalConfig, GlobalPolicy, GlobalState, LipschitzConfig
from localbo.policies.global_scores import Acquisition, Context, accept_reject_score, log_feasibility, mean_sigma
from localbo.policies.truncated import truncated_lcb


class UCBConfig(GlobalConfig):
    beta: float | None = Field(
        default=None, gt=0.0, description="LCB = mu - sqrt(beta) sigma; unset: beta_t = 0.2 d log(2t)"
    )


class LipschitzUCBConfig(LipschitzConfig, UCBConfig):
    pass


class GPUCBConfig(UCBConfig, FiniteHypersConfig):
    """ucb's config: the continuous keys, and the GP's hyperparameters and delta for finite spaces.

    Each kind of space refuses the other's keys (``Policy.check_space``)."""


FLOOR = 1e-12  # y_M - LCB below this (an unlikely point above every plausible value) counts as this


def finite_beta(size: int, t: int, delta: float) -> float:
    """Srinivas et al. (2012), Theorem 1, finite |X|: beta_t = 2 log(|X| t^2 pi^2 / (6 delta))."""
    return 2.0 * math.log(size * t**2 * math.pi**2 / (6.0 * delta))


def suggest_finite_ucb(request: SuggestRequest[GPUCBConfig, GlobalState], config: GPUCBConfig) -> Suggestion:
    """GP-UCB on a finite space: argmax over the candidates not asked yet of mu + sqrt(beta_t) sigma (f = -y)."""
    assert request.finite is not None
    size = request.finite.size
    finite = FiniteGPConfig(
        kernel=config.kernel,
        n_init=config.n_init or 10,
        **config.model_dump(include={"lengthscale", "outputscale", "noise_std", "delta"}),
    )

    def score(posterior: FinitePosterior, t: int) -> tuple[Tensor, dict[str, Any]]:
        beta = config.beta if config.beta is not None else finite_beta(size, t, config.delta)
        return posterior.mean + math.sqrt(beta) * posterior.sigma, {"beta": beta}

    choice = suggest_finite(request, finite, score, request.state.hypers)
    return Suggestion(X=choice.X, state=GlobalState(hypers=choice.hypers, n=choice.n), index=choice.index)


def beta_t(config: UCBConfig, ctx: Context) -> float:
    """The configured beta, else Kandasamy et al.'s schedule 0.2 d log(2t) with t = observations."""
    return config.beta if config.beta is not None else 0.2 * ctx.dim * math.log(2 * max(ctx.n, 1))


def lower_confidence_bound(ctx: Context, config: UCBConfig) -> Acquisition:
    """mu(x) - sqrt(beta_t) sigma(x): the optimistic bound on f when minimising."""
    root = math.sqrt(beta_t(config, ctx))

    def bound(X: Tensor) -> Tensor:
        mean, sigma = mean_sigma(ctx.model, X)
        return mean - root * sigma

    return bound


@register
class UCB(GlobalPolicy[GPUCBConfig]):
    """GP-UCB: minimise the lower confidence bound."""

    name = "ucb"
    Config = GPUCBConfig
    spaces = frozenset({"continuous", "categorical", "finite"})
    handles = frozenset({"constraints", "parameter_constraints", "failures"})

    def suggest(self, request: SuggestRequest[GPUCBConfig, GlobalState]) -> Suggestion:
        if request.finite is not None:
            if request.C is not None:  # not modelled there yet: say so rather than ignore the constraints
                raise PolicyError("ucb does not model outcome constraints on a finite space")
            return suggest_finite_ucb(request, request.config)
        return super().suggest(request)

    def acquisition(self, ctx: Context, config: GPUCBConfig) -> Acquisition:
        bound = lower_confidence_bound(ctx, config)
        if not ctx.constraints:
            return lambda X: -bound(X)
        worst = ctx.y_worst
        assert worst is not None

        def weighted(X: Tensor) -> Tensor:
            return (worst - bound(X)).clamp_min(FLOOR).log() + log_feasibility(ctx, X)

        return weighted


@register
class ARUCB(GlobalPolicy[LipschitzUCBConfig]):
    """AR-UCB: GP-UCB whose bound must lie within the Lipschitz bounds at x."""

    name = "ar-ucb"
    Config = LipschitzUCBConfig
    lipschitz = True

    def acquisition(self, ctx: Context, config: LipschitzUCBConfig) -> Acquisition:
        return accept_reject_score(ctx, lower_confidence_bound(ctx, config))


@register
class TUCB(GlobalPolicy[LipschitzUCBConfig]):
    """TUCB: minimise the lower confidence bound lifted to the Lipschitz lower bound."""

    name = "tucb"
    Config = LipschitzUCBConfig
    lipschitz = True

    def acquisition(self, ctx: Context, config: LipschitzUCBConfig) -> Acquisition:
        beta = beta_t(config, ctx)
        assert ctx.bounds is not None
        bounds = ctx.bounds

        def score(X: Tensor) -> Tensor:
            mean, sigma = mean_sigma(ctx.model, X)
            f_l, _ = bounds(X)
            return -truncated_lcb(mean, sigma, beta, f_l)

        return score
