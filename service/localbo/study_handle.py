"""One study as the planning side sees it, loaded once into a typed record: identity, space, direction,
the policy class, its parsed Config and its loaded State.

Nothing downstream re-parses the stored ``policy_config`` or reads its keys by name: the policy class
answers "which queue", "which kernel", "where may a fallback point lie". A study whose policy this
server does not know, or whose stored config no longer loads (a field renamed in a later release
without a ``migrate``), still loads: ``problem`` says why, and planning serves it fallback points and
records that reason on the study, never a 500.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

import torch
from sqlalchemy.engine import Row

from localbo.domain import StudySpace
from localbo.domain.identity import study_token
from localbo.domain.outcomes import LinearConstraints, Outcomes, ParameterConstraint, parse_parameter_constraints
from localbo.policies import Policy, PolicyConfig, PolicyState, Polytope, get_policy
from localbo.policies.base import KernelKind
from localbo.space import Param
from localbo.storage.plan_queue import PlanPoint

log = logging.getLogger("localbo.studies")


@dataclass(frozen=True)
class StudyHandle:
    id: int
    name: str
    created_at: datetime
    seed: int
    direction: str  # "minimize" | "maximize"
    space: StudySpace
    policy_name: str
    policy: type[Policy] | None  # None: this server has no policy of that name
    config: PolicyConfig | None  # None: the stored config does not load (``problem`` says why)
    state: PolicyState  # the stored state, migrated, or a fresh one (``state_note`` says why)
    state_version: int  # bumped by every stored plan: a plan from an older snapshot is dropped
    state_note: str | None
    problem: str | None  # why the policy cannot run: the study is served fallback points
    outcomes: Outcomes = Outcomes()  # named metrics, objective, outcome constraints (none: the unnamed value)
    linear: LinearConstraints = LinearConstraints()  # parameter constraints in the unit cube (empty: none)
    integral_rules: tuple[ParameterConstraint, ...] = ()  # the parameter constraints that name an int parameter

    @property
    def token(self) -> str:
        return study_token(self.id, self.created_at)

    @property
    def sign(self) -> float:
        """Multiplies values into what the policies minimise."""
        return 1.0 if self.direction == "minimize" else -1.0

    @property
    def needs_history(self) -> bool:
        return self.policy is None or self.policy.needs_history

    def fallback_box(self) -> tuple[list[float], list[float]]:
        """Where a fallback point may lie: the policy's box (its local region), or the whole cube."""
        dim = self.space.dim
        if self.policy is None or self.config is None:
            return [0.0] * dim, [1.0] * dim
        return self.policy.fallback_box(self.state, self.config, dim)

    def queue(self) -> str:
        return "auto" if self.policy is None or self.config is None else self.policy.queue(self.config)

    def gp_points(self, n: int) -> int:
        """How many of n results the policy's GP fits."""
        return (
            n
            if self.policy is None or self.config is None
            else self.policy.gp_points(self.state, self.config, self.space.dim, n)
        )

    def kernel(self) -> KernelKind:
        return "rbf" if self.policy is None or self.config is None else self.policy.kernel(self.config)

    def polytope(self, device: torch.device | None = None) -> Polytope | None:
        """The parameter constraints as the policies take them (None: the whole cube)."""
        if not self.linear:
            return None
        return self.linear.polytope(self.space.dim, device)

    def keep_integral(self, points: list[PlanPoint]) -> list[PlanPoint]:
        """The points, each moved to the nearest point that keeps the parameter constraints once its ints are
        rounded (``integer_points.keep``), when a constraint names an int parameter."""
        box = self.space.box
        if not self.integral_rules or box is None:
            return points
        from localbo.domain.integer_points import keep

        return [(keep(x, self.integral_rules, box), source, c) for x, source, c in points]

    def seeds(self) -> list[list[float]]:
        """Safe mode's seeds in the unit cube (checked at creation), first to last; none on a finite space."""
        if self.outcomes.safety is None or self.space.candidates is not None:
            return []
        return [self.space.snap(self.space.to_unit(seed)[0]) for seed in self.outcomes.safety.seeds]

    def plans_now(self, n_complete: int, n_running: int) -> bool:
        if self.policy is None or self.config is None:
            return True  # fallback points: cheap, and the reason is recorded on every plan
        return self.policy.plans_now(self.state, n_complete, n_running)


def load_study(row: Row, space: StudySpace) -> StudyHandle:
    """The handle of a whole ``studies`` row (policy state and config included) and its parsed space."""
    problem: str | None = None
    policy: type[Policy] | None
    config: PolicyConfig | None = None
    try:
        policy = get_policy(row.policy)
    except KeyError:
        policy, problem = None, f"this server has no policy named {row.policy!r}"
    state: PolicyState = PolicyState()
    state_note: str | None = None
    if policy is not None:
        config, problem = policy.load_config(row.policy_config, row.policy_config_version)
        state, state_note = policy.load_state(row.policy_state or None)
        if state_note:
            log.warning("study %s: %s", row.name, state_note)
    outcomes = Outcomes.from_stored(row)
    linear = LinearConstraints()
    integral: tuple[ParameterConstraint, ...] = ()
    if row.parameter_constraints and space.box is not None:  # checked at creation: no LP again here
        rules, linear = parse_parameter_constraints(row.parameter_constraints, space.box, check_region=False)
        ints = {p.name for p in space.box.params if isinstance(p, Param) and p.type == "int"}
        integral = tuple(r for r in rules if ints & set(r.terms))
    if problem:
        log.warning("study %s: %s; served fallback points", row.name, problem)
    return StudyHandle(
        id=row.id,
        name=row.name,
        created_at=row.created_at,
        seed=row.seed,
        direction=row.direction,
        space=space,
        policy_name=row.policy,
        policy=policy,
        config=config,
        state=state,
        state_version=row.policy_state_version,
        state_note=state_note,
        problem=problem,
        outcomes=outcomes,
        linear=linear,
        integral_rules=integral,
    )
