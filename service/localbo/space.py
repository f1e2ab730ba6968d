"""Search spaces: named float, int and categorical parameters and the map to and from the unit cube.

Policies only ever see points in [0, 1]^d; this module is the one place that knows
about user units, log scales, integer rounding and categories. A float or int parameter is one
coordinate; a categorical one with k choices is k coordinates, one-hot (the choice is the argmax,
the first on ties), so d counts coordinates, not parameters. The engine snaps a policy's point to
the one-hot of its choices before storing it, so every GP sees the points that were evaluated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Literal

MAX_PARAMS = 25_000
MAX_CHOICES = 1_000
MAX_INT_BOUND = 2**53  # int parameters: every integer up to here is exact as a float


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

    width: ClassVar[int] = 1

    def encode(self, value: float) -> list[float]:
        return [self.to_unit(value)]

    def decode(self, u: list[float]) -> float | int:
        return self.from_unit(u[0])

    def snap(self, u: list[float]) -> list[float]:
        return u  # float and int coordinates are kept as the policy chose them

    def check(self, where: str, raw: Any) -> float:
        """A user value of this parameter, or SpaceError."""
        value = number(where, raw)
        if self.type == "int" and value != int(value):
            raise SpaceError(where, f"expected a whole number, got {value}")
        if not self.low <= value <= self.high:
            raise SpaceError(where, f"expected a value in [{self.spec()['low']}, {self.spec()['high']}], got {raw}")
        return value

    def encode_checked(self, where: str, raw: Any) -> list[float]:
        """The coordinates of a user value (``check``, then ``encode``), or SpaceError."""
        return self.encode(self.check(where, raw))

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "low": self.low, "high": self.high}
        if self.type == "int":
            out["low"], out["high"] = int(self.low), int(self.high)
        if self.log:
            out["log"] = True
        return out


Choice = str | int | float | bool


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: true is not 1, 1 is 1.0, "1" is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


@dataclass(frozen=True)
class Categorical:
    """One of ``choices``, one-hot over len(choices) coordinates."""

    name: str
    choices: tuple[Choice, ...]
    type: ClassVar[str] = "categorical"

    @property
    def width(self) -> int:
        return len(self.choices)

    def index(self, value: Any) -> int:
        return next(i for i, c in enumerate(self.choices) if _same(c, value))

    def encode(self, value: Any) -> list[float]:
        hot = self.index(value)
        return [1.0 if i == hot else 0.0 for i in range(self.width)]

    def decode(self, u: list[float]) -> Choice:
        return self.choices[max(range(self.width), key=lambda i: (u[i], -i))]  # argmax, the first on ties

    def snap(self, u: list[float]) -> list[float]:
        return self.encode(self.decode(u))

    def check(self, where: str, raw: Any) -> Choice:
        if not any(_same(c, raw) for c in self.choices):
            raise SpaceError(where, f"expected one of {list(self.choices)}, got {raw!r}")
        return self.choices[self.index(raw)]  # the choice as listed (1 given for the choice 1.0)

    def encode_checked(self, where: str, raw: Any) -> list[float]:
        """The coordinates of a user value (``check``, then ``encode``), or SpaceError."""
        return self.encode(self.check(where, raw))

    def spec(self) -> dict[str, Any]:
        return {"type": "categorical", "choices": list(self.choices)}


AnyParam = Param | Categorical


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
    try:
        value = float(raw)
    except OverflowError:  # an integer literal beyond any float
        raise SpaceError(field, "expected a finite number within the range of a float (about ±1.8e308)") from None
    if not math.isfinite(value):
        raise SpaceError(field, f"expected a finite number, got {raw!r}")
    return value


def _parse_categorical(name: str, spec: dict[str, Any]) -> Categorical:
    where = f"space.{name}"
    unknown = set(spec) - {"type", "choices"}
    if unknown:
        raise SpaceError(where, f"unknown keys {sorted(unknown)}; a categorical parameter has type and choices")
    choices = spec.get("choices")
    if not isinstance(choices, list) or not 1 <= len(choices) <= MAX_CHOICES:
        raise SpaceError(f"{where}.choices", f"expected a list of 1..{MAX_CHOICES} strings, numbers or booleans")
    for i, c in enumerate(choices):
        if not isinstance(c, str | int | float | bool) or (isinstance(c, float) and not math.isfinite(c)):
            raise SpaceError(f"{where}.choices[{i}]", f"expected a string, finite number or boolean, got {c!r}")
        if any(_same(c, earlier) for earlier in choices[:i]):
            raise SpaceError(f"{where}.choices[{i}]", f"{c!r} is listed twice; choices must be distinct")
    return Categorical(name=name, choices=tuple(choices))


def _parse_param(name: str, spec: Any) -> AnyParam:
    where = f"space.{name}"
    if not isinstance(spec, dict):
        raise SpaceError(where, 'expected an object like {"type": "float", "low": 0, "high": 1}')
    kind = spec.get("type")
    if kind == "categorical":
        return _parse_categorical(name, spec)
    unknown = set(spec) - {"type", "low", "high", "log"}
    if unknown:
        raise SpaceError(where, f"unknown keys {sorted(unknown)}; expected type, low, high, log")
    if kind not in ("float", "int"):
        raise SpaceError(f"{where}.type", f"expected 'float', 'int' or 'categorical', got {kind!r}")
    for key in ("low", "high"):
        if key not in spec:
            raise SpaceError(f"{where}.{key}", "missing; expected a number")
    low, high = number(f"{where}.low", spec["low"]), number(f"{where}.high", spec["high"])
    if kind == "int" and (low != int(low) or high != int(high)):
        raise SpaceError(where, f"int bounds must be whole numbers, got {low}..{high}")
    for key, bound in (("low", low), ("high", high)):
        if kind == "int" and abs(bound) > MAX_INT_BOUND:
            raise SpaceError(f"{where}.{key}", f"expected an integer within ±2^53 ({MAX_INT_BOUND}), got {bound:g}")
    if not math.isfinite(high - low):  # every point would round to a bound
        raise SpaceError(f"{where}.high", f"expected high - low to be a finite number, got {low:g}..{high:g}")
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
    params: tuple[AnyParam, ...]

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
        space = cls(tuple(params))
        if space.dim > MAX_PARAMS:
            raise SpaceError(
                "space", f"at most {MAX_PARAMS} coordinates (a categorical counts its choices), got {space.dim}"
            )
        return space

    @cached_property  # spaces never change; the engine asks per trial
    def dim(self) -> int:
        """Coordinates of the unit cube: one per float or int, one per choice of a categorical."""
        return sum(p.width for p in self.params)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    @cached_property
    def kind(self) -> Literal["continuous", "categorical"]:
        """What a policy must handle: "categorical" when any parameter is."""
        return "categorical" if any(isinstance(p, Categorical) for p in self.params) else "continuous"

    def spec(self) -> dict[str, dict[str, Any]]:
        return {p.name: p.spec() for p in self.params}

    def _slices(self, x: list[float]) -> list[tuple[AnyParam, list[float]]]:
        out, at = [], 0
        for p in self.params:
            out.append((p, list(x[at : at + p.width])))
            at += p.width
        if at != len(x):
            raise ValueError(f"a point of {len(x)} coordinates in a space of {at}")
        return out

    def from_unit(self, x: list[float]) -> dict[str, Any]:
        return {p.name: p.decode(u) for p, u in self._slices(x)}

    def snap(self, x: list[float]) -> list[float]:
        """x with each categorical's coordinates replaced by the one-hot of its choice (the point evaluated)."""
        if self.kind == "continuous":
            return x
        return [v for p, u in self._slices(x) for v in p.snap(u)]

    def to_unit(self, params: dict[str, Any], field: str = "params") -> list[float]:
        """Validate user-unit params (names, types, ranges, choices) and map them into [0, 1]^d."""
        check_names(params, self.names, field)
        unit: list[float] = []
        for p in self.params:
            unit += p.encode_checked(f"{field}.{p.name}", params[p.name])
        return unit
