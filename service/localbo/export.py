"""A study's trials as CSV or JSON, one implementation for the API and the CLI.

CSV: one row per trial: number, state, value, each parameter in user units (a finite space: its
parameters and the candidate's id), then the bookkeeping columns.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from sqlalchemy import Engine

from localbo.domain import study_out, trial_out
from localbo.domain.records import StudyRecord, TrialRecord
from localbo.finite_space import is_finite_spec
from localbo.storage import repository as repo
from localbo.storage.summary import summaries as summary_of
from localbo.studies import get_row

FORMATS = ("csv", "json")


def load(db: Engine, name: str) -> tuple[StudyRecord, list[TrialRecord]]:
    with db.begin() as conn:
        study = get_row(conn, name)
        summary = summary_of(conn, [study.id]).get(study.id)
        rows = repo.list_trials(conn, study.id)
    return study_out(study, summary), [trial_out(r) for r in rows]


def parameter_names(space: dict[str, Any]) -> list[str]:
    """The parameters as the user named them: a finite space keeps them under ``params``."""
    return list(space["params"]) if is_finite_spec(space) else list(space)


def cell(value: Any) -> str:
    """A CSV cell: JSON spelling for booleans and null (``true``, not Python's ``True``), numbers exact."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def to_csv(study: StudyRecord, trials: list[TrialRecord]) -> str:
    names = parameter_names(study["space"])
    finite = is_finite_spec(study["space"])
    out = io.StringIO()
    writer = csv.writer(out)
    ids = ["candidate"] if finite else []
    writer.writerow(["number", "state", "value", *names, *ids, "source", "reason", "created_at", "completed_at"])
    for t in trials:
        writer.writerow(
            [
                t["number"],
                t["state"],
                cell(t["value"]),
                *(cell(t["params"].get(n)) for n in names),
                *([cell(t["candidate"])] if finite else []),
                t["source"],
                t["reason"] or "",
                t["created_at"],
                t["completed_at"] or "",
            ]
        )
    return out.getvalue()


def to_json(study: StudyRecord, trials: list[TrialRecord]) -> dict[str, Any]:
    public = {k: v for k, v in study.items() if k != "id"}
    return {"study": public, "trials": trials}


def render(db: Engine, name: str, fmt: str) -> str:
    """The export as text, for the CLI (the API serves the same through ``to_csv`` / ``to_json``)."""
    study, trials = load(db, name)
    return to_csv(study, trials) if fmt == "csv" else json.dumps(to_json(study, trials), indent=2)
