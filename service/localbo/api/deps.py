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
# a tell is idempotent by what it says (the same tell again answers the trial as stored; another is a 409), so its
# key is accepted, as clients send one on every write, and not stored: reusing it on another trial is no error
TellIdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=200,
        description="Accepted and not needed: a tell is retry-safe by itself (the same tell again answers the "
        "trial as stored; a different one is a 409); the key is not stored",
    ),
]
