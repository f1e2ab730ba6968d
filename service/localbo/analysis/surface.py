"""The grid of a 2-D posterior-mean view: each axis's values in user units and their unit-cube coordinates.

A float axis is evenly spaced (geometrically on a log scale), an int axis too, between its bounds (the
GP is continuous in the unit cube; an int's unit coordinate is its slice centre, ``Param.to_unit``), a
finite space's axis between the candidates' lowest and highest value (their unit scaling,
``FiniteSpec.unit``). A categorical axis, or a constant one, has no surface: ``NoSurface`` says why.

    grid = points(base, ax, ay)   # size^2 x d: row i * size + j is (xs[j], ys[i]), the rest at ``base``
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from localbo.domain import StudySpace
from localbo.space import Categorical


class NoSurface(Exception):  # noqa: N818  (a reason, not a failure)
    """Why this pair of parameters has no surface (a sentence for a person)."""


@dataclass(frozen=True)
class Axis:
    name: str
    values: list[float]  # size, user units
    unit: list[float]  # size, the coordinate of each value in the unit cube
    column: int  # its coordinate's column
    log: bool


def axis(space: StudySpace, name: str, size: int) -> Axis:
    if space.candidates is not None:
        column = space.candidates.names.index(name)
        column_values = [float(p[name]) for p in space.candidates.params]
        low, high = min(column_values), max(column_values)
        if not high > low:
            raise NoSurface(f"{name} has one value over the candidates")
        values = np.linspace(low, high, size).tolist()
        return Axis(name, values, [(v - low) / (high - low) for v in values], column, False)
    assert space.box is not None
    column = 0
    for p in space.box.params:
        if p.name == name:
            break
        column += p.width
    if isinstance(p, Categorical):
        raise NoSurface(f"{name} is categorical: its choices have no order to draw a surface over")
    if not p.high > p.low:
        raise NoSurface(f"{name} has one value (low = high)")
    values = (np.geomspace if p.log else np.linspace)(p.low, p.high, size).tolist()
    values[0], values[-1] = p.low, p.high  # exact bounds (geomspace may round past them)
    return Axis(name, values, [p.to_unit(v) for v in values], column, p.log)


def points(base: list[float], ax: Axis, ay: Axis) -> Tensor:
    """size^2 x d: row i * size + j holds (ax.unit[j], ay.unit[i]), every other coordinate from ``base``."""
    size = len(ax.unit)
    grid = torch.tensor(base, dtype=torch.float64).repeat(size * size, 1)
    ux, uy = torch.tensor(ax.unit, dtype=torch.float64), torch.tensor(ay.unit, dtype=torch.float64)
    grid[:, ax.column] = ux.repeat(size)  # j runs fastest
    grid[:, ay.column] = uy.repeat_interleave(size)
    return grid
