"""What the analysis and Pareto routes answer (``/analysis/importance``, ``/analysis/surface``, ``/pareto``): the
public contract's result shapes, beside ``schemas.py``'s requests and records. Extend; do not rename."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from localbo.api.examples import TRIAL_EXAMPLE
from localbo.api.schemas import Params
from localbo.api.trial_schemas import TrialOut
from localbo.domain.outcomes import Objective

# what the analysis models: the trials' value, which is the (first) objective's
ModelledMetric = Annotated[
    str | None,
    Field(description="The metric modelled: the objective's (with several, the first's); null: the unnamed value"),
]


class ImportanceOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "parameters": ["temp", "pressure"],
                    "gp": [0.036, 0.964],
                    "gp_method": "mean squared gradient of the posterior mean of an ARD GP ...",
                    "forest": [0.092, 0.908],
                    "forest_method": "out-of-bag permutation importance of a random forest ...",
                    "n_complete": 6,
                    "note": "GP fitted to the last 6 of 6 completed trials (by number); forest fitted to the last 6",
                }
            ]
        }
    )

    parameters: list[str] = Field(description="The study's parameters, in space order")
    gp: list[float] | None = Field(
        description="Each parameter's share (sums to 1) from an ARD GP: the mean squared gradient of its posterior "
        "mean over the fitted points; null: see note"
    )
    gp_method: str = Field(description="How the gp shares were computed")
    forest: list[float] | None = Field(
        description="Each parameter's share (sums to 1) from a random forest's permutation importance (model-free "
        "cross-check); null: see note"
    )
    forest_method: str = Field(description="How the forest shares were computed")
    n_complete: int = Field(description="Completed trials of the study")
    note: str = Field(description="Which trials fed the fits, or why there are no shares")
    objective: ModelledMetric = None


class SurfaceOut(BaseModel):
    """The GP's posterior mean over a grid of two parameters, the others held fixed; or why not."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "x": "temp",
                    "y": "pressure",
                    "available": True,
                    "reason": None,
                    "n_complete": 6,
                    "xs": [300.0, 600.0, 900.0],
                    "ys": [1.0, 5.5, 10.0],
                    "mean": [[0.956, 0.956, 0.956], [0.954, 0.974, 0.967], [0.956, 0.956, 0.956]],
                    "log_x": False,
                    "log_y": False,
                    "fixed": {},
                    "fixed_at": "centre",
                    "model": "ARD GP (rbf, MAP) on the last 6 of 6 completed trials",
                }
            ]
        }
    )

    x: str = Field(description="The parameter along x")
    y: str = Field(description="The parameter along y")
    available: bool = Field(description="false: no surface, ``reason`` says why (and only x, y, n_complete come)")
    reason: str | None = Field(default=None, description="Why there is no surface")
    n_complete: int | None = Field(default=None, description="Completed trials of the study")
    xs: list[float] | None = Field(default=None, description="The grid along x, user units")
    ys: list[float] | None = Field(default=None, description="The grid along y, user units")
    mean: list[list[float]] | None = Field(
        default=None, description="size rows of size values, study units: row i is ys[i], column j is xs[j]"
    )
    log_x: bool | None = Field(default=None, description="Whether x is a log-scaled parameter (draw its axis so)")
    log_y: bool | None = Field(default=None, description="Whether y is a log-scaled parameter")
    fixed: Params | None = Field(default=None, description="Where the other parameters are held, user units")
    fixed_at: Literal["centre", "best"] | None = Field(
        default=None,
        description="centre: the policy's current centre (its display's); best: the best (feasible) trial by the "
        "objective the mean is of",
    )
    objective: ModelledMetric = None
    model: str | None = Field(default=None, description="The GP and the trials it was fitted to")


class HypervolumeStep(BaseModel):
    number: int = Field(description="The trial that raised the hypervolume")
    hypervolume: float = Field(description="The hypervolume after that trial")


class ParetoOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "objectives": [
                        {"metric": "yield", "direction": "maximize"},
                        {"metric": "cost", "direction": "minimize"},
                    ],
                    "trials": [
                        {**TRIAL_EXAMPLE, "value": None, "values": {"yield": 0.81, "cost": 3.2}, "feasible": True}
                    ],
                    "hypervolume": 2.75,
                    "reference_point": {"yield": 0.0, "cost": 10.0},
                    "reference_point_inferred": False,
                    "history": [{"number": 1, "hypervolume": 2.75}],
                    "hypervolume_note": None,
                }
            ]
        }
    )

    objectives: list[Objective] = Field(description="The study's objectives, each with its direction")
    trials: list[TrialOut] = Field(description="The non-dominated feasible completed trials, by number")
    hypervolume: float | None = Field(
        description="The volume the front dominates up to reference_point (null: no result, or a volume past the "
        "double range: hypervolume_note says which)"
    )
    hypervolume_note: str | None = Field(
        default=None, description="Why hypervolume is null although results exist (null: nothing to say)"
    )
    reference_point: dict[str, float | None] = Field(
        description="{metric: value} in the metrics' units (null: an inferred value past the double range)"
    )
    reference_point_inferred: bool = Field(
        description="True: the study gave none; inferred from the feasible completed trials (each objective's "
        "worst value on their front, moved a tenth of the front's range further), so it can move as results come in"
    )
    history: list[HypervolumeStep] = Field(description="Each trial that raised the hypervolume, in order")
