"""``LocalBOSampler``: an unchanged Optuna objective runs on a localbo policy.

```python
import optuna
from localbo_client.optuna_sampler import LocalBOSampler

study = optuna.create_study(sampler=LocalBOSampler("http://127.0.0.1:8000", policy="minucb"))
study.optimize(objective, n_trials=100, n_jobs=2)
```

The sampler mirrors the Optuna study's search space into a localbo study: the ``space`` you give
(Optuna distributions), or the intersection of the completed trials' spaces after ``n_startup_trials``
(which an independent sampler draws, and which the localbo study then gets as external trials). Each
trial's parameters come from the server's ask; its result, failure or prune goes back as a tell
(a pruned or failed trial is a failed localbo trial). The localbo trial's number is kept in the Optuna
trial's system attributes, so every process sharing an Optuna storage (RDB) tells the right trial,
and all of them share one localbo study (``study_name``, by default ``optuna-<the Optuna study's name>``).
Parameters outside the mirrored space (dynamic ones) come from the independent sampler.

Constraints: give the sampler Optuna's ``constraints_func`` (a trial is feasible when every value it returns is
<= 0) and it maps them onto localbo outcome constraints. The localbo study then names the metrics
``objective`` and ``c0`` .. ``c{k-1}``, with the constraints ``{"metric": "c{j}", "op": "<=", "bound": 0}``,
and each tell carries the objective's value and the constraint values Optuna stored for the trial (its
``constraints`` system attribute, which ``constraints_func`` fills once the trial is done, as Optuna's own
samplers do). The policy must serve outcome constraints: ``turbo`` (SCBO, the default with constraints),
``minucb``, ``la-minucb``, ``gibo``, ``ei``, ``ucb``, ``auto``, and with several directions ``morbo`` or
``qlognehvi`` too; the server's refusal names those that serve the study.

```python
def feasible_when_nonpositive(trial: optuna.trial.FrozenTrial) -> list[float]:
    return [trial.params["x"] + trial.params["y"] - 1.0]    # x + y <= 1

sampler = LocalBOSampler(url, "turbo", constraints_func=feasible_when_nonpositive)
study = optuna.create_study(sampler=sampler)
study.optimize(objective, n_trials=60)
study.best_trial                        # the best feasible trial, on Optuna's side as on localbo's
```

Several objectives: an Optuna study created with ``directions=[...]`` becomes a localbo study with one objective per
direction, named ``objective0`` .. ``objective{k-1}``; each tell carries every value. The policy must serve several
objectives: ``auto`` (the default then: ``qlognehvi`` up to 5 parameters; beyond, ``minucb`` on ParEGO scalarisations
for 5 results per parameter, then ``morbo``; as measured in benchmarks/results/multiobjective.md), ``morbo``,
``qlognehvi``, ``minucb``, ``random`` or ``sobol``.
``study.best_trials`` is Optuna's Pareto front; the localbo study's is ``client.get_study(name).pareto``.

```python
sampler = LocalBOSampler(url, space=space)              # auto, for the two directions below
study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)
study.optimize(lambda t: (yield_of(t), cost_of(t)), n_trials=60)
```

Needs ``pip install "localbo-client[optuna]"``; the rest of the client needs only httpx.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.samplers._base import _process_constraints_after_trial  # what Optuna's own samplers call
from optuna.search_space import IntersectionSearchSpace
from optuna.trial import FrozenTrial, TrialState

from localbo_client.client import POLICY_WAIT_SECONDS, Client, Study
from localbo_client.errors import BadRequest
from localbo_client.outcomes import Result, result_body
from localbo_client.spaces import canonical_space

NUMBER_ATTR = "localbo:number"  # the localbo trial behind an Optuna trial
STUDY_ATTR = "localbo:study"  # the localbo study behind an Optuna study
# Where Optuna keeps the values ``constraints_func`` returned for a trial (a trial system attribute, a list;
# optuna.study._constrained_optimization._CONSTRAINTS_KEY)
CONSTRAINTS_ATTR = "constraints"
OBJECTIVE_METRIC = "objective"  # the localbo metric of the Optuna objective, in a study with constraints


def objective_metric(i: int, several: bool) -> str:
    """The localbo metric of Optuna's ``i``-th objective: ``objective``, or ``objective{i}`` among several.

    ```python
    objective_metric(0, several=False), objective_metric(1, several=True)     # ("objective", "objective1")
    ```
    """
    return f"{OBJECTIVE_METRIC}{i}" if several else OBJECTIVE_METRIC


def localbo_space(distributions: dict[str, BaseDistribution]) -> dict[str, dict[str, Any]]:
    """The localbo space of Optuna distributions; ``ValueError`` for one localbo cannot mirror.

    ```python
    localbo_space({"x": FloatDistribution(0, 1), "n": IntDistribution(1, 8)})
    # {"n": {"type": "int", "low": 1, "high": 8, "log": False}, "x": {"type": "float", ...}}
    ```
    """
    space: dict[str, dict[str, Any]] = {}
    for name, d in sorted(distributions.items()):
        if isinstance(d, FloatDistribution) and d.step is None:
            space[name] = {"type": "float", "low": d.low, "high": d.high, "log": d.log}
        elif isinstance(d, IntDistribution) and d.step == 1:
            space[name] = {"type": "int", "low": d.low, "high": d.high, "log": d.log}
        elif isinstance(d, CategoricalDistribution):
            space[name] = {"type": "categorical", "choices": list(d.choices)}
        else:
            raise ValueError(f"{name}: {d!r} has a step; localbo mirrors continuous floats, ints and categoricals")
    return space


def mirrorable(distributions: dict[str, BaseDistribution]) -> dict[str, BaseDistribution]:
    """The distributions localbo can mirror (the others stay with the independent sampler).

    ```python
    mirrorable({"x": FloatDistribution(0, 1), "k": FloatDistribution(0, 1, step=0.1)})   # {"x": ...}
    ```
    """
    out = {}
    for name, d in distributions.items():
        try:
            localbo_space({name: d})
        except ValueError:
            continue
        out[name] = d
    return out


def constraint_metric(j: int) -> str:
    """The localbo metric of Optuna's ``j``-th constraint value.

    ```python
    constraint_metric(0)            # "c0"
    ```
    """
    return f"c{j}"


def localbo_constraints(n_constraints: int) -> list[dict[str, Any]]:
    """Optuna's feasibility (every constraint value <= 0) as localbo outcome constraints.

    ```python
    localbo_constraints(2)  # [{"metric": "c0", "op": "<=", "bound": 0.0}, {"metric": "c1", "op": "<=", ...}]
    ```
    """
    return [{"metric": constraint_metric(j), "op": "<=", "bound": 0.0} for j in range(n_constraints)]


class LocalBOSampler(BaseSampler):
    """An Optuna sampler whose points come from a localbo policy (see the module's docstring).

    ``policy``: the localbo policy (``minucb`` by default; ``turbo`` by default with ``constraints_func``; ``auto`` by
    default for an Optuna study with several directions).
    ``space``: Optuna distributions to mirror from the first trial; without it, the sampler infers the space
    after ``n_startup_trials`` completed trials that ``independent_sampler`` draws.

    ``constraints_func``: Optuna's constraints, ``FrozenTrial -> Sequence[float]``, feasible when every value is
    <= 0; called once a trial is complete or pruned, its values kept in the trial's system attributes and
    told to localbo as the outcome constraints ``c0`` .. ``c{k-1}`` (bound 0, ``<=``). ``n_constraints``:
    ``k``; without it the sampler learns ``k`` from the first completed trial, which the independent sampler
    draws. A constraint value that is not finite (JSON has none) fails the localbo trial, saying why; a count
    of values other than the study's fails it too and raises ``ValueError`` (every trial would fail).

    ```python
    sampler = LocalBOSampler(url, "turbo", space=space, constraints_func=lambda t: [t.params["x"] - 0.5],
                             n_constraints=1)
    ```
    """

    def __init__(
        self,
        url: str,
        policy: str | None = None,
        *,
        space: dict[str, BaseDistribution] | None = None,
        policy_config: dict[str, Any] | None = None,
        study_name: str | None = None,
        seed: int | None = None,
        n_startup_trials: int = 10,
        token: str | None = None,
        independent_sampler: BaseSampler | None = None,
        client: Client | None = None,
        constraints_func: Callable[[FrozenTrial], Sequence[float]] | None = None,
        n_constraints: int | None = None,
    ) -> None:
        if n_constraints is not None and (constraints_func is None or n_constraints < 1):
            raise ValueError("n_constraints: the count of the values constraints_func returns (1 or more)")
        self.client = client or Client(url, token=token)
        self.policy = policy  # None: chosen for the study (``_policy_for``)
        self.policy_config, self.seed = policy_config, seed
        self.constraints_func, self.n_constraints = constraints_func, n_constraints
        self.space = localbo_space(space) if space is not None else None
        self.distributions = space
        self.study_name = study_name
        self.n_startup_trials = 0 if space is not None else n_startup_trials
        self.independent = independent_sampler or RandomSampler(seed=seed)
        self._studies: dict[int, Study] = {}  # Optuna study id -> its localbo study
        self._lock = threading.Lock()
        self._intersection = IntersectionSearchSpace()

    # -- the search space -------------------------------------------------------------------------
    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        if self.constraints_func is not None and self._constraint_count(study) is None:
            return {}  # the count of constraints is unknown until a trial is done: this one is a start-up trial
        if self.distributions is not None:
            return dict(self.distributions)
        done = study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True)
        if len(done) < self.n_startup_trials:
            return {}
        return mirrorable(self._intersection.calculate(study))

    def _constraint_count(self, study: optuna.Study) -> int | None:
        """How many values ``constraints_func`` returns: ``n_constraints``, the localbo study's count once it
        exists, or the count Optuna stored for the first completed trial (None: none is done yet)."""
        if self.n_constraints is not None:
            return self.n_constraints
        if study._study_id in self._studies:
            return len(self._studies[study._study_id].info.get("constraints") or [])
        for t in study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True):
            stored = t.system_attrs.get(CONSTRAINTS_ATTR)
            if stored is not None:
                return len(stored)
        return None

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if not search_space:
            return {}
        remote = self._localbo_study(study, search_space)
        asked = remote.ask(wait_seconds=POLICY_WAIT_SECONDS)  # the policy's point, never a fallback one
        study._storage.set_trial_system_attr(trial._trial_id, NUMBER_ATTR, asked.number)
        return {name: asked.params[name] for name in search_space}

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        return self.independent.sample_independent(study, trial, param_name, param_distribution)

    # -- results back to the server ---------------------------------------------------------------
    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        number = trial.system_attrs.get(NUMBER_ATTR)
        if self.constraints_func is not None:
            try:  # Optuna's own samplers do this: the values go to the trial's system attrs (complete or pruned)
                _process_constraints_after_trial(self.constraints_func, study, trial, state)
            except BaseException as exc:
                if number is not None:  # not left running in localbo: the error goes on to Optuna's caller
                    why = f"failed in Optuna: constraints_func raised {type(exc).__name__}: {exc}"
                    self._localbo_study(study, None).fail(number, why[:1000])
                raise
        if number is None:
            return  # a start-up trial: the localbo study gets it when it is created
        remote = self._localbo_study(study, None)
        if state == TrialState.COMPLETE and values is not None:
            try:  # constraint values that do not fit the study: every trial would fail, so the caller hears of it
                result = self._result(remote, study._storage.get_trial_system_attrs(trial._trial_id), values)
            except ValueError as exc:
                remote.fail(number, f"failed in Optuna: {exc}"[:1000])
                raise
            try:
                result_body(result)  # a number JSON cannot carry (Optuna keeps an infinite one): this trial fails
            except ValueError as exc:
                remote.fail(number, f"failed in Optuna: {exc}"[:1000])
                return
            remote.tell(number, result)
        elif state == TrialState.PRUNED:
            at = f" at step {trial.last_step}" if trial.last_step is not None else " before it reported a step"
            remote.fail(number, f"pruned by Optuna{at}")
        else:
            # Optuna logs the objective's exception; the trial it hands the sampler does not carry it
            why = trial.system_attrs.get("fail_reason") or "the objective raised or returned no usable value"
            remote.fail(number, f"failed in Optuna: {why}"[:1000])

    def _result(self, remote: Study, system_attrs: dict[str, Any], values: Sequence[float]) -> Result:
        """What the localbo study is told for a complete trial: its value, or, with constraints or several
        objectives, the named values of each objective and each constraint (as Optuna stored them in the trial's
        ``system_attrs``)."""
        several = len(values) > 1
        named = {objective_metric(i, several): v for i, v in enumerate(values)}
        if self.constraints_func is None:
            return named if several else values[0]
        stored = system_attrs.get(CONSTRAINTS_ATTR)
        expected = len(remote.info.get("constraints") or [])
        if stored is None or len(stored) != expected:
            got = "none" if stored is None else f"{len(stored)} values"
            raise ValueError(f"constraints_func: expected {expected} constraint values for the trial, got {got}")
        return {**named, **{constraint_metric(j): c for j, c in enumerate(stored)}}

    def reseed_rng(self) -> None:
        self.independent.reseed_rng()

    # -- the localbo study ------------------------------------------------------------------------
    def _localbo_study(self, study: optuna.Study, search_space: dict[str, BaseDistribution] | None) -> Study:
        key = study._study_id
        with self._lock:
            if key in self._studies:
                return self._studies[key]
            shared = study._storage.get_study_system_attrs(key).get(STUDY_ATTR)  # another process's choice
            name = shared or self.study_name or f"optuna-{study.study_name}"
            space = self.space if self.space is not None else localbo_space(search_space or {})
            ways = ["maximize" if d == optuna.study.StudyDirection.MAXIMIZE else "minimize" for d in study.directions]
            direction, several = ways[0], len(ways) > 1
            outcomes: dict[str, Any] = {}
            if several:
                objectives = [{"metric": objective_metric(i, True), "direction": way} for i, way in enumerate(ways)]
                outcomes = {"objectives": objectives}
            if self.constraints_func is not None:
                n_constraints = self._constraint_count(study)
                if n_constraints is None:  # a trial asked for in another process: this one has seen none done
                    raise ValueError("constraints_func: no trial is done yet; give the sampler n_constraints")
                outcomes = {
                    "objectives": outcomes.get("objectives") or [{"metric": OBJECTIVE_METRIC, "direction": direction}],
                    "constraints": localbo_constraints(n_constraints),
                }
            policy = self.policy or ("auto" if several else "turbo" if self.constraints_func is not None else "minucb")
            try:
                remote = self.client.create_study(
                    name,
                    space,
                    direction,
                    policy,
                    self.policy_config,
                    seed=self.seed,
                    load_if_exists=True,
                    **outcomes,
                )
            except BadRequest as exc:
                if outcomes and exc.detail.startswith(("constraints:", "objectives:")):
                    need = (  # the server's detail lists the policies that serve this study's combination
                        "constraints_func needs a policy that serves outcome constraints"
                        if exc.detail.startswith("constraints:")
                        else "an Optuna study with several directions needs a policy that serves several objectives"
                    )
                    raise ValueError(f"LocalBOSampler: {need}, not {policy!r}; the server says: {exc.detail}") from exc
                raise
            if canonical_space(remote.info.get("space", {})) != canonical_space(space):
                raise ValueError(f"localbo study {name!r} exists with another search space: {remote.info.get('space')}")
            if _outcomes(remote.info) != _outcomes(outcomes):
                raise ValueError(
                    f"localbo study {name!r} exists with other metrics: objectives {remote.info.get('objectives')}, "
                    f"constraints {remote.info.get('constraints')}"
                )
            study._storage.set_study_system_attr(key, STUDY_ATTR, name)
            if (remote.info.get("summary") or {}).get("n_trials", 0) == 0:
                self._warm_start(study, remote, space)
            self._studies[key] = remote
            return remote

    def _warm_start(self, study: optuna.Study, remote: Study, space: dict[str, Any]) -> None:
        """The start-up trials, told to the new localbo study as external trials (with constraints: those
        whose constraint values Optuna stored, all of them finite)."""
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if set(space) <= set(t.params) and t.values is not None:
                try:
                    result = self._result(remote, t.system_attrs, t.values)
                    result_body(result)
                except ValueError:
                    continue  # nothing localbo can store: the policy never hears of it
                remote.add_trial({name: t.params[name] for name in space}, result)


def _outcomes(info: dict[str, Any]) -> tuple[Any, ...]:
    """A study's metrics as compared across processes: its objective's metric and its constraints (the
    direction is compared as the study's own)."""
    objectives = [o["metric"] for o in info.get("objectives") or []]
    constraints = [(c["metric"], c["op"], float(c["bound"])) for c in info.get("constraints") or []]
    return tuple(objectives), tuple(constraints)
