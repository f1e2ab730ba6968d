"""The public contract's shapes (``/api/v1``). Extend; do not rename."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from localbo import json_values
from localbo.api.examples import SUMMARY_EXAMPLE
from localbo.domain.outcomes import (
    MAX_METRICS,
    MAX_OBJECTIVES,
    MAX_PARAMETER_CONSTRAINTS,
    MetricName,
    Objective,
    OutcomeConstraint,
    ParameterConstraint,
    Safety,
)
from localbo.policies import registry

FiniteNumber = Annotated[float, Field(strict=True, allow_inf_nan=False)]
STUDY_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
DB_INT_MAX = 2**31 - 1  # the largest trial number or count a database column holds (Postgres INTEGER)


def documented(component: str, description: str) -> WithJsonSchema:
    """A free-form field's schema: a component of ``api/openapi.py`` (the field itself is validated by
    the engine, whose 422s name the exact key; the schema only describes)."""
    return WithJsonSchema({"allOf": [{"$ref": f"#/components/schemas/{component}"}], "description": description})


Params = Annotated[
    dict[str, Any], documented("Params", "Parameter name -> value in user units (a choice, for a categorical)")
]
Metadata = Annotated[
    dict[str, Any],
    documented(
        "Metadata",
        f"Any JSON object: at most {json_values.MAX_DEPTH} levels deep and "
        f"{json_values.MAX_FREE_FORM_BYTES} bytes; finite numbers, valid Unicode without NUL",
    ),
]


def _integral(value: Any) -> Any:
    """An integral float (``94.0``) as the integer it is: JSON Schema's ``integer`` includes it. Anything else
    goes on to the strict check unchanged (``94.5``, ``"94"`` and ``true`` stay refused)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# An integer field of a request body: what the document calls integer, 94.0 included
WholeNumber = Annotated[int, BeforeValidator(_integral)]


class Strict(BaseModel):
    """A request body: unknown keys, and JSON no database can store, are refused with a 422."""

    model_config = ConfigDict(extra="forbid", strict=True)  # "5" or true is not a number

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        problem = json_values.find_problem_in_body(data)
        if problem is not None:
            where, why = problem
            raise PydanticCustomError("unstorable_json", "{where}: {why}", {"where": where, "why": why})
        return data


class StudyCreate(Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "furnace",
                    "direction": "maximize",
                    "policy": "minucb",
                    "space": {"temp": {"type": "float", "low": 300, "high": 900}},
                }
            ]
        }
    )

    name: str = Field(pattern=STUDY_NAME, description="URL-safe: letters, digits, . _ -")
    direction: Literal["minimize", "maximize"] = Field(
        default="minimize",
        description="Whether lower (minimize) or higher (maximize) values are better, for the one unnamed value; "
        "with objectives each says its own way, and 'maximize' here must agree with the first's (a 422 if not)",
    )
    space: Annotated[dict[str, Any], documented("SpaceIn", "The search space")] = Field(
        description='{"x": {"type": "float", "low": 0, "high": 1, "log": false}, '
        '"n": {"type": "int", "low": 1, "high": 8}, "opt": {"type": "categorical", "choices": ["sgd", "adam"]}}; '
        'or a finite space: {"kind": "finite", '
        '"candidates": [{"id": "a", "params": {"x": 0.5, "n": 3}}, ...] or "csv": "id,x,n\\n...", '
        '"kernel"?: N x N matrix or "cosine", "allow_repeats"?: false}'
    )
    policy: str = Field(
        default="auto",
        description="The policy that plans the points (see Choosing a policy). auto, the default, picks one from "
        "the space, what the study must respect and its data, and says which and why in the policy display: local "
        "BO (minucb, la-minucb, gibo, mpd, turbo) for many float parameters, global BO (ei, ucb, ...) for a few, "
        "sobol or random for a design. Studies created before auto was the default keep their stored policy",
        json_schema_extra={"enum": [*sorted(registry())]},  # a list[JsonValue]
    )
    policy_config: Annotated[dict[str, Any], documented("PolicyConfig", "The keys of the policy's Config")] | None = (
        None
    )
    metadata: Metadata | None = None
    seed: WholeNumber | None = Field(default=None, ge=0, lt=2**31, description="Fixes the policy's randomness")
    objectives: list[Objective] | None = Field(
        default=None,
        max_length=MAX_OBJECTIVES,
        description="Named metrics to optimise; tells then carry values {metric: number}. One: single-objective; "
        "2 to 4: a Pareto front (GET .../pareto). Absent: the one unnamed value, `direction` its way",
    )
    reference_point: dict[MetricName, FiniteNumber] | None = Field(
        default=None,
        description="Several objectives: {metric: value} a point must beat in every objective to count in the "
        "hypervolume, in the metrics' units. Absent: inferred from the data (the summary says which was used)",
    )
    constraints: list[OutcomeConstraint] | None = Field(
        default=None, max_length=MAX_METRICS, description="Outcome constraints: limits every tell measures"
    )
    parameter_constraints: list[ParameterConstraint] | None = Field(
        default=None,
        max_length=MAX_PARAMETER_CONSTRAINTS,
        description='Linear constraints over float parameters in user units: {"terms": {"a": 1, "b": 1}, '
        '"op": "<=" | ">=" | "==", "bound": 1}; every point handed out satisfies them',
    )
    failures: Literal["ignore", "avoid"] = Field(
        default="ignore", description="avoid: failed trials mark where the rig faults, and the policy steers away"
    )
    safety: Safety | None = Field(default=None, description="Safe mode: ask only points predicted to be feasible")


class StudySummary(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [SUMMARY_EXAMPLE]})

    n_trials: int = Field(description="Trials of the study, in every state")
    n_running: int = Field(description="Trials asked and not told yet, within their lease")
    n_complete: int = Field(description="Trials told a value")
    n_failed: int = Field(description="Trials told failed")
    n_stale: int = Field(description="Running trials whose lease ran out (their points are offered again)")
    best_value: float | None = Field(description="The best completed (and, with constraints, feasible) value")
    last_activity: datetime | None = Field(default=None, description="When a trial was last asked or finished")
    last_result_at: datetime | None = Field(
        default=None, description="When the latest result (a completed or failed trial) came in; null: none yet"
    )
    trials_since_improvement: int | None = Field(
        default=None,
        description="Completed trials numbered after the best one (the first to reach the best value); "
        "null while none is complete",
    )
    results_per_hour: int = Field(
        default=0,
        description="Trials completed or failed in the 60 minutes before the summary was built (the studies "
        "stream builds it again when a study's trials change)",
    )
    n_feasible: int = Field(default=0, description="Completed trials that met every outcome constraint")
    n_infeasible: int = Field(default=0, description="Completed trials that broke an outcome constraint")
    candidates_remaining: int | None = Field(
        default=None,
        description="Finite spaces: candidates no trial holds yet (a stale trial's is offered again); null otherwise",
    )
    n_fallback: int = Field(
        default=0,
        description="Trials handed out as fallback points (source 'fallback'): the policy failed (see "
        "last_policy_error) or had no plan within the ask's wait",
    )
    last_fallback_at: datetime | None = Field(default=None, description="When the latest fallback point was handed out")
    n_lease_expired: int = Field(
        default=0, description="Running trials past their lease (the next ask marks them stale and offers them again)"
    )
    typical_result_gap_s: float | None = Field(
        default=None,
        description="The study's cadence: the mean seconds between results, first to last (null before 4 results); "
        "a study silent for several times this has stopped",
    )
    hypervolume: float | None = Field(
        default=None,
        description="Several objectives: the volume the Pareto front dominates up to hypervolume_reference_point "
        "(null on a single-objective study, before a completed feasible trial, or for a volume past the double "
        "range: GET .../pareto says why)",
    )
    hypervolume_reference_point: dict[str, float | None] | None = Field(
        default=None,
        description="Several objectives: the reference point used, {metric: value} (the study's, or inferred)",
    )
    hypervolume_history: list[tuple[int, float]] | None = Field(
        default=None,
        description="Several objectives: [trial number, hypervolume after it] for each trial that raised it, in order",
    )
    pareto_size: int | None = Field(default=None, description="Several objectives: trials on the Pareto front")


class StudyOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "furnace",
                    "direction": "maximize",
                    "space": {"temp": {"type": "float", "low": 300.0, "high": 900.0, "log": False}},
                    "policy": "minucb",
                    "policy_config": {"delta": 0.2, "kernel": "rbf"},
                    "metadata": {},
                    "seed": 1234567,
                    "created_at": "2026-11-24T10:00:00Z",
                    "policy_state_version": 4,
                    "last_policy_error": None,
                    "objectives": None,
                    "constraints": None,
                    "parameter_constraints": None,
                    "failures": "ignore",
                    "safety": None,
                    "reference_point": None,
                    "note": "new thermocouple from trial 40 on",
                    "summary": SUMMARY_EXAMPLE,
                }
            ]
        }
    )

    name: str = Field(description="The study's URL-safe name")
    direction: str = Field(description="minimize or maximize")
    space: Annotated[dict[str, Any], documented("SpaceOut", "The space as stored (finite: a summary)")]
    policy: str = Field(description="The policy's name")
    policy_config: Annotated[dict[str, Any], documented("PolicyConfigOut", "The config, defaults filled in")]
    metadata: Metadata
    seed: int = Field(description="The seed of the policy's randomness (drawn at creation when none was given)")
    created_at: datetime = Field(description="When the study was created")
    policy_state_version: int = Field(description="Grows with every stored change of the policy's state")
    last_policy_error: str | None = Field(
        description="Why the latest policy computation handed out fallback points (or restarted the policy's "
        "state), with its time; null once a computation succeeds"
    )
    objectives: list[Objective] | None = Field(default=None, description="As created; null: the one unnamed value")
    constraints: list[OutcomeConstraint] | None = Field(default=None, description="As created; null: none")
    parameter_constraints: list[ParameterConstraint] | None = Field(default=None, description="As created; null: none")
    failures: Literal["ignore", "avoid"] = Field(default="ignore", description="As created")
    safety: Safety | None = Field(default=None, description="As created; null: not in safe mode")
    reference_point: dict[str, float] | None = Field(
        default=None, description="As created (several objectives); null: inferred, see the summary"
    )
    note: str | None = Field(default=None, description="A person's note on the study (PUT .../note); null: none")
    summary: StudySummary = Field(description="The study's progress: counts, best value, liveness")


class StudyList(BaseModel):
    studies: list[StudyOut] = Field(description="Every study the caller may read, each with its summary")


class Health(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"status": "ok", "version": "0.1.0", "database": "sqlite"}]}
    )

    status: str = Field(description="ok: the service answers")
    version: str = Field(description="The service's version")
    database: str = Field(description="The database in use: sqlite or postgresql")


class PlannedPoint(BaseModel):
    params: Params
    x: list[float] = Field(description="The point in the unit cube, as the policy sees it")
    source: str = Field(description="Who planned it: the policy's name, or seed in safe mode")


class PolicyView(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "policy": "minucb",
                    "policy_state_version": 2,
                    "state_schema": 1,
                    "state": {"t": 1, "x_t": [0.5075], "phase": "batch", "batch": 1},
                    "state_computed_at": "2026-11-24T09:41:07.512000+00:00",
                    "state_results": 3,
                    "display": {
                        "phase": "exploring",
                        "progress": {"done": 1, "total": 1, "label": "exploration batch"},
                        "centre": [0.5075],
                        "box": {"lower": [0.3075], "upper": [0.7075]},
                        "path": [[0.5], [0.5075]],
                        "numbers": {"iteration": 1, "gp noise": 0.0067},
                    },
                    "last_policy_error": None,
                    "last_fallback_at": None,
                    "planned": [{"params": {"temp": 634.5}, "x": [0.5575], "source": "minucb"}],
                }
            ]
        }
    )

    policy: str = Field(description="The policy's name")
    policy_state_version: int = Field(description="Grows with every stored change of the state")
    state_schema: int | None = Field(description="The version of the state's layout (policies migrate older ones)")
    state: dict[str, Any] = Field(description="The policy's own state (unit-cube coordinates)")
    state_computed_at: datetime | None = Field(
        default=None,
        description="When the policy last computed the state (its last suggest; the state and display are as of "
        "then, not of the latest results); null: never, or stored before the service recorded it",
    )
    state_results: int | None = Field(
        default=None, description="How many completed trials that computation saw; null as state_computed_at"
    )
    display: dict[str, Any] | None = Field(
        default=None,
        description="What the dashboard draws, computed from the state: phase, progress {done, total, label}, "
        "centre and box {lower, upper} and path (unit cube, oldest first), numbers {name: value}; null: nothing",
    )
    last_policy_error: str | None = Field(description="As the study's: why the last computation fell back")
    last_fallback_at: datetime | None = Field(
        default=None,
        description="When an ask last got a fallback point (the policy failed, or had no plan within the ask's "
        "wait: a late policy records no error); null: never",
    )
    planned: list[PlannedPoint] = Field(description="The plan queue, in the order asks take it")


class FieldError(BaseModel):
    field: str = Field(
        description="Where: a path in the body, keys after dots and list positions in brackets "
        "(space.x.low, constraints[1].metric), or body"
    )
    message: str = Field(description="What was expected there")


class ErrorOut(BaseModel):
    """Every 4xx and 5xx answer of the API."""

    detail: str = Field(description="'field: what was expected'")
    errors: list[FieldError] | None = Field(default=None, description="422 only: every field at fault")
    request_id: str | None = Field(
        default=None, description="The request's id (also its X-Request-ID header), as the server's log names it"
    )
