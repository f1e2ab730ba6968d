#!/usr/bin/env bash
# Issue 28, item 15: build the image and run the compose stack (API, worker, Postgres, Redis), then one
# ask/tell cycle and a policy suggest made by the worker, through it.
#
# Docker Hub and PyTorch's index are out of reach from these machines, Debian's packages and PyPI are not:
# the base image is made here with debootstrap (Debian bookworm, its Python 3.11) and `docker import`,
# Postgres and Redis images are built on it from Debian's packages (deploy/debian), and torch comes from the
# CPU wheel on this disk through an index served on loopback. Everything else is the project's own
# Dockerfile and docker-compose.yml (with deploy/compose.debian.yml over it).
#
#   bash scripts/container_check.sh [results file]    # default benchmarks/results/container_check.txt
#   FRESH=1 bash scripts/container_check.sh            # from nothing: the images and the build cache removed first
#
# It needs root (dockerd, debootstrap) and a few GB of disk. Each step prints what it did; a step that
# cannot run here says which and why, and the script stops there with exit code 2.
set -uo pipefail
cd "$(dirname "$0")/.."
RESULTS=${1:-benchmarks/results/container_check.txt}
WORK=.cache/container
PORT=8765
TOKEN=container-check
COMPOSE=(docker-compose -p localbo-check -f docker-compose.yml -f deploy/compose.debian.yml)
mkdir -p "$WORK" "$(dirname "$RESULTS")"
exec > >(tee "$RESULTS") 2>&1
started=$(date +%s)

say() { printf '[%4ds] %s\n' "$(( $(date +%s) - started ))" "$*"; }
impossible() { say "IMPOSSIBLE HERE: $*"; exit 2; }
failed() { say "FAILED: $*"; "${COMPOSE[@]}" logs --tail 40 2>/dev/null; exit 1; }

say "container check of localbo $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- service client migrations deploy Dockerfile pyproject.toml requirements.lock || echo " with uncommitted changes") on $(uname -srm), $(nproc) cores"

# 1. a Docker engine: Debian's docker.io, started here when none runs
if ! docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io; }
  command -v dockerd >/dev/null || impossible "no dockerd: Debian's docker.io did not install"
  (dockerd >"$WORK/dockerd.log" 2>&1 &)
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || impossible "dockerd did not start: $(tail -3 "$WORK/dockerd.log")"
fi
command -v docker-compose >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose; }
say "engine: $(docker version --format 'Docker {{.Server.Version}}'), $(docker-compose version --short 2>/dev/null | head -1 | sed 's/^/compose /')"

if [ "${FRESH:-0}" = 1 ]; then
  docker image rm -f localbo:latest localbo-postgres:bookworm localbo-redis:bookworm localbo-base:bookworm >/dev/null 2>&1
  docker builder prune -af >/dev/null 2>&1
  say "fresh: the images and the build cache removed"
fi

# 2. the base image from Debian's packages
if ! docker image inspect localbo-base:bookworm >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; }
  rm -rf "$WORK/rootfs"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$WORK/rootfs" \
    http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 || impossible "debootstrap failed: $(tail -3 "$WORK/debootstrap.log")"
  # this machine reaches its registries through a TLS-inspecting proxy: the base trusts what the host trusts
  cp /etc/ssl/certs/ca-certificates.crt "$WORK/rootfs/etc/ssl/certs/ca-certificates.crt"
  tar -C "$WORK/rootfs" -c . | docker import \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' - localbo-base:bookworm >/dev/null || impossible "docker import failed"
  rm -rf "$WORK/rootfs"
fi
say "base: localbo-base:bookworm, $(docker run --rm localbo-base:bookworm python3 --version)"

# 3. torch's CPU wheel from this disk, as a package index on loopback (the build runs on the host network)
wheel=$(ls /opt/wheels/torch-2.13.0+cpu-cp311-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || impossible "no torch 2.13.0 CPU wheel for Python 3.11 in /opt/wheels, and PyTorch's index is out of reach"
# with what torch needs (filelock, sympy...), which PyTorch's index serves beside it, from PyPI through pip
rm -rf "$WORK/index" "$WORK/wheels" && mkdir -p "$WORK/index" "$WORK/wheels"
python3 -m pip download --quiet --dest "$WORK/wheels" --only-binary=:all: "$wheel" 2>"$WORK/download.log" \
  || impossible "pip could not download what torch needs from PyPI"
for file in "$WORK"/wheels/*.whl; do
  project=$(basename "$file" | cut -d- -f1 | tr 'A-Z_.' 'a-z--')  # the index's name for it (PEP 503)
  mkdir -p "$WORK/index/$project" && mv "$file" "$WORK/index/$project/"
done
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$WORK/index" >"$WORK/index.log" 2>&1 &
index_pid=$!
cleanup() {
  kill "$index_pid" 2>/dev/null
  "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1
}
trap cleanup EXIT
say "torch index: http://127.0.0.1:$PORT/ serving $(basename "$wheel") and $(( $(ls "$WORK/index" | wc -l) - 1 )) packages it needs"

# 4. build every image of the stack (compose refuses to read the file without a token for the API)
export LOCALBO_TOKENS="$TOKEN=admin"
build_started=$(date +%s)
"${COMPOSE[@]}" build >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; failed "docker-compose build"; }
say "built in $(( $(date +%s) - build_started )) s:"
docker image ls --format '  {{.Repository}}:{{.Tag}} {{.Size}}' | grep -E 'localbo' | sort

# 5. the stack up, the API healthy
"${COMPOSE[@]}" up -d >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log"; failed "docker-compose up"; }
for _ in $(seq 1 120); do
  curl -fsS http://127.0.0.1:8000/healthz >/dev/null 2>&1 && break
  sleep 2
done
curl -fsS http://127.0.0.1:8000/healthz >/dev/null || failed "the API did not answer /healthz within 240 s"
say "stack up; /healthz answers: $(curl -fsS http://127.0.0.1:8000/healthz)"

# 6. one study through the published port: asks made by the policy on the worker, each told
python3 - "$TOKEN" <<'PY' || failed "the ask/tell cycle"
import json, sys, urllib.request

BASE, TOKEN = "http://127.0.0.1:8000/api/v1", sys.argv[1]


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, data=data, method=method, headers={
        "authorization": f"Bearer {TOKEN}", "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.loads(answer.read() or "null")


space = {"x": {"type": "float", "low": -1.0, "high": 1.0}, "y": {"type": "float", "low": -1.0, "high": 1.0}}
study = call("POST", "/studies", {"name": "container-check", "space": space, "policy": "minucb"})
name = study["name"]
print(f"  study {name!r} created, policy minucb, on the compose stack's Postgres")
sources = []
for _ in range(8):
    (trial,) = call("POST", f"/studies/{name}/ask", {"count": 1, "wait_seconds": 60})["trials"]
    x, y = trial["params"]["x"], trial["params"]["y"]
    value = (x - 0.3) ** 2 + (y + 0.5) ** 2
    call("POST", f"/studies/{name}/trials/{trial['number']}/tell", {"value": value})
    sources.append(trial["source"])
    print(f"  trial {trial['number']}: source {trial['source']}, x={x:+.3f} y={y:+.3f}, told {value:.4f}")
summary = call("GET", f"/studies/{name}")["summary"]
print(f"  summary: {summary['n_complete']} complete, {summary['n_fallback']} fallback, best {summary['best_value']:.4f}")
assert summary["n_complete"] == 8, summary
assert summary["n_fallback"] == 0, "every point came from the policy on the worker, none was a fallback"
assert all(source == "minucb" for source in sources), sources
PY
say "ask/tell cycle done"

# 7. the suggests ran on the worker (celery), not in the API process
worker_log=$("${COMPOSE[@]}" logs --no-color worker 2>&1)
suggests=$(grep -c "succeeded in" <<<"$worker_log")
grep -m3 "succeeded in" <<<"$worker_log" | sed 's/^/  /'
[ "$suggests" -ge 1 ] || failed "the worker's log shows no finished suggest task"
say "the worker ran $suggests suggest tasks"
"${COMPOSE[@]}" ps
say "container check passed"
