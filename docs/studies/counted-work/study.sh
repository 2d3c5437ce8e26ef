#!/usr/bin/env bash
# The work counted, from a fresh clone: the 8 forward SDPA tests counted (--accel-count --benchmark-disable) against
# one recording made minutes before, with no calibration. Unchanged runs quiet and beside a neighbour (the README
# suite looping in the same clone); then SDPA made to do +1%, +2% and +5% more of its work, and an extra copy, by a
# pytest plugin on PYTHONPATH (plant_sdpa.py). Every run loads that plugin; only its variables differ.
#   docs/studies/counted-work/study.sh setup OUT           # a venv with torch 2.13.0 and a clone of HEAD, editable
#   docs/studies/counted-work/study.sh record OUT          # one recording of the counts into OUT/bl
#   docs/studies/counted-work/study.sh run OUT NAME [quiet|beside] [VAR=VALUE ...]   # one judged run: OUT/NAME.json
#   python docs/studies/counted-work/summarize.py OUT      # per run: outcomes and each count's ratio to the recording
set -uo pipefail
what=${1:?setup, record or run}
out=${2:?give a folder}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
python="$out/venv/bin/python"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider -p plant_sdpa --accel-baselines "$out/bl" --accel-count --benchmark-disable)
if [ "$what" = setup ]; then
  git clone -q "$(git rev-parse --show-toplevel)" "$out/head"
  python3 -m venv "$out/venv"
  "$python" -m pip install --quiet torch==2.13.0
  "$python" -m pip install --quiet -e "$out/head[test]"
  exit 0
fi
cd "$out/head"
export PYTHONPATH="$here"
if [ "$what" = record ]; then
  started=$SECONDS
  "$python" -m pytest "${select[@]}" --accel-update >"$out/record.log" 2>&1
  echo "record $(date -u +%FT%TZ) $((SECONDS - started)) s" >>"$out/times"
  exit 0
fi
name=${3:?give the run a name}
beside=${4:-quiet}
shift 4 2>/dev/null || shift $#
neighbour=
if [ "$beside" = beside ]; then  # the README suite, looping in the clone with its own baselines
  ( while true; do "$python" -m pytest perf_tests --device cpu -q -p no:cacheprovider \
      --accel-baselines "$out/neighbour-bl" >/dev/null 2>&1; done ) &
  neighbour=$!
  sleep 20
fi
started=$SECONDS
env "$@" "$python" -m pytest "${select[@]}" --accel-json "$out/$name.json" >"$out/$name.log" 2>&1
rc=$?
echo "$name $beside $* $(date -u +%FT%TZ) $((SECONDS - started)) s exit $rc" >>"$out/times"
if [ -n "$neighbour" ]; then
  pkill -P "$neighbour" 2>/dev/null; kill "$neighbour" 2>/dev/null; wait "$neighbour" 2>/dev/null
  pkill -f "neighbour-bl" 2>/dev/null
fi
exit 0
