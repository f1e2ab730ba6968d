"""The notes' request and answers (issue 27: a study's note and each trial's, ``api/notes.py``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from localbo.api.schemas import Strict
from localbo.notes import MAX_NOTE_CHARS


class NoteIn(Strict):
    model_config = ConfigDict(json_schema_extra={"examples": [{"note": "sample 17 was contaminated"}]})

    note: str | None = Field(
        max_length=MAX_NOTE_CHARS,
        description=f"Free text, at most {MAX_NOTE_CHARS} characters (valid Unicode without NUL); an empty or "
        "blank note, or null, clears it",
    )


class StudyNoteOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"note": "new thermocouple from trial 40 on", "notes_version": 3}]}
    )

    note: str | None = Field(description="The study's note as stored; null: cleared")
    notes_version: int = Field(description="Grows with every note written on the study or its trials")


class NotesOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "note": "new thermocouple from trial 40 on",
                    "trials": {"17": "sample 17 was contaminated"},
                    "notes_version": 3,
                }
            ]
        }
    )

    note: str | None = Field(description="The study's note; null: none")
    trials: dict[str, str] = Field(description="{trial number: note} for every trial that carries a note")
    notes_version: int = Field(
        description="Grows with every note written on the study or its trials (the study's event stream "
        "carries it: read the notes again when it changes)"
    )


class AccessOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"read": True, "write": False}]})

    read: bool = Field(description="Whether the caller's token may read the study (always true when answered)")
    write: bool = Field(description="Whether it may also write it: ask, tell, notes (a server without tokens: true)")
