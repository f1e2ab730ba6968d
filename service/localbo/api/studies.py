"""Routes for studies: create, list, get, delete."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from localbo.api.auth import check_read, check_write
from localbo.api.deps import Caller, ServiceDep, StudyName
from localbo.api.errors import READ, WRITE, BodySizeLimit, responses
from localbo.api.results import ParetoOut
from localbo.api.schemas import PolicyView, StudyCreate, StudyList, StudyOut
from localbo.api.strict_json import StrictJsonRoute
from localbo.domain.records import StudyRecord

router = APIRouter(prefix="/api/v1/studies", tags=["studies"], route_class=StrictJsonRoute)


@router.post("", status_code=201, response_model=StudyOut, responses=responses(*WRITE))
async def create_study(body: StudyCreate, service: ServiceDep, who: Caller, request: Request) -> StudyRecord:
    check_write(who, body.name)
    if body.space.get("kind") != "finite":
        BodySizeLimit.check_create_size(
            request.scope.get("state", {}).get("body_bytes"), service.settings.max_body_bytes
        )
    fields = dict(body)  # as sent: the engine validates space, policy_config and metadata itself
    return await service.tx.run(lambda: service.studies.create(**fields))


@router.get("", response_model=StudyList, responses=responses(401, 503))
def list_studies(service: ServiceDep, who: Caller) -> dict:
    return {"studies": [s for s in service.studies.list() if who.can_read(s["name"])]}


@router.get("/{study}", response_model=StudyOut, responses=responses(*READ))
def get_study(study: StudyName, service: ServiceDep, who: Caller) -> StudyRecord:
    check_read(who, study)
    return service.studies.get(study)


@router.get("/{study}/policy", response_model=PolicyView, responses=responses(*READ))
def policy_view(study: StudyName, service: ServiceDep, who: Caller) -> dict:
    """The policy's state and the points it has planned but not handed out yet."""
    check_read(who, study)
    return service.studies.policy_view(study)


@router.get("/{study}/pareto", response_model=ParetoOut, responses=responses(*READ))
def pareto(study: StudyName, service: ServiceDep, who: Caller) -> dict:
    """A study with several objectives: its Pareto front (the non-dominated feasible completed trials), the
    hypervolume they dominate, the reference point used and the hypervolume's history. A study with one
    objective: its best (feasible) trial, as ``GET .../best`` names it, and no hypervolume."""
    check_read(who, study)
    return service.studies.pareto(study)


@router.delete("/{study}", status_code=204, responses=responses(*READ))
async def delete_study(study: StudyName, service: ServiceDep, who: Caller) -> Response:
    check_write(who, study)
    await service.tx.run(service.studies.delete, study)
    return Response(status_code=204)
