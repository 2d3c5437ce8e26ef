#!/usr/bin/env bash
# Drift from history, measured within a day: the 8 forward SDPA tests' unchanged runs filed as "nights"
# into a history folder, then later runs of unchanged code and of an exact +10% plant judged twice,
# without and with --accel-history. Recordings first, as the sight study makes them:
#   docs/studies/sight/exact_plant.sh OUT 1
# then, from the repository root, on a quiet host:
#   docs/studies/drift/hours.sh OUT night N     # one unchanged run, filed into OUT/history as night N
#   docs/studies/drift/hours.sh OUT judge LABEL # unchanged and +10%, each without and with the history
set -uo pipefail
out=${1:?give the folder exact_plant.sh recorded into}
what=${2:?night or judge}
name=${3:?a night number or a label}
plant=docs/studies/quiet-wait
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider --accel-baselines "$out/bl")
commit=$(git rev-parse HEAD)
if [ "$what" = night ]; then
  date -u +"night $name %FT%TZ" >>"$out/times"
  python -m pytest "${select[@]}" --accel-json "$out/night$name.json" >"$out/night$name.log" 2>&1
  python -m pytest_accel archive "$out/night$name.json" --into "$out/history" --commit "$commit" --run-id "$name"
  exit 0
fi
for history in none with; do
  extra=()
  [ "$history" = with ] && extra=(--accel-history "$out/history")
  date -u +"$name unchanged $history %FT%TZ" >>"$out/times"
  python -m pytest "${select[@]}" "${extra[@]}" --accel-json "$out/$name-unchanged-$history.json" \
    >"$out/$name-unchanged-$history.log" 2>&1
  date -u +"$name planted $history %FT%TZ" >>"$out/times"
  ACCEL_SPIN=0.10 ACCEL_SPIN_OF=fn PYTHONPATH="$plant" python -m pytest "${select[@]}" "${extra[@]}" -p spin_plant \
    --accel-json "$out/$name-planted-10pct-$history.json" >"$out/$name-planted-10pct-$history.log" 2>&1
done
date -u +"$name done %FT%TZ" >>"$out/times"
