"""Building a ``SuggestRequest`` outside the service (tests, benchmarks, a library user), with the
defaults the service would use: trial numbers 1..n, a fresh or given state, a validated config."""

from __future__ import annotations

from typing import Any

import torch

from localbo.policies import get_policy
from localbo.policies.base import FiniteSpace, Policy, PolicyConfig, PolicyState, SpaceStructure, SuggestRequest


def make_request(
    policy: type[Policy[Any, Any]] | str,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    pending: torch.Tensor | None = None,
    count: int = 1,
    state: PolicyState | dict[str, Any] | None = None,
    config: PolicyConfig | dict[str, Any] | None = None,
    seed: int = 0,
    rng_seed: int | None = None,
    dim: int | None = None,
    onehot: tuple[tuple[int, int], ...] = (),
    finite: FiniteSpace | None = None,
    device: torch.device | str = "cpu",
) -> SuggestRequest[Any, Any]:
    """``policy``'s request on X (n x d), y (n, to minimise); ``state`` a State, its raw data or None (fresh)."""
    cls = get_policy(policy) if isinstance(policy, str) else policy
    d = dim if dim is not None else X.shape[-1]
    X = X.to(torch.float64).reshape(-1, d)
    if not isinstance(state, PolicyState):
        state = cls.State.model_validate(state or {})
    if not isinstance(config, PolicyConfig):
        config = cls.Config.model_validate(config or {})
    return SuggestRequest(
        dim=d,
        X=X,
        y=y.to(torch.float64).reshape(-1),
        numbers=torch.arange(1, X.shape[0] + 1, dtype=torch.long, device=X.device),
        X_pending=(pending if pending is not None else X.new_zeros(0, d)).to(torch.float64).reshape(-1, d),
        count=count,
        state=state,
        config=config,
        seed=seed,
        rng_seed=seed if rng_seed is None else rng_seed,
        space=SpaceStructure(dim=d, onehot=onehot, finite=finite is not None),
        device=torch.device(device),
        finite=finite,
    )
