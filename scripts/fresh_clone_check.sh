#!/usr/bin/env bash
# Issue 28, item 2: what `make run` costs a newcomer on a fresh clone, now and before the change that made it
# install only what serving needs. Each commit is cloned into a temporary folder; `make run` is timed from the
# start until the server answers /healthz, then stopped; the clone's .venv is measured (size, packages).
#
#   bash scripts/fresh_clone_check.sh [results file] [before commit]
#       default: benchmarks/results/fresh_clone.txt, before = eb63ee8 (2026-11-24, the release the issue measured)
#
# pip's cache is left as it is (a newcomer's first install downloads more; both commits see the same cache).
set -uo pipefail
cd "$(dirname "$0")/.."
RESULTS=${1:-benchmarks/results/fresh_clone.txt}
BEFORE=${2:-eb63ee8}
PORT=18741
exec > >(tee "$RESULTS") 2>&1
say() { printf '%s\n' "$*"; }

measure() {  # commit label
  local commit=$1 label=$2 dir
  dir=$(mktemp -d /tmp/fresh-clone.XXXXXX)
  git clone -q --no-hardlinks . "$dir/localbo" && git -C "$dir/localbo" checkout -q "$commit"
  local started=$SECONDS
  (cd "$dir/localbo" && LOCALBO_PORT=$PORT exec make run >"$dir/run.log" 2>&1) &
  local pid=$!
  local up=""
  for _ in $(seq 1 900); do
    if curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; then up=$((SECONDS - started)); break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  pkill -f "localbo serve.*$PORT" 2>/dev/null; pkill -f "$dir/localbo/.venv/bin/localbo" 2>/dev/null
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  local venv="$dir/localbo/.venv"
  local size packages
  size=$(du -sm "$venv" 2>/dev/null | cut -f1)
  packages=$("$venv/bin/python" -m pip list --format=freeze 2>/dev/null | wc -l)
  if [ -z "$up" ]; then
    say "$label ($commit): make run did not serve; its log ends:"; tail -15 "$dir/run.log"
  else
    say "$label ($commit): make run served /healthz after ${up} s; .venv ${size} MB, ${packages} packages"
  fi
  for extra in playwright schemathesis optuna-dashboard mkdocs mujoco; do
    "$venv/bin/python" -m pip show -q "$extra" >/dev/null 2>&1 && say "    has $extra"
  done
  rm -rf "$dir"
}

say "fresh clone check, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
measure "$BEFORE" "before"
measure "$(git rev-parse --short HEAD)" "now"
