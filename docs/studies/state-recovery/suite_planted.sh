#!/bin/bash
# After suite_sees.sh OUT: the README suite against OUT's recordings, with every timed call exactly
# 10% slower (docs/studies/quiet-wait/spin_plant.py, fn mode: what runs is unchanged, only time can
# see it), then the time verdicts of both runs counted. Run from the repository root.
#   docs/studies/state-recovery/suite_planted.sh OUT [CODE]
set -euo pipefail
out=$1 code=${2:-$PWD}
root=$PWD
start=$(date +%s)
(cd "$code" && ACCEL_SPIN=0.10 ACCEL_SPIN_OF=fn PYTHONPATH="$code:$root/docs/studies/quiet-wait" \
   python -m pytest perf_tests --device cpu -q -p no:cacheprovider -p spin_plant \
   --accel-baselines "$out/bl" --accel-json "$out/planted-10pct.json") > "$out/planted-10pct.log" 2>&1 || true
echo "planted: $(( $(date +%s) - start )) s" | tee -a "$out/seconds"
python - "$out" <<'PY'
import json, sys
from collections import Counter
for case in ("run", "planted-10pct"):
    with open(f"{sys.argv[1]}/{case}.json", encoding="utf-8") as handle:
        results = json.load(handle)["results"]
    print(case, dict(Counter(r["verdict"]["time"]["outcome"] for r in results if r.get("verdict"))))
PY
