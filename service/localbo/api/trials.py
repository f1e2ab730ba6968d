"""Routes for trials: ask, tell (and tell-and-ask), heartbeat, external trials, listing, best and export."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse, Response

from localbo import export as exports
from localbo.api.auth import check_read, check_write
from localbo.api.deps import Caller, IdempotencyKey, ServiceDep, StudyName
from localbo.api.errors import READ, WRITE, responses
from localbo.api.schemas import (
    DB_INT_MAX,
    AskRequest,
    AskResponse,
    ExternalTrial,
    TellAndAskRequest,
    TellAndAskResponse,
    TellRequest,
    TrialList,
    TrialOut,
)
from localbo.bootstrap import Service
from localbo.errors import InvalidInput
from localbo.json_values import readable

router = APIRouter(prefix="/api/v1/studies/{study}", tags=["trials"])
TrialNumber = Annotated[int, Path(ge=1, le=DB_INT_MAX, description="The trial's number within its study")]
# CSV first: a generated client reads a 200 by its first type, and text reads either format, JSON not CSV.
EXPORT_TYPES = {
    "text/csv": {"schema": {"type": "string"}},
    "application/json": {"schema": {"type": "object", "description": '{"study": ..., "trials": [...]}'}},
}


# Writes are async: their short transaction runs where ``Transactions.run`` says (SQLite's one writer
# thread, or a worker thread on Postgres); the policy itself runs in the executor.
@router.post("/ask", response_model=AskResponse, responses=responses(*WRITE))
async def ask(
    study: StudyName,
    service: ServiceDep,
    who: Caller,
    key: IdempotencyKey = None,
    body: AskRequest | None = None,
) -> dict:
    check_write(who, study)
    body = body or AskRequest()
    return await service.asking.ask(study, body.count, body.client_id, key, body.wait_seconds)


@router.post("/trials/{number}/tell", response_model=TrialOut, responses=responses(*WRITE))
async def tell(
    study: StudyName,
    number: TrialNumber,
    body: TellRequest,
    service: ServiceDep,
    who: Caller,
    key: IdempotencyKey = None,
) -> dict:
    check_write(who, study)
    return await _tell(service, study, number, body)


@router.post("/trials/{number}/tell-and-ask", response_model=TellAndAskResponse, responses=responses(*WRITE))
async def tell_and_ask(
    study: StudyName,
    number: TrialNumber,
    body: TellAndAskRequest,
    service: ServiceDep,
    who: Caller,
    key: IdempotencyKey = None,
) -> dict:
    """A worker's cycle in one round trip: tell trial ``number``, then ask for the next trials. Each half
    keeps its meaning: the tell is idempotent by itself, and the ask replays its first answer for the same
    ``Idempotency-Key``, so a retried call stores the result once and returns the same next trials."""
    check_write(who, study)
    ask = body.ask

    def both() -> tuple[dict, object]:  # one hop to the transaction thread: the tell, then an ask from the plan
        return _tell_now(service, study, number, body.tell), service.asking.step(study, ask.count, ask.client_id, key)

    told, served = await service.tx.run_now(both)
    if not isinstance(served, dict):  # the plan was short: the ask waits for the policy as it does alone
        served = await service.asking.ask(study, ask.count, ask.client_id, key, ask.wait_seconds)
    return {"told": told, "trials": served["trials"]}


async def _tell(service: Service, study: str, number: int, body: TellRequest) -> dict:
    return await service.tx.run_now(_tell_now, service, study, number, body)


def _tell_now(service: Service, study: str, number: int, body: TellRequest) -> dict:
    if body.state == "failed":
        return service.telling.tell(study, number, failed=body.reason or "")
    if body.value is None:
        raise InvalidInput("value", "expected a finite number (or state 'failed' with a reason)")
    return service.telling.tell(study, number, body.value)


@router.post("/trials/{number}/heartbeat", response_model=TrialOut, responses=responses(*WRITE))
async def heartbeat(study: StudyName, number: TrialNumber, service: ServiceDep, who: Caller) -> dict:
    check_write(who, study)
    return await service.tx.run(service.telling.heartbeat, study, number)


@router.post("/trials", status_code=201, response_model=TrialOut, responses=responses(*WRITE))
async def add_trial(
    study: StudyName, body: ExternalTrial, service: ServiceDep, who: Caller, key: IdempotencyKey = None
) -> dict:
    check_write(who, study)
    return await service.tx.run(service.telling.add_trial, study, body.params, body.value, key)


@router.get("/trials", response_model=TrialList, responses=responses(*READ))
def list_trials(
    study: StudyName,
    service: ServiceDep,
    who: Caller,
    after: Annotated[int, Query(ge=0, le=DB_INT_MAX, description="Only trials numbered above this")] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    state: Literal["running", "complete", "failed", "stale"] | None = None,
) -> dict:
    check_read(who, study)
    return service.studies.trials(study, after, limit, state)


@router.get("/trials/{number}", response_model=TrialOut, responses=responses(*READ))
def get_trial(study: StudyName, number: TrialNumber, service: ServiceDep, who: Caller) -> dict:
    """One trial: its parameters in user units, value, state, source, client, times, lease and, on a finite
    space, its candidate's id."""
    check_read(who, study)
    return service.studies.trial(study, number)


@router.get("/best", response_model=TrialOut | None, responses=responses(*READ))
def best(study: StudyName, service: ServiceDep, who: Caller) -> dict | None:
    """The best completed trial, or null while there is none."""
    check_read(who, study)
    return service.studies.best(study)


@router.get(
    "/export",
    response_class=Response,
    responses={200: {"description": "The study and its trials", "content": EXPORT_TYPES}} | responses(*READ),
)
def export(study: StudyName, service: ServiceDep, who: Caller, format: Literal["csv", "json"] = "json") -> Response:
    check_read(who, study)
    meta, trials = exports.load(service.db, study)
    if format == "json":
        content = exports.to_json(meta, trials)
        try:
            return JSONResponse(content)
        except (UnicodeEncodeError, ValueError):  # a row stored before the checks: shown degraded
            return JSONResponse(readable(content))
    headers = {"Content-Disposition": f'attachment; filename="{study}.csv"'}
    text = exports.to_csv(meta, trials).encode("utf-8", "backslashreplace")
    return Response(text, media_type="text/csv; charset=utf-8", headers=headers)
