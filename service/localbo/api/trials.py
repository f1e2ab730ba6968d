"""Routes for trials: ask, tell (and tell-and-ask), heartbeat, external trials, listing, best and export."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Path, Query
from fastapi.responses import JSONResponse, Response
from sqlalchemy.engine import Connection

from localbo import export as exports
from localbo.api.auth import check_read, check_write
from localbo.api.deps import Caller, IdempotencyKey, ServiceDep, StudyName, TellIdempotencyKey
from localbo.api.errors import READ, WRITE, conflict, responses
from localbo.api.schemas import DB_INT_MAX
from localbo.api.strict_json import StrictJsonRoute
from localbo.api.trial_schemas import (
    AskRequest,
    AskResponse,
    ExternalTrial,
    TellAndAskRequest,
    TellAndAskResponse,
    TellRequest,
    TrialList,
    TrialOut,
)
from localbo.asking import Short, Unit
from localbo.bootstrap import Service
from localbo.domain.records import TrialRecord
from localbo.errors import InvalidInput
from localbo.json_values import readable
from localbo.telling import Told

router = APIRouter(prefix="/api/v1/studies/{study}", tags=["trials"], route_class=StrictJsonRoute)
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
    # no body: the defaults; documented as a plain optional AskRequest (not anyOf with null)
    body: Annotated[AskRequest, Body(default_factory=AskRequest)],
    key: IdempotencyKey = None,
) -> dict:
    check_write(who, study)
    return await service.asking.ask(study, body.count, body.client_id, key, body.wait_seconds)


@router.post("/trials/{number}/tell", response_model=TrialOut, responses=responses(*WRITE))
async def tell(
    study: StudyName,
    number: TrialNumber,
    body: TellRequest,
    service: ServiceDep,
    who: Caller,
    key: TellIdempotencyKey = None,
) -> TrialRecord:
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
    """A worker's cycle in one round trip: tell trial ``number``, then ask for the next trials.

    One unit of work: the input is checked before anything is stored, and the tell and the ask's points
    are committed together (a 4xx stores nothing). When the plan is short, the tell commits alone, so the
    policy plans from its value, and the ask then waits for the plan as it does alone. The
    ``Idempotency-Key`` covers the whole request (its trial number, its tell and its ask): a retried call
    stores the result once and returns the same next trials; the key reused for another request is a 422."""
    check_write(who, study)
    ask = body.ask
    unit = Unit(
        "tell-and-ask",
        {"number": number, "tell": body.tell.model_dump(mode="json"), "ask": ask.model_dump(exclude={"wait_seconds"})},
        lambda conn: _tell_part(service, conn, study, number, body.tell),
    )
    told, served = await service.tx.run_now(service.asking.step, study, ask.count, ask.client_id, key, False, unit)
    if told is not None:
        service.telling.after(told)
    if isinstance(served, Short):  # rolled back: the tell alone, then the ask waits for the policy
        told = await service.tx.run_now(_tell_now, service, study, number, body.tell, "tell.")
        served = await service.asking.ask(
            study, ask.count, ask.client_id, key, ask.wait_seconds, Unit(unit.op, unit.identity)
        )
        return {"told": told, "trials": served["trials"]}
    assert told is not None
    return {"told": told.trial, "trials": served["trials"]}


async def _tell(service: Service, study: str, number: int, body: TellRequest) -> TrialRecord:
    return await service.tx.run_now(_tell_now, service, study, number, body)


def _tell_now(service: Service, study: str, number: int, body: TellRequest, where: str = "") -> TrialRecord:
    with service.write.begin() as conn:
        told = _tell_part(service, conn, study, number, body, where)
    service.telling.after(told)
    return told.trial


def _tell_part(
    service: Service, conn: Connection, study: str, number: int, body: TellRequest, where: str = "tell."
) -> Told:
    """The tell, its 422s naming the field under ``where`` (``tell.values.cost`` in a tell-and-ask's body)."""
    try:
        return _tell_in(service, conn, study, number, body)
    except InvalidInput as exc:
        if not where:
            raise
        raise InvalidInput(f"{where}{exc.field}", str(exc).removeprefix(f"{exc.field}: ")) from None


def _tell_in(service: Service, conn: Connection, study: str, number: int, body: TellRequest) -> Told:
    if body.state == "failed":
        return service.telling.tell_in(
            conn, study, number, failed=body.reason or "", token=body.token, values=body.values
        )
    return service.telling.tell_in(conn, study, number, body.value, token=body.token, values=body.values)


@router.post("/trials/{number}/heartbeat", response_model=TrialOut, responses=responses(*WRITE))
async def heartbeat(study: StudyName, number: TrialNumber, service: ServiceDep, who: Caller) -> TrialRecord:
    check_write(who, study)
    return await service.tx.run(service.telling.heartbeat, study, number)


@router.post("/trials", status_code=201, response_model=TrialOut, responses=responses(*WRITE))
async def add_trial(
    study: StudyName, body: ExternalTrial, service: ServiceDep, who: Caller, key: IdempotencyKey = None
) -> dict:
    check_write(who, study)
    return await service.tx.run(service.telling.add_trial, study, body.params, body.value, key, body.values)


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
def get_trial(study: StudyName, number: TrialNumber, service: ServiceDep, who: Caller) -> TrialRecord:
    """One trial: its parameters in user units, value, state, source, client, times, lease and, on a finite
    space, its candidate's id."""
    check_read(who, study)
    return service.studies.trial(study, number)


@router.get(
    "/best",
    response_model=TrialOut | None,
    responses=responses(*READ) | conflict("The study has several objectives: its best is the Pareto set of /pareto"),
)
def best(study: StudyName, service: ServiceDep, who: Caller) -> TrialRecord | None:
    """The best completed (and, with outcome constraints, feasible) trial, or null while there is none. A study
    with several objectives has no single best: 409, pointing to ``GET /api/v1/studies/{study}/pareto``."""
    check_read(who, study)
    return service.studies.best(study)


@router.get(
    "/export",
    response_class=Response,
    responses={200: {"description": "The study and its trials", "content": EXPORT_TYPES}, **responses(*READ)},
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
