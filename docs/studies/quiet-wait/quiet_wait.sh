#!/usr/bin/env bash
# A neighbour that leaves: the 8 forward SDPA tests recorded three times on a quiet host (no
# calibration), then run beside another perf job (the MMDiT tests in a loop) that ends 90 s into
# the run: once with a +25% same-operator slowdown planted (spin_plant.py), once unchanged.
# Usage (from the repository root): docs/studies/quiet-wait/quiet_wait.sh OUT_DIR
set -euo pipefail
out=${1:?give a folder for the logs}
mkdir -p "$out"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward")
run=(--device cpu -p no:cacheprovider --accel-baselines "$out/bl")
for i in 1 2 3; do python -m pytest "${select[@]}" "${run[@]}" --accel-update >"$out/record$i.log" 2>&1 || true; done

transient() {  # another perf job for the first 90 s of a run, then gone
  ( end=$((SECONDS + 90))
    while [ $SECONDS -lt $end ]; do
      timeout $((end - SECONDS)) python -m pytest perf_tests/test_mmdit.py --device cpu -p no:cacheprovider \
        --accel-baselines "$out/neighbour-bl" -q >>"$out/neighbour.log" 2>&1 || true
    done ) &
}

for case in planted unchanged; do
  transient
  neighbour=$!
  sleep 5
  plugin=()
  [ "$case" = planted ] && plugin=(-p spin_plant)
  PYTHONPATH=docs/studies/quiet-wait python -m pytest "${select[@]}" "${run[@]}" "${plugin[@]}" \
    --accel-json "$out/$case.json" >"$out/$case.log" 2>&1 || true
  wait "$neighbour" || true
done
python - "$out" <<'PY'
import json, sys
from collections import Counter
for case in ("planted", "unchanged"):
    results = json.load(open(f"{sys.argv[1]}/{case}.json"))["results"]
    print(case, dict(Counter(r["verdict"]["time"]["outcome"] for r in results if r.get("verdict"))))
PY
