#!/usr/bin/env bash
# Run 4: a +10% same-operator slowdown on the 8 forward SDPA tests, quiet, then beside a second copy of
# them in a loop (uncalibrated), then unchanged code beside it. BASELINES: recordings made as in
# quiet_wait.sh (three --accel-update runs). Usage (from the repository root):
#   docs/studies/quiet-wait/ten_percent.sh BASELINES OUT_DIR
set -uo pipefail
bl=${1:?give the recorded baselines folder}
out=${2:?give a folder for the logs}
mkdir -p "$out"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider)
ACCEL_SPIN=0.10 PYTHONPATH=docs/studies/quiet-wait python -m pytest "${select[@]}" --accel-baselines "$bl" \
  -p spin_plant --accel-json "$out/quiet-planted.json" >"$out/quiet-planted.log" 2>&1
rm -f "$out/done"
( while [ ! -e "$out/done" ]; do
    python -m pytest "${select[@]}" --accel-baselines "$out/neighbour-bl" -q >"$out/neighbour.log" 2>&1
  done ) &
sleep 15
ACCEL_SPIN=0.10 PYTHONPATH=docs/studies/quiet-wait python -m pytest "${select[@]}" --accel-baselines "$bl" \
  -p spin_plant --accel-json "$out/busy-planted.json" >"$out/busy-planted.log" 2>&1
python -m pytest "${select[@]}" --accel-baselines "$bl" --accel-json "$out/busy-unchanged.json" \
  >"$out/busy-unchanged.log" 2>&1
touch "$out/done"
pkill -f "accel-baselines $out/neighbour-bl" || true
