"""A study's trials as CSV or JSON, one implementation for the API and the CLI.

CSV: one row per trial: number, state, value, the named metrics (``values.<metric>``) and ``feasible`` when
the study names them, each parameter in user units (a finite space: its parameters, then candidate, the
candidate's id), then source, reason, created_at, completed_at.

- A parameter's column is its name, or ``params.<name>`` where the name is one of the other columns'
  (``value``, ``number``, ``state``...) or begins with ``params.``: no two columns share a name, and each
  parameter's column depends on its own name only.
- A text cell (a parameter's name, a text choice, a candidate id, a reason) that begins with ``=``, ``+``,
  ``-``, ``@``, a tab, a carriage return or ``'`` gets a ``'`` in front (OWASP's advice against CSV
  injection), so no spreadsheet runs it as a formula. Numbers are written as they are: -0.5 stays -0.5.

A reader gets the text back by dropping one leading ``'`` from a cell (no number, time or state begins with
one), then a parameter's name by dropping ``params.`` from a column that begins with it. ``CSV_COLUMNS``
says the same in the OpenAPI document (the REST reference).
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from sqlalchemy import Engine

from localbo.domain import study_out, trial_out
from localbo.domain.identity import study_token
from localbo.domain.records import StudyRecord, TrialRecord
from localbo.finite_space import is_finite_spec
from localbo.storage import repository as repo
from localbo.storage.summary import summaries as summary_of
from localbo.studies import get_row, with_front

FORMATS = ("csv", "json")
BOOKKEEPING = (
    "number", "state", "value", "feasible", "candidate", "source", "reason", "created_at", "completed_at", "note"
)  # fmt: skip
NAMESPACE = "params."
METRICS = "values."  # a named metric's column: values.<metric>
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP's list: what a spreadsheet may run as a formula
GUARD = "'"
CSV_COLUMNS = (
    "CSV columns: number, state, value, a study's named metrics as `values.<metric>` and, with outcome "
    "constraints, feasible (true or false), the parameters in space order (a finite space: then candidate, the "
    "candidate's id), source, reason, created_at, completed_at, note (the trial's note, empty for none). "
    "A parameter named like one of those columns "
    f"({', '.join(BOOKKEEPING)}), or whose name begins with `{NAMESPACE}` or `{METRICS}`, is the column "
    f"`{NAMESPACE}<name>` "
    "(`value` -> `params.value`); any other parameter's column is its name. Text cells (parameter names, notes, "
    "text choices, candidate ids, reasons) that begin with = + - @, a tab, a carriage return or ' have a ' put "
    "in front, so no spreadsheet runs them as formulas: a reader drops one leading ' from any cell (no number, "
    "time or state begins with one). Numbers are written as they are (-0.5 stays -0.5); true and false for "
    "booleans, empty for null."
)


def load(db: Engine, name: str) -> tuple[StudyRecord, list[TrialRecord]]:
    with db.begin() as conn:
        study = get_row(conn, name)
        summary = summary_of(conn, [study.id]).get(study.id)
        record = with_front(conn, study, study_out(study, summary))  # several objectives: the hypervolume, as the API
        rows = repo.list_trials(conn, study.id)
    token = study_token(study.id, study.created_at)
    return record, [trial_out(r, token) for r in rows]


def parameter_names(space: dict[str, Any]) -> list[str]:
    """The parameters as the user named them: a finite space keeps them under ``params``."""
    return list(space["params"]) if is_finite_spec(space) else list(space)


def column(name: str) -> str:
    """A parameter's CSV column: its name, or ``params.<name>`` where the name is a bookkeeping column's or
    begins with ``params.`` (so no two columns share a name, and each parameter's column depends on its
    name alone)."""
    taken = name in BOOKKEEPING or name.startswith((NAMESPACE, METRICS))
    return NAMESPACE + name if taken else name


def text(value: str) -> str:
    """A text cell a spreadsheet shows as text: a ' in front of one that begins with a formula's first
    character (OWASP's CSV injection advice), or with ' itself, so a reader can drop exactly one."""
    return GUARD + value if value.startswith((*FORMULA_STARTS, GUARD)) else value


def cell(value: Any) -> str:
    """A CSV cell: JSON spelling for booleans and null (``true``, not Python's ``True``), numbers exact,
    text guarded (``text``)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return text(value)
    return str(value)


def to_csv(study: StudyRecord, trials: list[TrialRecord]) -> str:
    """The trials as CSV text (``CSV_COLUMNS``)."""
    names = parameter_names(study["space"])
    finite = is_finite_spec(study["space"])
    out = io.StringIO()
    writer = csv.writer(out)
    ids = ["candidate"] if finite else []
    metrics = [o["metric"] for o in study["objectives"] or []] + [c["metric"] for c in study["constraints"] or []]
    metrics = list(dict.fromkeys(metrics))
    feasible = ["feasible"] if study["constraints"] else []
    header = ["number", "state", "value", *(text(METRICS + m) for m in metrics), *feasible]
    header += [text(column(n)) for n in names] + ids
    writer.writerow([*header, "source", "reason", "created_at", "completed_at", "note"])
    for t in trials:
        writer.writerow(
            [
                t["number"],
                t["state"],
                cell(t["value"]),
                *(cell((t["values"] or {}).get(m)) for m in metrics),
                *([cell(t["feasible"])] if feasible else []),
                *(cell(t["params"].get(n)) for n in names),
                *([cell(t["candidate"])] if finite else []),
                cell(t["source"]),
                cell(t["reason"]),
                t["created_at"],
                t["completed_at"] or "",
                cell(t.get("note")),
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
