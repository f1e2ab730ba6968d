"""Each study's parsed space, cached per process (spaces never change after creation), bounded."""

from __future__ import annotations

from sqlalchemy.engine import Connection, Row

from localbo.caches import BoundedCache
from localbo.domain.study_space import StudySpace
from localbo.finite_space import Candidates, is_finite_spec
from localbo.space import SearchSpace
from localbo.storage import finite_spaces
from localbo.storage.db import WouldWait, may_wait


def candidates_bytes(c: Candidates) -> int:
    """About what a study's candidates hold in memory: points, params and the kernel matrix."""
    n, d = c.size, len(c.names)
    kernel = c.kernel.numel() * 8 if c.kernel is not None else 0
    return kernel + n * d * 8 * 4 + n * 200


class Spaces:
    def __init__(self, max_spaces: int = 4096, max_candidate_bytes: int = 512 * 2**20) -> None:
        self._boxes: BoundedCache[SearchSpace] = BoundedCache(max_spaces)
        self._candidates: BoundedCache[Candidates] = BoundedCache(max_candidate_bytes, candidates_bytes)

    def of(self, conn: Connection, study: Row) -> StudySpace:
        """The study's space; a finite one's candidates are read from ``conn`` on a miss."""
        key = (study.id, study.created_at)
        if is_finite_spec(study.space):

            def load() -> Candidates:
                if not may_wait():  # reading many candidates takes a while: not on the event loop
                    raise WouldWait("the study's candidates are not loaded yet")
                rows, kernel = finite_spaces.load_candidates(conn, study.id)
                return Candidates(list(rows), kernel, study.space)

            return StudySpace.finite(self._candidates.get(key, load))
        return StudySpace.continuous(self._boxes.get(key, lambda: SearchSpace.parse(study.space)))
