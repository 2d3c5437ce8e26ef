#!/usr/bin/env bash
# The +10% bar with a plant that is exactly +10%: the 8 forward SDPA tests recorded three times on a
# quiet host, then RUNS times unchanged code and a spin of exactly 10% of each timed call's own time
# (spin_plant.py's fn mode: what runs is unchanged, only time can see it). Each run's verdict counts
# are printed at the end. Usage (from the repository root):
#   docs/studies/sight/exact_plant.sh OUT_DIR [RUNS] [FIRST]
# When OUT_DIR/bl already holds recordings they are kept and the runs are numbered from FIRST: the
# same recordings judged again hours later.
set -uo pipefail
out=${1:?give a folder for the logs}
runs=${2:-3}
first=${3:-1}
plant=docs/studies/quiet-wait
mkdir -p "$out"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider --accel-baselines "$out/bl")
if [ ! -d "$out/bl" ]; then
  for i in 1 2 3; do
    date -u +"record $i %FT%TZ" >>"$out/times"
    python -m pytest "${select[@]}" --accel-update >"$out/record$i.log" 2>&1
  done
fi
last=$((first + runs - 1))
for run in $(seq "$first" "$last"); do
  date -u +"run $run unchanged %FT%TZ" >>"$out/times"
  python -m pytest "${select[@]}" --accel-json "$out/run$run-unchanged.json" >"$out/run$run-unchanged.log" 2>&1
  date -u +"run $run planted %FT%TZ" >>"$out/times"
  ACCEL_SPIN=0.10 ACCEL_SPIN_OF=fn PYTHONPATH="$plant" python -m pytest "${select[@]}" -p spin_plant \
    --accel-json "$out/run$run-planted-10pct.json" >"$out/run$run-planted-10pct.log" 2>&1
done
date -u +"done %FT%TZ" >>"$out/times"
python "$(dirname "$0")/counts.py" "$out" "$last" "$first"
