"""The public contract's shapes for trials (``/api/v1/studies/{study}/...``): ask, tell, tell-and-ask, an external
trial, a trial and a page of them. Extend; do not rename. The studies' shapes and the shared pieces are in
``schemas.py``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from localbo.api.examples import RUNNING_TRIAL_EXAMPLE, TRIAL_EXAMPLE
from localbo.api.schemas import DB_INT_MAX, Params, Strict, WholeNumber
from localbo.domain.outcomes import MAX_METRICS, MetricName


class AskRequest(Strict):
    model_config = ConfigDict(json_schema_extra={"examples": [{"count": 1, "client_id": "rig-7"}]})

    count: WholeNumber = Field(default=1, ge=1, le=DB_INT_MAX, strict=True, description="How many trials to hand out")
    wait_seconds: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="How long to wait for the policy when its plan is empty before taking fallback points: "
        "default LOCALBO_ASK_WAIT_SECONDS, at most LOCALBO_ASK_WAIT_MAX_SECONDS (a longer wait is cut to it)",
    )
    client_id: str | None = Field(
        default=None,
        max_length=200,
        description="The evaluator's id: a re-ask gets its own running trials back first",
    )


MetricValues = Annotated[
    dict[MetricName, Annotated[float, Field(strict=True, allow_inf_nan=False)]],
    Field(
        max_length=MAX_METRICS,
        description="A study that names metrics: a number for each of them, {metric: value}",
    ),
]
TRIAL_TOKEN = Field(
    default=None,
    max_length=64,
    description="The trial's token as its ask answered: the tell then reaches that study's trial or none (409)",
)


class TrialOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [TRIAL_EXAMPLE]})

    number: int = Field(description="The trial's number in its study, from 1")
    state: Literal["running", "complete", "failed", "stale"] = Field(
        description="running: asked, not told; complete: told a value; failed: told failed; stale: its lease ran out"
    )
    params: Params
    value: float | None = Field(description="The objective's value (a study with named metrics: its objective's)")
    values: dict[str, float] | None = Field(default=None, description="Every named metric, when the study names them")
    feasible: bool | None = Field(
        default=None, description="Whether every outcome constraint held; null: the study has none, or no result yet"
    )
    reason: str | None = Field(description="Why the trial failed (failed trials only); null: none was given")
    source: str = Field(
        description="Where the point came from: the policy's name (its plan), fallback, stale-retry, external, "
        "or in safe mode seed, fallback-safe and repeat-safe (the policy asked a known safe point again)"
    )
    client_id: str | None = Field(description="The evaluator that asked for it (the ask's client_id)")
    lease_expires_at: datetime | None = Field(
        description="Running trials: when the trial becomes stale unless a heartbeat extends it"
    )
    created_at: datetime = Field(description="When the trial was asked (or added)")
    completed_at: datetime | None = Field(description="When it was told (complete or failed)")
    candidate: str | None = Field(default=None, description="Finite spaces: the id of the candidate asked")
    note: str | None = Field(
        default=None,
        description="A person's note on the trial (PUT .../trials/{number}/note), such as 'sample 17 was "
        "contaminated'; null: none",
    )
    token: str | None = Field(
        default=None,
        description="Names the trial's study for good (a study deleted and created again under its name gets "
        "another): send it back with the tell, and a tell meant for a deleted study's trial is refused (409) "
        "instead of completing the new study's trial of that number",
    )


class AskResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"trials": [RUNNING_TRIAL_EXAMPLE]}]})

    trials: list[TrialOut] = Field(description="The trials handed out, count of them")


def _tell_shapes(schema: dict[str, Any]) -> None:
    """Documented as its two shapes (``api/openapi.py``): complete with a value, or failed (the value then
    optional). Each shape is a whole object, so a generated client has a class per shape that sends every
    field (one anyOf beside the shared properties gave it classes without ``reason``)."""
    schema.clear()
    schema["anyOf"] = [{"$ref": f"#/components/schemas/{shape}"} for shape in ("TellComplete", "TellFailed")]
    schema["title"] = "TellRequest"
    schema["examples"] = [{"value": 0.82}, {"state": "failed", "reason": "thermocouple"}]


class TellRequest(Strict):
    model_config = ConfigDict(json_schema_extra=_tell_shapes)
    # strict: "0.5" or true is refused, not quietly turned into a number
    value: float | None = Field(default=None, strict=True, allow_inf_nan=False, description="The objective value")
    values: MetricValues | None = None
    state: Literal["complete", "failed"] = Field(default="complete", description="failed: the run gave no result")
    reason: str | None = Field(default=None, max_length=10_000, description="Why a trial failed")
    token: str | None = TRIAL_TOKEN


class TellAndAskRequest(Strict):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"tell": {"value": 0.82}, "ask": {"count": 1, "client_id": "rig-7"}}]}
    )

    tell: TellRequest = Field(description="The tell, as POST .../trials/{number}/tell takes it")
    ask: AskRequest = Field(default_factory=AskRequest, description="The ask, as POST .../ask takes it")


class TellAndAskResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "told": TRIAL_EXAMPLE,
                    "trials": [{**RUNNING_TRIAL_EXAMPLE, "number": 2, "params": {"temp": 661.4}}],
                }
            ]
        }
    )

    told: TrialOut = Field(description="The trial as the tell left it")
    trials: list[TrialOut] = Field(description="The trials the ask handed out")


class ExternalTrial(Strict):
    model_config = ConfigDict(json_schema_extra={"examples": [{"params": {"temp": 650.0}, "value": 0.79}]})

    params: Params
    value: float | None = Field(
        default=None, strict=True, allow_inf_nan=False, description="Its value (a study that names no metrics)"
    )
    values: MetricValues | None = None


class TrialList(BaseModel):
    trials: list[TrialOut] = Field(description="The trials numbered above ?after=, in order, at most ?limit=")
    next_after: int | None = Field(description="Pass as ?after= for the next page; null at the end")
