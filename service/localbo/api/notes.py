"""Routes for notes: a person's note on a study or a trial (written with the write scope, read with the read
scope), every note of a study at once, and what the caller's token may do with a study."""

from __future__ import annotations

from fastapi import APIRouter

from localbo.api.auth import check_read, check_write
from localbo.api.deps import Caller, ServiceDep, StudyName
from localbo.api.errors import READ, WRITE, responses
from localbo.api.notes_schemas import AccessOut, NoteIn, NotesOut, StudyNoteOut
from localbo.api.strict_json import StrictJsonRoute
from localbo.api.trial_schemas import TrialOut
from localbo.api.trials import TrialNumber
from localbo.domain.records import TrialRecord

router = APIRouter(prefix="/api/v1/studies/{study}", tags=["notes"], route_class=StrictJsonRoute)


@router.put("/note", response_model=StudyNoteOut, responses=responses(*WRITE))
async def set_study_note(study: StudyName, body: NoteIn, service: ServiceDep, who: Caller) -> dict:
    """Writes the study's note (an empty note or null clears it). Nothing the policy sees changes."""
    check_write(who, study)
    return await service.tx.run(service.notes.set_study_note, study, body.note)


@router.put("/trials/{number}/note", response_model=TrialOut, responses=responses(*WRITE))
async def set_trial_note(
    study: StudyName, number: TrialNumber, body: NoteIn, service: ServiceDep, who: Caller
) -> TrialRecord:
    """Writes trial ``number``'s note, in any state (an empty note or null clears it); answers the trial.
    Nothing the policy sees changes: a note on a contaminated sample does not remove its value."""
    check_write(who, study)
    return await service.tx.run(service.notes.set_trial_note, study, number, body.note)


@router.get("/notes", response_model=NotesOut, responses=responses(*READ))
def notes(study: StudyName, service: ServiceDep, who: Caller) -> dict:
    """The study's note and every trial's note, in one read (the dashboard reads them again when the study's
    event stream says ``notes_version`` changed)."""
    check_read(who, study)
    return service.notes.read(study)


@router.get("/access", response_model=AccessOut, responses=responses(*READ))
def access(study: StudyName, service: ServiceDep, who: Caller) -> dict:
    """What the caller's token may do with the study: read it (else 403), and write it (ask, tell, notes)."""
    check_read(who, study)
    service.notes.require(study)
    return {"read": True, "write": who.can_write(study)}
