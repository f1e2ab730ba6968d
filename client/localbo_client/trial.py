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

    ```python
    with study.ask() as trial:
        trial.tell({"yield": 0.81, "purity": 0.97})
    trial.values, trial.feasible        # ({"yield": 0.81, "purity": 0.97}, True)
    ```

    ``note`` is a person's note on the trial (``set_note``), None when it has none.
    """

    number: int
    """The trial's number in its study, from 1 (``study.tell(7, ...)`` names it)."""
    params: dict[str, Any]
    """Parameter name -> value in the study's units: ``{"temp": 612.5, "catalyst": "Pt"}``."""
    state: str
    """``running`` (asked, not told), ``complete``, ``failed`` or ``stale`` (its lease ran out)."""
    value: float | None = None
    """The value told (a study that names metrics: its objective's); None until complete."""
    reason: str | None = None
    """Why the trial failed (failed trials only): ``"thermocouple open"``."""
    source: str = ""
    """Where the point came from: the policy's name (its plan), ``fallback``, ``stale-retry``, ``external`` (an
    ``add_trial``), or in safe mode ``seed``, ``fallback-safe`` and ``repeat-safe`` (the policy asked a point asked
    before again: a seed still running, or the seed a local policy starts from)."""
    lease_expires_at: datetime | None = None
    """Running trials: when the trial turns stale unless ``Study.heartbeat`` extends it."""
    candidate: str | None = None
    """Finite spaces: the id of the candidate asked (``"a"``), as ``finite_space`` named it."""
    study: TrialOwner | None = field(default=None, repr=False, compare=False)
    """The ``Study`` that handed the trial out, which ``tell``, ``fail`` and the with-block use."""
    token: str | None = None
    """The study instance the trial belongs to (see above); sent back with each tell."""
    values: dict[str, float] | None = None
    """Every named metric, when the study names them: ``{"yield": 0.81, "purity": 0.97}``."""
    feasible: bool | None = None
    """Whether every outcome constraint held; None: the study has none, or no result yet."""
    note: str | None = None
    """A person's note on the trial (``"sample 17 was contaminated"``); None: none."""

    @classmethod
    def from_json(cls, data: dict[str, Any], study: TrialOwner | None = None) -> Trial:
        """A trial from the server's JSON for it (an ask's, a tell's or a listing's), bound to ``study``.

        ```python
        trial = Trial.from_json(client.request("GET", "/api/v1/studies/beam/trials/3"), study)
        ```
        """
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
        """Complete this trial: a number, or ``{metric: number}`` for a study that names metrics; as
        ``Study.tell``.

        ```python
        trial.tell(0.42)
        trial.tell({"yield": 0.81, "purity": 0.97})
        ```
        """
        assert self.study is not None, "this trial is not bound to a study"
        return self.study.tell(self, value)

    def fail(self, reason: str) -> Trial:
        """Fail this trial, saying why; as ``Study.fail``.

        ```python
        trial.fail("thermocouple open")
        ```
        """
        assert self.study is not None, "this trial is not bound to a study"
        return self.study.fail(self, reason)

    def set_note(self, note: str | None) -> Trial:
        """Write this trial's note (at most 2000 characters; ``""`` or None clears it), in any state; the
        policy sees no change. Needs a token with the write scope.

        ```python
        trial.set_note("sample 17 was contaminated")
        trial.note                          # 'sample 17 was contaminated'
        ```
        """
        assert self.study is not None, "this trial is not bound to a study"
        return self.study.set_trial_note(self, note)

    def __enter__(self) -> Trial:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:  # noqa: ANN001
        """An exception in the block (the objective's, a tell that gave up, Ctrl-C) fails the trial, best effort,
        and propagates; leaving the block without a tell fails it too. A tell by the study that handed the trial
        out counts, whether it names the trial or its number.

        ```python
        with study.ask() as trial:
            trial.tell(measure(trial.params))     # raises? the trial is failed with the exception's text
        ```
        """
        if self.study is None or self.state != "running":
            return
        if exc is not None:
            self.study.abandon(self, f"{exc_type.__name__}: {exc}", exc)
        else:
            self.fail("the with-block ended without a tell")
