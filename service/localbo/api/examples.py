"""The example request and answer bodies of the OpenAPI document (the REST reference shows them), in one place:
taken from a real run, kept in step with ``schemas.py`` by the docs test."""

from __future__ import annotations

from typing import Any

SERIES_EXAMPLE: dict[str, Any] = {
    "study": "furnace",
    "direction": "maximize",
    "space": {"temp": {"type": "float", "low": 300.0, "high": 900.0}},
    "policy": "minucb",
    "policy_state_version": 2,
    "as_of": "2026-11-24T10:42:00.270462+00:00",
    "last": 2,
    "trials": {
        "number": [1, 2],
        "state": ["complete", "failed"],
        "value": [0.973, None],
        "x": [[0.5], [0.6023]],
        "source": ["minucb", "minucb"],
        "created": [1795695032.09, 1795695032.189],
        "completed": [1795695032.118, 1795695032.216],
        "feasible": [None, None],
        "metrics": [None, None],
        "note": [None, "thermocouple replaced after this run"],
        "reasons": {"2": "thermocouple"},
    },
}

RUNNING_TRIAL_EXAMPLE: dict[str, Any] = {
    "number": 1,
    "state": "running",
    "params": {"temp": 600.0},
    "value": None,
    "values": None,
    "feasible": None,
    "reason": None,
    "source": "minucb",
    "client_id": "rig-7",
    "lease_expires_at": "2026-11-24T11:00:00Z",
    "created_at": "2026-11-24T10:00:00Z",
    "completed_at": None,
    "candidate": None,
    "token": "9f2c41d07a3b5e68",
    "note": None,
}

TRIAL_EXAMPLE: dict[str, Any] = {
    **RUNNING_TRIAL_EXAMPLE,
    "state": "complete",
    "value": 0.82,
    "lease_expires_at": None,
    "completed_at": "2026-11-24T10:05:00Z",
}

SUMMARY_EXAMPLE: dict[str, Any] = {
    "n_trials": 12,
    "n_running": 1,
    "n_complete": 10,
    "n_failed": 1,
    "n_stale": 0,
    "best_value": 0.82,
    "last_activity": "2026-11-24T10:42:00Z",
    "last_result_at": "2026-11-24T10:41:30Z",
    "trials_since_improvement": 3,
    "results_per_hour": 11,
    "n_feasible": 0,
    "n_infeasible": 0,
    "candidates_remaining": None,
    "n_fallback": 0,
    "last_fallback_at": None,
    "hypervolume": None,
    "hypervolume_reference_point": None,
    "hypervolume_history": None,
    "pareto_size": None,
    "n_lease_expired": 0,
    "typical_result_gap_s": 54.2,
}
