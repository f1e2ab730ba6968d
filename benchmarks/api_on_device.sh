#!/usr/bin/env bash
# The API's policy paths on a device: the tests that suggest through the service (finite and categorical spaces,
# constraints, safe mode, failures, several objectives, auto, integer points), with the service's
# LOCALBO_DEVICE set, SQLite only, and every policy failure the engine answered with fallback points written to
# <folder>/policy_failures_<device>.jsonl (benchmarks/harness/policy_failure_log.py). Compare the tests named
# there on cpu and on cuda: a test named only on cuda is a policy that breaks on the device.
#
#   bash benchmarks/api_on_device.sh cpu  /tmp/out     # here
#   bash benchmarks/api_on_device.sh cuda "$OUT"       # on a GPU machine (PYTHONPATH holds service and client)
#   TESTS="tests/test_finite_api.py" bash benchmarks/api_on_device.sh cpu /tmp/out   # other tests (the smoke test)
set -uo pipefail
device=${1:?cpu or cuda}
out=${2:?a folder for the log}
jobs=${JOBS:-2}
tests=${TESTS:-tests/test_finite_api.py tests/test_categorical.py tests/test_multiobjective_api.py \
tests/test_constraints_api.py tests/test_global_policies_api.py tests/test_safe_mode.py tests/test_failure_model.py \
tests/test_auto_policy.py tests/test_core_v3.py tests/test_tell_and_ask.py tests/test_integer_points.py \
tests/test_suggest_ahead.py}
mkdir -p "$out"
log="$out/policy_failures_$device.jsonl"
: > "$log"
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
LOCALBO_DEVICE=$device LOCALBO_POLICY_FAILURE_LOG=$(realpath "$log") PYTHONPATH="benchmarks:${PYTHONPATH:-}" \
  "$PY" -m pytest -q -p no:cacheprovider -p harness.policy_failure_log -k "not postgres" -n "$jobs" $tests 2>&1 | tee "$out/pytest_$device.txt" | tail -3
status=${PIPESTATUS[0]}
echo "policy failures on $device: $(wc -l < "$log") records in $(cut -d'"' -f4 "$log" | sort -u | grep -c .) tests"
exit "$status"
