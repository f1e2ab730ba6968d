"""What every fault and load benchmark does before it runs: where it writes, and what it records about the run."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

# the code a run's numbers depend on: a change to it not yet committed makes the commit alone a false label
RUN_CODE = (":/service", ":/client", ":/benchmarks/*.py")


def commit_of(path: Path) -> str:
    """The short commit of the checkout holding ``path``, with "+uncommitted" when the service's, the client's or
    the benchmarks' code differs from it; ``LOCALBO_COMMIT`` first when set (a copy of the tree on a lent machine
    may carry a stale ``.git``, or none), else "unknown" outside git."""
    if os.environ.get("LOCALBO_COMMIT"):
        return os.environ["LOCALBO_COMMIT"]
    try:
        done = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        changed = subprocess.run(
            ["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no", "--", *RUN_CODE],
            capture_output=True,
            text=True,
        )
    except OSError:  # no git on that machine
        return "unknown"
    commit = done.stdout.strip()
    if not commit:
        return "unknown"
    return f"{commit}+uncommitted" if changed.stdout.strip() else commit


def output_dir(parser: argparse.ArgumentParser, args: argparse.Namespace, results: Path, prefix: str) -> Path:
    """``--out``, else ``results``; a smoke run never writes into ``results`` (a temporary folder instead)."""
    if args.smoke:
        if args.out is not None and args.out.resolve() == results.resolve():
            parser.error("--smoke does not write into benchmarks/results; pass another --out")
        out: Path = args.out or Path(tempfile.mkdtemp(prefix=f"{prefix}-smoke-"))
    else:
        out = args.out or results
    out.mkdir(parents=True, exist_ok=True)
    return out


def run_meta(script: str, smoke: bool, *, numerics: bool = False) -> dict[str, Any]:
    """When, where and at which commit the run was made, and the machine's load before it; with ``numerics``, the
    machine's description ends with the kernels the run's floating point took (``harness.numerics.describe``)."""
    from harness.numerics import cpu_model

    machine = f"{platform.node() or platform.machine()} ({cpu_model()})"
    if numerics:
        from harness.numerics import describe

        machine = f"{machine}; {describe()}"
    return {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine,
        "cpus": os.cpu_count(),
        "load_before": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "commit": commit_of(Path(script).resolve().parent),
        "smoke": smoke,
    }
