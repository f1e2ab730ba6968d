"""Data shaped like a local policy's run, and the request that ends one of its iterations (the compute benchmarks)."""

from __future__ import annotations

import torch
from localbo.policies import SuggestRequest, get_policy, gp
from localbo.policies.requests import make_request


def make_data(d: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """X: n x d in boxes x_c +- 0.2 whose centre moves from the cube's middle towards x*, in run order;
    y: n, ||x - x*||^2 + 0.1 sum sin(6 x) + N(0, 0.01^2) (to minimise)."""
    g = torch.Generator().manual_seed(seed)
    x_star = 0.5 + 0.3 * (2 * torch.rand(d, generator=g, dtype=torch.float64) - 1)
    centre = 0.5 + torch.linspace(0, 1, n, dtype=torch.float64).unsqueeze(-1) * (x_star - 0.5)
    X = (centre + 0.2 * (2 * torch.rand(n, d, generator=g, dtype=torch.float64) - 1)).clamp(0, 1)
    y = (X - x_star).pow(2).sum(-1) + 0.1 * torch.sin(6 * X).sum(-1) + 0.01 * torch.randn(n, generator=g).double()
    return X, y


def iteration_request(policy: str, d: int, n: int, n_max: int | None, device: str = "cpu") -> SuggestRequest:
    """The suggest that ends an iteration after n results: the last batch's results are all in, and the fit
    warm-starts from the hyperparameters fitted without that batch (as in a run)."""
    cls = get_policy(policy)
    config = cls.Config(n_max=n_max)
    X, y = make_data(d, n)
    batch = cls().resamples(config) + (config.samples_per_iteration or d)
    window = n_max or 5 * d
    hypers = gp.to_state(gp.fit_model(X[: n - batch], y[: n - batch], n_max=window))
    state = {"t": 5, "x_t": X[n - batch].tolist(), "phase": "batch", "n_start": n - batch, "batch": batch,
             "extra": 0, "hypers": hypers}  # fmt: skip
    return make_request(cls, X, y, state=state, config=config, seed=1, device=device)
