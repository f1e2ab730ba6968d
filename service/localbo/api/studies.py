"""Routes for studies: create, list, get, delete."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from localbo.api.auth import check_read, check_write
from localbo.api.deps import Caller, EngineDep, StudyName
from localbo.api.errors import BodySizeLimit
from localbo.api.schemas import PolicyView, StudyCreate, StudyList, StudyOut

router = APIRouter(prefix="/api/v1/studies", tags=["studies"])


@router.post("", status_code=201, response_model=StudyOut)
def create_study(body: StudyCreate, engine: EngineDep, who: Caller, request: Request) -> dict:
    check_write(who, body.name)
    if body.space.get("kind") != "finite":
        BodySizeLimit.check_create_size(
            request.scope.get("state", {}).get("body_bytes"), engine.settings.max_body_bytes
        )
    return engine.create_study(**body.model_dump())


@router.get("", response_model=StudyList)
def list_studies(engine: EngineDep, who: Caller) -> dict:
    return {"studies": [s for s in engine.list_studies() if who.can_read(s["name"])]}


@router.get("/{study}", response_model=StudyOut)
def get_study(study: StudyName, engine: EngineDep, who: Caller) -> dict:
    check_read(who, study)
    return engine.get_study(study)


@router.get("/{study}/policy", response_model=PolicyView)
def policy_view(study: StudyName, engine: EngineDep, who: Caller) -> dict:
    """The policy's state and the points it has planned but not handed out yet."""
    check_read(who, study)
    return engine.policy_view(study)


@router.delete("/{study}", status_code=204)
def delete_study(study: StudyName, engine: EngineDep, who: Caller) -> Response:
    check_write(who, study)
    engine.delete_study(study)
    return Response(status_code=204)
