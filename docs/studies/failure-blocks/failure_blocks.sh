#!/usr/bin/env bash
# What a kernel developer reads when the README suite catches a slowdown beside a neighbour:
# record twice, calibrate once, then the suite with a planted +25% of attention work
# (docs/studies/false-alarms/more_attention.py) beside a second copy of the suite in a loop.
# Usage (from the repository root): docs/studies/failure-blocks/failure_blocks.sh OUT_DIR
set -euo pipefail
out=${1:?give a folder for the logs}
mkdir -p "$out"
run="perf_tests --device cpu -p no:cacheprovider --accel-baselines $out/bl"
for i in 1 2; do python -m pytest $run --accel-update >"$out/record$i.log" 2>&1 || true; done
python -m pytest $run --accel-calibrate >"$out/calibrate.log" 2>&1 || true
rm -f "$out/done"
( while [ ! -e "$out/done" ]; do
    python -m pytest perf_tests --device cpu -p no:cacheprovider --accel-baselines "$out/neighbour-bl" -q \
      >"$out/neighbour.log" 2>&1 || true
  done ) &
neighbour=$!
sleep 20
PYTHONPATH=docs/studies/false-alarms python -m pytest $run -p more_attention --accel-json "$out/planted.json" \
  >"$out/planted.log" 2>&1 || true
touch "$out/done"
kill "$neighbour" 2>/dev/null || true
pkill -f "accel-baselines $out/neighbour-bl" || true
python docs/studies/failure-blocks/blocks.py "$out/planted.log"
