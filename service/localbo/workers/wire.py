"""Requests and suggestions as JSON-able dicts, for the trip to a worker and back (tensors as lists).

Versioned, because an API process and a worker may run different releases during an upgrade: every
message carries ``wire`` (this layout's version), the state as ``dump_state`` writes it (its schema
version beside it) and the config with its ``Config.version``. A side that reads a newer message
than it knows, or a state or config it cannot migrate, raises ``WireError`` saying which side to
upgrade: the suggest then fails like any policy error (fallback points, the reason on the study),
never with a fresh state that would overwrite the study's. The generator travels as ``rng_seed``.
Finite-space requests (the candidates) are computed where they are cached and never sent.
"""

from __future__ import annotations

from typing import Any

import torch

from localbo.policies import (
    Policy,
    PolicyConfig,
    PolicyState,
    Polytope,
    SpaceStructure,
    Suggestion,
    SuggestRequest,
    get_policy,
)

WIRE_VERSION = 4  # 1: no version field, a bare state and config; 2: no Y (several objectives); 3: no n_failed


class WireError(ValueError):
    """A message this side cannot read (a newer layout, a state or config it cannot load)."""


def _rows(t: torch.Tensor | None) -> list | None:
    return None if t is None else t.detach().cpu().tolist()


def _check_version(data: dict[str, Any], what: str) -> None:
    version = data.get("wire", 1)
    if version != WIRE_VERSION:
        older = "this side" if isinstance(version, int) and version > WIRE_VERSION else "the sender"
        raise WireError(f"{what} of wire format v{version}, this side reads v{WIRE_VERSION}: upgrade {older}")


def _state(cls: type[Policy], saved: Any) -> PolicyState:
    state, note = cls.load_state(saved)
    if note:  # never compute from a fresh state in its place: the result would overwrite the study's
        raise WireError(note)
    return state


def _config(cls: type[Policy], data: dict[str, Any]) -> PolicyConfig:
    config, problem = cls.load_config(data["config"], int(data["config_version"]))
    if config is None:
        raise WireError(problem)
    return config


def request_to_wire(policy: str, request: SuggestRequest) -> dict[str, Any]:
    if request.finite is not None:
        raise ValueError("finite-space requests are computed in the process that holds the candidates")
    cls = get_policy(policy)
    return {
        "wire": WIRE_VERSION,
        "policy": policy,
        "dim": request.dim,
        "X": request.X.detach().cpu().tolist(),  # n x d
        "y": request.y.detach().cpu().tolist(),  # n
        "numbers": request.numbers.detach().cpu().tolist(),  # n
        "X_pending": request.X_pending.detach().cpu().tolist(),  # m x d
        "count": request.count,
        "state": cls.dump_state(request.state),  # {"schema": version, "data": ...}
        "config": request.config.model_dump(mode="json"),
        "config_version": cls.Config.version,
        "seed": request.seed,
        "rng_seed": request.rng_seed,
        "space": {
            "dim": request.space.dim,
            "onehot": [list(block) for block in request.space.onehot],
            "finite": request.space.finite,
        },
        "C": _rows(request.C),  # n x m outcome constraint values, or None
        "C_width": None if request.C is None else int(request.C.shape[1]),
        "polytope": None
        if request.polytope is None
        else {k: _rows(getattr(request.polytope, k)) for k in ("A_ub", "b_ub", "A_eq", "b_eq")},
        "X_failed": _rows(request.X_failed),
        "n_failed": request.n_failed,
        "max_violation_probability": request.max_violation_probability,
        "Y": _rows(request.Y),  # n x k objective values (several objectives), or None
        "Y_width": None if request.Y is None else int(request.Y.shape[1]),
        "reference_point": _rows(request.reference_point),  # k, or None
    }


def request_from_wire(data: dict[str, Any], device: torch.device) -> tuple[str, SuggestRequest]:
    _check_version(data, "a request")
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
        state=_state(cls, data["state"]),
        config=_config(cls, data),
        seed=int(data["seed"]),
        rng_seed=int(data["rng_seed"]),
        space=SpaceStructure(
            dim=int(space["dim"]),
            onehot=tuple((int(first), int(width)) for first, width in space["onehot"]),
            finite=bool(space["finite"]),
        ),
        device=device,
        C=None if data.get("C") is None else tensor(data["C"], (len(data["C"]), int(data["C_width"]))),
        polytope=None
        if data.get("polytope") is None
        else Polytope(
            A_ub=tensor(data["polytope"]["A_ub"], (-1, d)),
            b_ub=tensor(data["polytope"]["b_ub"], (-1,)),
            A_eq=tensor(data["polytope"]["A_eq"], (-1, d)),
            b_eq=tensor(data["polytope"]["b_eq"], (-1,)),
        ),
        X_failed=None if data.get("X_failed") is None else tensor(data["X_failed"], (-1, d)),
        n_failed=int(data["n_failed"]),
        max_violation_probability=data.get("max_violation_probability"),
        Y=None if data.get("Y") is None else tensor(data["Y"], (len(data["Y"]), int(data["Y_width"]))),
        reference_point=None if data.get("reference_point") is None else tensor(data["reference_point"], (-1,)),
    )
    return cls.name, request


def suggestion_to_wire(suggestion: Suggestion, worker: str) -> dict[str, Any]:
    if suggestion.index is not None:
        raise ValueError("finite-space suggestions are not sent over the wire")
    return {
        "wire": WIRE_VERSION,
        "X": suggestion.X.detach().to("cpu", torch.float64).tolist(),
        "state": {"schema": suggestion.state.version, "data": suggestion.state.model_dump(mode="json")},
        "worker": worker,  # for logs; nothing reads it
    }


def suggestion_from_wire(data: dict[str, Any], policy: str) -> Suggestion:
    """The suggestion of ``policy`` (whose ``State`` validates the state) from ``suggestion_to_wire``'s dict."""
    _check_version(data, "a suggestion")
    cls = get_policy(policy)
    return Suggestion(X=torch.tensor(data["X"], dtype=torch.float64), state=_state(cls, data["state"]))
