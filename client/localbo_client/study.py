"""``Study``: one study on the server: ask, tell, fail, tell-and-ask, heartbeat, external trials, notes and
``optimize``; its reads (listings, best or the Pareto front, exports) come from ``StudyResults``
(``study_results.py``). Made by ``Client.create_study`` / ``get_study``."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Literal, overload

import httpx

from localbo_client import optimizing
from localbo_client.errors import LocalboError
from localbo_client.outcomes import Result, result_body
from localbo_client.study_results import Connection, StudyResults
from localbo_client.trial import REASON_CHARS, Trial

log = logging.getLogger("localbo_client")

# A trial the client gives up on is failed on the server; when the service itself is why (it stayed down past
# the retry budget) or the user interrupted, that last call gets only this long, then the lease is the backstop.
ABANDON_RETRY_FOR = 5.0
SERVICE_ERRORS = (LocalboError, httpx.HTTPError)
POLICY_WAIT_SECONDS = 900.0  # optimize's asks wait this long for the policy (the server's maximum by default)


# How many of the trials it handed out a Study remembers (the latest), so that a tell by number reaches the Trial
# and sends its token; a number it forgot, or never handed out, is told as it always was.
REMEMBERED_TRIALS = 1024


class Study(StudyResults):
    """One study on the server, made by ``Client.create_study``, ``get_study`` or ``list_studies``.

    It remembers the trials it handed out (the latest ``REMEMBERED_TRIALS``), so a tell by number works as a tell
    of the ``Trial``: the trial learns it was told (a with-block that tells ``trial.number`` ends cleanly) and the
    tell carries the trial's ``token``.

    ```python
    study = client.get_study("beam")
    with study.ask() as trial:
        study.tell(trial, measure(trial.params))
    study.best.value
    ```
    """

    def __init__(self, client: Connection, data: dict[str, Any]) -> None:
        self.client = client
        """The ``Client`` whose connection the study's calls use."""
        self.name: str = data["name"]
        """The study's name, as in its URL: ``client.get_study("beam").name == "beam"``."""
        self.info = data
        """The study as the server last answered it (``GET /api/v1/studies/{name}``): its definition and
        ``summary``; ``refresh()`` reads it again.

        ```python
        study.info["policy"], study.info["summary"]["n_complete"]      # ('minucb', 12)
        ```
        """
        self._handed_out: OrderedDict[int, Trial] = OrderedDict()  # number -> the latest Trial with that number
        self._lock = threading.Lock()  # optimize's workers share the study

    def __repr__(self) -> str:
        return f"Study({self.name!r}, policy={self.info.get('policy')!r})"

    def refresh(self) -> dict[str, Any]:
        """Read the study again (its summary, note, policy state version) into ``info``, and return it.

        ```python
        study.refresh()["summary"]["best_value"]       # 0.84
        ```
        """
        self.info = self.client.request("GET", self._path)
        return self.info

    # -- notes ------------------------------------------------------------------------------------------------------
    @property
    def note(self) -> str | None:
        """The study's note as last read (``refresh`` reads it again) or written by ``set_note``; None: none.

        ```python
        client.get_study("beam").note       # 'new thermocouple from trial 40 on'
        ```
        """
        note: str | None = self.info.get("note")
        return note

    def set_note(self, note: str | None) -> str | None:
        """Write the study's note (free text, at most 2000 characters; ``""`` or None clears it) and return it as
        stored. Needs a token with the write scope; a longer note is a ``BadRequest`` naming ``note``.

        ```python
        study.set_note("new thermocouple from trial 40 on")
        study.note                          # 'new thermocouple from trial 40 on'
        ```
        """
        data = self.client.request("PUT", f"{self._path}/note", json={"note": note}, idempotent=True)
        self.info = {**self.info, "note": data["note"]}
        stored: str | None = data["note"]
        return stored

    def set_trial_note(self, trial: Trial | int, note: str | None) -> Trial:
        """Write a trial's note (a ``Trial`` or its number, in any state; ``""`` or None clears it); returns the
        trial as the server left it. The note changes nothing the policy sees: a contaminated sample keeps its
        value (fail it, or tell it again in a new trial, to change that). ``NotFound`` for an unknown trial.

        ```python
        study.set_trial_note(17, "sample 17 was contaminated")
        [t.number for t in study.trials() if t.note]    # [17]
        ```
        """
        number, known = self._known(trial)
        data = self.client.request("PUT", f"{self._path}/trials/{number}/note", json={"note": note}, idempotent=True)
        fresh = self._trial(data)
        if known is not None:
            known.note = fresh.note
        return trial if isinstance(trial, Trial) else fresh

    def notes(self) -> dict[int, str]:
        """Every trial's note, ``{number: note}`` (only trials that carry one), in one request.

        ```python
        study.notes()                       # {17: 'sample 17 was contaminated'}
        ```
        """
        data = self.client.request("GET", f"{self._path}/notes")
        self.info = {**self.info, "note": data["note"]}
        return {int(n): text for n, text in data["trials"].items()}

    @overload
    def ask(self, count: Literal[1] = 1, client_id: str | None = None, wait_seconds: float | None = None) -> Trial: ...

    @overload
    def ask(
        self, count: int, client_id: str | None = None, wait_seconds: float | None = None
    ) -> Trial | list[Trial]: ...

    def ask(
        self, count: int = 1, client_id: str | None = None, wait_seconds: float | None = None
    ) -> Trial | list[Trial]:
        """A ``Trial`` (count=1) or a list of ``count`` trials (typed ``Trial | list[Trial]`` unless ``count`` is
        the literal 1: a count that may be 1 at run time hands out a ``Trial``).

        ``wait_seconds``: how long the server waits for the policy when its plan is empty before it hands out
        fallback points (None: the server's LOCALBO_ASK_WAIT_SECONDS; it cuts longer waits to its maximum).
        ``client_id``: who asks (a rig's name), kept with the trial.

        ```python
        trial = study.ask()                               # trial.params == {"x": 0.31}
        batch = study.ask(4, client_id="rig-7")           # four trials to run at once
        trial = study.ask(wait_seconds=600)               # wait for the policy rather than take a fallback
        ```
        """
        body: dict[str, Any] = {"count": count, "client_id": client_id}
        timeout = None
        if wait_seconds is not None:
            body["wait_seconds"] = wait_seconds
            timeout = max(self.client.timeout, wait_seconds + 30.0)  # the answer may take that long
        data = self.client.request("POST", f"{self._path}/ask", json=body, idempotent=True, timeout=timeout)
        trials = self._hand_out(data["trials"])
        return trials[0] if count == 1 else trials

    def tell(self, trial: Trial | int, value: Result) -> Trial:
        """Complete ``trial`` (a ``Trial`` or its number) with ``value``; returns the trial as the server left it.

        ``value``: a number, or a mapping of named values for a study that names metrics (every metric it names:
        its objective and each outcome constraint's). A number for such a study is its objective's value, which
        the server takes only when the study has no outcome constraints.

        ```python
        study.tell(trial, 0.42)
        told = study.tell(trial, {"yield": 0.81, "purity": 0.97})
        told.values, told.feasible          # ({"yield": 0.81, "purity": 0.97}, True)
        ```
        """
        number, known = self._known(trial)
        body = self._with_token(result_body(value), known)
        data = self.client.request("POST", f"{self._path}/trials/{number}/tell", json=body, idempotent=True)
        return self._learn(trial, known, data)

    def fail(self, trial: Trial | int, reason: str = "") -> Trial:
        """Fail ``trial`` (a ``Trial`` or its number), saying why; returns the trial as the server left it. The
        policy gets no value from it (a study with ``failures="avoid"`` steers away from where it failed).

        ```python
        study.fail(trial, "thermocouple open")
        study.fail(12, "sample spilled")
        ```
        """
        number, known = self._known(trial)
        body = self._with_token({"state": "failed", "reason": reason}, known)
        data = self.client.request("POST", f"{self._path}/trials/{number}/tell", json=body, idempotent=True)
        return self._learn(trial, known, data)

    @overload
    def tell_and_ask(
        self,
        trial: Trial | int,
        value: Result | None = None,
        *,
        reason: str | None = None,
        count: Literal[1] = 1,
        client_id: str | None = None,
        wait_seconds: float | None = None,
    ) -> Trial: ...

    @overload
    def tell_and_ask(
        self,
        trial: Trial | int,
        value: Result | None = None,
        *,
        reason: str | None = None,
        count: int,
        client_id: str | None = None,
        wait_seconds: float | None = None,
    ) -> Trial | list[Trial]: ...

    def tell_and_ask(
        self,
        trial: Trial | int,
        value: Result | None = None,
        *,
        reason: str | None = None,
        count: int = 1,
        client_id: str | None = None,
        wait_seconds: float | None = None,
    ) -> Trial | list[Trial]:
        """Tell ``trial`` its ``value`` (or fail it with ``reason``) and ask for the next ``count`` trials, in one
        round trip; returns the next ``Trial`` (count=1) or a list, and updates ``trial``. A retried call
        stores the result once and returns the same next trials (one Idempotency-Key for both halves).
        ``value`` is a number or a mapping of named values, as in ``tell``.

        ```python
        trial = study.ask()
        while ...:
            trial = study.tell_and_ask(trial, {"yield": measure(trial.params), "purity": purity()})
        ```
        """
        if (value is None) == (reason is None):
            raise ValueError("tell_and_ask: give a value, or a reason to fail the trial, not both")
        number, known = self._known(trial)
        tell = result_body(value) if value is not None else {"state": "failed", "reason": reason}
        ask: dict[str, Any] = {"count": count, "client_id": client_id}
        timeout = None
        if wait_seconds is not None:
            ask["wait_seconds"] = wait_seconds
            timeout = max(self.client.timeout, wait_seconds + 30.0)
        data = self.client.request(
            "POST",
            f"{self._path}/trials/{number}/tell-and-ask",
            json={"tell": self._with_token(tell, known), "ask": ask},
            idempotent=True,
            timeout=timeout,
        )
        self._learn(trial, known, data["told"])
        trials = self._hand_out(data["trials"])
        return trials[0] if count == 1 else trials

    def heartbeat(self, trial: Trial | int) -> Trial:
        """Extend ``trial``'s lease (a ``Trial`` or its number) by the server's lease length
        (``LOCALBO_LEASE_SECONDS``), for an evaluation that outlasts it: a trial whose lease ends is failed.

        ```python
        while not rig.done():
            study.heartbeat(trial)
            time.sleep(600)
        ```
        """
        number, known = self._known(trial)
        data = self.client.request("POST", f"{self._path}/trials/{number}/heartbeat", idempotent=True)
        return self._learn(trial, known, data)

    def add_trial(self, params: dict[str, Any], value: Result) -> Trial:
        """Record an evaluation made elsewhere (warm start): its ``params`` and its result, ``value`` a number or
        named values, as in ``tell``.

        ```python
        study.add_trial({"a": 0.2, "b": 0.3, "c": 0.5}, {"yield": 0.64, "purity": 0.96})
        ```
        """
        data = self.client.request(
            "POST", f"{self._path}/trials", json={"params": params, **result_body(value)}, idempotent=True
        )
        return self._trial(data)

    def optimize(
        self,
        fn: Callable[[dict[str, Any]], Result],
        n_trials: int,
        n_workers: int = 1,
        catch: tuple[type[BaseException], ...] = (),
        wait_seconds: float | None = POLICY_WAIT_SECONDS,
    ) -> None:
        """Ask, evaluate ``fn(params)`` and tell, ``n_trials`` times over ``n_workers`` threads. ``fn`` returns a
        number, or a mapping of named values for a study that names metrics (as ``tell`` takes them):

        ```python
        study.optimize(lambda p: {"yield": run(p), "purity": assay(p)}, n_trials=40)
        ```

        Each ask waits for the policy (``wait_seconds``, 15 minutes by default, cut to the server's
        LOCALBO_ASK_WAIT_MAX_SECONDS) rather than take fallback points; None: the server's default wait.

        An exception from ``fn`` (or a value that is not a finite number, a ``ValueError``) fails its
        trial; one listed in ``catch`` lets the run go on, any other stops all workers and is raised here.
        So is an error of the service (``ask``/``tell`` raising, e.g. ``NotFound`` once the study is
        deleted, or ``ServerError`` after the retry budget): the other workers finish the trial they hold,
        stop, and the first error is raised here. No trial is left ``running``: a worker whose tell gave up
        fails its trial (best effort), and an interrupt (Ctrl-C) here fails the trials the workers hold.
        """
        optimizing.optimize(self, fn, n_trials, n_workers, catch, wait_seconds)  # the worker loop's own module

    def abandon(self, trial: Trial, reason: str, cause: BaseException | None = None) -> None:
        """Fail a trial the client gives up on, so it does not stay ``running`` until its lease ends; best effort:
        it never raises a service error (``cause``, if any, is what the caller sees). When the service is why (it
        stayed down past the retry budget), the user interrupted, or there is no cause, only a short last try.
        A ``Trial``'s with-block calls it on an exception; call it yourself where there is no with-block:

        ```python
        try:
            value = measure(trial.params)
        except RigFault as exc:
            study.abandon(trial, f"rig fault: {exc}", exc)
            raise
        ```
        """
        short = cause is None or isinstance(cause, (*SERVICE_ERRORS, KeyboardInterrupt, SystemExit))
        try:
            data = self.client.request(
                "POST",
                f"{self._path}/trials/{trial.number}/tell",
                json=self._with_token({"state": "failed", "reason": reason[:REASON_CHARS]}, trial),
                idempotent=True,
                retry_for=min(ABANDON_RETRY_FOR, self.client.retry.retry_for) if short else None,
            )
            self._learn(trial, trial, data)
        except SERVICE_ERRORS as exc:
            note = f"localbo: trial {trial.number} could not be failed ({exc}); it stays running until its lease ends"
            log.warning(note)
            if cause is not None and hasattr(cause, "add_note"):  # Python >= 3.11
                cause.add_note(note)

    # -- the trials this study handed out -------------------------------------------------------------------------
    def _hand_out(self, records: list[dict[str, Any]]) -> list[Trial]:
        trials = [self._trial(t) for t in records]
        with self._lock:
            for trial in trials:
                self._handed_out.pop(trial.number, None)  # a number asked again (the study was created again)
                self._handed_out[trial.number] = trial
            while len(self._handed_out) > REMEMBERED_TRIALS:
                self._handed_out.popitem(last=False)
        return trials

    def _known(self, trial: Trial | int) -> tuple[int, Trial | None]:
        """The trial's number, and the ``Trial`` it stands for: itself, or the one this study handed out last
        with that number (None: a number it forgot or never handed out)."""
        if isinstance(trial, Trial):
            return trial.number, trial
        number = int(trial)
        with self._lock:
            return number, self._handed_out.get(number)

    @staticmethod
    def _with_token(body: dict[str, Any], known: Trial | None) -> dict[str, Any]:
        """A tell's body, with the token of the trial's study instance where the server gave one."""
        return body if known is None or known.token is None else {**body, "token": known.token}

    def _learn(self, trial: Trial | int, known: Trial | None, data: dict[str, Any]) -> Trial:
        """Update the trial told with the server's answer, and the one this study handed out under its number if
        that is another object for the same trial (of the same study instance); returns the trial told, or a
        fresh one for a number the study does not know."""
        fresh = self._trial(data)
        instance = fresh.token if fresh.token is not None or known is None else known.token
        with self._lock:
            handed = self._handed_out.get(fresh.number)
        targets = [] if known is None else [known]
        if handed is not None and handed is not known and handed.token == instance:
            targets.append(handed)
        for target in targets:
            target.state, target.value, target.reason = fresh.state, fresh.value, fresh.reason
            target.values, target.feasible = fresh.values, fresh.feasible
            target.lease_expires_at = fresh.lease_expires_at
        return known or fresh
