"""``Trial``, one evaluation a study handed out, and what ``Study`` and its worker loop (``optimizing``) both need.

This module imports neither of them: a trial reaches its study through ``TrialOwner``, the three calls it makes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from localbo_client.outcomes import Result, finite

__all__ = ["REASON_CHARS", "SETTLED", "Trial", "TrialOwner", "finite"]

REASON_CHARS = 1000  # an exception's text can be long; a failed trial's reason only needs to say what happened
# Answers to a tell after which failing the trial is futile: it is gone, settled already, or not ours to change.
SETTLED = frozenset({401, 403, 404, 409})


class TrialOwner(Protocol):
    """What a trial asks of the study it came from (``Study`` is one)."""

    def tell(self, trial: Trial | int, value: Result) -> Trial: ...

    def fail(self, trial: Trial | int, reason: str = "") -> Trial: ...

    def abandon(self, trial: Trial, reason: str, cause: BaseException | None = None) -> None: ...

    def set_trial_note(self, trial: Trial | int, note: str | None) -> Trial: ...


@dataclass
class Trial:
    """One evaluation: ``params`` in the study's units; a context manager that fails on error.

    ``token`` names the instance of the study the trial belongs to (a study deleted and created again under the
    same name is another instance); each tell of the trial sends it, so the server refuses a tell meant for a
    study that is gone rather than store it in its namesake. None from a server that sends no token.

    A study that names metrics fills ``values`` (every metric, ``{"yield": 0.81, "purity": 0.97}``) and, with
    outcome constraints, ``feasible`` (whether every one held); ``value`` is then the objective's. Both stay
    None for a study without metrics, and until the trial is complete.

        with study.ask() as trial:
            trial.tell({"yield": 0.81, "purity": 0.97})
        trial.values, trial.feasible        # ({"yield": 0.81, "purity": 0.97}, True)

    ``note`` is a person's note on the trial (``set_note``), None when it has none.
    """

    number: int
    params: dict[str, Any]
    state: str
    value: float | None = None
    reason: str | None = None
    source: str = ""
    lease_expires_at: datetime | None = None
    candidate: str | None = None  # finite spaces: the id of the candidate
    study: TrialOwner | None = field(default=None, repr=False, compare=False)
    token: str | None = None
    values: dict[str, float] | None = None  # every named metric, when the study names them
    feasible: bool | None = None  # whether every outcome constraint held; None: no constraints, or no result yet
    note: str | None = None  # a person's note on the trial ("sample 17 was contaminated")

    @classmethod
    def from_json(cls, data: dict[str, Any], study: TrialOwner | None = None) -> Trial:
        lease = data.get("lease_expires_at")
        return cls(
            number=data["number"],
            params=data["params"],
            state=data["state"],
            value=data.get("value"),
            reason=data.get("reason"),
            source=data.get("source", ""),
            lease_expires_at=datetime.fromisoformat(lease.replace("Z", "+00:00")) if lease else None,
            candidate=data.get("candidate"),
            study=study,
            token=data.get("token"),
            values=data.get("values"),
            feasible=data.get("feasible"),
            note=data.get("note"),
        )

    def tell(self, value: Result) -> Trial:
        """Complete this trial: a number, or ``{metric: number}`` for a study that names metrics."""
        assert self.study is not None, "this trial is not bound to a study"
        return self.study.tell(self, value)

    def fail(self, reason: str) -> Trial:
        assert self.study is not None, "this trial is not bound to a study"
        return self.study.fail(self, reason)

    def set_note(self, note: str | None) -> Trial:
        """Write this trial's note (at most 2000 characters; ``""`` or None clears it), in any state; the
        policy sees no change. Needs a token with the write scope.

            trial.set_note("sample 17 was contaminated")
            trial.note                          # 'sample 17 was contaminated'
        """
        assert self.study is not None, "this trial is not bound to a study"
        return self.study.set_trial_note(self, note)

    def __enter__(self) -> Trial:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:  # noqa: ANN001
        """An exception in the block (the objective's, a tell that gave up, Ctrl-C) fails the trial, best effort,
        and propagates; leaving the block without a tell fails it too. A tell by the study that handed the trial
        out counts, whether it names the trial or its number."""
        if self.study is None or self.state != "running":
            return
        if exc is not None:
            self.study.abandon(self, f"{exc_type.__name__}: {exc}", exc)
        else:
            self.fail("the with-block ended without a tell")
