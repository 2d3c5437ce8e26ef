#!/usr/bin/env bash
# The 8 forward SDPA tests of the smoke profile spread over two xdist workers of one core each (-n 2) against one
# process (-n 0): wall time, and the gate's honesty beside the sibling worker. Baselines recorded with -n 2 (the
# regime the runs are judged in), twice, minutes apart; then unchanged runs and runs with SDPA planted to do +25% of
# its work (a share of its keys again: docs/studies/counted-work/plant_sdpa.py, loaded by every run).
#   docs/studies/xdist-workers/study.sh OUT record NAME          # -n 2 --accel-update into OUT/bl
#   docs/studies/xdist-workers/study.sh OUT wall NAME 0|2        # timed, against an empty folder: wall time only
#   docs/studies/xdist-workers/study.sh OUT judge NAME [VAR=VALUE ...]   # -n 2 against OUT/bl: OUT/NAME.json
# The regime (what was beside each figure): record and judge with any -n (0: one process)
#   docs/studies/xdist-workers/study.sh OUT record-n NAME N
#   docs/studies/xdist-workers/study.sh OUT judge-n NAME N [VAR=VALUE ...]
set -uo pipefail
out=${1:?give a folder}
what=${2:?record, wall or judge}
name=${3:?give the run a name}
shift 3
mkdir -p "$out"
out=$(cd "$out" && pwd)
export PYTHONPATH
PYTHONPATH="$(cd "$(dirname "$0")/../counted-work" && pwd)"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider -p plant_sdpa)
started=$SECONDS
case $what in
  record) python -m pytest "${select[@]}" -n 2 --accel-baselines "$out/bl" --accel-update >"$out/$name.log" 2>&1 ;;
  wall) python -m pytest "${select[@]}" -n "${1:?0 or 2}" --accel-baselines "$out/empty-$name" \
          --accel-json "$out/$name.json" >"$out/$name.log" 2>&1 ;;
  judge) env "$@" python -m pytest "${select[@]}" -n 2 --accel-baselines "$out/bl" \
           --accel-json "$out/$name.json" >"$out/$name.log" 2>&1 ;;
  record-n) python -m pytest "${select[@]}" -n "${1:?give -n}" --accel-baselines "$out/bl" --accel-update \
              --accel-json "$out/$name.json" >"$out/$name.log" 2>&1 ;;
  judge-n) workers=${1:?give -n}; shift
           env "$@" python -m pytest "${select[@]}" -n "$workers" --accel-baselines "$out/bl" \
             --accel-json "$out/$name.json" >"$out/$name.log" 2>&1 ;;
esac
rc=$?
echo "$name $what $* $(date -u +%FT%TZ) $((SECONDS - started)) s exit $rc" >>"$out/times"
