"""Every policy on a device (``--device cuda`` on a GPU box): does each one serve what it declares there?

For every registered policy that runs on a continuous space, one short run per thing it declares it serves
(``Policy.handles``), on the constrained and multi-objective benchmarks' problems, in process as those benchmarks'
``direct`` runner drives it (the engine's plan queue, its state stored as JSON between calls, the engine's
fallback point when a suggest raises), with ``SuggestRequest.device`` set and every tensor of the request on
that device, as the engine hands it over (``policies.requests.on_device``):

- ``c_hartmann6`` (d 6, one outcome constraint): every policy; the constraint's values reach only the policies
  that declare "constraints" (the others optimise Hartmann-6 alone, as the service would refuse them the constraint)
- ``mixture8`` (d 8, sum x = 1 and a purity constraint): the policies that declare "parameter_constraints"
- ``fail_hartmann6`` with ``failures: "avoid"``: the policies that declare "failures"
- ``c_hartmann6`` in safe mode (delta 0.05, from a known-feasible seed): the policies that declare "safety"
- ``branincurrin`` (two objectives): the policies that declare "objectives"

A row's ``errors`` are the suggests that raised (each answered with a fallback point, as the engine does): on a
device, a tensor left on the CPU shows up here. ``off the equality`` counts the points off sum x = 1 by more
than 1e-9. ``GPU MiB`` is the peak of the device's allocated memory during the run (0: the policy never put a
tensor there, as ``random`` and ``sobol`` need not). Finite spaces (``chaining-ucb``, a finite ``ucb``) are not
run here; ``api_on_device.sh`` runs the API's tests of every space kind through the service on a device.

    .venv/bin/python benchmarks/policies_on_device.py --device cuda --evals 30 --jobs 4 --out DIR
    .venv/bin/python benchmarks/policies_on_device.py --smoke --out DIR      # two policies, CPU, a few evaluations

Writes ``policies_on_device.md`` and ``.json`` in ``--out`` whole after each run (a run cut short by
``--deadline-min`` keeps what it measured; the rows not started are listed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch
from harness import constrained as con
from harness import multiobjective as mo
from harness.runs import commit_of
from harness.sweep import Key, Outcome, run_all, say, versions

# (the capability a row checks, the problem, the method's suffix); "" needs nothing beyond a continuous space
SCENARIOS = (
    ("", "c_hartmann6", ""),
    ("parameter_constraints", "mixture8", ""),
    ("failures", "fail_hartmann6", "-avoid"),
    ("safety", "c_hartmann6", "-safe"),
    ("objectives", "mo:branincurrin", ""),
)


def plan(policies: list[str], evals: int, device: str) -> list[Key]:
    from localbo.policies import registry

    known = registry()
    keys = []
    for name in policies:
        cls = known[name]
        if "continuous" not in cls.spaces:
            continue
        for needs, problem, suffix in SCENARIOS:
            if not needs or needs in cls.handles:
                keys.append((problem, f"{name}{suffix}@{device}", 0, evals))
    return keys


def execute(key: Key) -> Outcome:
    """One run (in a worker process); its summary, or why the harness itself failed."""
    problem, method, seed, evals = key
    method, _, device = method.partition("@")
    on_gpu = device.startswith("cuda")
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        if problem.startswith("mo:"):
            p = mo.get_problem(problem[3:])
            run: Any = mo.MORun(p.name, method, seed, evals)
            mo.run_direct(p, method, seed, evals, run, device=device)
            equality = 0
        else:
            p = con.get_problem(problem)
            run = con.ConstrainedRun(p.name, method, seed, evals)
            con.run_direct(p, method, seed, evals, run, device=device)
            equality = run.equality_violations
    except Exception as exc:  # the harness, not the policy (whose errors the run records): a failed row
        return None, f"{type(exc).__name__}: {exc}"
    sources = run.source
    return {
        "policy": con.split_method(method)[0],
        "method": method,
        "problem": problem,
        "device": device,
        "evals": len(sources),
        "errors": len(run.errors),
        "first_error": run.errors[0] if run.errors else "",
        "fallbacks": sum(s in (con.FALLBACK, con.SAFE_FALLBACK) for s in sources),
        "off_equality": equality,
        "gpu_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1) if on_gpu else None,
        "wall_s": round(time.perf_counter() - t0, 2),
        "cpu_s": round(time.process_time() - cpu0, 2),
    }, None


def write(out: Path, state: dict[str, Any]) -> None:
    meta, rows = state["meta"], sorted(state["runs"], key=lambda r: (r["policy"], r["method"], r["problem"]))
    lines = [
        "# Every policy on a device",
        "",
        f"Written whole by `benchmarks/policies_on_device.py` at commit {meta['commit']}, {meta['date']}, on "
        f"{meta['where']}; {meta['versions']}; command: `{meta['command']}`. One run (seed 0) per policy and thing "
        "it declares it serves, driven as the constrained and multi-objective benchmarks' `direct` runner drives it "
        f"(the script's docstring says which problem checks what). {meta['jobs']} runs at a time on one device, so "
        "the seconds are a check's, not a benchmark's.",
        "",
        "| policy | method | problem | device | evaluations | errors (fallbacks) | off the equality | GPU MiB "
        "| wall s | CPU s | first error |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        gpu = "-" if r["gpu_mib"] is None else r["gpu_mib"]
        error = r["first_error"].replace("|", "/")[:160]
        lines.append(
            f"| {r['policy']} | {r['method']} | {r['problem']} | {r['device']} | {r['evals']} | {r['errors']} "
            f"({r['fallbacks']}) | {r['off_equality']} | {gpu} | {r['wall_s']} | {r['cpu_s']} | {error} |"
        )
    bad = [r for r in rows if r["errors"] or r["off_equality"]]
    lines += ["", f"{len(rows)} runs; {len(bad)} with a policy error or a point off the equality."]
    for failed in state["failed"]:
        lines.append(f"- the harness failed on {failed['key']}: {failed['error']}")
    if meta.get("not_run"):
        lines.append(f"- not started (deadline): {', '.join(meta['not_run'])}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "policies_on_device.md").write_text("\n".join(lines) + "\n")
    (out / "policies_on_device.json").write_text(json.dumps(state, indent=1) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--policies", default="", help="comma-separated (default: every registered policy)")
    parser.add_argument("--evals", type=int, default=30, help="evaluations a run")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time (processes)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads a process")
    parser.add_argument("--deadline-min", type=float, default=0, help="start no run after this many minutes")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--smoke", action="store_true", help="minucb and ei on the CPU, 12 evaluations")
    args = parser.parse_args()
    if args.smoke:
        args.policies, args.evals, args.device = "minucb,ei", 12, "cpu"
    from localbo.policies import registry

    policies = [p.strip() for p in args.policies.split(",") if p.strip()] or sorted(registry())
    where = f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs"
    if args.device.startswith("cuda"):
        where += f", {torch.cuda.get_device_name()}"
    state: dict[str, Any] = {
        "meta": {
            "commit": commit_of(Path(__file__).parent),
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "where": where + ")",
            "versions": versions(("torch", "botorch", "gpytorch")),
            "jobs": args.jobs,
            "command": " ".join(["benchmarks/policies_on_device.py", *sys.argv[1:]]),
        },  # fmt: skip
        "runs": [],
        "failed": [],
    }
    keys = plan(policies, args.evals, args.device)
    deadline = time.time() + 60 * args.deadline_min if args.deadline_min else None

    def on_done(key: Key, summary: dict[str, Any] | None, error: str | None) -> None:
        if summary is None:
            state["failed"].append({"key": f"{key[1]}@{key[0]}", "error": (error or "?").splitlines()[0]})
        else:
            state["runs"].append(summary)
            say(f"{key[1]} on {key[0]}: {summary['errors']} errors, {summary['wall_s']} s")
        write(args.out, state)

    say(f"{len(keys)} runs, {args.jobs} at a time")
    left = run_all(keys, args.jobs, args.threads, deadline, on_done, execute)
    state["meta"]["not_run"] = [f"{k[1]}@{k[0]}" for k in left]
    write(args.out, state)
    print((args.out / "policies_on_device.md").read_text())
    return 1 if state["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
