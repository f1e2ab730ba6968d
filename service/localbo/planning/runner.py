"""One policy computation: a ``SuggestRequest`` from a snapshot of the study, run through the executor
(bounded by ``LOCALBO_POLICY_TIMEOUT_SECONDS``), and the answer checked before it becomes a plan.

A policy that raises, times out or answers nonsense never takes the study down: the plan is then
fallback points (``fallback.py``) and the error is recorded on the study; the state is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass
from typing import Any

import torch
from sqlalchemy.engine import Row

from localbo import metrics
from localbo.config import Settings
from localbo.domain import StudySpace
from localbo.errors import Conflict
from localbo.planning.fallback import fallback_points, mixed_seed
from localbo.policies import PolicyConfig, SuggestRequest
from localbo.policies.base import FiniteSpace, Polytope, SpaceStructure
from localbo.policies.polytope import violation
from localbo.safety import label_repeats, safe_fallback, safest_known
from localbo.storage.models import utcnow
from localbo.storage.plan_queue import PlanPoint
from localbo.study_handle import StudyHandle
from localbo.workers import Executor
from localbo.workers.base import PolicyTimeout

log = logging.getLogger("localbo.planning")
FAILURE_SALT = 7919  # seeds the fallback points of a failed computation
RNG_SALT = 104_723  # seeds the request's generator


@dataclass
class Plan:
    version: int  # the state version the plan was computed from
    points: list[PlanPoint]
    state: dict[str, Any] | None  # the state to store (None: keep the stored one)
    error: str | None  # why the points are fallback points, or why the state restarted


def rng_seed(study: StudyHandle) -> int:
    """Seeds the request's generator: the study's seed and how many plans it stored before."""
    return mixed_seed(study.seed, RNG_SALT, study.state_version)


class PolicyRunner:
    def __init__(self, settings: Settings, executor: Executor, device: torch.device) -> None:
        self.settings, self.executor, self.device = settings, executor, device

    def queue_for(self, study: StudyHandle, n: int) -> str:
        """The worker queue: the study's policy says, else its size: the results its GP fits (a local policy's
        window, a global one's ``max_data``) x parameters. A GPU pays only for a large GP
        (``benchmarks/results/gpu/gpu_findings.md``)."""
        queue = study.queue()
        if queue != "auto":
            return queue
        size = study.gp_points(n) * study.space.dim
        return "gpu" if self.settings.gpu_min_size and size >= self.settings.gpu_min_size else "cpu"

    def run(
        self,
        study: StudyHandle,
        done: Sequence[Row],
        pending: Sequence[Row],
        short: int,
        failed: list[int],
        failed_points: list[list[float]] | None = None,
        n_failed: int = 0,
    ) -> Plan:
        """A plan of at least ``short`` points for ``study`` given its completed and pending rows."""
        space, cls, config = study.space, study.policy, study.config
        if cls is None or config is None:  # the study cannot run its policy: fallback points, and why
            metrics.policy_outcomes.labels(study.policy_name, "unloadable").inc()
            why = study.problem or "the policy cannot run"
            return self.fallback(study, done, pending, short, failed, why, failed_points)
        if space.candidates is not None and not space.candidates.allow_repeats:  # plan no more than is left
            short = min(short, space.candidates.size - len(self.taken(space, done, pending, failed)))
            if short <= 0:  # every candidate asked: nothing to plan, and no policy failure to report
                return Plan(study.state_version, [], None, study.state_note)
        if (
            study.outcomes.safety is not None
            and safest_known(study.outcomes, done, study.seeds(), study.linear, failed_points) is None
        ):
            keeps = " that keeps the parameter_constraints" if study.linear else ""
            why = f"safety: no seed not shown unsafe and no feasible completed trial{keeps} yet: no point is known safe"
            return Plan(study.state_version, [], None, f"{utcnow().isoformat()} {why}")
        try:
            request = self.request(study, config, done, pending, short, failed, failed_points, n_failed)
            local = space.candidates is not None or not cls.needs_history
            queue = self.queue_for(study, len(done))
            suggestion = self.executor.run(cls.name, request, queue, self.settings.policy_timeout_seconds, local=local)
            points = study.keep_integral(self.points(cls.name, space, suggestion, request, short))
            if study.outcomes.safety is not None and space.candidates is None:  # the same safe point again: say so
                points = label_repeats(points, [r.x for r in [*done, *pending]])
            metrics.policy_outcomes.labels(cls.name, "ok").inc()
            # when and on how many results the state was computed: the dashboard says how old what it shows is
            state = {**cls.dump_state(suggestion.state), "computed_at": utcnow().isoformat(), "results": len(done)}
            return Plan(study.state_version, points, state, study.state_note)
        except CancelledError:
            raise  # the server is shutting down: no fallback plan, no error on the study
        except Exception as exc:  # a failing policy never takes the study down
            log.exception("policy %s failed on study %s; handing out fallback points", cls.name, study.name)
            metrics.policy_outcomes.labels(cls.name, "timeout" if isinstance(exc, PolicyTimeout) else "failed").inc()
            return self.fallback(study, done, pending, short, failed, f"{type(exc).__name__}: {exc}", failed_points)

    def fallback(
        self,
        study: StudyHandle,
        done: Sequence[Row],
        pending: Sequence[Row],
        short: int,
        failed: list[int],
        why: str,
        failed_points: list[list[float]] | None = None,
    ) -> Plan:
        """A plan of seeded fallback points (the study's state kept), recording ``why``."""
        if study.outcomes.safety is not None and study.space.candidates is None:  # never a random point
            try:
                outcomes, seeds, linear = study.outcomes, study.seeds(), study.linear
                points = safe_fallback(outcomes, done, seeds, short, study.name, linear, failed_points)
            except Conflict as exc:
                points, why = [], f"{why}; {exc}"
            return Plan(study.state_version, points, None, f"{utcnow().isoformat()} {why}")
        generator = torch.Generator().manual_seed(mixed_seed(study.seed, FAILURE_SALT, study.state_version))
        space = study.space
        taken = self.taken(space, done, pending, failed)
        box = None if space.candidates is not None else study.fallback_box()
        points = study.keep_integral(fallback_points(space, short, generator, box, taken, study.polytope()))
        return Plan(study.state_version, points, None, f"{utcnow().isoformat()} {why}")

    def request(
        self,
        study: StudyHandle,
        config: PolicyConfig,
        done: Sequence[Row],
        pending: Sequence[Row],
        short: int,
        failed: list[int],
        failed_points: list[list[float]] | None = None,
        n_failed: int = 0,
    ) -> SuggestRequest:
        space = study.space
        dim = space.dim

        def tensor(rows: list, n_cols: int) -> torch.Tensor:
            return torch.tensor(rows, dtype=torch.float64, device=self.device).reshape(-1, n_cols)

        outcomes = study.outcomes
        C = None
        if outcomes.constraints:  # each constraint's violation at each completed point: <= 0 where it holds
            cs = outcomes.constraints
            C = tensor([[c.violation((r.metrics or {})[c.metric]) for c in cs] for r in done], len(cs))
        safety = outcomes.safety.max_violation_probability if outcomes.safety is not None else None
        Y, reference = None, None
        if outcomes.several:  # every objective, to minimise; the reference point in the same units
            from localbo.fronts import reference_point

            Y = tensor([outcomes.minimised(r.metrics or {}) for r in done], len(outcomes.objectives))
            feasible = torch.tensor([outcomes.feasible(r.metrics) is not False for r in done], dtype=torch.bool)
            inferred_from = Y.cpu()[feasible] if bool(feasible.any()) else Y.cpu()
            ref = reference_point(outcomes, inferred_from)[0]
            reference = torch.tensor(ref, dtype=torch.float64, device=self.device)

        return SuggestRequest(
            dim=dim,
            X=tensor([r.x for r in done], dim),
            y=tensor([study.sign * r.value for r in done], 1).reshape(-1),  # policies minimise
            numbers=torch.tensor([r.number for r in done], dtype=torch.long, device=self.device),
            X_pending=tensor([r.x for r in pending], dim),
            count=short,
            state=study.state,
            config=config,
            seed=study.seed,
            rng_seed=rng_seed(study),
            space=SpaceStructure(dim=dim, onehot=space.onehot_blocks(), finite=space.candidates is not None),
            device=self.device,
            finite=self.finite_request(space, done, pending, failed) if space.candidates is not None else None,
            C=C,
            polytope=study.polytope(self.device),
            X_failed=tensor(failed_points, dim) if failed_points is not None else None,
            n_failed=n_failed,
            max_violation_probability=safety,
            Y=Y,
            reference_point=reference,
        )

    def finite_request(
        self, space: StudySpace, done: Sequence[Row], pending: Sequence[Row], failed: list[int]
    ) -> FiniteSpace:
        """The policy's view of a finite space: candidates on the device, what was asked, the prior kernel."""
        finite = space.candidates
        assert finite is not None

        def index(values: list) -> torch.Tensor:
            return torch.tensor([v for v in values if v is not None], dtype=torch.long, device=self.device)

        return FiniteSpace(
            candidates=finite.X.to(self.device),
            X_index=index([r.candidate for r in done]),
            pending_index=index([r.candidate for r in pending]),
            blocked_index=index(failed),
            allow_repeats=finite.allow_repeats,
            kernel=finite.kernel.to(self.device) if finite.kernel is not None else None,
            features=finite.features.to(self.device) if finite.features is not None else None,
        )

    @staticmethod
    def taken(space: StudySpace, done: Sequence[Row], pending: Sequence[Row], failed: list[int]) -> set[int]:
        """Candidates a fallback must not take: asked, planned or failed (none when repeats are allowed)."""
        if space.candidates is None or space.candidates.allow_repeats:
            return set()
        used = {r.candidate for r in [*done, *pending] if r.candidate is not None}
        return used | set(failed)

    def points(
        self, name: str, space: StudySpace, suggestion: Any, request: SuggestRequest, short: int
    ) -> list[PlanPoint]:
        """The suggestion as plan rows, checked: shape, finiteness; on a finite space, indices not asked."""
        finite = space.candidates
        if finite is not None:
            index = suggestion.index
            if index is None or index.ndim != 1 or index.numel() < short:
                raise ValueError(f"{name} returned no candidate indices (need >= {short}) on a finite space")
            chosen = [int(i) for i in index.tolist()]
            if min(chosen) < 0 or max(chosen) >= finite.size:
                raise ValueError(f"{name} returned candidate indices outside 0..{finite.size - 1}")
            if not finite.allow_repeats:
                assert request.finite is not None
                used = set(request.finite.X_index.tolist()) | set(request.finite.pending_index.tolist())
                used |= set(request.finite.blocked_index.tolist())
                if used & set(chosen) or len(set(chosen)) != len(chosen):
                    raise ValueError(f"{name} chose a candidate that was asked already")
            return [(finite.x[c], name, c) for c in chosen]
        X = suggestion.X.detach().to("cpu", torch.float64)
        if X.ndim != 2 or X.shape[1] != space.dim or X.shape[0] < short or not torch.isfinite(X).all():
            raise ValueError(f"policy returned points of shape {tuple(X.shape)}, need >= {short} x {space.dim}, finite")
        X = X.clamp(0.0, 1.0)
        if (
            request.polytope is not None
        ):  # the contract every path keeps, whatever the policy did (a point told by hand)
            worst = float(violation(request.polytope, X).max())
            if worst > Polytope.TOLERANCE:
                raise ValueError(f"{name} returned a point that breaks the parameter constraints (by {worst:.3g})")
        return [(space.snap(row), name, None) for row in X.tolist()]
