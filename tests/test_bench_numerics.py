"""The benchmarks that compare runs pin their numerics (benchmarks/harness/numerics.py): each library's kernels on
the AVX2 path, so a seed takes the same path on any x86-64 host; a variable the caller set wins; the results
header says what the run took."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import BENCHMARKS, run_benchmark
from harness.numerics import PINNED

PROBE = f"""
import sys
sys.path.insert(0, {str(BENCHMARKS)!r})
from harness import numerics
numerics.pin()
import numpy, torch
from numpy._core._multiarray_umath import __cpu_features__
import json, os
print(json.dumps({{
    "torch": torch.backends.cpu.get_cpu_capability(),
    "numpy_x86_v4": bool(__cpu_features__.get("X86_V4")),
    "env": {{name: os.environ.get(name) for name in numerics.PINNED}},
    "describe": numerics.describe(),
}}))
"""


def has_avx2() -> bool:
    cpuinfo = Path("/proc/cpuinfo")
    return cpuinfo.exists() and " avx2" in cpuinfo.read_text()


def pinned_process(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in PINNED}  # as a fresh shell starts it
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_pin_caps_every_library_at_avx2_before_they_load() -> None:
    got = pinned_process()
    assert got["env"] == PINNED
    assert not got["numpy_x86_v4"], "numpy's AVX-512 loops are off"
    if has_avx2():
        assert got["torch"] == "AVX2", got
    assert got["describe"].startswith("numerics: torch ") and "MKL_CBWR AVX2" in got["describe"]
    assert "not pinned" not in got["describe"]


def test_a_variable_the_caller_set_wins() -> None:
    got = pinned_process(ATEN_CPU_CAPABILITY="default", OMP_NUM_THREADS="2")
    assert got["torch"] == "DEFAULT" and got["env"]["ATEN_CPU_CAPABILITY"] == "default"
    assert got["env"]["OMP_NUM_THREADS"] == "2" and got["env"]["MKL_CBWR"] == "AVX2"


def test_a_probe_says_in_its_header_what_its_runs_took(tmp_path: Path) -> None:
    run_benchmark("probe.py", "--smoke", "--out", str(tmp_path), timeout=300)
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert "numerics: torch " in data["meta"]["machine"]
    assert "numerics: torch " in next(tmp_path.glob("*.md")).read_text().split("\n\n")[1]
