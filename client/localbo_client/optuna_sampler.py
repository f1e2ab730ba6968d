"""``LocalBOSampler``: an unchanged Optuna objective runs on a localbo policy.

    import optuna
    from localbo_client.optuna_sampler import LocalBOSampler

    study = optuna.create_study(sampler=LocalBOSampler("http://127.0.0.1:8000", policy="minucb"))
    study.optimize(objective, n_trials=100, n_jobs=2)

The sampler mirrors the Optuna study's search space into a localbo study: the ``space`` you give
(Optuna distributions), or the intersection of the completed trials' spaces after ``n_startup_trials``
(which an independent sampler draws, and which the localbo study then gets as external trials). Each
trial's parameters come from the server's ask; its result, failure or prune goes back as a tell
(a pruned or failed trial is a failed localbo trial). The localbo trial's number is kept in the Optuna
trial's system attributes, so every process sharing an Optuna storage (RDB) tells the right trial,
and all of them share one localbo study (``study_name``, by default ``optuna-<the Optuna study's name>``).
Parameters outside the mirrored space (dynamic ones) come from the independent sampler.

Needs ``pip install "localbo-client[optuna]"``; the rest of the client needs only httpx.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.search_space import IntersectionSearchSpace
from optuna.trial import FrozenTrial, TrialState

from localbo_client.client import POLICY_WAIT_SECONDS, Client, Study

NUMBER_ATTR = "localbo:number"  # the localbo trial behind an Optuna trial
STUDY_ATTR = "localbo:study"  # the localbo study behind an Optuna study


def localbo_space(distributions: dict[str, BaseDistribution]) -> dict[str, dict[str, Any]]:
    """The localbo space of Optuna distributions; ``ValueError`` for one localbo cannot mirror."""
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
    """The distributions localbo can mirror (the others stay with the independent sampler)."""
    out = {}
    for name, d in distributions.items():
        try:
            localbo_space({name: d})
        except ValueError:
            continue
        out[name] = d
    return out


class LocalBOSampler(BaseSampler):
    def __init__(
        self,
        url: str,
        policy: str = "minucb",
        *,
        space: dict[str, BaseDistribution] | None = None,
        policy_config: dict[str, Any] | None = None,
        study_name: str | None = None,
        seed: int | None = None,
        n_startup_trials: int = 10,
        token: str | None = None,
        independent_sampler: BaseSampler | None = None,
        client: Client | None = None,
    ) -> None:
        self.client = client or Client(url, token=token)
        self.policy, self.policy_config, self.seed = policy, policy_config, seed
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
        if self.distributions is not None:
            return dict(self.distributions)
        done = study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True)
        if len(done) < self.n_startup_trials:
            return {}
        return mirrorable(self._intersection.calculate(study))

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
        if number is None:
            return  # a start-up trial: the localbo study gets it when it is created
        remote = self._localbo_study(study, None)
        if state == TrialState.COMPLETE and values is not None:
            remote.tell(number, values[0])
        elif state == TrialState.PRUNED:
            remote.fail(number, f"pruned by Optuna at step {trial.last_step}")
        else:
            # Optuna logs the objective's exception; the trial it hands the sampler does not carry it
            why = trial.system_attrs.get("fail_reason") or "the objective raised or returned no usable value"
            remote.fail(number, f"failed in Optuna: {why}"[:1000])

    def reseed_rng(self) -> None:
        self.independent.reseed_rng()

    # -- the localbo study ------------------------------------------------------------------------
    def _localbo_study(self, study: optuna.Study, search_space: dict[str, BaseDistribution] | None) -> Study:
        key = study._study_id
        with self._lock:
            if key in self._studies:
                return self._studies[key]
            if len(study.directions) != 1:
                raise ValueError("LocalBOSampler optimises one objective; this Optuna study has several")
            shared = study._storage.get_study_system_attrs(key).get(STUDY_ATTR)  # another process's choice
            name = shared or self.study_name or f"optuna-{study.study_name}"
            space = self.space if self.space is not None else localbo_space(search_space or {})
            direction = "maximize" if study.direction == optuna.study.StudyDirection.MAXIMIZE else "minimize"
            remote = self.client.create_study(
                name, space, direction, self.policy, self.policy_config, seed=self.seed, load_if_exists=True
            )
            if _canonical(remote.info.get("space", {})) != _canonical(space):
                raise ValueError(f"localbo study {name!r} exists with another search space: {remote.info.get('space')}")
            study._storage.set_study_system_attr(key, STUDY_ATTR, name)
            if (remote.info.get("summary") or {}).get("n_trials", 0) == 0:
                self._warm_start(study, remote, space)
            self._studies[key] = remote
            return remote

    @staticmethod
    def _warm_start(study: optuna.Study, remote: Study, space: dict[str, Any]) -> None:
        """The start-up trials, told to the new localbo study as external trials."""
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if set(space) <= set(t.params) and t.value is not None:
                remote.add_trial({name: t.params[name] for name in space}, t.value)


def _canonical(space: dict[str, Any]) -> dict[str, Any]:
    """A space as compared across processes: defaults dropped, numbers as floats."""
    out = {}
    for name, spec in space.items():
        spec = {k: v for k, v in spec.items() if not (k == "log" and v is False)}
        for k in ("low", "high"):
            if k in spec:
                spec[k] = float(spec[k])
        out[name] = spec
    return out
