"""Requests and suggestions as JSON-able dicts, for the trip to a worker and back (tensors as lists)."""

from __future__ import annotations

import math
from typing import Any

import torch

from localbo.policies import Suggestion, SuggestRequest, get_policy


def request_to_wire(policy: str, request: SuggestRequest) -> dict[str, Any]:
    return {
        "policy": policy,
        "dim": request.dim,
        "X": request.X.detach().cpu().tolist(),  # n x d
        "y": request.y.detach().cpu().tolist(),  # n
        "X_pending": request.X_pending.detach().cpu().tolist(),  # m x d
        "count": request.count,
        "state": request.state,
        "config": request.config.model_dump(mode="json"),
        "seed": request.seed,
    }


def request_from_wire(data: dict[str, Any], device: torch.device) -> tuple[str, SuggestRequest]:
    cls = get_policy(data["policy"])
    d = int(data["dim"])

    def tensor(rows: list, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.tensor(rows, dtype=torch.float64, device=device).reshape(shape)

    request = SuggestRequest(
        dim=d,
        X=tensor(data["X"], (-1, d)),
        y=tensor(data["y"], (-1,)),
        X_pending=tensor(data["X_pending"], (-1, d)),
        count=int(data["count"]),
        state=data["state"],
        config=cls.Config.model_validate(data["config"]),
        seed=int(data["seed"]),
        device=device,
    )
    return cls.name, request


def _plain(value: Any) -> Any:
    """``info`` as JSON: tensors to lists, non-finite floats to None."""
    if isinstance(value, torch.Tensor):
        return _plain(value.detach().cpu().tolist())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def suggestion_to_wire(suggestion: Suggestion, worker: str) -> dict[str, Any]:
    return {
        "X": suggestion.X.detach().to("cpu", torch.float64).tolist(),
        "state": suggestion.state,
        "info": {**_plain(suggestion.info), "worker": worker},
    }


def suggestion_from_wire(data: dict[str, Any]) -> Suggestion:
    return Suggestion(X=torch.tensor(data["X"], dtype=torch.float64), state=data["state"], info=data["info"])
