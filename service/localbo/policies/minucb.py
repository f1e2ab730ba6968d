"""``minucb``: Local Bayesian Optimization through Minimizing UCB (Fan, Wang, Ng, Hu 2024, Algorithm 1).

    repeat:  X1 = x_t repeated b1 times                          (re-sample the iterate)
             X2 = argmin_Z tr Cov(grad f(x_t) | D, Z),  Z in x_t +- delta   (as gibo, greedy q = 1)
             evaluate X1, X2, D <- D + (X1, X2);  fit the GP
             x_{t+1} = argmin_x mu(x) + beta * sigma(x)           (kept at x_t unless its bound is lower)

beta = 3 multiplies sigma (the paper's practice, App. A), not BoTorch's UpperConfidenceBound whose
beta multiplies the variance under a square root. The step runs multi-start L-BFGS-B from x_t and
the training points with the lowest bound, over [0, 1]^d or the box x_t +- step_delta. b1 = 1 and
b2 = d, fixed (no early stop): the paper reports neither; these follow GIBO (algorithms.md 3.3).

Under constraints (issue 30; the rules in ``local_constraints.py``), with c_j's GP beside f's:

    x* = argmin_{x in B ∩ P} mu(x) + beta sigma(x)   s.t.  mu_j(x) - beta_c sigma_j(x) <= 0 for every j
                                                            (safe mode: prod_j Phi(-mu_j / sigma_j) >= 1 - delta)
    x_{t+1} = x* if likely feasible (PF >= 1/2; safe mode: >= 1 - delta), else x* shortened towards x_t (1/2, 1/4,
              1/8) to the first that is; kept at x_t unless its UCB is not above x_t's (x_t not likely feasible:
              feasibility first, the UCB ignored)

B is the step's box (as above; in safe mode x_t +- delta when step_delta is unset, so that the step stays where
the constraint models have data), P the polytope. SLSQP (scipy) from x_t and the training points with the lowest
UCB among those meeting the bounds; when none does, x* is the point of B ∩ P nearest feasibility (a restoration
step: the least mean violation sum_j max(mu_j, 0), in safe mode the highest PF; ``Constraints.restoration``).
The failure model (failures: "avoid") is one more c_j. Exploration as gibo's, where the constraints allow.

>>> request = make_request("minucb", X, y, count=4)         # X: n x d in the unit cube, y: n to minimise
>>> request = dataclasses.replace(request, C=C, polytope=P)  # C: n x m (<= 0 holds); P: linear constraints
>>> MinUCB().suggest(request).X                             # x_t and exploration points, inside P
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from botorch.acquisition.analytic import AnalyticAcquisitionFunction
from botorch.acquisition.objective import PosteriorTransform
from botorch.models import SingleTaskGP
from botorch.models.model import Model
from botorch.optim import optimize_acqf
from botorch.utils.transforms import t_batch_mode_transform
from pydantic import Field
from torch import Tensor

from localbo.policies import register
from localbo.policies.closed_form import Posterior
from localbo.policies.exploration import local_box
from localbo.policies.local import LocalConfig, LocalPolicy
from localbo.policies.local_constraints import Constraints
from localbo.policies.polytope_steps import into_polytope

CONSTRAINED = frozenset({"constraints", "parameter_constraints", "failures", "safety"})


class MinUCBConfig(LocalConfig):
    resamples: int = Field(default=1, ge=1, le=1024, description="b1: evaluations of x_t per iteration")
    beta: float = Field(default=3.0, ge=0.0, description="UCB = mu + beta * sigma (a multiplier on sigma)")
    step_delta: float | None = Field(
        default=None, gt=0.0, le=1.0, description="Search the step in x_t +- step_delta; the whole cube when unset"
    )
    step_restarts: int = Field(default=10, ge=1, le=256, description="L-BFGS-B starts: x_t and the best data points")


class NegativeUCB(AnalyticAcquisitionFunction):
    """-(mu(x) + beta * sigma(x)) of f (no noise), in the units of y; maximising it minimises the bound."""

    def __init__(self, model: Model, beta: float, posterior_transform: PosteriorTransform | None = None) -> None:
        super().__init__(model=model, posterior_transform=posterior_transform)  # BoTorch's value-function hook
        self.beta = beta

    @t_batch_mode_transform(expected_q=1)  # type: ignore[arg-type]  # typed for the base class
    def forward(self, X: Tensor) -> Tensor:
        """X: batch x 1 x d -> batch."""
        mean, sigma = self._mean_and_sigma(X)
        assert sigma is not None
        return -(mean + self.beta * sigma).squeeze(-1)


def ucb(model: SingleTaskGP, X: Tensor, beta: float) -> Tensor:
    """mu + beta * sigma at X: k x d -> k."""
    with torch.no_grad():
        return -NegativeUCB(model, beta)(X.unsqueeze(-2))


def minucb_step(
    model: SingleTaskGP, x_t: Tensor, beta: float, bounds: Tensor, restarts: int = 10
) -> tuple[Tensor, dict[str, Any]]:
    """x_{t+1} = argmin_{x in bounds} mu + beta sigma, from x_t and the training points; x_t if not lower.

    x_t: d, bounds: 2 x d. L-BFGS-B (optimize_acqf) starts from x_t and the restarts - 1 training
    points (clamped into the bounds) with the lowest bound.
    """
    train = model.train_inputs[0].clamp(bounds[0], bounds[1])
    k = min(restarts - 1, train.shape[0])
    best = train[ucb(model, train, beta).argsort()[:k]]
    starts = torch.cat([x_t.unsqueeze(0), best]).unsqueeze(-2)  # k+1 x 1 x d
    x, _ = optimize_acqf(
        NegativeUCB(model, beta), bounds, q=1, num_restarts=starts.shape[0], batch_initial_conditions=starts
    )
    x = x.detach().reshape(-1)
    ucb_t, ucb_x = ucb(model, torch.stack([x_t, x]), beta).tolist()
    moved = ucb_x <= ucb_t
    x_next = x if moved else x_t
    info = {"ucb_t": ucb_t, "ucb_next": min(ucb_x, ucb_t), "moved": moved, "step_norm": float((x_next - x_t).norm())}
    return x_next, info


def constrained_minucb_step(
    model: SingleTaskGP, x_t: Tensor, beta: float, bounds: Tensor, restarts: int, constraints: Constraints
) -> tuple[Tensor, dict[str, Any], Callable[[Tensor], Tensor]]:
    """x* = argmin_{x in bounds ∩ polytope} mu + beta sigma subject to the step's constraint bounds (the module's
    docstring), by SLSQP from x_t and the restarts - 1 training points with the lowest bound among those meeting
    them; the point of the region nearest feasibility when none does. Returns x* (d), what to show, and the UCB
    as the centre rule's merit."""
    post = Posterior(model)

    def merit(X: Tensor) -> Tensor:
        mean, sigma = post(X)
        return mean + beta * sigma

    lo, hi = bounds[0], bounds[1]
    train = into_polytope(constraints.rows, model.train_inputs[0].clamp(lo, hi), x_t, lo, hi)
    meets = constraints.meets_step(train)
    with torch.no_grad():
        values = torch.where(meets, merit(train), torch.full_like(train[:, 0], torch.inf))
    k = min(restarts - 1, int(meets.sum()))
    starts = torch.cat([x_t.unsqueeze(0), train[values.argsort()[:k]]])
    x, how = constraints.argmin(merit, starts, lo, hi, nonlinear=True), "ucb"
    if x is None:  # nothing meets the bounds: towards feasibility first
        x, how = constraints.argmin(constraints.restoration, starts, lo, hi, nonlinear=False), "restore"
    x = x_t if x is None else x
    with torch.no_grad():
        ucb_t, ucb_x = merit(torch.stack([x_t, x])).tolist()
    return x, {"ucb_t": ucb_t, "ucb_next": ucb_x, "step": how}, merit


def step_bounds(x_t: Tensor, step_delta: float | None, constraints: Constraints | None, delta: float) -> Tensor:
    """The step's box: x_t +- step_delta, else the cube (in safe mode x_t +- delta, the exploration box)."""
    if step_delta is not None:
        return local_box(x_t, step_delta)
    if constraints is not None and constraints.safe:
        return local_box(x_t, delta)
    return torch.stack([torch.zeros_like(x_t), torch.ones_like(x_t)])


@register
class MinUCB(LocalPolicy[MinUCBConfig]):
    """MinUCB: explore as GIBO, then step to the minimiser of the upper confidence bound."""

    name = "minucb"
    Config = MinUCBConfig
    handles = CONSTRAINED | {"objectives"}  # several: ParEGO scalarisations, one per step (local.py)

    def resamples(self, config: MinUCBConfig) -> int:
        return config.resamples

    def step(self, model: Any, x_t: Tensor, config: MinUCBConfig) -> tuple[Tensor, dict[str, Any]]:
        if config.step_delta is None:
            bounds = torch.stack([torch.zeros_like(x_t), torch.ones_like(x_t)])
        else:
            bounds = local_box(x_t, config.step_delta)
        return minucb_step(model, x_t, config.beta, bounds, config.step_restarts)

    def constrained_step(
        self, model: Any, x_t: Tensor, config: MinUCBConfig, constraints: Constraints
    ) -> tuple[Tensor, dict[str, Any], Callable[[Tensor], Tensor] | None]:
        bounds = step_bounds(x_t, config.step_delta, constraints, config.delta)
        return constrained_minucb_step(model, x_t, config.beta, bounds, config.step_restarts, constraints)
