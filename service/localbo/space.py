"""Search spaces: named float/int parameters and the map to and from the unit cube.

Policies only ever see points in [0, 1]^d; this module is the one place that knows
about user units, log scales and integer rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

MAX_PARAMS = 25_000


class SpaceError(ValueError):
    """A space or a set of params does not fit; ``field`` names where."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Param:
    name: str
    type: Literal["float", "int"]
    low: float
    high: float
    log: bool = False

    def to_unit(self, value: float) -> float:
        if self.type == "int":
            # Each integer owns an equal slice of [0, 1]; map to the slice's centre.
            return (value - self.low + 0.5) / (self.high - self.low + 1)
        if self.log:
            lo, hi = math.log(self.low), math.log(self.high)
            return (math.log(value) - lo) / (hi - lo) if hi > lo else 0.5
        return (value - self.low) / (self.high - self.low) if self.high > self.low else 0.5

    def from_unit(self, u: float) -> float | int:
        u = min(max(float(u), 0.0), 1.0)
        if self.type == "int":
            n = int(self.high - self.low + 1)
            return int(self.low) + min(int(math.floor(u * n)), n - 1)
        if self.log:
            lo, hi = math.log(self.low), math.log(self.high)
            value = math.exp(lo + u * (hi - lo))
        else:
            value = self.low + u * (self.high - self.low)
        return min(max(value, self.low), self.high)  # guard against rounding past a bound

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "low": self.low, "high": self.high}
        if self.type == "int":
            out["low"], out["high"] = int(self.low), int(self.high)
        if self.log:
            out["log"] = True
        return out


def check_names(params: Any, names: list[str], field: str) -> None:
    """``params`` is an object with exactly these parameter names, or SpaceError naming the field."""
    if not isinstance(params, dict):
        raise SpaceError(field, "expected an object of parameter name -> value")
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise SpaceError(f"{field}.{unknown[0]}", f"unknown parameter; expected {names}")
    missing = [n for n in names if n not in params]
    if missing:
        raise SpaceError(f"{field}.{missing[0]}", f"missing; expected {names}")


def number(field: str, raw: Any) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise SpaceError(field, f"expected a number, got {raw!r}")
    if not math.isfinite(raw):
        raise SpaceError(field, f"expected a finite number, got {raw!r}")
    return float(raw)


def _parse_param(name: str, spec: Any) -> Param:
    where = f"space.{name}"
    if not isinstance(spec, dict):
        raise SpaceError(where, 'expected an object like {"type": "float", "low": 0, "high": 1}')
    unknown = set(spec) - {"type", "low", "high", "log"}
    if unknown:
        raise SpaceError(where, f"unknown keys {sorted(unknown)}; expected type, low, high, log")
    kind = spec.get("type")
    if kind not in ("float", "int"):
        raise SpaceError(f"{where}.type", f"expected 'float' or 'int', got {kind!r}")
    for key in ("low", "high"):
        if key not in spec:
            raise SpaceError(f"{where}.{key}", "missing; expected a number")
    low, high = number(f"{where}.low", spec["low"]), number(f"{where}.high", spec["high"])
    if kind == "int" and (low != int(low) or high != int(high)):
        raise SpaceError(where, f"int bounds must be whole numbers, got {low}..{high}")
    if high < low:
        raise SpaceError(f"{where}.high", f"expected high >= low ({low}), got {high}")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise SpaceError(f"{where}.log", f"expected true or false, got {log!r}")
    if log and kind == "int":
        raise SpaceError(f"{where}.log", "log scale is only supported for float parameters")
    if log and low <= 0:
        raise SpaceError(f"{where}.low", f"expected low > 0 for a log scale, got {low}")
    return Param(name=name, type=kind, low=low, high=high, log=log)


@dataclass(frozen=True)
class SearchSpace:
    params: tuple[Param, ...]

    @classmethod
    def parse(cls, raw: Any) -> SearchSpace:
        if not isinstance(raw, dict) or not raw:
            raise SpaceError("space", "expected a non-empty object of parameter name -> spec")
        if len(raw) > MAX_PARAMS:
            raise SpaceError("space", f"at most {MAX_PARAMS} parameters, got {len(raw)}")
        params = []
        for name, spec in raw.items():
            if not name or len(name) > 200:
                raise SpaceError("space", f"parameter names must be 1..200 characters: {name!r}")
            params.append(_parse_param(name, spec))
        return cls(tuple(params))

    @property
    def dim(self) -> int:
        return len(self.params)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def spec(self) -> dict[str, dict[str, Any]]:
        return {p.name: p.spec() for p in self.params}

    def from_unit(self, x: list[float]) -> dict[str, float | int]:
        return {p.name: p.from_unit(u) for p, u in zip(self.params, x, strict=True)}

    def to_unit(self, params: dict[str, Any], field: str = "params") -> list[float]:
        """Validate user-unit params (names, types, ranges) and map them into [0, 1]^d."""
        check_names(params, self.names, field)
        unit = []
        for p in self.params:
            where = f"{field}.{p.name}"
            value = number(where, params[p.name])
            if p.type == "int" and value != int(value):
                raise SpaceError(where, f"expected a whole number, got {value}")
            if not p.low <= value <= p.high:
                raise SpaceError(
                    where, f"expected a value in [{p.spec()['low']}, {p.spec()['high']}], got {params[p.name]}"
                )
            unit.append(p.to_unit(value))
        return unit
