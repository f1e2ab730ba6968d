"""The notes' queries: a study's note, a trial's, and every note of a study (``localbo/notes.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select, update
from sqlalchemy.engine import Connection, Row

from localbo.storage.repository import TRIAL_COLUMNS, studies, trials

_BUMP = {"notes_version": studies.c.notes_version + 1}


def set_study_note(conn: Connection, study_id: int, note: str | None) -> int:
    """Writes the study's note; returns the notes' version after it."""
    query = update(studies).where(studies.c.id == study_id).values(note=note, **_BUMP)
    return int(conn.execute(query.returning(studies.c.notes_version)).scalar_one())


def set_trial_note(conn: Connection, study_id: int, number: int, note: str | None) -> Row | None:
    """The trial with its new note, or None when the study has no such trial (nothing is then written)."""
    row = conn.execute(
        update(trials)
        .where(trials.c.study_id == study_id, trials.c.number == number)
        .values(note=note)
        .returning(*TRIAL_COLUMNS)
    ).first()
    if row is not None:
        conn.execute(update(studies).where(studies.c.id == study_id).values(**_BUMP))
    return row


def trial_notes(conn: Connection, study_id: int) -> Sequence[Row]:
    """(number, note) of the study's trials that carry a note, by number."""
    return conn.execute(
        select(trials.c.number, trials.c.note)
        .where(trials.c.study_id == study_id, trials.c.note.isnot(None))
        .order_by(trials.c.number)
    ).all()
