"""``Client``, ``Study`` and ``Trial``: ask/tell over HTTP with retries that store nothing twice.

Every write carries an ``Idempotency-Key`` that stays the same across the retries of
one call, so a tell whose answer was lost is stored once, and an ask whose answer
was lost hands back the same trials. A call keeps retrying for ``retry_for`` seconds
(60 by default: longer than a server restart), honouring ``Retry-After``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from localbo_client.errors import Conflict, LocalboError, error_for
from localbo_client.outcomes import (
    Failures,
    Objective,
    OutcomeConstraint,
    ParameterConstraint,
    Safety,
    check_finite,
)
from localbo_client.retrying import MAYBE_SENT, NOT_SENT, RetryPolicy, hinted_wait
from localbo_client.spaces import canonical_space
from localbo_client.study import POLICY_WAIT_SECONDS, Study
from localbo_client.trial import Trial

__all__ = ["POLICY_WAIT_SECONDS", "Client", "Study", "Trial"]

log = logging.getLogger("localbo_client")


class Client:
    """A connection pool to one localbo server; use as a context manager or ``close()``.

    ```python
    from localbo_client import Client

    with Client("http://127.0.0.1:8000", token="tok-beam") as client:
        study = client.create_study("beam", space={"x": {"type": "float", "low": 0, "high": 1}})
        trial = study.ask()
        study.tell(trial, measure(trial.params))
    ```
    """

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
        """``url``: the server's address; ``token``: a bearer token, when the server has ``LOCALBO_TOKENS``.
        ``timeout``: one request's read limit. ``retry_for``: how long one call keeps retrying a server that is
        down, restarting or busy (seconds from its first try; 0: no retries). ``backoff``: the first pause, doubled
        on each retry up to 5 s, with jitter. ``retries``: an optional cap on the count of retries as well.
        ``transport``: an httpx transport (tests pass ``httpx.MockTransport``).

        ```python
        client = Client("http://lab-server:8000", token="tok-beam", retry_for=300)   # ride out a long restart
        client = Client(retry_for=0)                                                  # fail at once instead
        ```
        """
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=transport,
        )
        self.retry = RetryPolicy(retry_for=retry_for, backoff=backoff, retries=retries)
        """How a call retries: ``client.retry.retry_for`` seconds, its first pause and cap."""
        self.timeout = timeout
        """One request's read limit, in seconds (an ask that waits for the policy gets longer)."""
        self.url = url.rstrip("/")
        """The server's address, without a trailing slash: ``client.url == "http://127.0.0.1:8000"``."""
        self._reached = False  # the server has answered once: later refusals are a restart, not a wrong URL
        self._warned = False

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool (a ``with Client(...) as client:`` block does it on leaving).

        ```python
        client = Client()
        try:
            ...
        finally:
            client.close()
        ```
        """
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
        typed errors at once; a 5xx still there when the budget is spent raises ``ServerError``.

        Returns the answer's JSON, its text for another media type, or None for an empty answer. For a route the
        client has no method for:

        ```python
        policy = client.request("GET", "/api/v1/studies/beam/policy")
        client.request("POST", "/api/v1/studies/beam/trials/3/heartbeat", idempotent=True)
        ```
        """
        if json is not None:
            check_finite(json)  # JSON has no NaN or infinity: name the field here, not fail in the encoder
        headers = {"Idempotency-Key": uuid.uuid4().hex} if idempotent else {}
        harmless = method in ("GET", "HEAD") or idempotent
        attempts = self.retry.start(retry_for)
        while True:
            try:
                limit = httpx.Timeout(timeout, connect=10.0) if timeout is not None else httpx.USE_CLIENT_DEFAULT
                response = self._http.request(method, path, json=json, params=params, headers=headers, timeout=limit)
            except (*NOT_SENT, *MAYBE_SENT) as exc:
                if isinstance(exc, httpx.ConnectError) and not self._reached:
                    self._say_unreachable(exc)
                if not (isinstance(exc, NOT_SENT) or harmless) or not attempts.pause():
                    raise type(exc)(f"{self.url}{path}: {exc}", request=exc.request) from exc
                log.info("%s %s: %s; retrying", method, path, type(exc).__name__)
                continue
            self._reached = True
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

    def _say_unreachable(self, exc: Exception) -> None:
        """Once, at the first refused connection before the server ever answered: a wrong URL should not look
        like a hang (the call goes on retrying, as a restarting server needs)."""
        if not self._warned:
            self._warned = True
            log.warning(
                "localbo at %s cannot be reached (%s); retrying for up to %.0f s", self.url, exc, self.retry.retry_for
            )

    def health(self) -> dict[str, Any]:
        """``GET /healthz``: the server answers, its version and the database it uses.

        ```python
        client.health()        # {"status": "ok", "version": "0.1.0", "database": "sqlite"}
        ```
        """
        return self.request("GET", "/healthz")

    def create_study(
        self,
        name: str,
        space: dict[str, Any],
        direction: str = "minimize",
        policy: str | None = None,
        policy_config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        seed: int | None = None,
        *,
        load_if_exists: bool = False,
        objectives: Sequence[Objective] | None = None,
        constraints: Sequence[OutcomeConstraint] | None = None,
        parameter_constraints: Sequence[ParameterConstraint] | None = None,
        failures: Failures | None = None,
        safety: Safety | None = None,
        reference_point: Mapping[str, float] | None = None,
    ) -> Study:
        """Create a study; ``load_if_exists``: get the study of that name if there is one (a 409 otherwise).

        ``space``: ``{name: {"type": "float" | "int", "low", "high", "log"?} | {"type": "categorical", "choices"}}``
        or a finite space (``finite_space``). ``direction`` is the way of the one unnamed value. ``policy``: the
        server's default when not given, ``auto`` (it picks a policy from the space, what the study must respect and
        its data, and says which and why in the ``display`` of ``GET /api/v1/studies/{name}/policy``).

        What a lab measures and must respect (each optional, and sent only when given, so an older server takes
        every call that names none of them), as for a reactor whose yield must keep its purity and whose three
        fractions make a whole:

        ```python
        study = client.create_study(
            "reactor",
            space={n: {"type": "float", "low": 0.0, "high": 1.0} for n in "abc"},
            policy="turbo",
            objectives=[{"metric": "yield", "direction": "maximize"}],
            constraints=[{"metric": "purity", "op": ">=", "bound": 0.95}],
            parameter_constraints=[{"terms": {"a": 1, "b": 1, "c": 1}, "op": "==", "bound": 1}],
        )
        ```

        - ``objectives``: named metrics to optimise, ``[{"metric": "yield", "direction": "maximize"}]``;
          tells then carry named values (``study.tell(trial, {"yield": 0.81, ...})``). One objective: its
          direction is the study's. Two to four: a Pareto front (``study.pareto``, ``study.hypervolume``; no
          single ``best``), served by ``auto``, ``morbo``, ``qlognehvi``, ``minucb``, ``la-minucb``, ``random``,
          ``sobol``; ``reference_point``
          (``{metric: value}``, each objective's worst value worth counting) bounds the hypervolume, inferred
          from the results when not given.
        - ``constraints``: outcome constraints, ``[{"metric": "purity", "op": ">=", "bound": 0.95}]``: every tell
          carries each metric, a trial is feasible when all hold, and ``study.best`` is the best feasible trial.
          Served by ``turbo`` (SCBO), ``minucb``, ``la-minucb``, ``gibo``, ``ei``, ``ucb`` and ``auto``, and with
          several objectives by ``morbo`` and ``qlognehvi``; the server refuses others with a ``BadRequest``
          naming the policies that serve them.
        - ``parameter_constraints``: linear, over float and int parameters (not log-scaled) in the space's units,
          ``[{"terms": {"a": 1, "b": 1, "c": 1}, "op": "==", "bound": 1}]``; every point handed out satisfies
          them. Served by ``random``, ``sobol``, ``turbo``, the local policies and the global ones.
        - ``failures="avoid"``: failed trials mark where the rig faults and the policy steers away (``turbo``,
          ``ei``, ``ucb`` and the local policies serve it).
        - ``safety`` (safe mode): ``{"max_violation_probability": 0.05, "seeds": [{...params known safe...}]}``;
          only points predicted to meet every outcome constraint with that chance are asked, starting at the
          seeds (or at the first feasible trials you add). Served by ``turbo`` and the local policies.
        """
        body: dict[str, Any] = {
            "name": name,
            "space": space,
            "direction": direction,
            "policy_config": policy_config,
            "metadata": metadata,
            "seed": seed,
        }
        if policy is not None:  # else the server's default (``auto``), also on an older server (``sobol``)
            body["policy"] = policy
        if objectives is not None:
            body["objectives"] = [dict(o) for o in objectives]
        if constraints is not None:
            body["constraints"] = [dict(c) for c in constraints]
        if parameter_constraints is not None:
            body["parameter_constraints"] = [{**p, "terms": dict(p["terms"])} for p in parameter_constraints]
        if failures is not None:
            body["failures"] = failures
        if safety is not None:
            body["safety"] = dict(safety)
        if reference_point is not None:
            body["reference_point"] = dict(reference_point)
        try:
            data = self.request("POST", "/api/v1/studies", json=body)
        except LocalboError as exc:
            if exc.status == 409 and load_if_exists:
                existing = self.get_study(name)
                differs = _differences(existing.info, body)
                if differs:
                    why = f"name: study {name!r} exists with another definition: {'; '.join(differs)}"
                    raise Conflict(409, why) from None
                return existing
            raise
        return Study(self, data)

    def get_study(self, name: str) -> Study:
        """The study called ``name`` (``NotFound`` if there is none), to ask, tell and read from another process.

        ```python
        study = client.get_study("beam")
        study.info["summary"]["n_complete"]      # 12
        ```
        """
        return Study(self, self.request("GET", f"/api/v1/studies/{name}"))

    def list_studies(self) -> list[Study]:
        """Every study the token may read, each with its definition and summary in ``Study.info``.

        ```python
        for study in client.list_studies():
            print(study.name, study.info["policy"], study.info["summary"]["best_value"])
        ```
        """
        return [Study(self, s) for s in self.request("GET", "/api/v1/studies")["studies"]]

    def delete_study(self, name: str) -> None:
        """Delete the study called ``name`` and its trials (``NotFound`` if there is none). A tell of one of its
        trials is refused afterwards, even by a study created again under the same name.

        ```python
        client.delete_study("beam")
        ```
        """
        self.request("DELETE", f"/api/v1/studies/{name}")


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        return response.text or response.reason_phrase
    return detail if isinstance(detail, str) else str(detail)


def _differences(stored: dict[str, Any], asked: dict[str, Any]) -> list[str]:
    """What a study of that name holds that ``create_study(load_if_exists=True)`` did not ask for: the space,
    policy, direction, the config keys given, and the outcomes given (each as "what: stored ... (asked ...)")."""
    out = []
    if canonical_space(stored.get("space") or {}) != canonical_space(asked["space"]):
        out.append(f"space {stored.get('space')} (asked {asked['space']})")
    if "policy" in asked and stored.get("policy") != asked["policy"]:
        out.append(f"policy {stored.get('policy')!r} (asked {asked['policy']!r})")
    if not asked.get("objectives") and stored.get("direction") != asked["direction"]:
        out.append(f"direction {stored.get('direction')!r} (asked {asked['direction']!r})")
    config = stored.get("policy_config") or {}
    for key, value in (asked.get("policy_config") or {}).items():
        if config.get(key) != value:
            out.append(f"policy_config.{key} {config.get(key)!r} (asked {value!r})")
    for field in ("objectives", "constraints", "parameter_constraints", "failures", "safety", "reference_point"):
        if field in asked and not _holds(stored.get(field), _with_defaults(field, asked[field])):
            out.append(f"{field} {stored.get(field)!r} (asked {asked[field]!r})")
    return out


def _with_defaults(field: str, asked: Any) -> Any:
    """What the server stores for ``asked``, where it fills a default a user may leave out."""
    if field == "objectives" and isinstance(asked, list):
        return [{"direction": "minimize", **o} if isinstance(o, dict) else o for o in asked]
    if field == "safety" and isinstance(asked, dict):
        return {"seeds": [], **asked}
    return asked


def _holds(stored: Any, asked: Any) -> bool:
    """Whether ``stored`` says what ``asked`` says: every key asked, equal (numbers by value); keys the server
    added (its defaults) do not count."""
    if isinstance(asked, dict):
        return isinstance(stored, dict) and all(k in stored and _holds(stored[k], v) for k, v in asked.items())
    if isinstance(asked, list):
        return isinstance(stored, list) and len(stored) == len(asked) and all(map(_holds, stored, asked))
    return bool(stored == asked)
