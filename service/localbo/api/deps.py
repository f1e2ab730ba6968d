"""Shared route dependencies: the engine, the caller, the study name and idempotency key."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Path, Request

from localbo.api.auth import Principal, principal
from localbo.api.schemas import STUDY_NAME
from localbo.engine import Engine


async def get_engine(request: Request) -> Engine:
    return request.app.state.engine


EngineDep = Annotated[Engine, Depends(get_engine)]
Caller = Annotated[Principal, Depends(principal)]
StudyName = Annotated[str, Path(pattern=STUDY_NAME, description="The study's URL-safe name")]
IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", max_length=200, description="Retry-safe: the first answer is replayed"),
]
