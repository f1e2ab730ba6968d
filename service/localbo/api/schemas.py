"""The public contract's shapes (``/api/v1``). Extend; do not rename."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

STUDY_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StudyCreate(Strict):
    name: str = Field(pattern=STUDY_NAME, description="URL-safe: letters, digits, . _ -")
    direction: Literal["minimize", "maximize"] = "minimize"
    space: dict[str, Any] = Field(
        description='{"x": {"type": "float", "low": 0, "high": 1, "log": false}, '
        '"n": {"type": "int", "low": 1, "high": 8}, "opt": {"type": "categorical", "choices": ["sgd", "adam"]}}; '
        'or a finite space: {"kind": "finite", '
        '"candidates": [{"id": "a", "params": {"x": 0.5, "n": 3}}, ...] or "csv": "id,x,n\\n...", '
        '"kernel"?: N x N matrix or "cosine", "allow_repeats"?: false}'
    )
    policy: str = "sobol"
    policy_config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    seed: int | None = Field(default=None, ge=0, lt=2**31, description="Fixes the policy's randomness")


class StudySummary(BaseModel):
    n_trials: int
    n_running: int
    n_complete: int
    n_failed: int
    n_stale: int
    best_value: float | None
    last_activity: datetime | None = Field(default=None, description="When a trial was last asked or finished")


class StudyOut(BaseModel):
    name: str
    direction: str
    space: dict[str, Any]
    policy: str
    policy_config: dict[str, Any]
    metadata: dict[str, Any]
    seed: int
    created_at: datetime
    policy_state_version: int
    last_policy_error: str | None
    summary: StudySummary


class StudyList(BaseModel):
    studies: list[StudyOut]


class AskRequest(Strict):
    count: int = Field(default=1, ge=1, description="How many trials to hand out")
    client_id: str | None = Field(
        default=None,
        max_length=200,
        description="The evaluator's id: a re-ask gets its own running trials back first",
    )


class TrialOut(BaseModel):
    number: int
    state: Literal["running", "complete", "failed", "stale"]
    params: dict[str, Any]
    value: float | None
    reason: str | None
    source: str
    client_id: str | None
    lease_expires_at: datetime | None
    created_at: datetime
    completed_at: datetime | None
    candidate: str | None = Field(default=None, description="Finite spaces: the id of the candidate asked")


class AskResponse(BaseModel):
    trials: list[TrialOut]


class TellRequest(Strict):
    # strict: "0.5" or true is refused, not quietly turned into a number
    value: float | None = Field(default=None, strict=True, allow_inf_nan=False, description="The objective value")
    state: Literal["complete", "failed"] = "complete"
    reason: str | None = Field(default=None, max_length=10_000, description="Why a trial failed")


class ExternalTrial(Strict):
    params: dict[str, Any]
    value: float = Field(strict=True, allow_inf_nan=False)


class TrialList(BaseModel):
    trials: list[TrialOut]
    next_after: int | None = Field(description="Pass as ?after= for the next page; null at the end")


class Health(BaseModel):
    status: str
    version: str
    database: str


class PlannedPoint(BaseModel):
    params: dict[str, Any]
    x: list[float] = Field(description="The point in the unit cube, as the policy sees it")
    source: str


class PolicyView(BaseModel):
    policy: str
    policy_state_version: int
    state_schema: int | None
    state: dict[str, Any] = Field(description="The policy's own state (unit-cube coordinates)")
    display: dict[str, Any] | None = Field(
        default=None,
        description="What the dashboard draws, computed from the state: phase, progress {done, total, label}, "
        "centre and box {lower, upper} and path (unit cube, oldest first), numbers {name: value}; null: nothing",
    )
    last_policy_error: str | None
    planned: list[PlannedPoint] = Field(description="The plan queue, in the order asks take it")
