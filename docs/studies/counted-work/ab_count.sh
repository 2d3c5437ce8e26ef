#!/usr/bin/env bash
# `pytest-accel ab --count` on the pull-request selection (perf_tests/test_attention.py -k "sdpa and not backward",
# 12 tests), from the fresh clone study.sh set up: the same tree against itself, and against itself with SDPA
# doing +2% of its work in the head (the plant plugin of plant_sdpa.py; --base-env unsets it for the base).
#   docs/studies/counted-work/ab_count.sh OUT NAME [quiet|beside] [VAR=VALUE ...]   # OUT/ab-NAME/: ab's folder
set -uo pipefail
out=$(cd "${1:?give the folder of study.sh setup}" && pwd)
name=${2:?give the sitting a name}
beside=${3:-quiet}
shift 3 2>/dev/null || shift $#
here=$(cd "$(dirname "$0")" && pwd)
cd "$out/head"
export PYTHONPATH="$here"
neighbour=
if [ "$beside" = beside ]; then  # the README suite, looping in the clone with its own baselines
  ( while true; do "$out/venv/bin/python" -m pytest perf_tests --device cpu -q -p no:cacheprovider \
      --accel-baselines "$out/neighbour-bl" >/dev/null 2>&1; done ) &
  neighbour=$!
  sleep 20
fi
started=$SECONDS
env "$@" "$out/venv/bin/python" -m pytest_accel ab --count --base-env PLANT_SDPA_FRACTION=0 --out "$out/ab-$name" \
  -- perf_tests/test_attention.py --device cpu -k "sdpa and not backward" -p plant_sdpa >"$out/ab-$name.log" 2>&1
rc=$?
echo "ab-$name $beside $* $(date -u +%FT%TZ) $((SECONDS - started)) s exit $rc" >>"$out/times"
if [ -n "$neighbour" ]; then
  pkill -P "$neighbour" 2>/dev/null; kill "$neighbour" 2>/dev/null; wait "$neighbour" 2>/dev/null
  pkill -f "neighbour-bl" 2>/dev/null
fi
