"""The policy interface: a pure function of the study's data, in the unit cube.

    suggest(SuggestRequest) -> Suggestion

``X`` (n x d) holds the completed points, ``y`` (n) their values **to minimise**
(the engine negates a maximised objective once, at its boundary), ``X_pending``
(m x d) the points handed out or planned but not yet told. A policy returns at
least ``count`` rows (it may plan further ahead) and its new state, a JSON-able dict.

Policies import no database, HTTP or service code. They signal failure with the
small taxonomy below so that the engine handles each kind with one ``except``:

- ``PolicyRetry``: transient (a numerical hiccup); the engine calls once more.
- any other exception: the engine hands out a safe fallback point for this ask,
  records why on the study, and keeps the policy's previous state.
- ``PolicyConfigError`` is raised at study creation for a bad ``policy_config``
  and refuses the study (HTTP 422).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from pydantic import BaseModel, ConfigDict, Field


class PolicyError(Exception):
    """Base of the errors a policy raises on purpose."""


class PolicyRetry(PolicyError):
    """Transient failure: calling again with the same request may succeed."""


class PolicyConfigError(PolicyError):
    """The study's policy config cannot work; ``field`` names the offending key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class PolicyConfig(BaseModel):
    """Base of every policy's config: unknown keys are an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class PlanAheadConfig(PolicyConfig):
    """For policies that ignore the data: how many points one call plans."""

    plan_ahead: int = Field(default=16, ge=1, le=1024, description="Points planned per call")


@dataclass(frozen=True)
class SuggestRequest:
    dim: int
    X: torch.Tensor  # n x d, completed points in [0, 1]^d
    y: torch.Tensor  # n, values to minimise
    X_pending: torch.Tensor  # m x d, asked or planned, not yet told
    count: int  # rows needed now (>= 1)
    state: dict[str, Any]
    config: PolicyConfig
    seed: int  # the study's seed: same study, same sequence
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    finite: FiniteSpace | None = None  # set for a study whose space is a list of candidates


@dataclass(frozen=True)
class FiniteSpace:
    """A finite search space as the policy sees it: candidates by index, what was asked, the prior kernel.

    ``X`` rows of the request are ``candidates[X_index]``; a finite-capable policy answers with indices
    (``Suggestion.index``) and, unless ``allow_repeats``, never one in ``X_index`` or ``pending_index``.
    The prior kernel over candidates is, in this order: ``kernel`` (N x N, given), ``features`` (N x p,
    k = F F^T), else the policy's own kernel on ``candidates``.
    """

    candidates: torch.Tensor  # N x d, the candidates' parameters scaled to [0, 1]
    X_index: torch.Tensor  # n (long), the candidate of each completed row of X
    pending_index: torch.Tensor  # m (long), the candidates asked or planned, not yet told
    allow_repeats: bool = False
    blocked_index: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))  # failed: not again
    kernel: torch.Tensor | None = None  # N x N prior covariance over candidate ids
    features: torch.Tensor | None = None  # N x p, prior covariance F F^T (rows of unit norm: k(x, x) = 1)

    @property
    def size(self) -> int:
        return int(self.candidates.shape[0])


@dataclass
class Suggestion:
    X: torch.Tensor  # k x d with k >= count, in [0, 1]^d
    state: dict[str, Any]
    info: dict[str, Any] = field(default_factory=dict)  # internals worth showing
    index: torch.Tensor | None = None  # k (long): on a finite space, the candidates X's rows are


class Policy(ABC):
    name: ClassVar[str]
    Config: ClassVar[type[PolicyConfig]] = PolicyConfig
    # Bumped when the layout of ``state`` changes; an old state is then discarded.
    state_version: ClassVar[int] = 1
    # False for policies that ignore the data (random, sobol): the engine then skips
    # loading the study's trials on every plan.
    needs_history: ClassVar[bool] = True
    # The kinds of search space the policy runs on: "continuous" (the unit cube), "categorical" (the unit cube
    # with one-hot blocks, snapped to their argmax by the engine: fine for a global search, meaningless for a
    # local step or gradient), "finite" (candidates).
    spaces: ClassVar[frozenset[str]] = frozenset({"continuous"})

    @classmethod
    def check_space(cls, kind: str) -> None:
        """Raise PolicyConfigError if this policy cannot run on a space of this kind."""
        if kind not in cls.spaces:
            able = sorted(name for name, p in _registry().items() if kind in p.spaces)
            raise PolicyConfigError(
                "policy", f"{cls.name} does not run on a {kind} search space; policies that do: {able}"
            )

    @classmethod
    def check_study(cls, dim: int, config: PolicyConfig) -> None:
        """Raise PolicyConfigError if this policy cannot run a study of ``dim`` parameters."""
        return None  # most policies run any space

    @classmethod
    def plans_now(cls, state: dict[str, Any], n_complete: int, n_running: int) -> bool:
        """Whether a suggest now would make progress; the engine asks before planning ahead after a tell."""
        return True

    @classmethod
    def fallback_box(cls, state: dict[str, Any], config: PolicyConfig, dim: int) -> tuple[list[float], list[float]]:
        """Where a safe fallback point may lie (lower, upper corners in the unit cube) when the policy is late."""
        return [0.0] * dim, [1.0] * dim

    @abstractmethod
    def suggest(self, request: SuggestRequest) -> Suggestion: ...


def _registry() -> dict[str, type[Policy]]:
    from localbo.policies import registry  # the package imports this module first

    return registry()
