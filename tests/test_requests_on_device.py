"""A request built outside the service holds its tensors where the engine would put them, and the check that runs
the API's policy tests on a device names every policy failure the engine hid behind fallback points."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest
import torch
from harness import policy_failure_log
from localbo.policies.base import FiniteSpace, Polytope
from localbo.policies.requests import make_request, on_device


def tensors_of(value: object) -> list[tuple[str, torch.Tensor]]:
    """Every tensor of a request, of its polytope and of its finite space, by name."""
    found = []
    for f in dataclasses.fields(value):  # type: ignore[arg-type]
        v = getattr(value, f.name, None)
        if isinstance(v, torch.Tensor):
            found.append((f.name, v))
        elif isinstance(v, (Polytope, FiniteSpace)):
            found += [(f"{f.name}.{name}", t) for name, t in tensors_of(v)]
    return found


def test_every_tensor_of_a_request_is_on_its_device_as_the_engine_hands_it_over() -> None:
    # "meta" stands in for a GPU here: a tensor left behind keeps the CPU device and shows up
    X, y = torch.rand(6, 3, dtype=torch.float64), torch.rand(6, dtype=torch.float64)
    finite = FiniteSpace(torch.rand(10, 3, dtype=torch.float64), torch.arange(6), torch.zeros(0, dtype=torch.long))
    request = make_request("random", X, y, finite=finite, device="meta")
    polytope = Polytope(torch.ones(1, 3), torch.ones(1), torch.zeros(0, 3), torch.zeros(0))
    request = on_device(
        dataclasses.replace(
            request, C=torch.rand(6, 2), X_failed=torch.rand(1, 3), polytope=polytope, Y=torch.rand(6, 2),
            reference_point=torch.ones(2),
        )
    )  # fmt: skip
    names = {name: t.device.type for name, t in tensors_of(request)}
    assert {"X", "y", "numbers", "X_pending", "C", "X_failed", "Y", "reference_point"} <= set(names)
    assert {"polytope.A_ub", "finite.candidates", "finite.X_index", "finite.blocked_index"} <= set(names)
    assert set(names.values()) == {"meta"}, names
    assert request.generator.device.type == "cpu"  # seeded from rng_seed, as the engine's


def test_a_cpu_request_is_left_as_it_is() -> None:
    X, y = torch.rand(4, 2, dtype=torch.float64), torch.rand(4, dtype=torch.float64)
    request = make_request("random", X, y, seed=3)
    assert torch.equal(request.X, X) and request.device.type == "cpu"
    assert torch.equal(on_device(request).X, request.X)


def test_the_failure_log_names_the_test_the_policy_and_where_it_broke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "failures.jsonl"
    recorder = policy_failure_log._Recorder(str(path))
    log = logging.getLogger("localbo.planning")
    log.addHandler(recorder)
    monkeypatch.setitem(policy_failure_log._current, "test", "tests/test_x.py::test_y")
    try:
        try:
            torch.zeros(2)[torch.tensor([5])]  # an IndexError raised inside torch, caught as the engine does
        except Exception:
            log.exception("policy %s failed on study %s; handing out fallback points", "turbo", "s-1")
        log.error("something else went wrong")  # not a policy failure: not recorded
        try:
            raise RuntimeError("the database went away")
        except RuntimeError:
            log.exception("planning study %s failed", 7)  # the planner's own job: recorded as "(planning)"
    finally:
        log.removeHandler(recorder)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 2
    assert lines[0]["test"] == "tests/test_x.py::test_y" and lines[0]["policy"] == "turbo"
    assert lines[0]["error"].startswith("IndexError: index 5 is out of bounds")
    assert lines[1]["policy"] == "(planning)" and lines[1]["error"] == "RuntimeError: the database went away"


def test_the_api_check_on_a_device_runs_and_names_the_failures_on_purpose(tmp_path: Path) -> None:
    """benchmarks/api_on_device.sh's smoke: one API test, on the CPU, whose policy raises on purpose (a singular
    matrix): the engine answers it with fallback points, the test passes, and the log names the failure."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[1]
    test = "tests/test_trials_api.py::test_a_failing_policy_falls_back_and_records_why"
    outer = ("PYTEST_", "LOCALBO_")  # this run's own (an xdist worker's name, a failure log): not the inner run's
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(outer)}, "TESTS": test, "JOBS": "1"}
    done = subprocess.run(
        ["bash", str(root / "benchmarks" / "api_on_device.sh"), "cpu", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = [json.loads(line) for line in (tmp_path / "policy_failures_cpu.jsonl").read_text().splitlines()]
    assert lines and {line["policy"] for line in lines} == {"test-exploding"}
    assert all("singular matrix in the test policy" in line["error"] and test in line["test"] for line in lines)
    assert f"policy failures on cpu: {len(lines)} records in 1 tests" in done.stdout
