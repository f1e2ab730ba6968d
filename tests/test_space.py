"""Search spaces: parsing, and the map between user units and the unit cube."""

from __future__ import annotations

import math

import pytest
from localbo.space import SearchSpace, SpaceError

SPACE = {
    "x": {"type": "float", "low": -2, "high": 3},
    "lr": {"type": "float", "low": 1e-5, "high": 1, "log": True},
    "n": {"type": "int", "low": 1, "high": 8},
}


def test_unit_cube_corners_map_to_the_bounds() -> None:
    space = SearchSpace.parse(SPACE)
    assert space.from_unit([0, 0, 0]) == {"x": -2, "lr": pytest.approx(1e-5), "n": 1}
    assert space.from_unit([1, 1, 1]) == {"x": 3, "lr": pytest.approx(1), "n": 8}
    mid = space.from_unit([0.5, 0.5, 0.5])
    assert mid["x"] == 0.5 and mid["lr"] == pytest.approx(math.sqrt(1e-5)) and mid["n"] in (4, 5)


def test_every_integer_gets_an_equal_share_of_the_unit_interval() -> None:
    space = SearchSpace.parse({"n": {"type": "int", "low": 1, "high": 4}})
    counts = {v: 0 for v in range(1, 5)}
    for i in range(4000):
        counts[space.from_unit([(i + 0.5) / 4000])["n"]] += 1
    assert set(counts.values()) == {1000}


def test_round_trip_through_the_unit_cube() -> None:
    space = SearchSpace.parse(SPACE)
    params = {"x": 1.25, "lr": 3e-3, "n": 6}
    unit = space.to_unit(params)
    assert all(0 <= u <= 1 for u in unit)
    back = space.from_unit(unit)
    assert back["x"] == pytest.approx(1.25) and back["lr"] == pytest.approx(3e-3) and back["n"] == 6


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({}, "space"),
        ({"x": {"type": "float", "low": 1, "high": 0}}, "space.x.high"),
        ({"x": {"type": "float", "low": 0, "high": 1, "log": True}}, "space.x.low"),
        ({"x": {"type": "cat", "low": 0, "high": 1}}, "space.x.type"),
        ({"x": {"type": "int", "low": 0.5, "high": 3}}, "space.x"),
        ({"x": {"type": "float", "high": 3}}, "space.x.low"),
        ({"x": {"type": "float", "low": 0, "high": float("inf")}}, "space.x.high"),
        ({"x": {"type": "float", "low": 0, "high": 1, "step": 2}}, "space.x"),
    ],
)
def test_bad_specs_name_the_field(raw: dict, field: str) -> None:
    with pytest.raises(SpaceError) as info:
        SearchSpace.parse(raw)
    assert info.value.field == field


def test_params_are_checked_by_name_type_and_range() -> None:
    space = SearchSpace.parse(SPACE)
    good = {"x": 0, "lr": 0.1, "n": 2}
    for bad, field in [
        ({**good, "y": 1}, "params.y"),
        ({"x": 0, "lr": 0.1}, "params.n"),
        ({**good, "x": 9}, "params.x"),
        ({**good, "n": 2.5}, "params.n"),
        ({**good, "lr": 0.0}, "params.lr"),
        ({**good, "x": "1"}, "params.x"),
        ({**good, "x": True}, "params.x"),
    ]:
        with pytest.raises(SpaceError) as info:
            space.to_unit(bad)
        assert info.value.field == field, bad
