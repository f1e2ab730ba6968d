"""Shared route dependencies: the service, the caller, the study name and idempotency key."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Path, Request

from localbo.api.auth import Principal, principal
from localbo.api.schemas import STUDY_NAME
from localbo.bootstrap import Service


async def get_service(request: Request) -> Service:
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(get_service)]
Caller = Annotated[Principal, Depends(principal)]
StudyName = Annotated[str, Path(pattern=STUDY_NAME, description="The study's URL-safe name")]
IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", max_length=200, description="Retry-safe: the first answer is replayed"),
]
