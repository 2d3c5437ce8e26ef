#!/usr/bin/env bash
# Recordings as the README says them: the 8 forward SDPA tests recorded three times, GAP minutes
# apart (the host otherwise quiet), then RUNS runs of unchanged code and of an exact +10% plant
# (docs/studies/sight/exact_plant.sh, which keeps the recordings it finds). Usage (from the
# repository root):
#   docs/studies/spaced-recordings/spaced.sh OUT_DIR GAP_MINUTES [RUNS]
# Later runs on the same recordings: docs/studies/sight/exact_plant.sh OUT_DIR RUNS FIRST
set -uo pipefail
out=${1:?give a folder for the logs}
gap=${2:?give the minutes between recordings}
runs=${3:-3}
mkdir -p "$out"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider --accel-baselines "$out/bl")
for i in 1 2 3; do
  [ "$i" -gt 1 ] && sleep $((gap * 60))
  date -u +"record $i %FT%TZ" >>"$out/times"
  python -m pytest "${select[@]}" --accel-update >"$out/record$i.log" 2>&1
done
docs/studies/sight/exact_plant.sh "$out" "$runs" 1
