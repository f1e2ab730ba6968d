"""``gibo``: Gradient-Informative Bayesian Optimization (Müller, von Rohr, Trimpe, NeurIPS 2021).

    repeat:  evaluate x_t once                                   (b1 = 1, as the reference code)
             Z = argmin_Z tr Cov(grad f(x_t) | D, Z),  Z in x_t +- delta   (greedy, q = 1 per point)
             evaluate Z, D <- D + (x_t, Z);  fit the GP
             x_{t+1} = x_t - lr * (grad mu(x_t) / ||grad mu(x_t)||) * l     (l: the ARD lengthscales)

The step is the reference code's ``normalize_gradient`` rule (algorithms.md 1.3) in minimisation
form, clipped to [0, 1]^d. Defaults are GIBO's synthetic settings: delta 0.2, d samples per
iteration, N_max = 5 d, lr 0.25, epsilon 0.1.

Under constraints (issue 30; the rules in ``local_constraints.py``), with c_j's GP beside f's:

    g = grad mu(x_t) if x_t is likely feasible (PF(x_t) >= 1/2; safe mode: >= 1 - delta),
        else -grad log PF(x_t) (a restoration step towards feasibility)
    x* = argmin_x |x - (x_t - lr * g / |g| * l)|  over [0, 1]^d ∩ P, s.t. mu_j(x) - beta_c sigma_j(x) <= 0 for every
         j when x_t meets those bounds (safe mode: PF(x) >= 1 - delta)   (the projected step: SLSQP, from x_t)
    x_{t+1} = x* if likely feasible, else x* shortened towards x_t (1/2, 1/4, 1/8) to the first that is, else x_t

P is the polytope; the projection slides the step along the boundaries it meets instead of stopping there. The
failure model (failures: "avoid") is one more c_j. The exploration points stay in P, and where the constraints
allow (safe mode: safe; with failures: not predicted to fail).

>>> request = make_request("gibo", X, y, count=4)                    # X: n x d in the unit cube, y: n to minimise
>>> request = dataclasses.replace(request, C=C, X_failed=F)          # C: n x m (<= 0 holds), F: failed points
>>> Gibo().suggest(request).X                                        # x_t and exploration points
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botorch.models import SingleTaskGP
from pydantic import Field
from torch import Tensor

from localbo.policies import register
from localbo.policies.gradients import KernelParams, gradient_posterior
from localbo.policies.local import LocalConfig, LocalPolicy
from localbo.policies.local_constraints import Constraints
from localbo.policies.minucb import CONSTRAINED


class GiboConfig(LocalConfig):
    lr: float = Field(default=0.25, gt=0.0, le=10.0, description="Step length, in lengthscales")
    epsilon: float | None = Field(
        default=0.1, ge=0.0, description="Early stop: end exploration when a point's trace reduction < epsilon"
    )


def gibo_step(model: SingleTaskGP, x_t: Tensor, lr: float) -> tuple[Tensor, dict[str, Any]]:
    """x_{t+1} = clip(x_t - lr * g / ||g|| * l) with g = grad mu(x_t) (x_t: d); x_t itself when g = 0."""
    grad = gradient_posterior(model, x_t.unsqueeze(0))[0][0]
    norm = grad.norm()
    if not bool(norm > 0):
        return x_t, {"grad_norm": 0.0}
    lengthscale = KernelParams.from_model(model).lengthscale
    x_next = (x_t - lr * grad / norm * lengthscale).clamp(0.0, 1.0)
    return x_next, {"grad_norm": float(norm), "step_norm": float((x_next - x_t).norm())}


@register
class Gibo(LocalPolicy[GiboConfig]):
    """GIBO: explore to learn the gradient at x_t, then a normalised gradient step."""

    name = "gibo"
    Config = GiboConfig
    handles = CONSTRAINED

    def step(self, model: Any, x_t: Tensor, config: GiboConfig) -> tuple[Tensor, dict[str, Any]]:
        return gibo_step(model, x_t, config.lr)

    def constrained_step(
        self, model: Any, x_t: Tensor, config: GiboConfig, constraints: Constraints
    ) -> tuple[Tensor, dict[str, Any], Callable[[Tensor], Tensor] | None]:
        if bool(constraints.likely(x_t.unsqueeze(0))[0]):
            grad, sign, towards = gradient_posterior(model, x_t.unsqueeze(0))[0][0], -1.0, "objective"
        else:
            grad, sign, towards = constraints.grad_log_pf(x_t), 1.0, "feasibility"
        norm = grad.norm()
        if not bool(norm > 0):
            return x_t, {"grad_norm": 0.0, "towards": towards}, None
        lengthscale = KernelParams.from_model(model).lengthscale
        target = x_t + sign * config.lr * grad / norm * lengthscale
        return constraints.project(target, x_t), {"grad_norm": float(norm), "towards": towards}, None
