"""What a study measures and must respect: named metrics, the objective, outcome and parameter constraints.

    {"objectives": [{"metric": "yield", "direction": "maximize"}],
     "constraints": [{"metric": "purity", "op": ">=", "bound": 0.95}],
     "parameter_constraints": [{"terms": {"a": 1, "b": 1}, "op": "<=", "bound": 1}],
     "failures": "avoid"}

A study that names no metrics keeps the one unnamed ``value`` (``direction`` says which way). A study with 2 to
4 objectives trades them off on a Pareto front (``reference_point``: {metric: value} a point must beat in every
objective to count in the hypervolume; absent, it is inferred from the data); its trials' ``value`` holds the
first objective's, for the views that read one number. An outcome
constraint is a black-box limit measured with each trial; a trial is *feasible* when every one holds.
Parameter constraints are linear in user units over float parameters (a log-scaled one is not linear
in the unit cube the policies work in, so it is refused); ``LinearConstraints`` is their unit-cube
form, what the policies receive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from localbo.errors import InvalidInput
from localbo.json_values import field_path
from localbo.space import Param, SearchSpace

if TYPE_CHECKING:
    from localbo.policies.base import Polytope


MetricName = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f]+$")]


def _within_range(value: float) -> float:
    if abs(value) > 1e300:  # pydantic's own le / ge message wrote 1e300 out as a 301-digit integer
        raise ValueError(f"expected a number within ±1e300, got {value:g}")
    return value


Finite = Annotated[float, Field(allow_inf_nan=False, strict=True), AfterValidator(_within_range)]
MAX_METRICS = 20
MAX_PARAMETER_CONSTRAINTS = 50
MAX_OBJECTIVES = 4
FEASIBILITY_TOLERANCE = 1e-9  # a point satisfies a parameter constraint within this, in user units


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Objective(_Strict):
    metric: MetricName = Field(description="The metric to optimise, as tells name it in ``values``")
    direction: Literal["minimize", "maximize"] = "minimize"


class OutcomeConstraint(_Strict):
    metric: MetricName = Field(description="A metric every tell carries")
    op: Literal[">=", "<="]
    bound: Finite = Field(description="The limit, in the metric's units")

    def violation(self, value: float) -> float:
        """How far ``value`` is past the bound (<= 0: satisfied), within +-1e300: a value near the double range
        minus a bound near the other end overflows to inf, which the constraint models cannot fit."""
        past = self.bound - value if self.op == ">=" else value - self.bound
        return max(-1e300, min(1e300, past))


class ParameterConstraint(_Strict):
    terms: dict[MetricName, Finite] = Field(
        min_length=1, max_length=100, description="Parameter -> coefficient, in user units (float parameters)"
    )
    op: Literal["<=", ">=", "=="]
    bound: Finite


class Safety(_Strict):
    max_violation_probability: float = Field(
        gt=0, le=0.5, strict=True, description="At most this chance of a violation"
    )
    seeds: list[dict[str, Any]] = Field(default_factory=list, max_length=100, description="Points known safe")


@dataclass(frozen=True)
class Outcomes:
    """A study's metrics, objective and outcome constraints (empty: the one unnamed value)."""

    objectives: tuple[Objective, ...] = ()
    constraints: tuple[OutcomeConstraint, ...] = ()
    failures: Literal["ignore", "avoid"] = "ignore"
    safety: Safety | None = None
    reference_point: dict[str, float] | None = None  # several objectives: in the metrics' units; None: inferred

    @classmethod
    def from_stored(cls, row: Any) -> Outcomes:
        """From a ``studies`` row's columns (rows stored before metrics existed have none)."""
        mapping = row._mapping if hasattr(row, "_mapping") else row
        return cls(
            tuple(Objective.model_validate(o) for o in mapping.get("objectives") or ()),
            tuple(OutcomeConstraint.model_validate(c) for c in mapping.get("constraints") or ()),
            mapping.get("failures") or "ignore",
            Safety.model_validate(mapping["safety"]) if mapping.get("safety") else None,
            dict(mapping["reference_point"]) if mapping.get("reference_point") else None,
        )

    @property
    def named(self) -> bool:
        return bool(self.objectives)

    @property
    def several(self) -> bool:
        """Several objectives: a Pareto front, not one best value."""
        return len(self.objectives) > 1

    @property
    def metrics(self) -> list[str]:
        """Every metric a tell must carry, objectives first, each once."""
        return list(dict.fromkeys([o.metric for o in self.objectives] + [c.metric for c in self.constraints]))

    def check(self) -> None:
        """A 422 for what cannot be served: no objective beside constraints, too many metrics, a metric both
        objective and constraint (the constraint would be the objective's own bound: say it as the objective)."""
        if len(self.objectives) > MAX_OBJECTIVES:
            raise InvalidInput("objectives", f"expected 1 to {MAX_OBJECTIVES} objectives, got {len(self.objectives)}")
        names = [o.metric for o in self.objectives]
        # at creation only (a study stored before the check still loads): a name of spaces shows nothing
        for field, metrics in (("objectives", names), ("constraints", [c.metric for c in self.constraints])):
            for i, name in enumerate(metrics):
                if not name.strip():
                    raise InvalidInput(f"{field}[{i}].metric", "a name of spaces only: expected a visible character")
        for i, name in enumerate(names):
            if name in names[:i]:
                raise InvalidInput(f"objectives[{i}].metric", f"{name!r} is objectives[{names.index(name)}] already")
        self._check_reference_point(names)
        if self.constraints and not self.objectives:
            raise InvalidInput("objectives", "outcome constraints need a named objective: objectives=[{metric, ...}]")
        objective = {o.metric for o in self.objectives}
        for i, c in enumerate(self.constraints):
            if c.metric in objective:
                raise InvalidInput(
                    f"constraints[{i}].metric", f"{c.metric!r} is the objective; constrain another metric"
                )
            if c in self.constraints[:i]:  # as a repeated parameter constraint is refused
                first = self.constraints.index(c)
                raise InvalidInput(f"constraints[{i}]", f"the same constraint as constraints[{first}]")
            for j, other in enumerate(self.constraints[:i]):  # p <= 1 with p >= 2: no trial could ever be feasible
                lower, upper = (c, other) if c.op == ">=" else (other, c)
                if other.metric == c.metric and other.op != c.op and lower.bound > upper.bound:
                    raise InvalidInput(
                        f"constraints[{i}]", f"no value of {c.metric!r} satisfies it together with constraints[{j}]"
                    )
        if len(self.metrics) > MAX_METRICS:
            raise InvalidInput("constraints", f"expected at most {MAX_METRICS} metrics, got {len(self.metrics)}")
        if self.safety is not None and not self.constraints and self.failures != "avoid":
            raise InvalidInput("safety", "safe mode needs outcome constraints or failures: 'avoid' to be safe from")

    def _check_reference_point(self, names: list[str]) -> None:
        if self.reference_point is None:
            return
        if not self.several:
            raise InvalidInput("reference_point", "a reference point is for several objectives (a Pareto front)")
        for metric, value in self.reference_point.items():
            if metric not in names:
                raise InvalidInput(f"reference_point.{metric}", f"not an objective; the objectives are {names}")
            finite(f"reference_point.{metric}", value)
        missing = [m for m in names if m not in self.reference_point]
        if missing:
            raise InvalidInput(f"reference_point.{missing[0]}", f"expected a value for every objective {names}")

    def minimised(self, metrics: dict[str, float]) -> list[float]:
        """Each objective's value to minimise (a maximised one negated), in the objectives' order."""
        return [metrics[o.metric] * (-1.0 if o.direction == "maximize" else 1.0) for o in self.objectives]

    def read(self, values: dict[str, Any] | None, value: float | None) -> tuple[float, dict[str, float] | None]:
        """A complete tell's objective value and its named metrics, or a 422 naming what is missing or wrong."""
        if not self.named:
            if values is not None:
                raise InvalidInput("values", "this study names no metrics: tell {'value': number}")
            return finite("value", value), None
        if values is None:
            if value is not None and not self.constraints and not self.several:
                return finite("value", value), {self.objectives[0].metric: finite("value", value)}
            raise InvalidInput("values", f"expected a number for each of the study's metrics {self.metrics}")
        unknown = sorted(set(values) - set(self.metrics))
        if unknown:
            raise InvalidInput(f"values.{unknown[0]}", f"not a metric of this study; its metrics are {self.metrics}")
        missing = [m for m in self.metrics if m not in values]
        if missing:
            raise InvalidInput(
                f"values.{missing[0]}", f"missing; a tell carries every metric of the study: {self.metrics}"
            )
        read = {m: finite(f"values.{m}", values[m]) for m in self.metrics}
        objective = read[self.objectives[0].metric]
        if value is not None and finite("value", value) != objective:
            raise InvalidInput("value", f"differs from values.{self.objectives[0].metric}; send one of them")
        return objective, read

    def feasible(self, metrics: dict[str, float] | None) -> bool | None:
        """Whether every outcome constraint holds (None: the study has none, or the trial has no metrics)."""
        if not self.constraints or metrics is None:
            return None
        return all(c.violation(metrics[c.metric]) <= 0 for c in self.constraints)


def finite(field: str, value: Any) -> float:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(field, f"expected a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class LinearConstraints:
    """Parameter constraints in unit-cube coordinates: A_ub u <= b_ub, A_eq u == b_eq (rows of length d)."""

    A_ub: tuple[tuple[float, ...], ...] = ()
    b_ub: tuple[float, ...] = ()
    A_eq: tuple[tuple[float, ...], ...] = ()
    b_eq: tuple[float, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.A_ub or self.A_eq)

    def polytope(self, dim: int, device: Any = None) -> Polytope:
        """The constraints as the policies take them (float64 tensors on ``device``)."""
        import torch

        from localbo.policies.base import Polytope

        def tensor(rows: Any, shape: tuple[int, ...]) -> torch.Tensor:
            return torch.tensor(rows, dtype=torch.float64, device=device).reshape(shape)

        return Polytope(
            A_ub=tensor(self.A_ub, (-1, dim)),
            b_ub=tensor(self.b_ub, (-1,)),
            A_eq=tensor(self.A_eq, (-1, dim)),
            b_eq=tensor(self.b_eq, (-1,)),
        )

    def worst(self, u: list[float]) -> float:
        """The largest violation of ``u`` (<= 0: satisfied), in unit-cube terms."""
        out = -math.inf
        for row, b in zip(self.A_ub, self.b_ub, strict=True):
            out = max(out, sum(a * x for a, x in zip(row, u, strict=True)) - b)
        for row, b in zip(self.A_eq, self.b_eq, strict=True):
            out = max(out, abs(sum(a * x for a, x in zip(row, u, strict=True)) - b))
        return out if out > -math.inf else 0.0


def unit_constraints(
    constraints: list[ParameterConstraint], columns: dict[str, tuple[float, float, int]], dim: int
) -> LinearConstraints:
    """The constraints in the unit cube. ``columns``: each float parameter's (low, high, column). A user-unit term
    a x with x = low + u (high - low) becomes a (high - low) u, its constant a low moves to the bound; each row is
    then scaled to a largest coefficient of 1, so that the samplers' absolute tolerance (1e-9) means the same for
    coefficients of 1e-300 and of 1e300 (unscaled, the first held for any point and the second overflowed)."""
    A_ub: list[tuple[float, ...]] = []
    b_ub: list[float] = []
    A_eq: list[tuple[float, ...]] = []
    b_eq: list[float] = []
    for c in constraints:
        row = [0.0] * dim
        size = max(abs(a) for a in c.terms.values())  # divided out first: a (high - low) may pass the double range
        bound = c.bound / size
        for name, a in c.terms.items():
            low, high, column = columns[name]
            row[column] += a / size * (high - low)
            bound -= a / size * low
        largest = max(abs(v) for v in row)
        if largest > 0:
            row, bound = [v / largest for v in row], bound / largest
        if c.op == "==":
            A_eq.append(tuple(row))
            b_eq.append(bound)
        elif c.op == "<=":
            A_ub.append(tuple(row))
            b_ub.append(bound)
        else:  # a x >= b  <=>  -a x <= -b
            A_ub.append(tuple(-v for v in row))
            b_ub.append(-bound)
    return LinearConstraints(tuple(A_ub), tuple(b_ub), tuple(A_eq), tuple(b_eq))


def parse_parameter_constraints(
    raw: list[Any], box: SearchSpace, check_region: bool = True
) -> tuple[list[ParameterConstraint], LinearConstraints]:
    """The study's parameter constraints checked against its space (a continuous ``SearchSpace``), or a 422
    naming the constraint by position: unknown, categorical or log-scaled parameters, zero coefficients, a
    constraint given twice, and a region that no point of the space satisfies (with int parameters: no point whose
    ints are integers, ``integer_points.has_integral_point``). An int parameter's unit-cube form is its relaxation
    (v = low - 0.5 + u (high - low + 1), exact at each integer's slice centre)."""
    from pydantic import ValidationError

    if len(raw) > MAX_PARAMETER_CONSTRAINTS:
        raise InvalidInput("parameter_constraints", f"expected at most {MAX_PARAMETER_CONSTRAINTS}, got {len(raw)}")
    columns: dict[str, tuple[float, float, int]] = {}
    kinds: dict[str, str] = {}
    at = 0
    for p in box.params:
        if not isinstance(p, Param):
            kinds[p.name] = "categorical"
        else:
            kinds[p.name] = f"log-scaled {p.type}" if p.log else p.type
        if kinds[p.name] == "float":
            assert isinstance(p, Param)
            columns[p.name] = (float(p.low), float(p.high), at)
        elif kinds[p.name] == "int":  # each integer's slice of [0, 1]: its centre maps to the integer
            assert isinstance(p, Param)
            columns[p.name] = (float(p.low) - 0.5, float(p.high) + 0.5, at)
        at += p.width
    parsed: list[ParameterConstraint] = []
    for i, item in enumerate(raw):
        where = f"parameter_constraints[{i}]"
        try:
            c = ParameterConstraint.model_validate(item)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InvalidInput(field_path((where, *err["loc"])), err["msg"]) from None
        for name, a in c.terms.items():
            if name not in kinds:
                raise InvalidInput(
                    f"{where}.terms.{name}", f"not a parameter of the space; its parameters: {list(kinds)}"
                )
            if kinds[name] not in ("float", "int"):
                raise InvalidInput(
                    f"{where}.terms.{name}",
                    f"a {kinds[name]} parameter; linear constraints apply to float and int parameters on a linear "
                    "scale",
                )
            if a == 0:
                raise InvalidInput(f"{where}.terms.{name}", "a zero coefficient: leave the term out")
        if c in parsed:
            raise InvalidInput(where, f"the same constraint as parameter_constraints.{parsed.index(c)}")
        parsed.append(c)
    linear = unit_constraints(parsed, columns, box.dim)
    integral = any(kinds[n] == "int" for c in parsed for n in c.terms)
    if check_region and linear:
        from localbo.domain.integer_points import has_integral_point

        holds = has_integral_point(parsed, box) if integral else _region_holds_a_point(linear, box.dim)
        if not holds:
            where = " with whole numbers for its int parameters" if integral else ""
            raise InvalidInput("parameter_constraints", f"no point of the space{where} satisfies all of them together")
    return parsed, linear


def _region_holds_a_point(linear: LinearConstraints, dim: int) -> bool:
    """Whether the cube holds a point that satisfies every constraint within ``Polytope.TOLERANCE``: the test the
    samplers pass or fail by (``policies.polytope``), so that a region an LP's default tolerance (1e-7) accepts but
    no point of which holds them within 1e-9 (a + b + c == 1 and a + b + c <= 1 - 1e-7) is refused here, not at
    every ask."""
    from localbo.policies.polytope import feasible_or_none

    return feasible_or_none(linear.polytope(dim)) is not None
