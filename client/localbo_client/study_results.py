"""``StudyResults``: what a study has found, read from the server: its trials (a list, pages, a pandas
DataFrame), the best trial or the Pareto front and its hypervolume, and exports. ``Study`` (``study.py``, which asks
and tells) inherits it; here are the reads, which change nothing on the server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, cast

from localbo_client.retrying import RetryPolicy
from localbo_client.trial import Trial, TrialOwner


class Connection(Protocol):
    """What a Study needs of its ``Client``: one retried call, the timeout and the retry budget."""

    timeout: float
    retry: RetryPolicy

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
    ) -> Any: ...


class StudyResults:
    """The reads of a ``Study``: ``trials``, ``iter_trials``, ``trials_dataframe``, ``best``, ``pareto``,
    ``hypervolume``, ``front`` and ``export``."""

    client: Connection
    name: str
    info: dict[str, Any]

    @property
    def _path(self) -> str:
        return f"/api/v1/studies/{self.name}"

    def _trial(self, data: dict[str, Any]) -> Trial:
        """A trial of this study from the server's record (a StudyResults is always a ``Study``: its trials tell it)."""
        return Trial.from_json(data, cast(TrialOwner, self))

    def trials_dataframe(self, state: str | None = None) -> Any:
        """The trials as a pandas DataFrame, one row each, as Optuna's ``trials_dataframe``: ``number``, ``state``,
        ``value``, ``params_<name>`` per parameter, ``values_<metric>`` per named metric, ``feasible``, ``source``,
        ``candidate``, ``reason``, ``note``. Needs ``pip install "localbo-client[pandas]"``.

        ```python
        df = study.trials_dataframe(state="complete")
        df.sort_values("value").head()
        ```
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError('trials_dataframe needs pandas: pip install "localbo-client[pandas]"') from exc
        rows = []
        for t in self.iter_trials(state=state):
            row: dict[str, Any] = {"number": t.number, "state": t.state, "value": t.value}
            row |= {f"params_{k}": v for k, v in t.params.items()}
            row |= {f"values_{k}": v for k, v in (t.values or {}).items()}
            row |= {"feasible": t.feasible, "source": t.source, "candidate": t.candidate, "reason": t.reason}
            row |= {"note": t.note}
            rows.append(row)
        columns = ["number", "state", "value"]
        return pd.DataFrame(rows, columns=None if rows else columns)

    def _repr_html_(self) -> str:
        """A notebook's view: the study's name, policy, counts and best value (or hypervolume), as a small table."""
        from html import escape

        summary = self.info.get("summary") or {}
        best = "hypervolume" if summary.get("hypervolume") is not None else "best_value"
        cells = {
            "study": self.name,
            "policy": self.info.get("policy"),
            "trials": summary.get("n_trials"),
            "complete": summary.get("n_complete"),
            "running": summary.get("n_running"),
            "failed": summary.get("n_failed"),
            best.replace("_", " "): summary.get(best),
        }
        body = "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>" for k, v in cells.items())
        return f"<table>{body}</table>"

    def trials(self, state: str | None = None, after: int = 0, page_size: int = 1000) -> list[Trial]:
        """Every trial numbered above ``after`` (only those in ``state``, when given: ``running``, ``complete``,
        ``failed``, ``stale``), in number order, read ``page_size`` at a time.

        ```python
        done = study.trials(state="complete")
        [(t.number, t.value) for t in done]          # [(1, 0.42), (2, 0.57), ...]
        ```
        """
        return list(self.iter_trials(state=state, after=after, page_size=page_size))

    def iter_trials(self, state: str | None = None, after: int = 0, page_size: int = 1000) -> Iterator[Trial]:
        """``trials``, one page at a time, for a study too large to hold at once.

        ```python
        for trial in study.iter_trials(state="failed"):
            print(trial.number, trial.reason)
        ```
        """
        while True:
            params = {"after": after, "limit": page_size, **({"state": state} if state else {})}
            page = self.client.request("GET", f"{self._path}/trials", params=params)
            yield from (self._trial(t) for t in page["trials"])
            if page["next_after"] is None:
                return
            after = page["next_after"]

    @property
    def pareto(self) -> list[Trial]:
        """A study with several objectives: its Pareto front, the non-dominated feasible completed trials by number
        (a study with one objective: its best trial, as ``best``).

        ```python
        [(t.number, t.values) for t in study.pareto]   # [(4, {"yield": 0.81, "cost": 3.1}), ...]
        ```
        """
        return [self._trial(t) for t in self.client.request("GET", f"{self._path}/pareto")["trials"]]

    @property
    def hypervolume(self) -> float | None:
        """A study with several objectives: the volume its front dominates up to the reference point (None before
        a feasible result); ``front()`` has the reference point used and the history.

        ```python
        study.hypervolume                   # 1.73
        ```
        """
        value = self.front()["hypervolume"]
        return None if value is None else float(value)

    def front(self) -> dict[str, Any]:
        """``GET .../pareto`` as the server answers it: trials, hypervolume, reference_point (and whether it was
        inferred), history.

        ```python
        front = study.front()
        front["reference_point"], front["hypervolume"]     # ({"yield": 0.0, "cost": 10.0}, 1.73)
        ```
        """
        data: dict[str, Any] = self.client.request("GET", f"{self._path}/pareto")
        return data

    @property
    def best(self) -> Trial | None:
        """The best trial: the best *feasible* one in a study with outcome constraints (None until one is).
        ``Conflict`` for a study with several objectives: see ``pareto``.

        ```python
        best = study.best
        best.number, best.value, best.params        # (31, 0.12, {"x": 0.64})
        ```
        """
        data = self.client.request("GET", f"{self._path}/best")
        return self._trial(data) if data else None

    def export(self, format: str = "json") -> Any:
        """The study and all its trials: ``format="json"``, a dict (``study``: its record; ``trials``: every
        trial's); ``"csv"``, the text of a CSV file, one row a trial.

        ```python
        Path("beam.csv").write_text(study.export("csv"))
        record = study.export()                       # {"study": {...}, "trials": [...]}
        ```
        """
        return self.client.request("GET", f"{self._path}/export", params={"format": format})
