"""Requests and suggestions as JSON-able dicts, for the trip to a worker and back (tensors as lists).

A request's state travels as ``state.model_dump(mode="json")`` and comes back through the policy's
``State.model_validate``; its generator travels as ``rng_seed`` and is rebuilt from it. Finite-space
requests (the candidates) are computed where they are cached and never sent.
"""

from __future__ import annotations

from typing import Any

import torch

from localbo.policies import SpaceStructure, Suggestion, SuggestRequest, get_policy


def request_to_wire(policy: str, request: SuggestRequest) -> dict[str, Any]:
    if request.finite is not None:
        raise ValueError("finite-space requests are computed in the process that holds the candidates")
    return {
        "policy": policy,
        "dim": request.dim,
        "X": request.X.detach().cpu().tolist(),  # n x d
        "y": request.y.detach().cpu().tolist(),  # n
        "numbers": request.numbers.detach().cpu().tolist(),  # n
        "X_pending": request.X_pending.detach().cpu().tolist(),  # m x d
        "count": request.count,
        "state": request.state.model_dump(mode="json"),
        "config": request.config.model_dump(mode="json"),
        "seed": request.seed,
        "rng_seed": request.rng_seed,
        "space": {
            "dim": request.space.dim,
            "onehot": [list(block) for block in request.space.onehot],
            "finite": request.space.finite,
        },
    }


def request_from_wire(data: dict[str, Any], device: torch.device) -> tuple[str, SuggestRequest]:
    cls = get_policy(data["policy"])
    d = int(data["dim"])

    def tensor(rows: list, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.tensor(rows, dtype=torch.float64, device=device).reshape(shape)

    space = data["space"]
    request = SuggestRequest(
        dim=d,
        X=tensor(data["X"], (-1, d)),
        y=tensor(data["y"], (-1,)),
        numbers=torch.tensor(data["numbers"], dtype=torch.long).reshape(-1),
        X_pending=tensor(data["X_pending"], (-1, d)),
        count=int(data["count"]),
        state=cls.State.model_validate(data["state"]),
        config=cls.Config.model_validate(data["config"]),
        seed=int(data["seed"]),
        rng_seed=int(data["rng_seed"]),
        space=SpaceStructure(
            dim=int(space["dim"]),
            onehot=tuple((int(first), int(width)) for first, width in space["onehot"]),
            finite=bool(space["finite"]),
        ),
        device=device,
    )
    return cls.name, request


def suggestion_to_wire(suggestion: Suggestion, worker: str) -> dict[str, Any]:
    if suggestion.index is not None:
        raise ValueError("finite-space suggestions are not sent over the wire")
    return {
        "X": suggestion.X.detach().to("cpu", torch.float64).tolist(),
        "state": suggestion.state.model_dump(mode="json"),
        "worker": worker,  # for logs; nothing reads it
    }


def suggestion_from_wire(data: dict[str, Any], policy: str) -> Suggestion:
    """The suggestion of ``policy`` (whose ``State`` validates the state) from ``suggestion_to_wire``'s dict."""
    cls = get_policy(policy)
    return Suggestion(X=torch.tensor(data["X"], dtype=torch.float64), state=cls.State.model_validate(data["state"]))
