#!/usr/bin/env bash
# Creates .venv and installs localbo (server, policies, CLI), its client, the test tools and the
# benchmarks' extras (the tests run every benchmark's smoke mode, the RL one included).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# torch first, pinned: this release's CPU wheel is on the project's machines; an unpinned
# torch would pull a multi-GB CUDA build. Override with TORCH_SPEC (e.g. for a GPU worker).
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
# numpy with it: torch imported without numpy warns "Failed to initialize NumPy"
.venv/bin/python -m pip install -q "$TORCH_SPEC" numpy 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import torch" || { echo "torch did not install ($TORCH_SPEC)" >&2; exit 1; }
.venv/bin/python -m pip install -q -e ".[dev,bench,docs]" -e "./client[optuna]" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import localbo, localbo_client, botorch, prometheus_client, mkdocs, optuna, grpc, google.protobuf" || { echo "localbo did not install" >&2; exit 1; }
# axe-core from the npm registry: the dashboard's accessibility scan (tests/test_dashboard_v2.py) injects it
[ -f .cache/axe/node_modules/axe-core/axe.min.js ] \
  || npm install --prefix .cache/axe --no-audit --no-fund --silent axe-core@4 \
  || { echo "axe-core did not install (npm install axe-core@4)" >&2; exit 1; }
touch .venv/.installed
echo "set up: .venv ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
