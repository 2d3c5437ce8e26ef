#!/usr/bin/env bash
# Slowdowns planted where users' come from, judged by the gate as it ships (default settings), quiet and beside a
# neighbour that is another perf job. The 8 forward SDPA tests of the smoke profile, one process (-n 0), against
# recordings taken quiet. The cases:
#   unchanged   nothing planted
#   pythonpath  +10% of each timed call from a pytest plugin on PYTHONPATH, loaded with -p (the quiet-wait study's
#               spin_plant, fn mode: what runs is unchanged, so only time can see it)
#   main        the same plugin handed to pytest.main() by a script that imported torch first (main.py)
#   envvar      an environment variable: ATEN_CPU_CAPABILITY=default (torch's CPU kernels without AVX2/AVX-512)
# Usage, from the repository root:
#   docs/studies/plants-beside/study.sh OUT record NAME             # --accel-update into OUT/bl
#   docs/studies/plants-beside/study.sh OUT calibrate NAME          # --accel-calibrate: beside the standard neighbour
#   docs/studies/plants-beside/study.sh OUT judge NAME CASE [beside]
# "beside": a neighbour job runs meanwhile, started here and stopped after (another perf job: the MMDiT tests of
# the smoke profile against a folder of their own, in a loop, on the host's other core).
set -uo pipefail
out=${1:?give a folder}
what=${2:?record or judge}
name=${3:?give the run a name}
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
plants="$here/../quiet-wait"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider --accel-baselines "$out/bl")
started=$SECONDS
if [ "$what" = record ] || [ "$what" = calibrate ]; then
  python -m pytest "${select[@]}" "--accel-${what/record/update}" --accel-json "$out/$name.json" >"$out/$name.log" 2>&1
  rc=$?
  echo "$name $what $(date -u +%FT%TZ) $((SECONDS - started)) s exit $rc" >>"$out/times"
  exit 0
fi
case_=${4:?unchanged, pythonpath, main or envvar}
neighbour=""
if [ "${5:-}" = beside ]; then
  set -m
  (while :; do python -m pytest perf_tests/test_mmdit.py --device cpu -p no:cacheprovider -q \
     --accel-baselines "$out/neighbour-bl" >>"$out/$name-neighbour.log" 2>&1; done) &
  neighbour=$!
  set +m
  sleep 20  # the neighbour past its imports, measuring
fi
json=(--accel-json "$out/$name.json")
case $case_ in
  unchanged) python -m pytest "${select[@]}" "${json[@]}" >"$out/$name.log" 2>&1 ;;
  pythonpath) PYTHONPATH="$plants" ACCEL_SPIN=0.10 ACCEL_SPIN_OF=fn \
                python -m pytest "${select[@]}" -p spin_plant "${json[@]}" >"$out/$name.log" 2>&1 ;;
  main) ACCEL_SPIN=0.10 ACCEL_SPIN_OF=fn python "$here/main.py" "$plants" "${select[@]}" "${json[@]}" \
          >"$out/$name.log" 2>&1 ;;
  envvar) ATEN_CPU_CAPABILITY=default python -m pytest "${select[@]}" "${json[@]}" >"$out/$name.log" 2>&1 ;;
esac
rc=$?
[ -n "$neighbour" ] && kill -- "-$neighbour" 2>/dev/null
echo "$name $case_ ${5:-quiet} $(date -u +%FT%TZ) $((SECONDS - started)) s exit $rc" >>"$out/times"
