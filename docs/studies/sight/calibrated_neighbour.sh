#!/usr/bin/env bash
# The +10% bar beside a calibrated neighbour: on BASELINES (exact_plant.sh's OUT/bl, copied), two
# calibrations beside the standard neighbour (as the guide says: once or twice), then RUNS times,
# beside a second copy of the 8 forward SDPA tests looping (another perf job), unchanged code and a
# spin of exactly 10% of each timed call (spin_plant.py's fn mode). Usage (from the repository root):
#   docs/studies/sight/calibrated_neighbour.sh BASELINES OUT_DIR [RUNS]
set -uo pipefail
source_bl=${1:?give the recorded baselines folder}
out=${2:?give a folder for the logs}
runs=${3:-3}
plant=docs/studies/quiet-wait
mkdir -p "$out"
rm -rf "$out/bl" && cp -r "$source_bl" "$out/bl"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider)
for i in 1 2; do
  date -u +"calibrate $i %FT%TZ" >>"$out/times"
  python -m pytest "${select[@]}" --accel-baselines "$out/bl" --accel-calibrate >"$out/calibrate$i.log" 2>&1
done
rm -f "$out/done"
( while [ ! -e "$out/done" ]; do
    python -m pytest "${select[@]}" --accel-baselines "$out/neighbour-bl" -q >>"$out/neighbour.log" 2>&1
  done ) &
sleep 15
for run in $(seq 1 "$runs"); do
  date -u +"run $run unchanged %FT%TZ" >>"$out/times"
  python -m pytest "${select[@]}" --accel-baselines "$out/bl" --accel-json "$out/run$run-unchanged.json" \
    >"$out/run$run-unchanged.log" 2>&1
  date -u +"run $run planted %FT%TZ" >>"$out/times"
  ACCEL_SPIN=0.10 ACCEL_SPIN_OF=fn PYTHONPATH="$plant" python -m pytest "${select[@]}" --accel-baselines "$out/bl" \
    -p spin_plant --accel-json "$out/run$run-planted-10pct.json" >"$out/run$run-planted-10pct.log" 2>&1
done
touch "$out/done"
pkill -f "accel-baselines $out/neighbour-bl" || true
date -u +"done %FT%TZ" >>"$out/times"
python "$(dirname "$0")/counts.py" "$out" "$runs"
