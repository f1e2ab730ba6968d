"""Studies: create (space and policy config validated before anything is stored), read, list, delete,
and the policy's view (its state, what it displays, its plan queue)."""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlalchemy import Engine
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError

from localbo.domain import StudySpace, iso, study_out, trial_out
from localbo.domain.identity import study_token
from localbo.domain.outcomes import (
    Objective,
    OutcomeConstraint,
    Outcomes,
    Safety,
    parse_parameter_constraints,
)
from localbo.domain.records import StudyRecord, TrialRecord
from localbo.errors import Conflict, InvalidInput, NotFound
from localbo.finite_space import FiniteSpec, is_finite_spec, parse_finite
from localbo.json_values import field_path, find_problem, readable, size_problem
from localbo.safety import SEED, start_config
from localbo.safety import seed_points as safety_seeds
from localbo.space import SearchSpace, SpaceError
from localbo.spaces import Spaces
from localbo.storage import finite_spaces, plan_queue
from localbo.storage import repository as repo
from localbo.storage.models import utcnow
from localbo.storage.summary import summaries as summary_of

if TYPE_CHECKING:
    from localbo.policies import Display
    from localbo.study_handle import StudyHandle

log = logging.getLogger("localbo.studies")
MAX_CONFIG_MAGNITUDE = 1e100  # a config number beyond this overflows the policy's arithmetic (beta * sigma...)
MAX_CONFIG_INT = 2**31 - 1
MAX_SHOWN_DEPTH = 40  # metadata's own limit, plus the record's levels around it


def check_free_form(field: str, value: dict[str, Any] | None) -> None:
    """Metadata or a policy config that every database stores and reads back, or a 422 naming the key."""
    if value is None:
        return
    problem = find_problem(value, (field,))
    if problem is not None:
        raise InvalidInput(*problem)
    too_big = size_problem(value)
    if too_big is not None:
        raise InvalidInput(field, too_big)


def _config_number_problem(config: dict[str, Any]) -> tuple[str, str] | None:
    """A validated config's number that would make every later suggest fail (inf, 1e308, 2^63...)."""
    for key, value in config.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int | float):
                continue
            if isinstance(v, int) and abs(v) > MAX_CONFIG_INT:
                return f"policy_config.{key}", f"expected an integer of at most {MAX_CONFIG_INT}, got {v}"
            if isinstance(v, float) and not abs(v) <= MAX_CONFIG_MAGNITUDE:
                return f"policy_config.{key}", f"expected a finite number of magnitude at most 1e100, got {v}"
    return None


def validate_policy(policy: str, config: dict[str, Any] | None, dim: int, kind: str = "continuous") -> dict[str, Any]:
    """The policy's config with its defaults filled in, or a 422 naming the field."""
    from localbo.policies import PolicyConfigError, get_policy, registry  # torch: only where a policy is needed

    try:
        cls = get_policy(policy)
    except KeyError:
        raise InvalidInput("policy", f"unknown policy {policy!r}; expected one of {sorted(registry())}") from None
    check_free_form("policy_config", config)
    try:
        parsed = cls.Config.model_validate(config or {})
        cls.check_space(kind, parsed)
        cls.check_study(dim, parsed)
        dumped = parsed.model_dump(mode="json")
        problem = _config_number_problem(dumped)
        if problem is not None:
            raise InvalidInput(*problem)
    except PolicyConfigError as exc:
        raise InvalidInput(exc.field, str(exc).split(": ", 1)[-1]) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        raise InvalidInput(f"policy_config.{where}" if where else "policy_config", message) from None
    for name, raw in (dumped.get("configs") or {}).items() if policy == "auto" else ():
        try:  # each setting auto may run is checked as that policy's own would be, named under configs.<name>
            validate_policy(name, raw, dim, kind)
        except InvalidInput as exc:
            inner = exc.field.removeprefix("policy_config").lstrip(".")
            where = f"policy_config.configs.{name}" + (f".{inner}" if inner else "")
            raise InvalidInput(where, str(exc).split(": ", 1)[-1]) from None
    return dumped


def parse_outcomes(
    objectives: list[Any] | None,
    constraints: list[Any] | None,
    failures: str,
    safety: Any,
    reference_point: dict[str, Any] | None = None,
) -> Outcomes:
    """The study's metrics, objective and outcome constraints, or a 422 naming the field."""
    from pydantic import ValidationError

    def each(field: str, model: Any, items: list[Any] | None) -> tuple[Any, ...]:
        out = []
        for i, item in enumerate(items or ()):
            try:
                out.append(model.model_validate(item))
            except ValidationError as exc:
                where = field_path((field, i, *exc.errors()[0]["loc"]))
                raise InvalidInput(where, exc.errors()[0]["msg"]) from None
        return tuple(out)

    if objectives is not None and not objectives:
        raise InvalidInput("objectives", "expected 1 to 4 objectives; leave objectives out for the one unnamed value")
    if failures not in ("ignore", "avoid"):
        raise InvalidInput("failures", f"expected 'ignore' or 'avoid', got {failures!r}")
    try:
        parsed_safety = Safety.model_validate(safety) if safety is not None else None
    except ValidationError as exc:
        raise InvalidInput("safety", exc.errors()[0]["msg"]) from None
    outcomes = Outcomes(
        each("objectives", Objective, objectives),
        each("constraints", OutcomeConstraint, constraints),
        "avoid" if failures == "avoid" else "ignore",
        parsed_safety,
        dict(reference_point) if reference_point is not None else None,
    )
    outcomes.check()
    return outcomes


def check_capabilities(
    policy: str, outcomes: Outcomes, linear: bool, kind: str, dim: int, config: dict[str, Any] | None = None
) -> None:
    """A 422 naming the field when the study needs what its policy (with its validated ``config``) does not serve,
    with the policies that do."""
    from localbo.policies import PolicyConfigError, registry

    needs = {
        "constraints": ("constraints", bool(outcomes.constraints)),
        "parameter_constraints": ("parameter_constraints", linear),
        "failures": ("failures", outcomes.failures == "avoid"),
        "safety": ("safety", outcomes.safety is not None),
        "objectives": ("objectives", outcomes.several),
    }
    policies = registry()
    for capability, (field, needed) in needs.items():
        if needed and capability not in policies[policy].handles:
            able = sorted(name for name, cls in policies.items() if capability in cls.handles)
            offer = f"policies that do: {able}" if able else "no policy serves it yet"
            what = "several objectives" if capability == "objectives" else field.replace("_", " ")
            raise InvalidInput(field, f"the {policy} policy does not serve {what}; {offer}")
    try:
        parsed = policies[policy].Config.model_validate(config) if config is not None else None
        policies[policy].check_needs(kind, dim, frozenset(c for c, (_, needed) in needs.items() if needed), parsed)
    except PolicyConfigError as exc:
        raise InvalidInput(exc.field, str(exc).split(": ", 1)[-1]) from None


def study_front(conn: Connection, study: Row, outcomes: Outcomes) -> dict[str, Any]:
    """The study's front (``fronts.front``), cached per identity and result count."""
    from localbo.fronts import cached_front
    from localbo.storage.outcomes import completed_outcomes

    rows = completed_outcomes(conn, study.id)
    last = rows[-1].number if rows else 0
    return cached_front((study.id, study.created_at, len(rows), last), outcomes, lambda: rows)


def with_front(conn: Connection, study: Row, record: StudyRecord) -> StudyRecord:
    """A multi-objective study's record with its hypervolume in the summary (no single best value there)."""
    outcomes = Outcomes.from_stored(study)
    if not outcomes.several:
        return record
    found = study_front(conn, study, outcomes)
    history = found["history"]
    last = history[-1][0] if history else None
    summary = record["summary"]
    summary["best_value"] = None
    summary["hypervolume"] = found["hypervolume"]
    summary["hypervolume_reference_point"] = found["reference_point"]
    summary["hypervolume_history"] = history
    summary["pareto_size"] = len(found["numbers"])
    # completed trials after the last one that raised the hypervolume
    summary["trials_since_improvement"] = None if last is None else sum(1 for n in found["completed"] if n > last)
    return record


def _shown(record: StudyRecord) -> StudyRecord:
    """The record, or, for a row stored before the input checks that no JSON encoder takes (a lone
    surrogate, NaN, 256 levels), a readable copy: one bad row never turns a listing into a 500."""
    problem = find_problem(record, max_depth=MAX_SHOWN_DEPTH)
    if problem is None:
        return record
    log.warning("study %s: stored %s cannot be shown as it is (%s); shown degraded", ascii(record["name"]), *problem)
    shown: StudyRecord = readable(record, MAX_SHOWN_DEPTH)
    return shown


def policy_display(study: StudyHandle, n_complete: int) -> Display | None:
    """What the study's policy displays about its stored state (None: nothing, or its display failed)."""
    if study.policy is None or study.config is None:
        return None  # the policy cannot run: ``last_policy_error`` says why
    try:
        display = study.policy.display(study.state, study.config, n_complete)
    except Exception:  # a picture is not worth a 500: the view goes on without it
        log.exception("study %s: the %s policy's display failed", study.name, study.policy_name)
        return None
    if display is None or study.sign > 0 or not display.objective_values:
        return display
    numbers = dict(display.numbers)  # the policies minimise: a maximised study's values, back in its sign
    for key in display.objective_values:
        value = numbers.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            numbers[key] = -value
    return display.model_copy(update={"numbers": numbers})


def get_row(conn: Connection, name: str, *, lock: bool = False) -> Row:
    study = repo.get_study(conn, name, for_update=lock)
    if study is None:
        raise NotFound(f"study {name!r} not found")
    return study


class Studies:
    def __init__(self, db: Engine, write: Engine, spaces: Spaces) -> None:
        self.db, self.write, self.spaces = db, write, spaces

    def create(
        self,
        name: str,
        direction: str,
        space: dict[str, Any],
        policy: str,
        policy_config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        seed: int | None = None,
        objectives: list[Any] | None = None,
        constraints: list[Any] | None = None,
        parameter_constraints: list[Any] | None = None,
        failures: str = "ignore",
        safety: Any = None,
        reference_point: dict[str, Any] | None = None,
    ) -> StudyRecord:
        finite: FiniteSpec | None = None
        try:
            if is_finite_spec(space):
                finite = parse_finite(space)
                stored, dim, kind = finite.summary(), finite.dim, "finite"
            else:
                parsed = SearchSpace.parse(space)
                stored, dim, kind = parsed.spec(), parsed.dim, parsed.kind
        except SpaceError as exc:
            raise InvalidInput(exc.field, exc.message) from None
        if direction not in ("minimize", "maximize"):
            raise InvalidInput("direction", f"expected 'minimize' or 'maximize', got {direction!r}")
        check_free_form("metadata", metadata)
        config = validate_policy(policy, policy_config, dim, kind)
        from localbo.policies import get_policy  # validated: the policy exists

        outcomes = parse_outcomes(objectives, constraints, failures, safety, reference_point)
        linear_rules, linear = None, None
        if parameter_constraints and finite is not None:  # the candidates that satisfy them, the rest left out
            ranges = finite.summary()["params"]  # a constant parameter gets a nominal width: only names matter here
            box = SearchSpace.parse({n: {**r, "high": max(r["high"], r["low"] + 1)} for n, r in ranges.items()})
            rules = parse_parameter_constraints(parameter_constraints, box, check_region=False)[0]
            finite = finite.within(rules)
            stored, linear_rules = finite.summary(), [c.model_dump(mode="json") for c in rules]
        elif parameter_constraints:
            rules, linear = parse_parameter_constraints(parameter_constraints, parsed)
            linear_rules = [c.model_dump(mode="json") for c in rules]
        if finite is not None and outcomes.constraints:
            raise InvalidInput("constraints", "outcome constraints on a finite space are not served yet")
        check_capabilities(policy, outcomes, bool(linear_rules) and finite is None, kind, dim, config)
        seeds = safety_seeds(outcomes, None if finite is not None else parsed, linear)
        config = start_config(config, seeds)
        if outcomes.objectives:
            # "minimize" is also the default a client sends unasked; "maximize" was asked, and must agree
            if direction == "maximize" and outcomes.objectives[0].direction != "maximize":
                raise InvalidInput(
                    "direction",
                    f"'maximize' disagrees with objectives[0].direction {outcomes.objectives[0].direction!r}; with "
                    "objectives, each objective's direction says its way (direction is the unnamed value's)",
                )
            direction = outcomes.objectives[0].direction  # the single objective's: best and summaries read it

        values = {
            "name": name,
            "direction": direction,
            "space": stored,
            "policy": policy,
            "policy_config": config,
            "policy_config_version": get_policy(policy).Config.version,
            "user_metadata": metadata or {},
            "seed": secrets.randbelow(2**31) if seed is None else seed,
            "policy_state": {},
            "policy_state_version": 0,
            "trial_count": 0,
            "created_at": utcnow(),
            "objectives": [o.model_dump(mode="json") for o in outcomes.objectives] or None,
            "constraints": [c.model_dump(mode="json") for c in outcomes.constraints] or None,
            "parameter_constraints": linear_rules,
            "failures": outcomes.failures,
            "safety": outcomes.safety.model_dump(mode="json") if outcomes.safety is not None else None,
            "reference_point": outcomes.reference_point,
        }
        try:
            with self.write.begin() as conn:
                study_id = repo.insert_study(conn, values)
                plan_queue.add_plan(conn, study_id, [(x, SEED, None) for x in seeds], priority=1)  # asked first
                if finite is not None:
                    kernel = finite.kernel.numpy().tobytes() if finite.kernel is not None else None
                    finite_spaces.insert_candidates(conn, study_id, finite.rows(), kernel)
        except IntegrityError:
            raise Conflict(f"name: a study named {name!r} already exists") from None
        return self.get(name)

    def get(self, name: str) -> StudyRecord:
        with self.db.begin() as conn:
            study = get_row(conn, name)
            summary = summary_of(conn, [study.id]).get(study.id)
            return _shown(with_front(conn, study, study_out(study, summary)))

    def list(self) -> list[StudyRecord]:
        with self.db.begin() as conn:
            rows = repo.list_studies(conn)
            summaries = summary_of(conn)
            return [_shown(with_front(conn, row, study_out(row, summaries.get(row.id)))) for row in rows]

    def pareto(self, name: str) -> dict[str, Any]:
        """A study's Pareto front (its non-dominated feasible trials), hypervolume and history; for a study with one
        objective, its best (feasible) trial and no hypervolume."""
        with self.db.begin() as conn:
            study = get_row(conn, name)
            outcomes = Outcomes.from_stored(study)
            if not outcomes.several:  # one objective: its front is its best (feasible) trial, no hypervolume
                best = repo.best_trial(conn, study.id, study.direction)
                token = study_token(study.id, study.created_at)
                return {
                    "objectives": [o.model_dump(mode="json") for o in outcomes.objectives]
                    or [{"metric": "value", "direction": study.direction}],
                    "trials": [trial_out(best, token)] if best is not None else [],
                    "hypervolume": None,
                    "reference_point": {},
                    "reference_point_inferred": False,
                    "history": [],
                    "hypervolume_note": None,
                }
            found = study_front(conn, study, outcomes)
            rows = [repo.get_trial(conn, study.id, n) for n in found["numbers"]]
        token = study_token(study.id, study.created_at)
        return {
            "objectives": [o.model_dump(mode="json") for o in outcomes.objectives],
            "trials": [trial_out(r, token) for r in rows if r is not None],
            "hypervolume": found["hypervolume"],
            "reference_point": found["reference_point"],
            "reference_point_inferred": found["reference_point_inferred"],
            "history": [{"number": int(n), "hypervolume": hv} for n, hv in found["history"]],
            "hypervolume_note": found["note"],
        }

    def delete(self, name: str) -> None:
        with self.write.begin() as conn:
            repo.delete_study(conn, get_row(conn, name, lock=True).id)

    def trials(self, name: str, after: int = 0, limit: int = 100, state: str | None = None) -> dict[str, Any]:
        """A page of the study's trials by number, and where the next page starts (None at the end)."""
        with self.db.begin() as conn:
            study = get_row(conn, name)
            rows = repo.list_trials(conn, study.id, after=after, limit=limit + 1, state=state)
        more = len(rows) > limit
        rows = rows[:limit]
        token = study_token(study.id, study.created_at)
        return {"trials": [trial_out(r, token) for r in rows], "next_after": rows[-1].number if more else None}

    def trial(self, name: str, number: int) -> TrialRecord:
        """One trial by its number, or NotFound naming it."""
        with self.db.begin() as conn:
            study = get_row(conn, name)
            row = repo.get_trial(conn, study.id, number)
        if row is None:
            raise NotFound(f"trial {number} of study {name!r} not found")
        return trial_out(row, study_token(study.id, study.created_at))

    def best(self, name: str) -> TrialRecord | None:
        with self.db.begin() as conn:
            study = get_row(conn, name)
            if Outcomes.from_stored(study).several:
                raise Conflict(
                    f"study {name!r} has several objectives: its best is a Pareto set, "
                    f"GET /api/v1/studies/{name}/pareto"
                )
            row = repo.best_trial(conn, study.id, study.direction)
        return trial_out(row, study_token(study.id, study.created_at)) if row is not None else None

    def policy_view(self, name: str) -> dict[str, Any]:
        """The policy's persisted state, what it displays, and its plan queue (points in user units)."""
        with self.db.begin() as conn:
            study = get_row(conn, name)
            planned = plan_queue.list_plan(conn, study.id)
            space: StudySpace = self.spaces.of(conn, study)
            summary = summary_of(conn, [study.id]).get(study.id) or {}
        from localbo.study_handle import load_study  # torch: only where a policy is needed

        saved = study.policy_state or {}
        display = policy_display(load_study(study, space), int(summary.get("complete") or 0))
        return {
            "policy": study.policy,
            "policy_state_version": study.policy_state_version,
            "state_schema": saved.get("schema"),
            "state": saved.get("data", {}),
            "state_computed_at": saved.get("computed_at"),
            "state_results": saved.get("results"),
            "display": display.model_dump(mode="json") if display is not None else None,
            "last_policy_error": study.last_policy_error,
            "last_fallback_at": iso(summary.get("last_fallback_at")),
            "planned": [{"params": space.params(p.x, p.candidate), "x": p.x, "source": p.source} for p in planned],
        }
