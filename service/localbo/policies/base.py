"""The policy interface: a pure function of the study's data, in the unit cube.

    suggest(SuggestRequest) -> Suggestion

``X`` (n x d) holds the completed points, ``y`` (n) their values **to minimise**
(the engine negates a maximised objective once, at its boundary), ``numbers`` (n) their trial
numbers, ``X_pending`` (m x d) the points handed out or planned but not yet told. A policy returns
at least ``count`` rows (it may plan further ahead) and its new state, an instance of its own
``State``: a typed, versioned pydantic model that the engine stores as ``dump_state(state)`` and
hands back, loaded and migrated by ``load_state``, on the next call.

Randomness comes from explicit generators only (``request.generator``, or generators seeded from
``request.seed``); a policy never reads or seeds torch's process-global RNG, so concurrent plans in
one process neither disturb nor depend on each other.

Policies import no database, HTTP or service code. Their failures fall into a small taxonomy so
that the engine handles each kind with one ``except``:

- any exception from ``suggest``: the engine hands out a safe fallback point for this ask (inside
  ``fallback_box``), records why on the study, and keeps the policy's previous state.
- ``PolicyConfigError`` (from ``check_space`` / ``check_study``, at study creation): the study's
  ``policy_config`` cannot work; the engine refuses the study (HTTP 422) naming ``field``.
- a stored state that cannot be loaded (a newer version, a failed ``migrate``, a layout that no
  longer validates): ``load_state`` returns a fresh state and a note; the engine goes on with the
  fresh state and records the note loudly on the study.
- a stored config that cannot be loaded (a field renamed or removed without a ``migrate``, a newer
  version): ``load_config`` returns None and why; the engine serves the study fallback points and
  records why on the study (a config cannot restart: it is what the user chose).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

import torch
from pydantic import BaseModel, ConfigDict, Field

SPACE_KINDS = ("continuous", "categorical", "finite")
KernelKind = Literal["rbf", "matern52"]  # the GP kernels the policies fit (gp.py)


class PolicyError(Exception):
    """Base of the errors a policy raises on purpose."""


class PolicyConfigError(PolicyError):
    """The study's policy config cannot work; ``field`` names the offending key."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class StateMigrationError(PolicyError):
    """A stored state of an older layout that ``PolicyState.migrate`` cannot bring up to date."""


class ConfigMigrationError(PolicyError):
    """A stored config of an older layout that ``PolicyConfig.migrate`` cannot bring up to date."""


class PolicyConfig(BaseModel):
    """Base of every policy's config: unknown keys are an error, not silently ignored.

    A key that only means something on some kinds of search space says so with
    ``json_schema_extra=only_on("finite")``; ``Policy.check_space`` refuses it, when given, elsewhere.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    # Stored configs hold every default: bump ``version`` when a field is renamed or removed (or changes
    # meaning) and override ``migrate``, so that the studies created before still load.
    version: ClassVar[int] = 1

    @classmethod
    def migrate(cls, raw: dict[str, Any], from_version: int) -> dict[str, Any]:
        """The raw config stored at ``from_version`` (< version), in the current layout."""
        raise ConfigMigrationError(f"{cls.__name__} has no migration from v{from_version} to v{cls.version}")


def only_on(*kinds: str) -> dict[str, Any]:
    """``json_schema_extra`` of a config key that applies only to these space kinds."""
    assert all(kind in SPACE_KINDS for kind in kinds), kinds
    return {"spaces": list(kinds)}


class PlanAheadConfig(PolicyConfig):
    """For policies that ignore the data: how many points one call plans (a call costs a few transactions
    whatever its size, so a cheap policy plans many: at 64 an ask/tell cycle pays ~1/64 of one)."""

    plan_ahead: int = Field(default=64, ge=1, le=1024, description="Points planned per call")


class PolicyState(BaseModel):
    """Base of every policy's state: typed, JSON-able, versioned.

    Bump ``version`` when the layout changes incompatibly and override ``migrate`` to bring the
    raw data of older versions up to date; a state nobody can migrate restarts the policy.
    """

    model_config = ConfigDict(extra="forbid")
    version: ClassVar[int] = 1

    @classmethod
    def migrate(cls, raw: dict[str, Any], from_version: int) -> dict[str, Any]:
        """The raw data of a state stored at ``from_version`` (< version), in the current layout."""
        raise StateMigrationError(f"{cls.__name__} has no migration from v{from_version} to v{cls.version}")


ConfigT = TypeVar("ConfigT", bound=PolicyConfig)
StateT = TypeVar("StateT", bound=PolicyState)


def state_as(state: PolicyState, cls: type[StateT]) -> StateT:
    """``state`` as the policy's own State class (a TypeError if the engine passed another policy's)."""
    if not isinstance(state, cls):
        raise TypeError(f"expected a {cls.__name__}, got a {type(state).__name__}")
    return state


def config_as(config: PolicyConfig, cls: type[ConfigT]) -> ConfigT:
    """``config`` as the policy's own Config class (a TypeError if the engine passed another policy's)."""
    if not isinstance(config, cls):
        raise TypeError(f"expected a {cls.__name__}, got a {type(config).__name__}")
    return config


class Progress(BaseModel):
    done: int
    total: int
    label: str


class Box(BaseModel):
    """A box in the unit cube: a trust region or an exploration box."""

    lower: list[float]
    upper: list[float]


class Display(BaseModel):
    """What the dashboard draws about a policy's state; every field optional, unit-cube coordinates."""

    phase: str | None = None  # e.g. "exploration batch", "top-up", "initial design"
    progress: Progress | None = None
    centre: list[float] | None = None  # the iterate x_t / the region's centre
    box: Box | None = None
    path: list[list[float]] | None = None  # past centres, oldest first (bounded)
    numbers: dict[str, float | int | str | None] = Field(default_factory=dict)  # named numbers a person reads
    # keys of ``numbers`` that are objective values, in the policies' minimised units: the engine shows them in
    # the study's (a maximised study's best is +0.22, not the -0.22 the policy minimised); not sent
    objective_values: list[str] = Field(default_factory=list, exclude=True)


@dataclass(frozen=True)
class SpaceStructure:
    """The shape of the unit cube a policy works in."""

    dim: int
    onehot: tuple[tuple[int, int], ...] = ()  # (first column, width) of each categorical's one-hot block
    finite: bool = False

    @property
    def kind(self) -> str:
        """continuous | categorical | finite, as ``Policy.spaces`` names them."""
        return "finite" if self.finite else "categorical" if self.onehot else "continuous"


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


@dataclass(frozen=True)
class Polytope:
    """Linear parameter constraints in the unit cube: A_ub u <= b_ub and A_eq u == b_eq (each row of width d).
    Every point a policy returns must satisfy them (within ``TOLERANCE``) besides lying in [0, 1]^d."""

    A_ub: torch.Tensor  # k x d
    b_ub: torch.Tensor  # k
    A_eq: torch.Tensor  # e x d
    b_eq: torch.Tensor  # e

    TOLERANCE: ClassVar[float] = 1e-9

    def violation(self, X: torch.Tensor) -> torch.Tensor:
        """The largest violation of each row of ``X`` (n x d -> n; <= 0: satisfied)."""
        parts = [torch.zeros(X.shape[0], dtype=X.dtype, device=X.device)]
        if self.A_ub.numel():
            parts.append((X @ self.A_ub.T - self.b_ub).amax(dim=-1))
        if self.A_eq.numel():
            parts.append((X @ self.A_eq.T - self.b_eq).abs().amax(dim=-1))
        return torch.stack(parts, dim=-1).amax(dim=-1)


# What a policy may declare it serves (``Policy.handles``); a study that needs more is refused at creation.
CAPABILITIES = ("constraints", "parameter_constraints", "failures", "safety", "objectives")


@dataclass(frozen=True)
class SuggestRequest(Generic[ConfigT, StateT]):
    """One call's input. ``generator`` is a CPU generator seeded from ``rng_seed`` when the request is built
    (it travels over the wire as ``rng_seed``); ``dataclasses.replace`` builds a fresh one. Typed by the
    policy's Config and State: ``Policy[C, S].suggest`` takes a ``SuggestRequest[C, S]``."""

    dim: int
    X: torch.Tensor  # n x d, completed points in [0, 1]^d
    y: torch.Tensor  # n, values to minimise
    numbers: torch.Tensor  # n (long), the trial number of each row of X
    X_pending: torch.Tensor  # m x d, asked or planned, not yet told
    count: int  # rows needed now (>= 1)
    state: StateT  # the policy's own State, loaded (and migrated) by the engine
    config: ConfigT  # the policy's own Config, loaded (and migrated) by the engine
    seed: int  # the study's seed: same study, same sequence
    rng_seed: int  # seeds ``generator``
    space: SpaceStructure
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    finite: FiniteSpace | None = None  # set for a study whose space is a list of candidates
    # Outcome constraints: C[i, j] is constraint j's value at X[i], <= 0 where it holds (None: the study has none)
    C: torch.Tensor | None = None  # n x m
    polytope: Polytope | None = None  # linear parameter constraints (None: the whole cube)
    X_failed: torch.Tensor | None = None  # f x d, points whose trials failed (set when the study avoids failures)
    n_failed: int = 0  # the study's failed trials, whether or not it avoids failures (X_failed has their points then)
    max_violation_probability: float | None = None  # safe mode: the chance of a violation a point may have
    # Several objectives (a study with 2 to 4): Y[i, k] is objective k's value at X[i], every column to minimise
    # (maximised ones negated, as ``y``); ``y`` is then Y's first column. None: the study has one objective.
    Y: torch.Tensor | None = None  # n x k
    # The point of ``Y``'s space a Pareto point must be below (every column) to count in the hypervolume: the
    # study's ``reference_point`` in minimised units, or one inferred from the data by the engine.
    reference_point: torch.Tensor | None = None  # k
    generator: torch.Generator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "generator", torch.Generator().manual_seed(self.rng_seed % 2**63))


@dataclass
class Suggestion:
    X: torch.Tensor  # k x d with k >= count, in [0, 1]^d
    state: PolicyState  # the policy's new State
    index: torch.Tensor | None = None  # k (long): on a finite space, the candidates X's rows are


class Policy(ABC, Generic[ConfigT, StateT]):
    """A policy over its Config and State classes: ``class Sobol(Policy[PlanAheadConfig, DrawnState])``, its
    classmethods and ``suggest`` typed by them. The engine holds any policy as a ``type[Policy[Any, Any]]``."""

    name: ClassVar[str]
    # The policy's own Config and State classes: plain class attributes, as a ClassVar cannot name a type
    # variable. The defaults are a bare ``Policy``'s (no options, no memory); mypy checks a default against
    # every ConfigT and StateT, hence the ignores: a policy of other types sets its own.
    Config: type[ConfigT] = PolicyConfig  # type: ignore[assignment]  # a bare Policy's default, see above
    State: type[StateT] = PolicyState  # type: ignore[assignment]  # a bare Policy's default, see above
    # False for policies that ignore the data (random, sobol): the engine then skips
    # loading the study's trials on every plan.
    needs_history: ClassVar[bool] = True
    # The kinds of search space the policy runs on: "continuous" (the unit cube), "categorical" (the unit cube
    # with one-hot blocks, snapped to their argmax by the engine: fine for a global search, meaningless for a
    # local step or gradient), "finite" (candidates).
    spaces: ClassVar[frozenset[str]] = frozenset({"continuous"})
    # What else of a study the policy serves (``CAPABILITIES``): outcome constraints (``request.C``), linear
    # parameter constraints (``request.polytope``), failures to avoid (``request.X_failed``), safe mode,
    # several objectives (``request.Y``).
    handles: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def check_space(cls, kind: str, config: ConfigT | None = None) -> None:
        """Raise PolicyConfigError if this policy cannot run on a space of this kind, or if ``config``
        sets a key that does not apply to it (a finite space's GP hyperparameters on a continuous one)."""
        if kind not in cls.spaces:
            able = sorted(name for name, p in _registry().items() if kind in p.spaces)
            raise PolicyConfigError(
                "policy", f"{cls.name} does not run on a {kind} search space; policies that do: {able}"
            )
        if config is None:
            return
        for key in sorted(config.model_fields_set):
            extra = type(config).model_fields[key].json_schema_extra
            spaces = extra.get("spaces") if isinstance(extra, dict) else None
            if isinstance(spaces, list) and kind not in spaces:
                where = " and ".join(str(s) for s in spaces)
                raise PolicyConfigError(
                    f"policy_config.{key}", f"{key} only applies to {where} search spaces, this one is {kind}"
                )

    @classmethod
    def check_study(cls, dim: int, config: ConfigT) -> None:
        """Raise PolicyConfigError if this policy cannot run a study of ``dim`` parameters."""
        return None  # most policies run any space

    @classmethod
    def check_needs(cls, kind: str, dim: int, needs: frozenset[str], config: ConfigT | None = None) -> None:
        """Raise PolicyConfigError if this policy cannot serve a study of this space that needs all of ``needs``
        (``CAPABILITIES``) together, with ``config`` when given; ``handles`` already covers each one alone."""
        return None

    @classmethod
    def load_state(cls, saved: Mapping[str, Any] | None) -> tuple[StateT, str | None]:
        """The State stored as ``{"schema": version, "data": {...}}`` (``dump_state``), and a note when it restarted.

        Empty or None: a fresh state, no note. An older version: ``State.migrate`` first. A newer
        version, a failed migration or data that does not validate: a fresh state and why.
        """
        fresh = cls.State()
        if not saved:
            return fresh, None
        version, data = saved.get("schema"), saved.get("data")
        if not isinstance(version, int) or not isinstance(data, Mapping):
            return fresh, f"{cls.name}: the stored policy state has no schema version or data; the policy restarts"
        current = cls.State.version
        try:
            if version > current:
                raise StateMigrationError(f"state v{version} is newer than this server's v{current}")
            raw = dict(data) if version == current else cls.State.migrate(dict(data), version)
            return cls.State.model_validate(raw), None
        except Exception as exc:  # any failure to load is the same to the engine: restart, loudly
            return (
                fresh,
                f"{cls.name}: the stored policy state v{version} could not be loaded ({exc}); the policy restarts",
            )

    @classmethod
    def load_config(cls, saved: Mapping[str, Any] | None, version: int) -> tuple[ConfigT | None, str | None]:
        """The Config stored as ``saved`` at ``version`` (migrated when older), or None and why it cannot load."""
        current = cls.Config.version
        try:
            if version > current:
                raise ConfigMigrationError(f"config v{version} is newer than this server's v{current}")
            raw = dict(saved or {})
            return cls.Config.model_validate(raw if version == current else cls.Config.migrate(raw, version)), None
        except Exception as exc:  # whatever the reason, the study cannot run this policy as configured
            return None, f"{cls.name}: the stored policy config v{version} could not be loaded ({_brief(exc)})"

    @classmethod
    def queue(cls, config: ConfigT) -> str:
        """The worker queue this study's suggests go to: "auto" (by size), "cpu" or "gpu"."""
        return "auto"

    @classmethod
    def gp_points(cls, state: StateT, config: ConfigT, dim: int, n: int) -> int:
        """How many of n results its GP fits (what a suggest's work grows with, and a GPU's gain): ``max_data``
        where the config bounds the data, else all n."""
        cap = getattr(config, "max_data", None)
        return n if cap is None else min(n, int(cap))

    @classmethod
    def kernel(cls, config: ConfigT) -> KernelKind:
        """The GP kernel the policy models the objective with (the dashboard's analysis uses the same)."""
        return "rbf"

    @classmethod
    def dump_state(cls, state: PolicyState) -> dict[str, Any]:
        """What the engine stores: ``{"schema": State.version, "data": JSON}`` (a TypeError if ``state`` is not
        a ``State``: a ``Suggestion`` holds any PolicyState)."""
        return {"schema": cls.State.version, "data": state_as(state, cls.State).model_dump(mode="json")}

    @classmethod
    def plans_now(cls, state: StateT, n_complete: int, n_running: int) -> bool:
        """Whether a suggest now would make progress; the engine asks before planning ahead after a tell."""
        return True

    @classmethod
    def fallback_box(cls, state: StateT, config: ConfigT, dim: int) -> tuple[list[float], list[float]]:
        """Where a safe fallback point may lie (lower, upper corners in the unit cube) when the policy is late."""
        return [0.0] * dim, [1.0] * dim

    @classmethod
    def display(cls, state: StateT, config: ConfigT, n_complete: int) -> Display | None:
        """What a person should see about ``state`` (None: nothing beyond the trials)."""
        return None

    @abstractmethod
    def suggest(self, request: SuggestRequest[ConfigT, StateT]) -> Suggestion: ...


def _brief(exc: Exception) -> str:
    """A validation error's first line and its count, not pydantic's multi-line essay."""
    text = str(exc).strip().splitlines()
    return "; ".join(line.strip() for line in text[:3])


def _registry() -> dict[str, type[Policy[Any, Any]]]:
    from localbo.policies import registry  # the package imports this module first

    return registry()
