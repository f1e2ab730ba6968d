"""The records the API returns, built from storage rows in one place: a trial and a study with its summary."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from sqlalchemy.engine import Row

from localbo.domain.identity import study_token


class TrialRecord(TypedDict):
    number: int
    state: str
    params: dict[str, Any]
    value: float | None
    values: dict[str, float] | None  # the named metrics, when the study names them
    feasible: bool | None  # every outcome constraint held (None: the study has none, or no result yet)
    reason: str | None
    source: str
    client_id: str | None
    lease_expires_at: str | None
    created_at: str | None
    completed_at: str | None
    candidate: str | None  # a finite space's candidate id
    token: str | None  # names the trial's study for good (``identity.study_token``); a tell may send it back
    note: str | None  # a person's note on the trial (``localbo/notes.py``)


class StudySummary(TypedDict):
    n_trials: int
    n_running: int
    n_complete: int
    n_failed: int
    n_stale: int
    n_feasible: int
    n_infeasible: int
    best_value: float | None
    last_activity: str | None
    last_result_at: str | None
    trials_since_improvement: int | None
    results_per_hour: int
    candidates_remaining: int | None
    n_fallback: int
    last_fallback_at: str | None
    n_lease_expired: int
    typical_result_gap_s: float | None
    # several objectives only (``fronts.py``)
    hypervolume: NotRequired[float | None]
    hypervolume_reference_point: NotRequired[dict[str, float]]
    hypervolume_history: NotRequired[list[list[float]]]
    pareto_size: NotRequired[int]


class StudyRecord(TypedDict):
    id: int
    name: str
    direction: str
    space: dict[str, Any]
    policy: str
    policy_config: dict[str, Any]
    metadata: dict[str, Any]
    seed: int
    created_at: str | None
    policy_state_version: int
    last_policy_error: str | None
    objectives: list[dict[str, Any]] | None
    constraints: list[dict[str, Any]] | None
    parameter_constraints: list[dict[str, Any]] | None
    failures: str
    safety: dict[str, Any] | None
    reference_point: dict[str, float] | None
    note: str | None  # a person's note on the study (``localbo/notes.py``)
    summary: StudySummary


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def trial_out(row: Row | Mapping[str, Any], token: str | None = None) -> TrialRecord:
    """The trial as the API returns it; ``token``: its study's (``identity.study_token``), else read from the row's
    ``study_created_at`` when it has one."""
    r = row._mapping if isinstance(row, Row) else row
    if token is None and r.get("study_created_at") is not None:
        token = study_token(r["study_id"], r["study_created_at"])
    return {
        "number": r["number"],
        "state": r["state"],
        "params": r["params"],
        "value": r["value"],
        "values": r.get("metrics"),
        "feasible": r.get("feasible"),
        "reason": r["reason"] or None,  # a failure told without one: null (older rows hold "")
        "source": r["source"],
        "client_id": r["client_id"],
        "lease_expires_at": iso(r["lease_expires_at"]),
        "created_at": iso(r["created_at"]),
        "completed_at": iso(r["completed_at"]),
        "candidate": r.get("candidate_id"),
        "token": token,
        "note": r.get("note"),
    }


def _mean_gap(s: Mapping[str, Any]) -> float | None:
    """The mean time between results (first to last over the count), from 4 results on; None before."""
    first, last, n = s.get("first_result_at"), s.get("last_completed_at"), int(s.get("results") or 0)
    if n < 4 or first is None or last is None:
        return None
    return round((last - first).total_seconds() / (n - 1), 3)


def study_out(row: Row, summary: Mapping[str, Any] | None) -> StudyRecord:
    s = summary or {}
    best = s.get("min_value") if row.direction == "minimize" else s.get("max_value")
    last = max(filter(None, (s.get("last_created_at"), s.get("last_completed_at"))), default=None)
    finite = isinstance(row.space, dict) and row.space.get("kind") == "finite"
    remaining = max(0, int(row.space.get("candidates") or 0) - int(s.get("asked_candidates") or 0)) if finite else None
    return {
        "id": row.id,
        "name": row.name,
        "direction": row.direction,
        "space": row.space,
        "policy": row.policy,
        "policy_config": row.policy_config,
        "metadata": row.user_metadata,
        "seed": row.seed,
        "created_at": iso(row.created_at),
        "policy_state_version": row.policy_state_version,
        "last_policy_error": row.last_policy_error,
        "objectives": row.objectives,
        "constraints": row.constraints,
        "parameter_constraints": row.parameter_constraints,
        "failures": row.failures,
        "safety": row.safety,
        "reference_point": row.reference_point,
        "note": row._mapping.get("note"),
        "summary": {
            "n_trials": int(s.get("n") or 0),
            "n_running": int(s.get("running") or 0),
            "n_complete": int(s.get("complete") or 0),
            "n_failed": int(s.get("failed") or 0),
            "n_stale": int(s.get("stale") or 0),
            "n_feasible": int(s.get("feasible") or 0),
            "n_infeasible": int(s.get("infeasible") or 0),
            "best_value": best,
            "last_activity": iso(last),
            "last_result_at": iso(s.get("last_completed_at")),  # only complete and failed trials have one
            "trials_since_improvement": s.get("since_best"),
            "results_per_hour": int(s.get("results_last_hour") or 0),
            "candidates_remaining": remaining,
            "n_fallback": int(s.get("fallback") or 0),
            "n_lease_expired": int(s.get("lease_expired") or 0),
            "typical_result_gap_s": _mean_gap(s),
            "last_fallback_at": iso(s.get("last_fallback_at")),
        },
    }
