#!/usr/bin/env bash
# Installs into .venv what a make target needs, one part at a time (the Makefile calls it once per part,
# each with a stamp file .venv/.installed-PART):
#
#   serve  torch's CPU wheel, then the service and the client at the versions of requirements.lock
#          (make run, make demo: nothing else)
#   dev    the test and lint tools and the client's Optuna extra (make test, make lint, make fuzz)
#   bench  the benchmarks' extras: Optuna's peers, MuJoCo, Playwright... (make bench, make test: the tests
#          run every benchmark's smoke mode, the RL one included)
#   docs   MkDocs and its plugins (make docs, make test)
#   axe    axe-core from the npm registry, for the dashboard's accessibility scan (make test)
#   all    every part (make setup)
#
# Every part installs with requirements.lock as its constraints, so the packages the service shares with
# the tools stay at the locked versions (tests/test_deploy_files.py checks .venv against the lock).
#
#   scripts/setup.sh [PART...]          (no PART: serve)
#   VENV=/tmp/v scripts/setup.sh serve  (another virtual environment: a fresh-install check)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
# torch first, pinned: this release's CPU wheel is on the project's machines; an unpinned
# torch would pull a multi-GB CUDA build. Override with TORCH_SPEC (e.g. for a GPU worker).
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
# Locked packages the extras need at another version (each with why); the rest of the lock holds for
# them too. typer: openapi-python-client 0.29 (dev, tests/test_generated_client.py) needs typer<0.28.
UNLOCKED_FOR_EXTRAS=(typer)

PY="$VENV/bin/python"

pip_install() {
  # pip's own status decides (pipefail); only its noise about the machine's local indexes is dropped
  "$PY" -m pip install -q "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }
}

constraints() {
  # the lock, plus torch as installed (so no later step changes it), less what the extras must move
  local file="$VENV/constraints-$1.txt" pattern
  pattern="^($(IFS='|'; echo "${UNLOCKED_FOR_EXTRAS[*]}"))=="
  # serve alone gets the whole lock; once an extra is installed, serve keeps what the extras moved
  if [ "$1" = serve ] && [ -z "$(find "$VENV" -maxdepth 1 -name '.installed-*' ! -name .installed-serve)" ]; then
    cp requirements.lock "$file"
  else
    grep -Ev "$pattern" requirements.lock >"$file"
  fi
  echo "$TORCH_SPEC" >>"$file"
  echo "$file"
}

part_serve() {
  [ -x "$PY" ] || "$PYTHON" -m venv "$VENV"
  pip_install --upgrade pip
  # numpy with it: torch imported without numpy warns "Failed to initialize NumPy"
  pip_install "$TORCH_SPEC" numpy -c "$(constraints serve)"
  "$PY" -c "import torch" || { echo "torch did not install ($TORCH_SPEC)" >&2; exit 1; }
  pip_install -c "$(constraints serve)" -e . -e ./client
  "$PY" -c "import localbo, localbo_client, botorch, prometheus_client" || { echo "localbo did not install" >&2; exit 1; }
}

part_dev() {
  pip_install -c "$(constraints extras)" -e ".[dev]" -e "./client[optuna,pandas]"
  "$PY" -c "import pytest, xdist, ruff, mypy, optuna, schemathesis, playwright" || { echo "the dev tools did not install" >&2; exit 1; }
}

part_bench() {
  pip_install -c "$(constraints extras)" -e ".[bench]"
  "$PY" -c "import optuna, cmaes, grpc, google.protobuf, gymnasium, mujoco, matplotlib, ax" \
    || { echo "the benchmarks' extras did not install" >&2; exit 1; }
}

part_docs() {
  pip_install -c "$(constraints extras)" -e ".[docs]"
  "$PY" -c "import mkdocs, material, mkdocstrings" || { echo "the docs tools did not install" >&2; exit 1; }
}

part_axe() {
  # axe-core from the npm registry: the dashboard's accessibility scan (tests/test_dashboard_v2.py) injects it
  [ -f .cache/axe/node_modules/axe-core/axe.min.js ] \
    || npm install --prefix .cache/axe --no-audit --no-fund --silent axe-core@4 \
    || { echo "axe-core did not install (npm install axe-core@4)" >&2; exit 1; }
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(serve)
[ "${parts[*]}" != all ] || parts=(serve dev bench docs axe)
for part in "${parts[@]}"; do
  case "$part" in
    serve | dev | bench | docs | axe) ;;
    *) echo "unknown part '$part' (serve, dev, bench, docs, axe, all)" >&2; exit 2 ;;
  esac
  # an extra on a virtual environment without the service installs the service first
  if [ "$part" != serve ] && [ "$part" != axe ] && [ ! -f "$VENV/.installed-serve" ]; then
    part_serve
    touch "$VENV/.installed-serve"
  fi
  "part_$part"
  [ "$part" = axe ] || touch "$VENV/.installed-$part"
  echo "set up: $part ($VENV, $("$PY" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null || echo 'no torch'))"
done
