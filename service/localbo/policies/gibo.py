"""``gibo``: Gradient-Informative Bayesian Optimization (Müller, von Rohr, Trimpe, NeurIPS 2021).

    repeat:  evaluate x_t once                                   (b1 = 1, as the reference code)
             Z = argmin_Z tr Cov(grad f(x_t) | D, Z),  Z in x_t +- delta   (greedy, q = 1 per point)
             evaluate Z, D <- D + (x_t, Z);  fit the GP
             x_{t+1} = x_t - lr * (grad mu(x_t) / ||grad mu(x_t)||) * l     (l: the ARD lengthscales)

The step is the reference code's ``normalize_gradient`` rule (algorithms.md 1.3) in minimisation
form, clipped to [0, 1]^d. Defaults are GIBO's synthetic settings: delta 0.2, d samples per
iteration, N_max = 5 d, lr 0.25, epsilon 0.1.
"""

from __future__ import annotations

from typing import Any

from botorch.models import SingleTaskGP
from pydantic import Field
from torch import Tensor

from localbo.policies import register
from localbo.policies.gradients import KernelParams, gradient_posterior
from localbo.policies.local import LocalConfig, LocalPolicy


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

    def step(self, model: Any, x_t: Tensor, config: GiboConfig) -> tuple[Tensor, dict[str, Any]]:
        return gibo_step(model, x_t, config.lr)
