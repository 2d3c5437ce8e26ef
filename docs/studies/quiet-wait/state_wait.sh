#!/usr/bin/env bash
# Run 5: the wait for quiet that waits for the state probes too. quiet_wait.sh (three quiet
# recordings; a +25% and unchanged code beside a perf job that leaves after 90 s), then on the same
# recordings, quiet: a +10% same-operator slowdown and unchanged code.
# Usage (from the repository root): docs/studies/quiet-wait/state_wait.sh OUT_DIR
set -uo pipefail
out=${1:?give a folder for the logs}
here=$(dirname "$0")
"$here/quiet_wait.sh" "$out"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider --accel-baselines "$out/bl")
ACCEL_SPIN=0.10 PYTHONPATH="$here" python -m pytest "${select[@]}" -p spin_plant \
  --accel-json "$out/quiet-planted-10pct.json" >"$out/quiet-planted-10pct.log" 2>&1
python -m pytest "${select[@]}" --accel-json "$out/quiet-unchanged.json" >"$out/quiet-unchanged.log" 2>&1
python - "$out" <<'PY'
import json, sys
from collections import Counter
for case in ("planted", "unchanged", "quiet-planted-10pct", "quiet-unchanged"):
    results = json.load(open(f"{sys.argv[1]}/{case}.json"))["results"]
    print(case, dict(Counter(r["verdict"]["time"]["outcome"] for r in results if r.get("verdict"))))
PY
grep -h "accel: waited" "$out"/*.log
