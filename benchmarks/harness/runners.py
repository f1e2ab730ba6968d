"""Runners: drive one method on one objective for one seed, and record every evaluation.

Three ways to run a method (``RunSpec.runner``):

- ``direct``: a localbo policy through the policy API (``localbo.policies``), emulating the
  planner (``service/localbo/planning/``): a plan queue refilled by ``suggest`` only when it runs
  short (extra rows are queued), ``X_pending`` = the planned points not yet evaluated, the points
  clamped to ``[0, 1]^d``, the state stored as JSON between calls (``Policy.dump_state``/``load_state``),
  any other failure answered with the engine's fallback points (counted in ``errors``), and the
  objective's direction converted to minimisation. Evaluation is sequential (ask 1, tell 1).
- ``http``: the same policy end to end: a study on a running server (``RunSpec.url``), created
  and driven with the thin client (``create_study(..., policy=, policy_config=, seed=)``,
  ``study.ask()`` / ``study.tell()``). With the same seed, ``direct`` and ``http`` runs of a
  deterministic policy evaluate the same points.
- ``optuna``: the peers ``tpe`` (``TPESampler(seed=)``), ``gpsampler`` (``GPSampler(seed=)``)
  and ``optuna-random`` (``RandomSampler(seed=)``), with Optuna's ask/tell interface, in process.
- ``ax``: the peer ``ax``, Ax's ``Client(random_seed=)`` with its default generation strategy (Sobol, then
  BoTorch's modular model with log-EI), in process; ``ax-platform`` is not in the ``bench`` extra
  (``pip install ax-platform``: it is heavy, and only the league's ``ax`` rows need it).

Each evaluation gives one row (``COLUMNS``): the noisy value told, the noise-free value at the
point, the best noise-free value so far, and the noise-free value at the policy's incumbent: where
the latest stored state holds an incumbent (``INCUMBENT_KEYS``, a list in
``[0, 1]^d``), ``f(x_t)`` is recorded with ``incumbent_from = "policy"``; otherwise the incumbent is
the best evaluated point (``incumbent = best_so_far``, ``incumbent_from = "best"``). The HTTP API
does not expose the policy state, so ``http`` runs record ``"best"``.

Episodic objectives (``Objective.episode``: the RL tasks) are noisy by nature: evaluation i is one
episode reset with a seed fixed by (objective, run seed, i), the same for every method; ``y`` = ``f``
= that episode's return, so ``best_so_far`` is the best single return seen; the incumbent's value
is ``obj(x)``, the mean return over the objective's fixed test episodes, at the policy's x_t or,
for policies without one, at the evaluated point with the best return (``incumbent_from = "best"``).
"""

from __future__ import annotations

import json
import math
import time
import uuid
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from harness.objectives import DTYPE, Objective, get_objective, instance_for, noise_draws, stable_seed

COLUMNS = [
    "objective",
    "instance",
    "method",
    "runner",
    "seed",
    "eval",
    "y",
    "f",
    "best_so_far",
    "incumbent",
    "incumbent_from",
    "source",
    "elapsed_s",
]
OPTUNA_METHODS = ("tpe", "gpsampler", "cmaes", "optuna-random")
AX_METHODS = ("ax",)
INCUMBENT_KEYS = ("incumbent", "x_t", "x_incumbent", "xt")
FALLBACK = "fallback"

Progress = Callable[[int], None]


@dataclass(frozen=True)
class RunSpec:
    objective: str
    method: str
    runner: str  # "direct" | "http" | "optuna"
    seed: int
    evals: int
    policy_config: dict[str, Any] | None = None
    url: str | None = None  # the server, for runner "http"
    policy: str | None = None  # the registered policy when ``method`` is a label for a configured variant
    noise_std: float | None = None  # evaluation noise instead of the objective's own (0: noise-free)
    device: str = "cpu"  # where a direct run's policy computes (SuggestRequest.device), e.g. "cuda"
    deadline: float | None = None  # epoch seconds: stop there and keep the evaluations so far (a cut run)
    # an http run's asks wait for the policy (up to the server's LOCALBO_ASK_WAIT_MAX_SECONDS) instead of
    # taking fallback points, unless a run says it may take them (then the server's default wait holds)
    allow_fallbacks: bool = False

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.time() > self.deadline

    @property
    def policy_name(self) -> str:
        return self.policy or self.method

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.objective, self.method, self.runner, self.seed)


@dataclass
class RunResult:
    spec: RunSpec
    rows: list[dict[str, Any]]
    wall_s: float
    errors: list[str] = field(default_factory=list)  # policy failures answered with fallback points
    cpu_s: float | None = None  # CPU seconds of the process over the run (all its threads)


def runner_for(method: str, runner: str) -> str:
    """The runner a method actually uses: Optuna's and Ax's peers always run in process."""
    if method in AX_METHODS:
        return "ax"
    return "optuna" if method in OPTUNA_METHODS else runner


def known_methods() -> list[str]:
    from localbo.policies import registry

    return [*registry(), *OPTUNA_METHODS, *AX_METHODS]


def find_incumbent(dim: int, *sources: dict[str, Any] | None) -> Tensor | None:
    """The first ``INCUMBENT_KEYS`` entry of the dicts that is a finite vector of length ``dim``."""
    for source in sources:
        if not isinstance(source, dict):
            continue
        for key in INCUMBENT_KEYS:
            value = source.get(key)
            if not isinstance(value, list | tuple | Tensor):
                continue
            try:
                x = torch.as_tensor(value, dtype=DTYPE).reshape(-1)
            except (TypeError, ValueError, RuntimeError):
                continue
            if x.numel() == dim and bool(torch.isfinite(x).all()):
                return x.clamp(0.0, 1.0)
    return None


class Recorder:
    """Turns evaluations into rows, with the running best and the incumbent's value."""

    def __init__(self, spec: RunSpec, objective: Objective, progress: Progress | None) -> None:
        self.spec = spec
        self.objective = objective
        self.sign = 1.0 if objective.direction == "minimize" else -1.0
        self.eps = noise_draws(objective, spec.seed, spec.evals)
        self.noise_std = objective.noise_std if spec.noise_std is None else spec.noise_std
        self.rows: list[dict[str, Any]] = []
        self.best = math.inf  # in minimisation form
        self.progress = progress
        self.t0 = time.perf_counter()
        self._incumbent_x: Tensor | None = None
        self._incumbent_f = math.nan
        self._last_x: Tensor | None = None  # the point of the latest evaluation (user units)
        self._best_x: Tensor | None = None  # episodic objectives: the point with the best return (unit cube)

    def evaluate(self, x_user: Tensor) -> tuple[float, float]:
        """(noisy value, noise-free value) of the next evaluation, in the objective's direction."""
        i = len(self.rows)
        self._last_x = x_user
        if self.objective.episode is not None:  # one seeded episode: noisy, and the only value there is
            y = self.objective.episode(x_user, stable_seed("episode", self.objective.name, self.spec.seed, i))
            return y, y
        f = float(self.objective(x_user)[0])
        return f + self.noise_std * float(self.eps[i]), f

    def _value_at(self, incumbent_unit: Tensor) -> float:
        """The objective's value at an incumbent, computed again only when the incumbent moves."""
        if self._incumbent_x is None or not torch.equal(incumbent_unit, self._incumbent_x):
            self._incumbent_x = incumbent_unit.clone()
            self._incumbent_f = float(self.objective(self.objective.to_user(incumbent_unit))[0])
        return self._incumbent_f

    def record(self, y: float, f: float, source: str, incumbent_unit: Tensor | None = None) -> None:
        if self.sign * f < self.best and self._last_x is not None:
            self._best_x = self.objective.to_unit(self._last_x)
        self.best = min(self.best, self.sign * f)
        if incumbent_unit is not None:
            incumbent, incumbent_from = self._value_at(incumbent_unit), "policy"
        elif self.objective.episode is not None and self._best_x is not None:
            incumbent, incumbent_from = self._value_at(self._best_x), "best"
        else:
            incumbent, incumbent_from = self.sign * self.best, "best"
        self.rows.append(
            {
                "objective": self.spec.objective,
                "instance": self.objective.instance,
                "method": self.spec.method,
                "runner": self.spec.runner,
                "seed": self.spec.seed,
                "eval": len(self.rows) + 1,
                "y": y,
                "f": f,
                "best_so_far": self.sign * self.best,
                "incumbent": incumbent,
                "incumbent_from": incumbent_from,
                "source": source,
                "elapsed_s": time.perf_counter() - self.t0,
            }
        )
        if self.progress is not None:
            self.progress(1)

    def result(self, errors: list[str] | None = None) -> RunResult:
        return RunResult(self.spec, self.rows, time.perf_counter() - self.t0, errors or [])


def run(spec: RunSpec, progress: Progress | None = None) -> RunResult:
    """Run ``spec`` to its budget of evaluations."""
    objective = get_objective(spec.objective, instance_for(spec.objective, spec.seed))
    runners = {"direct": run_direct, "http": run_http, "optuna": run_optuna, "ax": run_ax}
    if spec.runner not in runners:
        raise ValueError(f"unknown runner {spec.runner!r}; expected direct, http, optuna or ax")
    cpu = time.process_time()
    result = runners[spec.runner](spec, objective, progress)
    result.cpu_s = time.process_time() - cpu  # runs run one at a time in their process
    return result


# -- direct: the policy API, emulating the engine ---------------------------------------------


def run_direct(spec: RunSpec, objective: Objective, progress: Progress | None = None) -> RunResult:
    from localbo.planning.fallback import mixed_seed
    from localbo.planning.runner import FAILURE_SALT, RNG_SALT
    from localbo.policies import get_policy
    from localbo.policies.requests import make_request

    cls = get_policy(spec.policy_name)
    config = cls.Config.model_validate(spec.policy_config or {})
    cls.check_study(objective.dim, config)
    config = cls.Config.model_validate(config.model_dump(mode="json"))  # as stored by the engine
    rec = Recorder(spec, objective, progress)
    d = objective.dim
    queue: deque[tuple[Tensor, str]] = deque()
    X_done: list[Tensor] = []
    y_done: list[float] = []  # minimisation form, as the engine hands them to the policy
    stored: dict[str, Any] = {}  # the state as the engine stores it: {"schema", "data"}
    incumbent: Tensor | None = None
    version = 0  # the engine's policy_state_version: one per stored plan
    errors: list[str] = []

    def stack(rows: list[Tensor]) -> Tensor:
        return torch.stack(rows) if rows else torch.empty(0, d, dtype=DTYPE)

    for _ in range(spec.evals):
        if spec.out_of_time():
            break  # a cut run: len(rows) < spec.evals says so
        if not queue:
            state, _ = cls.load_state(stored or None)
            request = make_request(
                cls,
                stack(X_done),
                torch.tensor(y_done, dtype=DTYPE),
                pending=stack([x for x, _ in queue]),  # planned, not yet evaluated (none in sequential use)
                state=state,
                config=config,
                seed=spec.seed,
                rng_seed=mixed_seed(spec.seed, RNG_SALT, version),  # as the engine seeds the request's generator
                device=spec.device,
            )
            try:
                suggestion = cls().suggest(request)
                X = suggestion.X.detach().to("cpu", DTYPE)
                if X.ndim != 2 or X.shape[1] != d or X.shape[0] < 1 or not bool(torch.isfinite(X).all()):
                    raise ValueError(f"policy returned points of shape {tuple(X.shape)}, need >= 1 x {d}, finite")
                new_stored = json.loads(json.dumps(cls.dump_state(suggestion.state)))  # stored as JSON by the engine
                found = find_incumbent(d, new_stored["data"])
                incumbent = found if found is not None else incumbent
                queue.extend((x, cls.name) for x in X.clamp(0.0, 1.0))
                stored = new_stored
            except Exception as exc:  # the engine's fallback: seeded uniform points in the fallback box, state kept
                errors.append(f"eval {len(rec.rows) + 1}: {type(exc).__name__}: {exc}")
                generator = torch.Generator().manual_seed(mixed_seed(spec.seed, FAILURE_SALT, version))
                lo, hi = (torch.tensor(v, dtype=DTYPE) for v in cls.fallback_box(state, config, d))
                queue.append((lo + torch.rand(1, d, generator=generator, dtype=DTYPE)[0] * (hi - lo), FALLBACK))
            version += 1
        x, source = queue.popleft()
        y, f = rec.evaluate(objective.to_user(x))
        X_done.append(x)
        y_done.append(rec.sign * y)
        rec.record(y, f, source, incumbent)
    return rec.result(errors)


# -- http: the service end to end -------------------------------------------------------------


def param_names(d: int) -> list[str]:
    """Zero-padded, so that every storage keeps them in numeric order."""
    width = max(3, len(str(d - 1)))
    return [f"x{i:0{width}d}" for i in range(d)]


def run_http(spec: RunSpec, objective: Objective, progress: Progress | None = None) -> RunResult:
    from localbo_client import Client
    from localbo_client.client import POLICY_WAIT_SECONDS

    if spec.url is None:
        raise ValueError("runner 'http' needs RunSpec.url (a running localbo server)")
    names = param_names(objective.dim)
    lo, hi = objective.bounds.tolist()
    space = {n: {"type": "float", "low": lo[i], "high": hi[i]} for i, n in enumerate(names)}
    rec = Recorder(spec, objective, progress)
    errors: list[str] = []
    with Client(spec.url, timeout=900.0) as client:
        study = client.create_study(
            f"{spec.objective}-{spec.method}-s{spec.seed}-{uuid.uuid4().hex[:8]}",
            space=space,
            direction=objective.direction,
            policy=spec.policy_name,
            policy_config=spec.policy_config,
            seed=spec.seed,
            metadata={"benchmark": "synthetic", "objective": spec.objective, "instance": objective.instance},
        )
        wait = None if spec.allow_fallbacks else POLICY_WAIT_SECONDS
        for _ in range(spec.evals):
            trial = study.ask(wait_seconds=wait)
            x = torch.tensor([trial.params[n] for n in names], dtype=DTYPE)
            y, f = rec.evaluate(x)
            study.tell(trial, y)
            if trial.source == FALLBACK:
                errors.append(f"eval {len(rec.rows) + 1}: fallback point")
            rec.record(y, f, trial.source)
        last_error = study.refresh().get("last_policy_error")
        if last_error:
            errors.append(f"last_policy_error: {last_error}")
    return rec.result(errors)


# -- optuna peers ---------------------------------------------------------------------------------


def make_sampler(method: str, seed: int) -> Any:
    import optuna

    if method == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if method == "gpsampler":
        return optuna.samplers.GPSampler(seed=seed)
    if method == "cmaes":  # CMA-ES (the cmaes package), what high-dimensional users pick beside TuRBO
        return optuna.samplers.CmaEsSampler(seed=seed)
    if method == "optuna-random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(f"unknown Optuna method {method!r}; expected one of {OPTUNA_METHODS}")


def run_optuna(spec: RunSpec, objective: Objective, progress: Progress | None = None) -> RunResult:
    import optuna
    from optuna.distributions import FloatDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    names = param_names(objective.dim)
    lo, hi = objective.bounds.tolist()
    distributions = {n: FloatDistribution(lo[i], hi[i]) for i, n in enumerate(names)}
    rec = Recorder(spec, objective, progress)
    study = optuna.create_study(direction=objective.direction, sampler=make_sampler(spec.method, spec.seed))
    for _ in range(spec.evals):
        if spec.out_of_time():
            break
        trial = study.ask(distributions)
        x = torch.tensor([trial.params[n] for n in names], dtype=DTYPE)
        y, f = rec.evaluate(x)
        study.tell(trial, y)
        rec.record(y, f, spec.method)
    return rec.result()


# -- Ax's default ---------------------------------------------------------------------------------


def run_ax(spec: RunSpec, objective: Objective, progress: Progress | None = None) -> RunResult:
    """Ax's ``Client`` with its default generation strategy, ask/tell one trial at a time."""
    from ax.api.client import Client
    from ax.api.configs import RangeParameterConfig

    from harness.sweep import quiet_ax

    quiet_ax()
    warnings.filterwarnings("ignore")
    names = param_names(objective.dim)
    lo, hi = objective.bounds.tolist()
    client = Client(random_seed=spec.seed)
    client.configure_experiment(
        parameters=[RangeParameterConfig(name=n, bounds=(lo[i], hi[i]), parameter_type="float") for i, n in
                    enumerate(names)],
        name=f"{spec.objective}-{spec.seed}",
    )  # fmt: skip
    client.configure_optimization(objective="-f" if objective.direction == "minimize" else "f")
    quiet_ax()
    rec = Recorder(spec, objective, progress)
    for _ in range(spec.evals):
        if spec.out_of_time():
            break
        ((index, params),) = client.get_next_trials(max_trials=1).items()
        x = torch.tensor([float(params[n]) for n in names], dtype=DTYPE)
        y, f = rec.evaluate(x)
        client.complete_trial(index, raw_data={"f": y})
        rec.record(y, f, spec.method)
    return rec.result()
