#!/usr/bin/env bash
# requirements.lock: every dependency of the service and the client pinned (uv pip compile), for
# reproducible images. torch is left out: the Dockerfile installs it first, from PyTorch's CPU index
# (or a CUDA one); the lock is resolved against that CPU build (deploy/lock-overrides.txt), so no
# nvidia-* package is pinned. Run after changing a dependency in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-.venv/bin/uv}
FIND_LINKS=()
[ -d /opt/wheels ] && FIND_LINKS=(--find-links /opt/wheels)  # this machine's local CPU torch wheel
"$UV" pip compile pyproject.toml client/pyproject.toml --python-version 3.11 --universal \
  --override deploy/lock-overrides.txt --no-emit-package torch "${FIND_LINKS[@]}" \
  --custom-compile-command "scripts/lock.sh" -q -o requirements.lock
echo "requirements.lock: $(grep -c '^[a-z]' requirements.lock) packages pinned"
