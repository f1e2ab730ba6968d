"""The client package works with httpx alone: torch, fastapi and sqlalchemy cannot be imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

BLOCKED = ["torch", "fastapi", "sqlalchemy", "botorch", "starlette", "pydantic", "localbo"]

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, sys
    BLOCKED = set(sys.argv[2].split(","))

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked in this test")

    sys.meta_path.insert(0, Block())
    for name in list(sys.modules):
        if name.split(".")[0] in BLOCKED:
            del sys.modules[name]

    from localbo_client import Client, BadRequest
    with Client(sys.argv[1]) as client:
        study = client.create_study("isolated", space={"x": {"type": "float", "low": 0, "high": 2}}, policy="sobol")
        with study.ask() as trial:
            study.tell(trial, trial.params["x"])
        try:
            study.tell(trial, float("nan"))
        except ValueError as exc:  # refused before it is sent: JSON has no NaN
            assert "finite" in str(exc), exc
        else:
            raise AssertionError("NaN was accepted")
        try:
            study.add_trial({"x": 5.0}, 1.0)
        except BadRequest as exc:
            assert exc.status == 422 and "params.x" in exc.detail, exc.detail
        else:
            raise AssertionError("an out-of-range external trial was accepted")
        assert study.best.number == trial.number
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not loaded, loaded
    print("client ok")
    """
)


@pytest.mark.parametrize("live_server", ["sqlite"], indirect=True)
def test_client_imports_and_works_with_only_httpx(live_server) -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, live_server.url, ",".join(BLOCKED)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "client ok" in result.stdout
