"""A pytest plugin that writes down every policy failure the engine answers with fallback points.

A test through the API passes whether a suggest came from the policy or from the engine's fallback (a
failing policy never takes a study down), so a device that breaks a policy (a tensor left on the CPU) does not
fail the suite. Loaded with ``-p harness.policy_failure_log`` (``benchmarks`` on ``PYTHONPATH``), it appends one
JSON line per ``localbo.planning`` "policy ... failed" record (and per planning job that failed, as policy
"(planning)") to ``$LOCALBO_POLICY_FAILURE_LOG``: the test's id, the policy, the exception's first line and the
innermost line of ours it came from. Run the same tests on the CPU
and on the device and compare the tests named (``benchmarks/api_on_device.sh``); some tests make a policy fail on
purpose, and they name themselves on both.
"""

from __future__ import annotations

import json
import logging
import os
import traceback
from collections.abc import Iterator

import pytest

_current = {"test": ""}


class _Recorder(logging.Handler):
    def __init__(self, path: str) -> None:
        super().__init__(logging.ERROR)
        self.path = path

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "failed on study" in message:  # the runner's: a policy's failure, answered with fallback points
            policy = str(record.args[0]) if isinstance(record.args, tuple) and record.args else "?"
        elif message.startswith("planning study"):  # the planner's: its own job failed, no plan at all
            policy = "(planning)"
        else:
            return
        error, where = "", ""
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            ours = [f for f in traceback.extract_tb(exc.__traceback__) if "/localbo/" in f.filename]
            where = f"{ours[-1].filename.rsplit('/localbo/', 1)[-1]}:{ours[-1].lineno}" if ours else ""
        line = {"test": _current["test"], "policy": policy, "error": error, "where": where}
        with open(self.path, "a") as out:  # one short line per record: appends from xdist workers do not interleave
            out.write(json.dumps(line) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get("LOCALBO_POLICY_FAILURE_LOG")
    if path:
        logging.getLogger("localbo.planning").addHandler(_Recorder(path))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    _current["test"] = item.nodeid  # setup to teardown: a planner thread's failure is its test's
    try:
        return (yield)
    finally:
        _current["test"] = ""
