"""Seconds per iteration-ending ``suggest`` computed by a real ``localbo worker`` (Celery over Redis), on its device.

The request is the one ``policy_compute_time.py`` times in process (``harness/local_data.py``: n results
along a local run's path in d dimensions, the fit warm-started from the fit without the last batch), sent
the way the API's celery executor sends it (``request_to_wire`` -> the ``localbo.suggest`` task on the
queue) to a worker started beside this script, e.g.

    localbo worker --queue gpu --device cuda          # LOCALBO_REDIS_URL=redis://127.0.0.1:6379/0
    python benchmarks/worker_compute_time.py --queue gpu --dims 100 --n 500 2000 --out results.md
    python benchmarks/worker_compute_time.py --smoke       # beside `localbo worker --queue cpu`: a tiny run

``round trip`` is the wall time from sending to the points back (the wire both ways included), the median
of ``--repeats`` sends after one warm-up send at each size (CUDA's start and kernel compilation are not
counted). The GP window is N_max = n (all results), so a larger n is a larger GP.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
from harness.local_data import iteration_request
from localbo.config import Settings
from localbo.workers.celery_app import TASK, make_celery, queue_name
from localbo.workers.wire import request_to_wire


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policies", default="minucb,la-minucb")
    parser.add_argument("--queue", default="gpu", choices=["cpu", "gpu"])
    parser.add_argument("--dims", type=int, nargs="+", default=[100])
    parser.add_argument("--n", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for one suggestion")
    parser.add_argument("--out", help="also write the table to this markdown file")
    parser.add_argument("--smoke", action="store_true", help="tiny: d = 3, n = 20 and 30, one send, the cpu queue")
    args = parser.parse_args()
    if args.smoke:
        args.queue, args.dims, args.n, args.repeats, args.timeout = "cpu", [3], [20, 30], 1, 120.0

    settings = Settings()
    app = make_celery(settings)
    queue = queue_name(settings, args.queue)
    gpu = f" ({torch.cuda.get_device_name()})" if torch.cuda.is_available() else ""
    lines = [
        f"Suggest through a real `localbo worker` on queue `{queue}` (Celery, broker {settings.redis_url}); driver "
        f"on {platform.node()}{gpu}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; median of {args.repeats} after a warm-up",
        "",
        "| policy | d | n (= GP points) | round trip s, median | min | max | worker |",
        "|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for policy in [p.strip() for p in args.policies.split(",") if p.strip()]:
        for d in args.dims:
            for n in args.n:
                payload = request_to_wire(policy, iteration_request(policy, d, n, n_max=n))
                times, worker = [], "?"
                for k in range(args.repeats + 1):
                    start = time.perf_counter()
                    answer = app.send_task(TASK, args=[payload], queue=queue).get(timeout=args.timeout)
                    if k:  # the first send warms the worker up
                        times.append(time.perf_counter() - start)
                    worker = answer.get("worker", "?")
                row = (
                    f"| {policy} | {d} | {n} | {statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f} "
                    f"| {worker.split('/')[-1]} |"
                )
                print(row, flush=True)
                lines.append(row)
                if args.out:  # row by row: a run stopped by a time limit keeps what it measured
                    with open(args.out, "w") as f:
                        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
