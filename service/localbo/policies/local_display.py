"""What the dashboard shows of a local gradient policy (``LocalPolicy.display``): the iteration's phase and batch
progress, x_t, the exploration box, the path of iterates, the last step, the GP, and where the study has them, the
constraints' state and the restarts."""

from __future__ import annotations

from localbo.policies import failures
from localbo.policies.base import Box, Display, Progress
from localbo.policies.local_constraints import ConstraintState
from localbo.policies.local_state import LocalState, Scalar


def local_display(state: LocalState, box: tuple[list[float], list[float]], n_complete: int) -> Display:
    """The display of a started iteration (``state.x_t`` set) whose exploration box is ``box`` (lower, upper)."""
    assert state.x_t is not None
    done = max(0, min(state.batch, n_complete - state.n_start))
    if done >= state.batch:
        phase = "step pending"  # the batch is in: the next plan fits the GP and steps
    else:
        phase = "exploration batch" if state.phase == "batch" else "top-up"
    last = state.path[-1].info if state.path else {}
    numbers: dict[str, float | int | str | None] = {"iteration": state.t, "top-up points": state.extra}
    for key in ("event", "step_norm", "trace_after"):
        value = last.get(key)
        if value is not None and not isinstance(value, bool):
            numbers[key] = value
    if state.hypers is not None:
        numbers["gp noise"] = round(state.hypers.noise, 6)
        numbers["gp mean lengthscale"] = round(sum(state.hypers.lengthscale) / len(state.hypers.lengthscale), 6)
    if state.constraints is not None:
        numbers.update(_constraint_numbers(state.constraints, last, n_complete))
    if state.run is not None:
        numbers["restarts"] = state.run.restarts
        numbers["steps without improvement"] = state.run.stale
    return Display(
        phase=phase,
        progress=Progress(done=done, total=state.batch, label="exploration batch"),
        centre=list(state.x_t),
        box=Box(lower=box[0], upper=box[1]),
        path=[list(p.x) for p in state.path],
        numbers=numbers,
    )


def _constraint_numbers(kept: ConstraintState, last: dict[str, Scalar], n_complete: int) -> dict[str, Scalar]:
    """The display's lines about the constraints: feasible share, active constraint, PF at x_t, the safe share of
    the local box, the failure model, how the centre moved."""
    numbers: dict[str, Scalar] = {}
    if kept.feasible_share is not None:
        numbers["feasible share"] = round(kept.feasible_share, 4)
    if kept.active_constraint is not None:
        numbers["active constraint"] = kept.active_constraint
    if kept.feasibility is not None:
        numbers["P(feasible) at x_t"] = round(kept.feasibility, 4)
    if kept.max_violation_probability is not None:
        numbers["max violation probability"] = kept.max_violation_probability
        numbers["safe share of the box"] = kept.safe_share
    if kept.n_failed:
        numbers["failure model"] = failures.describe(kept.n_failed, n_complete + kept.n_failed)
    centre = last.get("centre")
    if isinstance(centre, str):
        numbers["centre"] = centre
    return numbers
