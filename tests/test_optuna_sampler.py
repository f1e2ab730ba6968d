"""``LocalBOSampler`` (issue 20, item 1): an unchanged Optuna objective on a localbo policy, against the
real Optuna and a real server process."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import optuna
import pytest
from harness.processes import ServerProcess
from localbo_client import Client
from localbo_client.optuna_sampler import NUMBER_ATTR, STUDY_ATTR, LocalBOSampler
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.trial import TrialState

from tests.conftest import unique

optuna.logging.set_verbosity(optuna.logging.WARNING)
NAMES = ("x", "y", "z")
SPACE = {n: {"type": "float", "low": -1.0, "high": 1.0} for n in NAMES}
DISTRIBUTIONS = {n: FloatDistribution(-1.0, 1.0) for n in NAMES}


def quadratic(p: dict) -> float:
    return (p["x"] - 0.3) ** 2 + (p["y"] + 0.2) ** 2 + 0.5 * (p["z"] - 0.1) ** 2


def objective(trial: optuna.Trial) -> float:
    """An Optuna objective as a user wrote it, unchanged."""
    x, y, z = (trial.suggest_float(n, -1.0, 1.0) for n in NAMES)
    return (x - 0.3) ** 2 + (y + 0.2) ** 2 + 0.5 * (z - 0.1) ** 2


@pytest.fixture(scope="module")
def server(sqlite_server: ServerProcess) -> ServerProcess:
    return sqlite_server


def remote_name(study: optuna.Study) -> str:
    return study._storage.get_study_system_attrs(study._study_id)[STUDY_ATTR]


def points(client: Client, name: str) -> list[tuple[float, ...]]:
    return [tuple(t.params[n] for n in NAMES) for t in client.get_study(name).trials()]


def test_minucb_through_optuna_finds_what_the_plain_client_finds(server: ServerProcess) -> None:
    """Must show: 60 trials of minucb. One worker: the very same points, in the same order, as the plain
    client with the same seed. Two workers (``n_jobs=2``): the policy plans with the results that are in
    when an ask comes, so which points it picks depends on timing, for the plain client's
    ``optimize(n_workers=2)`` as much as for Optuna; compared there: every Optuna trial is the localbo
    trial it names (params and value), every point the policy's (no fallback), and it finds the minimum
    as well as the plain client with two workers does."""
    client = Client(server.url, timeout=120)
    plain = client.create_study(unique("plain"), SPACE, policy="minucb", seed=7)
    plain.optimize(quadratic, n_trials=60)

    sequential = optuna.create_study(
        sampler=LocalBOSampler(server.url, "minucb", space=DISTRIBUTIONS, seed=7, study_name=unique("opt1"))
    )
    sequential.optimize(objective, n_trials=60)
    assert points(client, remote_name(sequential)) == points(client, plain.name), "same seed: same points"
    assert [tuple(t.params[n] for n in NAMES) for t in sequential.trials] == points(client, plain.name)
    assert sequential.best_value == plain.best.value

    plain2 = client.create_study(unique("plain2"), SPACE, policy="minucb", seed=7)
    plain2.optimize(quadratic, n_trials=60, n_workers=2)
    parallel = optuna.create_study(
        sampler=LocalBOSampler(server.url, "minucb", space=DISTRIBUTIONS, seed=7, study_name=unique("opt2"))
    )
    parallel.optimize(objective, n_trials=60, n_jobs=2)
    remote = {t.number: t for t in client.get_study(remote_name(parallel)).trials()}
    assert len(parallel.trials) == 60 and all(t.state == TrialState.COMPLETE for t in parallel.trials)
    assert len(remote) == 60 and {t.source for t in remote.values()} == {"minucb"}
    for t in parallel.trials:
        mirror = remote[t.system_attrs[NUMBER_ATTR]]
        assert mirror.params == t.params and mirror.value == t.value and mirror.state == "complete"
    assert parallel.best_value < 1e-3 and plain2.best.value < 1e-3, (parallel.best_value, plain2.best.value)


def test_failures_and_prunes_are_told_back_as_failed(server: ServerProcess) -> None:
    def flaky(trial: optuna.Trial) -> float:
        value = objective(trial)
        if trial.number == 1:
            raise RuntimeError("sensor error")
        if trial.number == 2:
            trial.report(value, step=3)
            raise optuna.TrialPruned()
        return value

    study = optuna.create_study(
        sampler=LocalBOSampler(server.url, "sobol", space=DISTRIBUTIONS, seed=1, study_name=unique("flaky"))
    )
    study.optimize(flaky, n_trials=4, catch=(RuntimeError,))
    remote = {t.number: t for t in Client(server.url).get_study(remote_name(study)).trials()}
    by_optuna = {t.number: remote[t.system_attrs[NUMBER_ATTR]] for t in study.trials}
    assert by_optuna[1].state == "failed" and by_optuna[1].reason.startswith("failed in Optuna"), by_optuna[1].reason
    assert by_optuna[2].state == "failed" and by_optuna[2].reason == "pruned by Optuna at step 3"
    assert by_optuna[0].state == by_optuna[3].state == "complete"


def test_start_up_trials_infer_the_space_and_warm_start_the_localbo_study(server: ServerProcess) -> None:
    def with_a_dynamic_parameter(trial: optuna.Trial) -> float:
        value = objective(trial)
        kind = trial.suggest_categorical("kind", ["a", "b"])
        if trial.number % 2:  # only every other trial: not in the intersection, so never mirrored
            trial.suggest_float(f"extra{trial.number}", 0.0, 1.0)
        return value + (0.1 if kind == "b" else 0.0)

    name = unique("startup")
    study = optuna.create_study(
        sampler=LocalBOSampler(server.url, "sobol", seed=3, study_name=name, n_startup_trials=4)
    )
    study.optimize(with_a_dynamic_parameter, n_trials=8)
    remote = Client(server.url).get_study(name)
    assert set(remote.info["space"]) == {"x", "y", "z", "kind"}
    assert remote.info["space"]["kind"] == {"type": "categorical", "choices": ["a", "b"]}
    trials = remote.trials()
    assert [t.source for t in trials[:4]] == ["external"] * 4, "the start-up trials, told as external"
    assert len(trials) == 8 and all(t.state == "complete" for t in trials)
    later = [t for t in study.trials if t.number >= 4]
    assert all(NUMBER_ATTR in t.system_attrs for t in later)
    assert all(isinstance(t.params.get("extra5", 0.5), float) for t in later), "dynamic ones drawn independently"


def test_two_processes_sharing_an_optuna_storage_share_one_localbo_study(server: ServerProcess, tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    name = unique("shared")
    script = textwrap.dedent(
        f"""
        import optuna
        from optuna.distributions import FloatDistribution
        from localbo_client.optuna_sampler import LocalBOSampler
        def objective(trial):
            x, y, z = (trial.suggest_float(n, -1.0, 1.0) for n in "xyz")
            return (x - 0.3) ** 2 + (y + 0.2) ** 2 + 0.5 * (z - 0.1) ** 2
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = LocalBOSampler({server.url!r}, "sobol", seed=5, study_name={name!r},
                                 space={{n: FloatDistribution(-1.0, 1.0) for n in "xyz"}})
        study = optuna.create_study(study_name="shared", storage={storage!r}, sampler=sampler, load_if_exists=True)
        study.optimize(objective, n_trials=5)
        """
    )
    for _ in range(2):  # one process after the other, the second continuing the first's studies
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
    study = optuna.load_study(study_name="shared", storage=storage)
    assert len(study.trials) == 10 and remote_name(study) == name
    remote = Client(server.url).get_study(name).trials()
    assert [t.number for t in remote] == list(range(1, 11)) and all(t.state == "complete" for t in remote)
    assert sorted(t.system_attrs[NUMBER_ATTR] for t in study.trials) == list(range(1, 11))


def test_a_space_localbo_cannot_mirror_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="lr: .* has a step"):
        LocalBOSampler("http://127.0.0.1:1", space={"lr": FloatDistribution(0.0, 1.0, step=0.1)})
    sampler = LocalBOSampler("http://127.0.0.1:1", space={"c": CategoricalDistribution([1, "two", None])})
    assert sampler.space == {"c": {"type": "categorical", "choices": [1, "two", None]}}


# -- constraints_func: Optuna's constraints as localbo outcome constraints ------------------------------------------
def disc(trial: optuna.Trial) -> float:
    """The minimum of (x - 0.8)^2 + (y - 0.8)^2 over x + y <= 1: 0.18, at (0.5, 0.5)."""
    x, y = trial.suggest_float("x", 0.0, 1.0), trial.suggest_float("y", 0.0, 1.0)
    return (x - 0.8) ** 2 + (y - 0.8) ** 2


def over_the_line(trial: optuna.trial.FrozenTrial) -> list[float]:
    return [trial.params["x"] + trial.params["y"] - 1.0]  # feasible when <= 0


PLANE = {n: FloatDistribution(0.0, 1.0) for n in "xy"}


def test_constraints_func_becomes_localbo_outcome_constraints(server: ServerProcess) -> None:
    """The localbo study names the objective and c0 (<= 0); each tell carries the objective and the constraint
    value Optuna stored for the trial; the best feasible trial is found, the same on both sides. Without
    ``n_constraints`` the sampler learns the count from the first trial, which it tells as an external one."""
    name = unique("constrained")
    study = optuna.create_study(
        sampler=LocalBOSampler(server.url, space=PLANE, seed=2, study_name=name, constraints_func=over_the_line)
    )
    study.optimize(disc, n_trials=16)
    remote = Client(server.url).get_study(name)
    assert remote.info["policy"] == "turbo", "turbo (SCBO) is the default policy with constraints"
    assert remote.info["objectives"] == [{"metric": "objective", "direction": "minimize"}]
    assert remote.info["constraints"] == [{"metric": "c0", "op": "<=", "bound": 0.0}]
    told = {t.number: t for t in remote.trials()}
    assert len(told) == 16 and all(t.state == "complete" for t in told.values())
    assert told[1].source == "external" and {t.source for t in list(told.values())[1:]} == {"turbo"}
    by_optuna = {t.number: told[t.system_attrs.get(NUMBER_ATTR, 1)] for t in study.trials}  # 0: the external 1
    for t in study.trials:
        (stored,) = t.system_attrs["constraints"]  # what Optuna kept from constraints_func
        assert [stored] == over_the_line(t)
        mirror = by_optuna[t.number]
        assert mirror.params == t.params and mirror.values == {"objective": t.value, "c0": stored}
        assert mirror.feasible is (stored <= 0)
    best = remote.best
    assert best is not None and best.feasible and best.values is not None
    assert by_optuna[study.best_trial.number].number == best.number, "Optuna's best trial is localbo's best"
    assert best.value == study.best_value < 0.2, best  # 0.18 at the optimum on the line


def test_constraints_func_with_its_count_given_uses_the_policy_from_the_first_trial(server: ServerProcess) -> None:
    name = unique("counted")

    def two(trial: optuna.trial.FrozenTrial) -> list[float]:
        return [*over_the_line(trial), 0.3 - trial.params["x"]]  # and x >= 0.3

    sampler = LocalBOSampler(
        server.url, "ucb", space=PLANE, seed=3, study_name=name, constraints_func=two, n_constraints=2
    )
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(lambda t: -disc(t), n_trials=3)
    remote = Client(server.url).get_study(name)
    assert remote.info["objectives"] == [{"metric": "objective", "direction": "maximize"}]
    assert [c["metric"] for c in remote.info["constraints"]] == ["c0", "c1"]
    trials = remote.trials()
    assert [t.source for t in trials] == ["ucb"] * 3, "the policy's points from the first trial"
    assert all(set(t.values or {}) == {"objective", "c0", "c1"} for t in trials)


def test_constraints_func_needs_a_policy_that_serves_constraints(server: ServerProcess) -> None:
    sampler = LocalBOSampler(server.url, "sobol", space=PLANE, study_name=unique("sobol"),
                             constraints_func=over_the_line, n_constraints=1)  # fmt: skip
    study = optuna.create_study(sampler=sampler)
    says = r"constraints_func needs a policy that serves outcome constraints, not .sobol.; the server says: .*turbo"
    with pytest.raises(ValueError, match=says):
        study.optimize(disc, n_trials=1)
    with pytest.raises(ValueError, match="n_constraints"):
        LocalBOSampler(server.url, space=PLANE, n_constraints=1)


def test_a_constraint_localbo_cannot_store_fails_the_trial_and_a_raising_one_too(server: ServerProcess) -> None:
    """An infinite constraint value (Optuna keeps it; JSON has no infinity) fails the localbo trial, saying why,
    and the run goes on; a ``constraints_func`` that raises fails it too, and the error reaches the caller."""
    name = unique("unstorable")

    def odd(trial: optuna.trial.FrozenTrial) -> list[float]:
        if trial.number == 1:
            raise RuntimeError("the assay broke")
        return [math.inf] if trial.number == 0 else over_the_line(trial)

    study = optuna.create_study(
        sampler=LocalBOSampler(server.url, space=PLANE, study_name=name, constraints_func=odd, n_constraints=1)
    )
    with pytest.raises(RuntimeError, match="the assay broke"):
        study.optimize(disc, n_trials=3)
    first, second = Client(server.url).get_study(name).trials()
    assert first.state == "failed" and first.reason == "failed in Optuna: values.c0: expected a finite number, got inf"
    assert second.state == "failed" and "constraints_func raised RuntimeError: the assay broke" in second.reason
    kept = study.trials[0]
    assert kept.state == TrialState.COMPLETE and list(kept.system_attrs["constraints"]) == [math.inf]


def test_constraint_values_that_do_not_fit_the_study_stop_the_run(server: ServerProcess) -> None:
    name = unique("miscounted")
    sampler = LocalBOSampler(server.url, "ei", space=PLANE, study_name=name, constraints_func=over_the_line,
                             n_constraints=2)  # fmt: skip
    study = optuna.create_study(sampler=sampler)
    with pytest.raises(ValueError, match="constraints_func: expected 2 constraint values for the trial, got 1"):
        study.optimize(disc, n_trials=3)
    (trial,) = Client(server.url).get_study(name).trials()
    assert trial.state == "failed" and "expected 2 constraint values" in (trial.reason or "")
