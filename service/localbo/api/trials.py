"""Routes for trials: ask, tell, heartbeat, external trials, listing, best and export."""

from __future__ import annotations

import csv
import io
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse, Response

from localbo.api.auth import check_read, check_write
from localbo.api.deps import Caller, EngineDep, IdempotencyKey, StudyName
from localbo.api.schemas import (
    AskRequest,
    AskResponse,
    ExternalTrial,
    TellRequest,
    TrialList,
    TrialOut,
)
from localbo.errors import InvalidInput

router = APIRouter(prefix="/api/v1/studies/{study}", tags=["trials"])
TrialNumber = Annotated[int, Path(ge=1, description="The trial's number within its study")]


# ask and tell are async: their one short transaction runs where Engine.run_write says
# (inline on SQLite, in a thread on Postgres); the policy itself runs in a worker thread.
@router.post("/ask", response_model=AskResponse)
async def ask(
    study: StudyName,
    engine: EngineDep,
    who: Caller,
    key: IdempotencyKey = None,
    body: AskRequest | None = None,
) -> dict:
    check_write(who, study)
    body = body or AskRequest()
    return await engine.ask_async(study, body.count, body.client_id, key)


@router.post("/trials/{number}/tell", response_model=TrialOut)
async def tell(
    study: StudyName,
    number: TrialNumber,
    body: TellRequest,
    engine: EngineDep,
    who: Caller,
    key: IdempotencyKey = None,
) -> dict:
    check_write(who, study)
    if body.state == "failed":
        return await engine.run_write(engine.tell, study, number, failed=body.reason or "")
    if body.value is None:
        raise InvalidInput("value", "expected a finite number (or state 'failed' with a reason)")
    return await engine.run_write(engine.tell, study, number, body.value)


@router.post("/trials/{number}/heartbeat", response_model=TrialOut)
def heartbeat(study: StudyName, number: TrialNumber, engine: EngineDep, who: Caller) -> dict:
    check_write(who, study)
    return engine.heartbeat(study, number)


@router.post("/trials", status_code=201, response_model=TrialOut)
def add_trial(
    study: StudyName, body: ExternalTrial, engine: EngineDep, who: Caller, key: IdempotencyKey = None
) -> dict:
    check_write(who, study)
    return engine.add_trial(study, body.params, body.value, key)


@router.get("/trials", response_model=TrialList)
def list_trials(
    study: StudyName,
    engine: EngineDep,
    who: Caller,
    after: Annotated[int, Query(ge=0, description="Only trials numbered above this")] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    state: Literal["running", "complete", "failed", "stale"] | None = None,
) -> dict:
    check_read(who, study)
    return engine.list_trials(study, after, limit, state)


@router.get("/best", response_model=TrialOut | None)
def best(study: StudyName, engine: EngineDep, who: Caller) -> dict | None:
    """The best completed trial, or null while there is none."""
    check_read(who, study)
    return engine.best(study)


@router.get("/export")
def export(study: StudyName, engine: EngineDep, who: Caller, format: Literal["csv", "json"] = "json") -> Response:
    check_read(who, study)
    meta, trials = engine.export(study)
    if format == "json":
        return JSONResponse({"study": meta, "trials": trials})
    headers = {"Content-Disposition": f'attachment; filename="{study}.csv"'}
    return Response(trials_csv(meta, trials), media_type="text/csv", headers=headers)


def trials_csv(meta: dict, trials: list[dict]) -> str:
    """One row per trial: number, state, value, the parameters, then bookkeeping."""
    names = list(meta["space"])
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["number", "state", "value", *names, "source", "reason", "created_at", "completed_at"])
    for t in trials:
        writer.writerow(
            [
                t["number"],
                t["state"],
                "" if t["value"] is None else repr(t["value"]),
                *(t["params"].get(n) for n in names),
                t["source"],
                t["reason"] or "",
                t["created_at"],
                t["completed_at"] or "",
            ]
        )
    return out.getvalue()
