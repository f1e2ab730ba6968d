"""Routes for what drives a study's value: parameter importance and the GP's posterior mean over a pair."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from localbo.api.auth import check_read
from localbo.api.deps import Caller, ServiceDep, StudyName
from localbo.api.errors import READ, responses
from localbo.api.results import ImportanceOut, SurfaceOut

router = APIRouter(prefix="/api/v1/studies/{study}/analysis", tags=["analysis"])
ParamName = Annotated[str, Query(min_length=1, max_length=200, description="A parameter of the study")]


@router.get("/importance", response_model=ImportanceOut, responses=responses(*READ))
def importance(study: StudyName, service: ServiceDep, who: Caller) -> dict:
    """Each parameter's share of what drives the value: from an ARD GP (the mean squared gradient of its
    posterior mean) and, as a model-free cross-check, a random forest's permutation importance (null, with
    a note, before 5 completed trials)."""
    check_read(who, study)
    return service.analysis.importance(study)


@router.get("/surface", response_model=SurfaceOut, response_model_exclude_none=True, responses=responses(*READ))
def surface(
    study: StudyName,
    service: ServiceDep,
    who: Caller,
    x: ParamName,
    y: ParamName,
    size: Annotated[int, Query(ge=5, le=60, description="Grid points along each axis")] = 30,
) -> dict:
    """The GP's posterior mean over a size x size grid of parameters x and y (user units; the value in the
    study's units), the others held at the policy's centre or the best trial. ``available`` is false, with
    a ``reason``, when the policy fits no model, before 5 completed trials, or on a categorical axis."""
    check_read(who, study)
    return service.analysis.surface(study, x, y, size)
