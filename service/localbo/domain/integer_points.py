"""Parameter constraints over int parameters: points that still keep them once their ints are rounded.

The policies see an int parameter as a continuous coordinate (each integer owns an equal slice of [0, 1];
``space.Param.to_unit``), so its linear constraints are a relaxation: ``unit_constraints`` maps the value
v = (low - 0.5) + u (high - low + 1), which is exact at every slice's centre. A point inside the relaxed polytope
can break a constraint once its ints are rounded (x + y <= 3.2 with x = 1.6 -> 2). So:

- at creation, the region must hold a point with integral ints (``has_integral_point``: a MILP, not an LP);
- every point handed out is checked in user units after rounding, and one that breaks a constraint is moved to
  the nearest point that keeps them all (``keep``: the MILP min sum_i |z_i - p_i| / (high_i - low_i) over the
  constrained parameters, ints integral, within their bounds; the others stay as they were), then given back
  in unit coordinates (ints at their slice's centre, so rounding leaves them as they are).

HiGHS solves to a feasibility tolerance of about 1e-7, wider than the 1e-9 promised: the MILP asks for a margin of
1e-6 on inequalities (without it only when the only such points lie on a bound), and the float coordinates are then
moved onto the equalities exactly (the least-norm correction), so the point keeps every constraint within 1e-9
after the mapping.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from localbo.space import Param, SearchSpace

if TYPE_CHECKING:
    from localbo.domain.outcomes import ParameterConstraint

MARGIN = 1e-6  # asked of the MILP on inequalities, to absorb its tolerance
TOLERANCE = 1e-9


def _system(
    rules: Sequence[ParameterConstraint], names: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A_ub, b_ub, A_eq, b_eq) over ``names`` in user units (>= rows negated)."""
    A_ub, b_ub, A_eq, b_eq = [], [], [], []
    for rule in rules:
        row = np.zeros(len(names))
        for name, a in rule.terms.items():
            row[names.index(name)] += a
        if rule.op == "==":
            A_eq.append(row)
            b_eq.append(rule.bound)
        elif rule.op == "<=":
            A_ub.append(row)
            b_ub.append(rule.bound)
        else:
            A_ub.append(-row)
            b_ub.append(-rule.bound)
    width = len(names)
    return (
        np.array(A_ub).reshape(-1, width),
        np.array(b_ub),
        np.array(A_eq).reshape(-1, width),
        np.array(b_eq),
    )


def _params(box: SearchSpace, names: list[str]) -> list[Param]:
    by_name = {p.name: p for p in box.params}
    out = []
    for n in names:
        p = by_name[n]
        assert isinstance(p, Param)
        out.append(p)
    return out


def constrained_names(rules: Sequence[ParameterConstraint]) -> list[str]:
    return list(dict.fromkeys(n for rule in rules for n in rule.terms))


def has_integral_point(rules: Sequence[ParameterConstraint], box: SearchSpace) -> bool:
    """Whether some point of the box with integral ints keeps every rule."""
    return _solve(rules, box, constrained_names(rules), None, margin=0.0) is not None


def _solve(
    rules: Sequence[ParameterConstraint],
    box: SearchSpace,
    names: list[str],
    near: np.ndarray | None,
    margin: float = MARGIN,
) -> np.ndarray | None:
    """The rules' point nearest ``near`` (any point when None), ints integral, inequalities kept with ``margin`` to
    spare; None when there is none."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    params = _params(box, names)
    k = len(names)
    A_ub, b_ub, A_eq, b_eq = _system(rules, names)
    low = np.array([p.low for p in params], dtype=float)
    high = np.array([p.high for p in params], dtype=float)
    integral = np.array([1 if p.type == "int" else 0 for p in params])
    scale = np.where(high > low, high - low, 1.0)
    # variables: z (k), t (k) with t >= |z - near| / scale; minimise sum t
    c = np.concatenate([np.zeros(k), np.ones(k) if near is not None else np.zeros(k)])
    blocks = []
    if len(b_ub):
        blocks.append(LinearConstraint(np.hstack([A_ub, np.zeros_like(A_ub)]), -np.inf, b_ub - margin))
    if len(b_eq):
        blocks.append(LinearConstraint(np.hstack([A_eq, np.zeros_like(A_eq)]), b_eq, b_eq))
    if near is not None:
        eye = np.diag(1.0 / scale)
        blocks.append(LinearConstraint(np.hstack([eye, -np.eye(k)]), -np.inf, near / scale))
        blocks.append(LinearConstraint(np.hstack([-eye, -np.eye(k)]), -np.inf, -near / scale))
    result = milp(
        c,
        constraints=blocks,
        integrality=np.concatenate([integral, np.zeros(k, dtype=int)]),
        bounds=Bounds(np.concatenate([low, np.zeros(k)]), np.concatenate([high, np.full(k, np.inf)])),
        options={"time_limit": 5.0},
    )
    if result.status != 0 or result.x is None:
        return None
    z = np.array(result.x[:k])
    z[integral == 1] = np.round(z[integral == 1])
    floats = integral == 0
    if len(b_eq) and floats.any():  # onto the equalities exactly: the least-norm move of the float coordinates
        residual = b_eq - A_eq @ z
        A_f = A_eq[:, floats]
        z[floats] += np.linalg.pinv(A_f) @ residual
        z[floats] = np.clip(z[floats], low[floats], high[floats])
    return z


def worst(rules: Sequence[ParameterConstraint], values: dict[str, float]) -> float:
    """The largest violation of the rules at ``values`` (user units; <= 0: kept)."""
    out = 0.0
    for rule in rules:
        lhs = sum(a * float(values[n]) for n, a in rule.terms.items())
        gap = abs(lhs - rule.bound) if rule.op == "==" else (lhs - rule.bound if rule.op == "<=" else rule.bound - lhs)
        out = max(out, gap)
    return out


def keep(x: list[float], rules: Sequence[ParameterConstraint], box: SearchSpace) -> list[float]:
    """``x`` (unit cube) as it is when its rounded params keep every rule, else the nearest point that does (the
    constrained parameters moved, the others kept); ``x`` as it is when no such point exists (the creation check
    makes that impossible)."""
    values = box.from_unit(x)
    if worst(rules, values) <= TOLERANCE:
        return x
    names = constrained_names(rules)
    near = np.array([float(values[n]) for n in names])
    z = _solve(rules, box, names, near)
    if z is None:  # only points on a bound keep them: without the margin
        z = _solve(rules, box, names, near, margin=0.0)
    if z is None:
        return x
    params = _params(box, names)
    whole = {n: int(v) if p.type == "int" else float(v) for n, v, p in zip(names, z, params, strict=True)}
    moved = dict(values) | whole
    return box.to_unit(moved)
