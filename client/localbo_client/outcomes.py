"""What a study measures and must respect, as ``Client.create_study`` takes it, and what a tell carries.

The shapes are ``TypedDict`` s: write them as plain dicts, and a type checker checks their keys.

```python
client.create_study(
    "reactor",
    space={n: {"type": "float", "low": 0, "high": 1} for n in "abc"},
    policy="turbo",
    objectives=[{"metric": "yield", "direction": "maximize"}],
    constraints=[{"metric": "purity", "op": ">=", "bound": 0.95}],
    parameter_constraints=[{"terms": {"a": 1, "b": 1, "c": 1}, "op": "==", "bound": 1}],
)
study.tell(trial, {"yield": 0.81, "purity": 0.97})   # named values: every metric the study names
study.tell(trial, 0.81)                              # one number: a study without constraints
```

A study that names no metrics keeps the single unnamed ``value``, and every call that worked before
works unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

__all__ = [
    "Failures",
    "Objective",
    "OutcomeConstraint",
    "ParameterConstraint",
    "Result",
    "Safety",
    "result_body",
]

Direction = Literal["minimize", "maximize"]
Failures = Literal["ignore", "avoid"]
"""``"ignore"`` (the default): a failed trial teaches nothing. ``"avoid"``: failed trials mark where the rig
faults and the policy steers away (turbo, ei, ucb and the local policies serve it)."""

Result = float | Mapping[str, float]
"""What a tell carries: one number (the unnamed ``value``, or a study's single objective when it has no
outcome constraints), or ``{metric: number}`` for every metric the study names."""


class _ObjectiveRequired(TypedDict):
    metric: str


class Objective(_ObjectiveRequired, total=False):
    """The metric to optimise, named as tells name it; ``direction`` defaults to ``"minimize"``.

    ```python
    {"metric": "yield", "direction": "maximize"}
    ```

    One objective: its direction is the study's, whatever ``direction=`` says. Two to four: a Pareto front
    (``Study.pareto``), each objective with its own direction.
    """

    direction: Direction


class OutcomeConstraint(TypedDict):
    """A limit every tell measures: a trial is feasible when ``values[metric] op bound`` holds for each of the
    study's outcome constraints.

    ```python
    {"metric": "purity", "op": ">=", "bound": 0.95}
    {"metric": "t_peak", "op": "<=", "bound": 450}
    ```
    """

    metric: str
    op: Literal[">=", "<="]
    bound: float


class ParameterConstraint(TypedDict):
    """A linear constraint over float and int parameters (not log-scaled), in the space's units:
    ``sum(coef * params[name]) op bound``. Every point the study hands out satisfies it (within 1e-9, its ints
    whole).

    ```python
    {"terms": {"a": 1, "b": 1, "c": 1}, "op": "==", "bound": 1}   # fractions of a mixture
    {"terms": {"x": 2, "y": -1}, "op": "<=", "bound": 0.5}
    ```
    """

    terms: Mapping[str, float]
    op: Literal["<=", ">=", "=="]
    bound: float


class _SafetyRequired(TypedDict):
    max_violation_probability: float


class Safety(_SafetyRequired, total=False):
    """Safe mode: ask only points predicted to meet every outcome constraint with at least
    ``1 - max_violation_probability`` probability, starting from ``seeds`` (parameters known safe).

    ```python
    {"max_violation_probability": 0.05, "seeds": [{"a": 0.3, "b": 0.3, "c": 0.4}]}
    ```

    Without seeds the study starts from the first feasible trials you add (``Study.add_trial``); until one exists
    an ask is a ``Conflict``. Served by ``turbo`` and the local policies (``minucb``, ``la-minucb``, ``gibo``).
    """

    seeds: list[dict[str, Any]]


def result_body(result: Result) -> dict[str, Any]:
    """The part of a tell that carries ``result``: ``{"values": {...}}`` for a mapping of named values,
    ``{"value": x}`` for a number. ``ValueError`` for a value that is not a finite number (JSON has none).

    ```python
    result_body(0.5)                                # {"value": 0.5}
    result_body({"yield": 0.8, "purity": 0.97})     # {"values": {"yield": 0.8, "purity": 0.97}}
    ```
    """
    if isinstance(result, Mapping):
        if not result:
            raise ValueError("values: expected a number for each of the study's metrics, got an empty mapping")
        values = {}
        for metric, value in result.items():
            if not isinstance(metric, str):
                raise ValueError(f"values: expected metric names (str), got {metric!r}")
            values[metric] = finite(value, f"values.{metric}")
        return {"values": values}
    return {"value": finite(result)}


def finite(value: Any, field: str = "value") -> float:
    """``value`` as a float, or a ``ValueError`` naming ``field``: JSON has no NaN or infinity, so say so here
    rather than fail inside the encoder.

    ```python
    finite("0.5")                   # 0.5
    finite(float("nan"))            # ValueError: value: expected a finite number, got nan
    ```
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{field}: expected a finite number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{field}: expected a finite number, got {number}")
    return number


def check_finite(body: Any, field: str = "") -> None:
    """A ``ValueError`` naming the first NaN or infinity in a JSON body, e.g. ``reference_point.cost``.

    ```python
    check_finite({"reference_point": {"cost": float("nan")}})  # ValueError: reference_point.cost: expected ...
    ```
    """
    if isinstance(body, float) and not math.isfinite(body):
        raise ValueError(f"{field or 'body'}: expected a finite number, got {body}")
    if isinstance(body, Mapping):
        for key, item in body.items():
            check_finite(item, f"{field}.{key}" if field else str(key))
    elif isinstance(body, list | tuple):
        for i, item in enumerate(body):
            check_finite(item, f"{field}.{i}" if field else str(i))
