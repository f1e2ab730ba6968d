"""Notes: what a person writes on a study or a trial ("sample 17 was contaminated").

A note is free text of at most ``MAX_NOTE_CHARS`` characters; an empty one (or only blanks, or null) clears it.
Writing a note changes nothing the policy sees: no value, state or plan. Every write bumps the study's
``notes_version``, which the study's event stream carries, so viewers read the notes again (``read``).

    >>> notes.set_trial_note("furnace", 17, "sample 17 was contaminated")
    >>> notes.read("furnace")["trials"]
    {'17': 'sample 17 was contaminated'}
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from localbo.domain import trial_out
from localbo.domain.identity import study_token
from localbo.domain.records import TrialRecord
from localbo.errors import InvalidInput, NotFound
from localbo.json_values import unstorable_text
from localbo.storage import notes as stored
from localbo.studies import get_row

MAX_NOTE_CHARS = 2000


def clean_note(note: str | None) -> str | None:
    """The note to store (None: cleared), or a 422 naming ``note``."""
    if note is None or not note.strip():
        return None
    if len(note) > MAX_NOTE_CHARS:
        raise InvalidInput("note", f"expected at most {MAX_NOTE_CHARS} characters, got {len(note)}")
    problem = unstorable_text(note)
    if problem is not None:
        raise InvalidInput("note", problem)
    return note


class Notes:
    def __init__(self, db: Engine, write: Engine) -> None:
        self.db, self.write = db, write

    def set_study_note(self, name: str, note: str | None) -> dict[str, Any]:
        """Writes (or clears) the study's note; returns it as stored, with the notes' version after it."""
        text = clean_note(note)
        with self.write.begin() as conn:
            study = get_row(conn, name, lock=True)
            version = stored.set_study_note(conn, study.id, text)
        return {"note": text, "notes_version": version}

    def set_trial_note(self, name: str, number: int, note: str | None) -> TrialRecord:
        """Writes (or clears) trial ``number``'s note, in any state; returns the trial. NotFound names the trial."""
        text = clean_note(note)
        with self.write.begin() as conn:
            study = get_row(conn, name, lock=True)
            row = stored.set_trial_note(conn, study.id, number, text)
            if row is None:
                raise NotFound(f"trial {number} of study {name!r} not found")
        return trial_out(row, study_token(study.id, study.created_at))

    def require(self, name: str) -> None:
        """NotFound unless the study exists."""
        with self.db.begin() as conn:
            get_row(conn, name)

    def read(self, name: str) -> dict[str, Any]:
        """The study's note, its trials' notes ({number: note}, only trials with one) and the notes' version."""
        with self.db.begin() as conn:
            study = get_row(conn, name)
            trials = stored.trial_notes(conn, study.id)
        return {
            "note": study.note,
            "trials": {str(n): text for n, text in trials},
            "notes_version": study.notes_version,
        }
