"""``Client``, ``Study`` and ``Trial``: ask/tell over HTTP with retries that store nothing twice.

Every write carries an ``Idempotency-Key`` that stays the same across the retries of
one call, so a tell whose answer was lost is stored once, and an ask whose answer
was lost hands back the same trials. A call keeps retrying for ``retry_for`` seconds
(60 by default: longer than a server restart), honouring ``Retry-After``.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from localbo_client.errors import LocalboError, error_for
from localbo_client.retrying import MAYBE_SENT, NOT_SENT, RetryPolicy, hinted_wait

log = logging.getLogger("localbo_client")

# A trial the client gives up on is failed on the server; when the service itself is why (it stayed down past
# the retry budget) or the user interrupted, that last call gets only this long, then the lease is the backstop.
ABANDON_RETRY_FOR = 5.0
_REASON_CHARS = 1000  # an exception's text can be long; the reason only needs to say what happened
SERVICE_ERRORS = (LocalboError, httpx.HTTPError)
POLICY_WAIT_SECONDS = 900.0  # optimize's asks wait this long for the policy (the server's maximum by default)
# Answers to a tell after which failing the trial is futile: it is gone, settled already, or not ours to change.
SETTLED = frozenset({401, 403, 404, 409})


@dataclass
class Trial:
    """One evaluation: ``params`` in the study's units; a context manager that fails on error."""

    number: int
    params: dict[str, Any]
    state: str
    value: float | None = None
    reason: str | None = None
    source: str = ""
    lease_expires_at: datetime | None = None
    candidate: str | None = None  # finite spaces: the id of the candidate
    study: Study | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any], study: Study | None = None) -> Trial:
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
        )

    def tell(self, value: float) -> Trial:
        assert self.study is not None, "this trial is not bound to a study"
        return self.study.tell(self, value)

    def fail(self, reason: str) -> Trial:
        assert self.study is not None, "this trial is not bound to a study"
        return self.study.fail(self, reason)

    def __enter__(self) -> Trial:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:  # noqa: ANN001
        """An exception in the block (the objective's, a tell that gave up, Ctrl-C) fails the trial, best effort,
        and propagates; leaving the block without a tell fails it too."""
        if self.study is None or self.state != "running":
            return
        if exc is not None:
            self.study._abandon(self, f"{exc_type.__name__}: {exc}", exc)  # noqa: SLF001 - the study's own helper
        else:
            self.fail("the with-block ended without a tell")


class Client:
    """A connection pool to one localbo server; use as a context manager or ``close()``."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        token: str | None = None,
        *,
        timeout: float = 60.0,
        retry_for: float = 60.0,
        backoff: float = 0.2,
        retries: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """``timeout``: one request's read limit. ``retry_for``: how long one call keeps retrying a server that is
        down, restarting or busy (seconds from its first try; 0: no retries). ``backoff``: the first pause, doubled
        on each retry up to 5 s, with jitter. ``retries``: an optional cap on the count of retries as well."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=transport,
        )
        self.retry = RetryPolicy(retry_for=retry_for, backoff=backoff, retries=retries)
        self.timeout = timeout

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Any = None,
        idempotent: bool = False,
        retry_for: float | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One call, retried within the time budget (``retry_for`` overrides the client's): a request that never
        reached the server, a 429, and a 503/409 with ``Retry-After`` always; a lost answer and other 5xx only for a
        read or an ``idempotent`` write, which carries one ``Idempotency-Key`` across all its tries. Other 4xx raise
        typed errors at once; a 5xx still there when the budget is spent raises ``ServerError``."""
        headers = {"Idempotency-Key": uuid.uuid4().hex} if idempotent else {}
        harmless = method in ("GET", "HEAD") or idempotent
        attempts = self.retry.start(retry_for)
        while True:
            try:
                limit = httpx.Timeout(timeout, connect=10.0) if timeout is not None else httpx.USE_CLIENT_DEFAULT
                response = self._http.request(method, path, json=json, params=params, headers=headers, timeout=limit)
            except (*NOT_SENT, *MAYBE_SENT) as exc:
                if not (isinstance(exc, NOT_SENT) or harmless) or not attempts.pause():
                    raise
                log.info("%s %s: %s; retrying", method, path, type(exc).__name__)
                continue
            again, hinted = hinted_wait(response, harmless)
            if again and attempts.pause(hinted):
                log.info("%s %s: %s; retrying", method, path, response.status_code)
                continue
            if response.status_code >= 400:
                raise error_for(response.status_code, _detail(response))
            if response.status_code == 204 or not response.content:
                return None
            if response.headers.get("content-type", "").startswith("application/json"):
                return response.json()
            return response.text

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/healthz")

    def create_study(
        self,
        name: str,
        space: dict[str, Any],
        direction: str = "minimize",
        policy: str = "sobol",
        policy_config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        seed: int | None = None,
        *,
        load_if_exists: bool = False,
    ) -> Study:
        body = {
            "name": name,
            "space": space,
            "direction": direction,
            "policy": policy,
            "policy_config": policy_config,
            "metadata": metadata,
            "seed": seed,
        }
        try:
            data = self.request("POST", "/api/v1/studies", json=body)
        except LocalboError as exc:
            if exc.status == 409 and load_if_exists:
                return self.get_study(name)
            raise
        return Study(self, data)

    def get_study(self, name: str) -> Study:
        return Study(self, self.request("GET", f"/api/v1/studies/{name}"))

    def list_studies(self) -> list[Study]:
        return [Study(self, s) for s in self.request("GET", "/api/v1/studies")["studies"]]

    def delete_study(self, name: str) -> None:
        self.request("DELETE", f"/api/v1/studies/{name}")


class Study:
    def __init__(self, client: Client, data: dict[str, Any]) -> None:
        self.client = client
        self.name: str = data["name"]
        self.info = data

    def __repr__(self) -> str:
        return f"Study({self.name!r}, policy={self.info.get('policy')!r})"

    @property
    def _path(self) -> str:
        return f"/api/v1/studies/{self.name}"

    def refresh(self) -> dict[str, Any]:
        self.info = self.client.request("GET", self._path)
        return self.info

    def ask(self, count: int = 1, client_id: str | None = None, wait_seconds: float | None = None) -> Any:
        """A ``Trial`` (count=1) or a list of ``count`` trials.

        ``wait_seconds``: how long the server waits for the policy when its plan is empty before it hands out
        fallback points (None: the server's LOCALBO_ASK_WAIT_SECONDS; it cuts longer waits to its maximum).
        """
        body: dict[str, Any] = {"count": count, "client_id": client_id}
        timeout = None
        if wait_seconds is not None:
            body["wait_seconds"] = wait_seconds
            timeout = max(self.client.timeout, wait_seconds + 30.0)  # the answer may take that long
        data = self.client.request("POST", f"{self._path}/ask", json=body, idempotent=True, timeout=timeout)
        trials = [Trial.from_json(t, self) for t in data["trials"]]
        return trials[0] if count == 1 else trials

    def tell(self, trial: Trial | int, value: float) -> Trial:
        value = _finite(value)
        number = trial.number if isinstance(trial, Trial) else int(trial)
        data = self.client.request(
            "POST", f"{self._path}/trials/{number}/tell", json={"value": float(value)}, idempotent=True
        )
        return self._update(trial, data)

    def fail(self, trial: Trial | int, reason: str = "") -> Trial:
        number = trial.number if isinstance(trial, Trial) else int(trial)
        data = self.client.request(
            "POST",
            f"{self._path}/trials/{number}/tell",
            json={"state": "failed", "reason": reason},
            idempotent=True,
        )
        return self._update(trial, data)

    def tell_and_ask(
        self,
        trial: Trial | int,
        value: float | None = None,
        *,
        reason: str | None = None,
        count: int = 1,
        client_id: str | None = None,
        wait_seconds: float | None = None,
    ) -> Any:
        """Tell ``trial`` its ``value`` (or fail it with ``reason``) and ask for the next ``count`` trials, in one
        round trip; returns the next ``Trial`` (count=1) or a list, and updates ``trial``. A retried call
        stores the result once and returns the same next trials (one Idempotency-Key for both halves)."""
        if (value is None) == (reason is None):
            raise ValueError("tell_and_ask: give a value, or a reason to fail the trial, not both")
        number = trial.number if isinstance(trial, Trial) else int(trial)
        tell = {"value": _finite(value)} if value is not None else {"state": "failed", "reason": reason}
        ask: dict[str, Any] = {"count": count, "client_id": client_id}
        timeout = None
        if wait_seconds is not None:
            ask["wait_seconds"] = wait_seconds
            timeout = max(self.client.timeout, wait_seconds + 30.0)
        data = self.client.request(
            "POST",
            f"{self._path}/trials/{number}/tell-and-ask",
            json={"tell": tell, "ask": ask},
            idempotent=True,
            timeout=timeout,
        )
        self._update(trial, data["told"])
        trials = [Trial.from_json(t, self) for t in data["trials"]]
        return trials[0] if count == 1 else trials

    def heartbeat(self, trial: Trial | int) -> Trial:
        number = trial.number if isinstance(trial, Trial) else int(trial)
        return self._update(
            trial, self.client.request("POST", f"{self._path}/trials/{number}/heartbeat", idempotent=True)
        )

    def add_trial(self, params: dict[str, Any], value: float) -> Trial:
        """Record an evaluation made elsewhere (warm start)."""
        value = _finite(value)
        data = self.client.request(
            "POST", f"{self._path}/trials", json={"params": params, "value": float(value)}, idempotent=True
        )
        return Trial.from_json(data, self)

    def trials(self, state: str | None = None, after: int = 0, page_size: int = 1000) -> list[Trial]:
        return list(self.iter_trials(state=state, after=after, page_size=page_size))

    def iter_trials(self, state: str | None = None, after: int = 0, page_size: int = 1000) -> Iterator[Trial]:
        while True:
            params = {"after": after, "limit": page_size, **({"state": state} if state else {})}
            page = self.client.request("GET", f"{self._path}/trials", params=params)
            yield from (Trial.from_json(t, self) for t in page["trials"])
            if page["next_after"] is None:
                return
            after = page["next_after"]

    @property
    def best(self) -> Trial | None:
        data = self.client.request("GET", f"{self._path}/best")
        return Trial.from_json(data, self) if data else None

    def export(self, format: str = "json") -> Any:
        return self.client.request("GET", f"{self._path}/export", params={"format": format})

    def optimize(
        self,
        fn: Callable[[dict[str, Any]], float],
        n_trials: int,
        n_workers: int = 1,
        catch: tuple[type[BaseException], ...] = (),
        wait_seconds: float | None = POLICY_WAIT_SECONDS,
    ) -> None:
        """Ask, evaluate ``fn(params)`` and tell, ``n_trials`` times over ``n_workers`` threads.

        Each ask waits for the policy (``wait_seconds``, 15 minutes by default, cut to the server's
        LOCALBO_ASK_WAIT_MAX_SECONDS) rather than take fallback points; None: the server's default wait.

        An exception from ``fn`` (or a value that is not a finite number, a ``ValueError``) fails its
        trial; one listed in ``catch`` lets the run go on, any other stops all workers and is raised here.
        So is an error of the service (``ask``/``tell`` raising, e.g. ``NotFound`` once the study is
        deleted, or ``ServerError`` after the retry budget): the other workers finish the trial they hold,
        stop, and the first error is raised here. No trial is left ``running``: a worker whose tell gave up
        fails its trial (best effort), and an interrupt (Ctrl-C) here fails the trials the workers hold.
        """
        from localbo_client.optimizing import optimize  # the worker loop lives in its own module

        optimize(self, fn, n_trials, n_workers, catch, wait_seconds)

    def _abandon(self, trial: Trial, reason: str, cause: BaseException | None = None) -> None:
        """Fail a trial the client gives up on, so it does not stay ``running`` until its lease ends; best effort:
        it never raises a service error (``cause``, if any, is what the caller sees). When the service is why (it
        stayed down past the retry budget), the user interrupted, or there is no cause, only a short last try."""
        short = cause is None or isinstance(cause, (*SERVICE_ERRORS, KeyboardInterrupt, SystemExit))
        try:
            self._update(
                trial,
                self.client.request(
                    "POST",
                    f"{self._path}/trials/{trial.number}/tell",
                    json={"state": "failed", "reason": reason[:_REASON_CHARS]},
                    idempotent=True,
                    retry_for=min(ABANDON_RETRY_FOR, self.client.retry.retry_for) if short else None,
                ),
            )
        except SERVICE_ERRORS as exc:
            note = f"localbo: trial {trial.number} could not be failed ({exc}); it stays running until its lease ends"
            log.warning(note)
            if cause is not None and hasattr(cause, "add_note"):  # Python >= 3.11
                cause.add_note(note)

    def _update(self, trial: Trial | int, data: dict[str, Any]) -> Trial:
        fresh = Trial.from_json(data, self)
        if isinstance(trial, Trial):
            trial.state, trial.value, trial.reason = fresh.state, fresh.value, fresh.reason
            trial.lease_expires_at = fresh.lease_expires_at
            return trial
        return fresh


def _finite(value: float) -> float:
    """JSON has no NaN or infinity; say so here rather than fail inside the encoder."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"value: expected a finite number, got {value}")
    return value


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        return response.text or response.reason_phrase
    return detail if isinstance(detail, str) else str(detail)
