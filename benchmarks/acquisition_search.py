"""How well ``qlognehvi`` searches its acquisition: at a fixed data set, the log qLogNEHVI value its search finds from
random starts alone (``front_starts: 0``) against the same search with starts at points of the observed front too
(``front_starts: 5``, the default since this check), each with the same acquisition and the same random starts.

The data set is a run of ``qlognehvi`` itself on a problem of the multi-objective benchmark (``harness.multiobjective``,
its reference point), to ``--n`` results, made with 8 MC samples (not the default 64) so that it costs minutes: the
points lie where such a run puts them, near the front late in the run. On it the objective GPs are fitted as the policy
fits them (``gp.fit_model``, Matérn-5/2, warm start none), and for each of ``--draws`` acquisitions (the default 64
QMC samples, seeded per draw) ``hvi_search.maximise`` runs with each ``front_starts`` setting from the same generator
seed, so both draw the same random starts and the setting adds starts only. Problems with outcome constraints are
not taken (the check is of the search, not of the constraint models).

Written whole to ``results/acquisition_search.{md,json}``:

    nice .venv/bin/python benchmarks/acquisition_search.py              # VehicleSafety, seeds 0-1, n = 150, 6 draws
    .venv/bin/python benchmarks/acquisition_search.py --smoke          # BraninCurrin, n = 14, 1 draw, a temp folder
    .venv/bin/python benchmarks/acquisition_search.py --report-only    # rewrite the markdown from the JSON
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import numerics  # noqa: E402

numerics.pin()  # before numpy and torch load: the same path on any AVX2 host (harness/numerics.py)

from harness.runs import output_dir, run_meta  # noqa: E402
from harness.sweep import mean_se  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SETTINGS = (0, 5)
LEVEL = 1e-6  # a difference below this is the joint L-BFGS-B's last digits: level
DATA_MC_SAMPLES = 8
FULL = {"problem": "vehiclesafety", "seeds": 2, "n": 150, "draws": 6}
SMOKE = {"problem": "branincurrin", "seeds": 1, "n": 14, "draws": 1}


def data_set(problem_name: str, seed: int, n: int) -> dict[str, Any]:
    """X (unit cube), Y (minimised) of a qlognehvi run with DATA_MC_SAMPLES samples, and what it cost."""
    import torch
    from harness import multiobjective as mo

    problem = mo.get_problem(problem_name)
    if problem.m:
        raise SystemExit(f"{problem_name} has outcome constraints; this check takes problems without")
    asked: list[Any] = []
    to_user = problem.to_user

    def recording(x: Any) -> Any:
        asked.append(x.clone())
        return to_user(x)

    object.__setattr__(problem, "to_user", recording)  # the run's unit-cube points, as the policy asked them
    run = mo.MORun(problem_name, "qlognehvi", seed, n)
    started = time.process_time()
    mo.run_direct(problem, "qlognehvi", seed, n, run, {"mc_samples": DATA_MC_SAMPLES})
    cpu = time.process_time() - started
    summary = run.summary([n], problem)
    return {
        "X": torch.stack(asked),
        "Y": torch.tensor(run.Y, dtype=torch.float64),
        "ref": problem.ref.clone(),
        "log_hv_diff": summary["log_hv_diff"][str(n)],
        "front_size": summary["front_size"],
        "fallbacks": summary["fallbacks"],
        "cpu_s": round(cpu, 1),
    }


def searches(data: dict[str, Any], draws: int) -> list[dict[str, Any]]:
    """Per draw: the log acquisition value found and the search's CPU seconds, per front_starts setting."""
    import torch
    from botorch.models import ModelListGP
    from localbo.policies.acqopt import unit_bounds
    from localbo.policies.gp import fit_model
    from localbo.policies.hvi_search import SearchSettings, log_nehvi, maximise
    from localbo.policies.pareto import pareto_front

    X, Y, ref = data["X"], data["Y"], data["ref"]
    d, k = X.shape[1], Y.shape[1]
    fitting = torch.Generator().manual_seed(0)
    model = ModelListGP(*[fit_model(X, Y[:, j], "matern52", None, generator=fitting) for j in range(k)])
    front = X[pareto_front(Y, None)]
    none = torch.zeros(0, d, dtype=torch.float64)
    out = []
    for draw in range(draws):
        acq = log_nehvi(model, X, none, ref, k, 0, SearchSettings(), torch.Generator().manual_seed(100 + draw))
        row: dict[str, Any] = {"draw": draw}
        for starts in SETTINGS:
            began = time.process_time()
            settings = SearchSettings(front_starts=starts)
            _, value = maximise(acq, 1, unit_bounds(d), None, settings, torch.Generator().manual_seed(draw), front)
            row[str(starts)] = {"log_acq": value, "cpu_s": round(time.process_time() - began, 2)}
        out.append(row)
        print(f"  draw {draw}: {row}", flush=True)
    return out


def markdown(record: dict[str, Any]) -> str:
    meta, args = record["meta"], record["args"]
    lines = [
        "# qlognehvi's acquisition search: random starts alone, and with starts at front points",
        "",
        f"Written whole by `benchmarks/acquisition_search.py` at commit {meta['commit']}, {meta['when']}, on "
        f"{meta['machine']}; command: `{meta['command']}`.",
        "",
        f"Data: `qlognehvi` on {args['problem']} (the multi-objective benchmark's problem and reference point) to "
        f"n = {args['n']} results with {DATA_MC_SAMPLES} MC samples; the objective GPs fitted as the policy fits "
        "them; per draw one acquisition (64 QMC samples, seeded by the draw) searched by `hvi_search.maximise` with "
        "the default starts (4 of 128 random) from one generator seed, and the same plus `front_starts` starts at "
        "observed front points. Value: the log acquisition of the best point found (higher is better). "
        "`paired`: the setting's value minus front_starts 0's on the same draw.",
        "",
        "| data seed | front size | log10 HV diff of the data | draw | "
        + " | ".join(f"front_starts {s}" for s in SETTINGS)
        + " | paired | CPU s per search |",
        "|---|---|---|---|" + "---|" * len(SETTINGS) + "---|---|",
    ]
    diffs = []
    for block in record["data"]:
        for row in block["draws"]:
            values = [row[str(s)]["log_acq"] for s in SETTINGS]
            gap = None if None in values else values[-1] - values[0]
            diffs += [] if gap is None else [gap]
            cells = " | ".join("-" if v is None else f"{v:.3f}" for v in values)
            cpu = " / ".join(f"{row[str(s)]['cpu_s']:.1f}" for s in SETTINGS)
            lines.append(
                f"| {block['seed']} | {block['front_size']} | {block['log_hv_diff']:.3f} | {row['draw']} | {cells} | "
                f"{'-' if gap is None else f'{gap:+.3f}'} | {cpu} |"
            )
    if diffs:
        m, se = mean_se(diffs)
        spread = "" if se is None else f" ± {se:.3f}"
        ahead = sum(g > LEVEL for g in diffs)
        behind = sum(g < -LEVEL for g in diffs)
        lines += [
            "",
            f"front_starts {SETTINGS[-1]} against 0, paired over {len(diffs)} searches: {m:+.3f}{spread} in log "
            f"acquisition; higher on {ahead}, lower on {behind}, level on {len(diffs) - ahead - behind}.",
        ]
    data_cpu = ", ".join(f"seed {b['seed']}: {b['cpu_s']} CPU s ({b['fallbacks']} fallbacks)" for b in record["data"])
    lines += ["", f"Making the data: {data_cpu}. Findings, by hand: `multiobjective_findings.md`.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", help=f"a problem of the multi-objective benchmark (default {FULL['problem']})")
    parser.add_argument("--seeds", type=int, help=f"data sets, seeds 0.. (default {FULL['seeds']})")
    parser.add_argument("--n", type=int, help=f"results in each data set (default {FULL['n']})")
    parser.add_argument("--draws", type=int, help=f"acquisitions searched per data set (default {FULL['draws']})")
    parser.add_argument("--smoke", action="store_true", help="BraninCurrin, n = 14, one draw, into a temp folder")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--report-only", action="store_true", help="only rewrite the markdown from the JSON")
    args = parser.parse_args()
    base = SMOKE if args.smoke else FULL
    chosen = {key: getattr(args, key) if getattr(args, key) is not None else base[key] for key in FULL}
    out = output_dir(parser, args, RESULTS, "acquisition-search")
    if args.report_only:
        (out / "acquisition_search.md").write_text(markdown(json.loads((out / "acquisition_search.json").read_text())))
        return
    import torch

    torch.set_num_threads(1)
    meta = {
        **run_meta(__file__, args.smoke, numerics=True),
        "command": " ".join(["benchmarks/acquisition_search.py"] + sys.argv[1:]),
    }
    record: dict[str, Any] = {"meta": meta, "args": chosen, "data": []}
    for seed in range(chosen["seeds"]):
        data = data_set(chosen["problem"], seed, chosen["n"])
        print(f"data seed {seed}: log10 HV diff {data['log_hv_diff']:.3f}, front {data['front_size']}", flush=True)
        block = {key: data[key] for key in ("log_hv_diff", "front_size", "fallbacks", "cpu_s")}
        record["data"].append({"seed": seed, **block, "draws": searches(data, chosen["draws"])})
    (out / "acquisition_search.json").write_text(json.dumps(record, indent=2))
    text = markdown(record)
    (out / "acquisition_search.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
