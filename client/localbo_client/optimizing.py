"""``Study.optimize``'s worker loop: ``n_workers`` threads ask, evaluate and tell (each tell asking for the
worker's next trial in the same round trip while the budget lasts), and nothing is lost silently."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any, Literal, Protocol

from localbo_client.errors import LocalboError
from localbo_client.outcomes import Result, result_body
from localbo_client.trial import REASON_CHARS, SETTLED, Trial, TrialOwner


class Optimized(TrialOwner, Protocol):
    """What the worker loop asks of a study (``Study`` is one): its trials' calls, one trial at a time."""

    def ask(self, count: Literal[1] = 1, client_id: str | None = None, wait_seconds: float | None = None) -> Trial: ...

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


def optimize(
    study: Optimized,
    fn: Callable[[dict[str, Any]], Result],
    n_trials: int,
    n_workers: int,
    catch: tuple[type[BaseException], ...],
    wait_seconds: float | None,
) -> None:
    """See ``Study.optimize``."""
    budget = iter(range(n_trials))
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []
    held: dict[int, Trial] = {}  # worker -> the trial it evaluates; the caller fails them on an interrupt
    interrupted: list[str] = []  # the interrupt's reason, once there was one

    def record(exc: BaseException) -> None:
        with lock:
            errors.append(exc)
        stop.set()

    def take() -> bool:
        """One evaluation of the budget for this worker; False when it is spent."""
        with lock:
            return next(budget, None) is not None

    def evaluate(trial: Trial, client_id: str) -> Trial | None:
        """Evaluate and tell one trial, asking for the next in the same round trip while the budget lasts:
        the next trial, or None when the budget is spent or the workers must stop."""
        value: Result | None = None
        reason: str | None = None
        try:
            value = checked(fn(trial.params))
        except catch as exc:
            reason = f"{type(exc).__name__}: {exc}"[:REASON_CHARS]
        except BaseException as exc:
            record(exc)  # first: the objective's error is the one raised, whatever becomes of the fail
            study.abandon(trial, f"{type(exc).__name__}: {exc}", exc)
            return None
        try:
            if not stop.is_set() and take():
                return study.tell_and_ask(trial, value, reason=reason, client_id=client_id, wait_seconds=wait_seconds)
            if reason is not None:
                study.fail(trial, reason)
            else:
                assert value is not None  # no reason: fn returned a finite value (or values)
                study.tell(trial, value)
            return None
        except BaseException as exc:
            record(exc)
            if not (isinstance(exc, LocalboError) and exc.status in SETTLED):  # else a fail is futile
                study.abandon(trial, f"abandoned: its tell failed ({type(exc).__name__}: {exc})", exc)
            return None

    def work(worker: int) -> None:
        client_id = f"optimize-{uuid.uuid4().hex[:8]}-{worker}"
        try:
            if stop.is_set() or not take():
                return
            trial: Trial | None = study.ask(client_id=client_id, wait_seconds=wait_seconds)
            while trial is not None:
                with lock:
                    if not interrupted:
                        held[worker] = trial
                if interrupted:  # asked while the caller was interrupted: nobody will evaluate it
                    study.abandon(trial, interrupted[0])
                    return
                if stop.is_set():  # asked (with a tell) as another worker failed: nobody will evaluate it
                    with lock:
                        held.pop(worker, None)
                    study.abandon(trial, "optimize stopped: another worker's call failed")
                    return
                try:
                    trial = evaluate(trial, client_id)
                finally:
                    with lock:
                        held.pop(worker, None)
        except BaseException as exc:  # ask, tell or fail: raised in the caller, never lost with the thread
            record(exc)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(n_workers)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    except BaseException as exc:  # e.g. KeyboardInterrupt in the caller: fail what the workers hold, then stop
        stop.set()
        with lock:
            interrupted.append(f"optimize was interrupted ({type(exc).__name__})")
            abandoned = list(held.values())
            held.clear()
        for trial in abandoned:
            study.abandon(trial, interrupted[0], exc)
        raise
    if errors:
        raise errors[0]


def checked(result: Result) -> Result:
    """``fn``'s result as a tell sends it: a finite number, or a mapping of finite named values (a ``ValueError``
    otherwise, raised where the objective's own errors are, so it fails the trial the same way)."""
    body = result_body(result)
    return body["values"] if "values" in body else body["value"]
