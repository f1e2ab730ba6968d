"""Building a policy's SuggestRequest in tests, with the defaults a test does not care about."""

from __future__ import annotations

from typing import Any

import torch
from localbo.policies import FiniteSpace, Policy, PolicyConfig, PolicyState, SpaceStructure, SuggestRequest, get_policy


def make_request(
    policy: type[Policy] | str,
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
) -> SuggestRequest:
    """``policy``'s request on X (n x d), y (n): state a State, its raw data or None (fresh); config likewise."""
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
        numbers=torch.arange(X.shape[0], dtype=torch.long),
        X_pending=(pending if pending is not None else X.new_zeros(0, d)).to(torch.float64).reshape(-1, d),
        count=count,
        state=state,
        config=config,
        seed=seed,
        rng_seed=seed if rng_seed is None else rng_seed,
        space=SpaceStructure(dim=d, onehot=onehot, finite=finite is not None),
        finite=finite,
    )
