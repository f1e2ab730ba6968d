"""Building a ``SuggestRequest`` outside the service (tests, benchmarks, a library user), with the
defaults the service would use: trial numbers 1..n, a fresh or given state, a validated config, every tensor on
the request's device."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from localbo.policies import get_policy
from localbo.policies.base import (
    FiniteSpace,
    Policy,
    PolicyConfig,
    PolicyState,
    Polytope,
    SpaceStructure,
    SuggestRequest,
)


def _tensors_to(value: Any, device: torch.device) -> Any:
    """A dataclass of tensors (a Polytope, a FiniteSpace) with each of them on ``device``."""
    fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return dataclasses.replace(value, **{k: v.to(device) for k, v in fields.items() if isinstance(v, torch.Tensor)})


def on_device(request: SuggestRequest[Any, Any]) -> SuggestRequest[Any, Any]:
    """The request with every tensor (its polytope's and finite space's too) on ``request.device``, as the engine
    hands it over (``planning/runner.py``): a tensor a policy then makes on the CPU beside them is an error here as
    it would be in the service, not only there."""
    device = request.device
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(request):
        value = getattr(request, f.name) if f.init else None  # the generator is made again, from rng_seed
        if isinstance(value, torch.Tensor):
            changes[f.name] = value.to(device)
        elif isinstance(value, (Polytope, FiniteSpace)):
            changes[f.name] = _tensors_to(value, device)
    return dataclasses.replace(request, **changes)


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
    request: SuggestRequest[Any, Any] = SuggestRequest(
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
    return on_device(request)
