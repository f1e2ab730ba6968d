"""One study's space as the service uses it, continuous (a box with one-hot categoricals) or finite.

space = StudySpace.continuous(SearchSpace.parse(raw))  |  StudySpace.finite(Candidates(...))
x, candidate = space.to_unit(params)     # user units -> unit cube (and the candidate, if finite)
params = space.params(x, candidate)      # unit cube -> user units
x = space.snap(x)                        # the point evaluated: categoricals one-hot
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from localbo.finite_space import Candidates
from localbo.space import Categorical, SearchSpace

Kind = Literal["continuous", "categorical", "finite"]


@dataclass(frozen=True)
class StudySpace:
    box: SearchSpace | None = None  # a continuous space
    candidates: Candidates | None = None  # a finite space

    @classmethod
    def continuous(cls, box: SearchSpace) -> StudySpace:
        return cls(box=box)

    @classmethod
    def finite(cls, candidates: Candidates) -> StudySpace:
        return cls(candidates=candidates)

    @property
    def kind(self) -> Kind:
        return "finite" if self.candidates is not None else self._box.kind

    @property
    def _box(self) -> SearchSpace:
        assert self.box is not None, "a finite space has no box"
        return self.box

    @property
    def dim(self) -> int:
        """Coordinates of a point: a finite space's parameters, else the box's (one per choice of a categorical)."""
        return len(self.candidates.names) if self.candidates is not None else self._box.dim

    @property
    def names(self) -> list[str]:
        return self.candidates.names if self.candidates is not None else self._box.names

    def onehot_blocks(self) -> tuple[tuple[int, int], ...]:
        """(first coordinate, width) of each categorical's one-hot block."""
        if self.box is None:
            return ()
        blocks, at = [], 0
        for p in self.box.params:
            if isinstance(p, Categorical):
                blocks.append((at, p.width))
            at += p.width
        return tuple(blocks)

    def to_unit(self, params: dict[str, Any], field: str = "params") -> tuple[list[float], int | None]:
        """Validated user-unit params as a unit-cube point and, on a finite space, its candidate (SpaceError)."""
        if self.candidates is not None:
            index = self.candidates.find(params, field)
            return self.candidates.x[index], index
        return self._box.to_unit(params, field), None

    def params(self, x: list[float], candidate: int | None = None) -> dict[str, Any]:
        """A point in user units: a finite space's candidate, or the continuous point decoded."""
        if self.candidates is not None and candidate is not None:
            return self.candidates.params[candidate]
        return self._box.from_unit(x)

    def candidate_id(self, candidate: int | None) -> str | None:
        return self.candidates.ids[candidate] if self.candidates is not None and candidate is not None else None

    def snap(self, x: list[float]) -> list[float]:
        return x if self.box is None else self.box.snap(x)
