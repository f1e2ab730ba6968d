"""Parameter constraints over int parameters (issue 30): every point, once its ints are rounded, keeps them.

Random rules over mixed int and float parameters, built around a point whose ints are whole (so a point exists):
inequalities with some slack, an equality now and then; random points of the cube, moved by ``keep``, keep every
rule within 1e-9 in user units with whole ints."""

from __future__ import annotations

import random

from localbo.domain.integer_points import has_integral_point, keep, worst
from localbo.domain.outcomes import ParameterConstraint, parse_parameter_constraints
from localbo.space import SearchSpace


def case(rng: random.Random) -> tuple[SearchSpace, list[ParameterConstraint]]:
    d = rng.randint(2, 6)
    spec, point = {}, {}
    for i in range(d):
        if i % 2 == 0:
            low, high = rng.randint(-3, 0), rng.randint(1, 8)
            spec[f"p{i}"] = {"type": "int", "low": low, "high": high}
            point[f"p{i}"] = rng.randint(low, high)
        else:
            spec[f"p{i}"] = {"type": "float", "low": 0.0, "high": 2.0}
            point[f"p{i}"] = rng.uniform(0.2, 1.8)
    rules = []
    for j in range(rng.randint(1, 4)):
        names = rng.sample(sorted(spec), rng.randint(1, d))
        terms = {n: round(rng.uniform(-2, 2), 3) or 1.0 for n in names}
        lhs = sum(a * point[n] for n, a in terms.items())
        has_float = any(spec[n]["type"] == "float" for n in names)
        if j == 0 and has_float and rng.random() < 0.5:
            rules.append({"terms": terms, "op": "==", "bound": lhs})
        else:
            rules.append({"terms": terms, "op": "<=", "bound": lhs + rng.choice([0.0, 0.05, 0.5])})
    box = SearchSpace.parse(spec)
    return box, parse_parameter_constraints(rules, box)[0]


def test_random_int_and_float_rules_are_kept_after_rounding() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(40):
        box, rules = case(rng)
        assert has_integral_point(rules, box)
        for _ in range(5):
            x = [rng.random() for _ in range(box.dim)]
            moved = keep(x, rules, box)
            values = box.from_unit(moved)
            assert worst(rules, values) <= 1e-9, (rules, values)
            assert all(isinstance(values[p.name], int) for p in box.params if p.spec()["type"] == "int")
            checked += 1
    assert checked == 200


def test_a_point_that_already_keeps_them_is_not_moved() -> None:
    box = SearchSpace.parse({"n": {"type": "int", "low": 0, "high": 4}, "a": {"type": "float", "low": 0, "high": 1}})
    rules = parse_parameter_constraints([{"terms": {"n": 1, "a": 1}, "op": "<=", "bound": 3}], box)[0]
    inside = box.to_unit({"n": 1, "a": 0.5})
    assert keep(inside, rules, box) == inside
    outside = box.to_unit({"n": 3, "a": 0.5})  # 3.5 > 3: n - 1 costs 1/4 of its range, a - 0.5 half of a's
    assert box.from_unit(keep(outside, rules, box)) == {"n": 2, "a": 0.5}
