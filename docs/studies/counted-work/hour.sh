#!/usr/bin/env bash
# An hour of counting from one recording: 20 unchanged runs (10 quiet, 10 beside the looping README suite) and the
# key-share plants (+1%, +2%, +5% of the SDPA work, an extra copy of the keys and values, and of the output) quiet
# and beside, interleaved, one run started every SPACING seconds (or when the one before ends, if later).
#   docs/studies/counted-work/hour.sh OUT [SPACING]     # OUT as for study.sh; runs study.sh setup and record first
set -uo pipefail
out=${1:?give a folder}
spacing=${2:-150}
study="$(cd "$(dirname "$0")" && pwd)/study.sh"
[ -d "$out/head" ] || "$study" setup "$out"
"$study" record "$out"
plan=(
  "unchanged-q1 quiet" "plant-1pct-q quiet PLANT_SDPA_FRACTION=0.01"
  "unchanged-b1 beside" "plant-1pct-b beside PLANT_SDPA_FRACTION=0.01"
  "unchanged-q2 quiet" "plant-2pct-q quiet PLANT_SDPA_FRACTION=0.02"
  "unchanged-b2 beside" "plant-2pct-b beside PLANT_SDPA_FRACTION=0.02"
  "unchanged-q3 quiet" "plant-5pct-q quiet PLANT_SDPA_FRACTION=0.05"
  "unchanged-b3 beside" "plant-5pct-b beside PLANT_SDPA_FRACTION=0.05"
  "unchanged-q4 quiet" "plant-copykv-q quiet PLANT_SDPA_COPY=inputs"
  "unchanged-b4 beside" "plant-copykv-b beside PLANT_SDPA_COPY=inputs"
  "unchanged-q5 quiet" "plant-copyout-q quiet PLANT_SDPA_COPY=1"
  "unchanged-b5 beside" "plant-copyout-b beside PLANT_SDPA_COPY=1"
  "unchanged-q6 quiet" "unchanged-b6 beside" "unchanged-q7 quiet" "unchanged-b7 beside"
  "unchanged-q8 quiet" "unchanged-b8 beside" "unchanged-q9 quiet" "unchanged-b9 beside"
  "unchanged-q10 quiet" "unchanged-b10 beside"
)
next=$SECONDS
for run in "${plan[@]}"; do
  while [ "$SECONDS" -lt "$next" ]; do sleep 5; done
  next=$((SECONDS + spacing))
  # shellcheck disable=SC2086
  "$study" run "$out" $run
done
