#!/usr/bin/env bash
# Hours after the recordings: unchanged code and a +10% same-operator slowdown, quiet, on the 8 forward
# SDPA tests, against recordings made earlier (state_wait.sh's OUT/bl). Usage (from the repository root):
#   docs/studies/quiet-wait/hours_later.sh BASELINES OUT_DIR
# SPIN_OF=call: the plant slows each test's whole timed call by about 10% (spin_plant.py), not its SDPA
# call; SPIN_OF=fn: by exactly 10% of each call's own time (it wraps the workload handed to the fixture).
set -uo pipefail
bl=${1:?give the recorded baselines folder}
out=${2:?give a folder for the logs}
here=$(dirname "$0")
mkdir -p "$out"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider --accel-baselines "$bl")
date -u +%FT%TZ >"$out/started"
python -m pytest "${select[@]}" --accel-json "$out/unchanged.json" >"$out/unchanged.log" 2>&1
ACCEL_SPIN=0.10 ACCEL_SPIN_OF=${SPIN_OF:-sdpa} PYTHONPATH="$here" python -m pytest "${select[@]}" -p spin_plant \
  --accel-json "$out/planted-10pct.json" >"$out/planted-10pct.log" 2>&1
python - "$out" <<'PY'
import json, sys
from collections import Counter
for case in ("unchanged", "planted-10pct"):
    results = json.load(open(f"{sys.argv[1]}/{case}.json"))["results"]
    print(case, dict(Counter(r["verdict"]["time"]["outcome"] for r in results if r.get("verdict"))))
PY
