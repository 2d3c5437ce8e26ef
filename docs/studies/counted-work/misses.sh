#!/usr/bin/env bash
# Simulated last-level misses (accel_count_misses = true): the two SD3 128px SDPA tests recorded once, then counted
# in N more processes, after study.sh setup OUT; each run's counts in OUT/misses/runI.json.
#   docs/studies/counted-work/misses.sh OUT N     # then: python docs/studies/counted-work/misses.py OUT/misses
set -uo pipefail
out=$(cd "${1:?give the study folder}" && pwd)
runs=${2:-3}
mkdir -p "$out/misses"
cd "$out/head"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and 128px and not backward" --device cpu
        -p no:cacheprovider --accel-baselines "$out/misses/bl" --accel-count --benchmark-disable
        -o accel_count_misses=true)
started=$SECONDS
"$out/venv/bin/python" -m pytest "${select[@]}" --accel-update >"$out/misses/record.log" 2>&1
echo "record $((SECONDS - started)) s" >"$out/misses/times"
for i in $(seq "$runs"); do
  started=$SECONDS
  "$out/venv/bin/python" -m pytest "${select[@]}" --accel-json "$out/misses/run$i.json" >"$out/misses/run$i.log" 2>&1
  echo "run$i $((SECONDS - started)) s" >>"$out/misses/times"
done
