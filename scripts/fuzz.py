"""Schema fuzzing: schemathesis, every check, against a live server on SQLite with a token configured.

``make fuzz`` runs it (and ``.ci/run`` before ``make test``). Bounded: a few examples per operation and
a wall-clock budget, so it fits a few minutes on a 2-core machine. Exits non-zero on any failure
(a response >= 500, a schema violation, an accepted bad input, ...), with schemathesis' own report.
Settings that are not flags (the event streams' length, the few 422s a schema cannot predict) are in
``scripts/schemathesis.toml``.

    python scripts/fuzz.py [--max-examples N] [--max-time SECONDS] [extra schemathesis args...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness.processes import ServerProcess  # noqa: E402

TOKEN = "fuzz-admin-token"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=40, help="test cases per operation and phase")
    parser.add_argument("--max-time", type=int, default=240, help="wall-clock budget of the run, seconds")
    parser.add_argument("--seed", type=int, default=16, help="hypothesis seed (a run is reproducible)")
    args, extra = parser.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="localbo-fuzz-") as tmp:
        log = Path(tmp) / "server.log"
        server = ServerProcess(
            f"sqlite:///{tmp}/fuzz.db",
            log_path=log,
            LOCALBO_TOKENS=f"{TOKEN}=admin",
            LOCALBO_ASK_WAIT_SECONDS="2",
            LOCALBO_ASK_WAIT_MAX_SECONDS="2",  # a fuzzed wait_seconds (3.9e307) is cut to 2 s: answers stay in time
        )
        try:
            command = [
                str(Path(sys.executable).with_name("schemathesis")),
                f"--config-file={ROOT / 'scripts' / 'schemathesis.toml'}",
                "run",
                f"{server.url}/openapi.json",
                "--checks=all",
                f"--header=Authorization: Bearer {TOKEN}",
                f"--max-examples={args.max_examples}",
                f"--max-time={args.max_time}",
                f"--seed={args.seed}",
                "--request-timeout=30",
                "--workers=1",
                "--suppress-health-check=all",
                *extra,
            ]
            print("+", " ".join(command), flush=True)
            code = subprocess.run(command, cwd=tmp).returncode
        finally:
            server.stop()
        if code != 0:
            print(f"schemathesis exited {code}; the server's log ends:\n{log.read_text()[-6000:]}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
