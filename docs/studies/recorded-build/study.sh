#!/usr/bin/env bash
# The recorded build beside a run: three recordings of the 8 forward SDPA tests from a clean clone of the
# commit under study, then runs (unchanged code, then an exact +10% planted in the working tree) judged
# against them, minutes and hours later. Usage, from the repository root:
#   docs/studies/recorded-build/study.sh record OUT [I]      # a clone in OUT/head, three recordings into OUT/bl
#                                                            # (I: recording I alone, to space them out)
#   docs/studies/recorded-build/study.sh run OUT N           # run N: unchanged, then planted (+10%)
#   docs/studies/recorded-build/study.sh transient OUT N     # beside a perf job for the first 90 s: +25%, unchanged
#   docs/studies/recorded-build/study.sh calibrated OUT N    # calibrate twice, then beside the standard neighbour
#   python docs/studies/recorded-build/counts.py OUT run1-unchanged run1-planted ...
# SCOPE=suite (record, run): the README's whole suite, `pytest perf_tests --device cpu`, instead of the 8 tests.
# The plant is a change to perf_tests/conftest.py in OUT/head's working tree (plant.py: spin_plant.py's fn
# mode, 10% of each timed call), so the recorded build that the gate checks out beside it has none.
set -uo pipefail
what=${1:?record or run}
out=${2:?give a folder}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
tests=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward")
[ "${SCOPE:-sdpa}" = suite ] && tests=(perf_tests)
select=("${tests[@]}" --device cpu -p no:cacheprovider --accel-baselines "$out/bl")
if [ "$what" = record ]; then  # a third argument: that recording alone (spaced recordings: 1, later 2, later 3)
  [ -d "$out/head" ] || git clone -q "$(git rev-parse --show-toplevel)" "$out/head"
  cd "$out/head"
  for i in ${3:-1 2 3}; do
    date -u +"record $i %FT%TZ $(git rev-parse --short=12 HEAD)" >>"$out/times"
    PYTHONPATH="$out/head" python -m pytest "${select[@]}" --accel-update >"$out/record$i.log" 2>&1
  done
  exit 0
fi
n=${3:?give the run number}
cd "$out/head"
if [ "$what" = transient ]; then  # no calibration: the neighbour is the MMDiT tests, looping, for 90 s
  for case in planted unchanged; do
    git checkout -q perf_tests/conftest.py
    [ "$case" = planted ] && sed -e "s|@QUIET_WAIT@|$here/../quiet-wait|" -e 's/"0.10"/"0.25"/' "$here/plant.py" \
      >>perf_tests/conftest.py
    ( end=$((SECONDS + 90))
      while [ $SECONDS -lt $end ]; do
        timeout $((end - SECONDS)) python -m pytest perf_tests/test_mmdit.py --device cpu -p no:cacheprovider \
          --accel-baselines "$out/neighbour-bl" -q >>"$out/neighbour.log" 2>&1 || true
      done ) &
    neighbour=$!
    sleep 5
    date -u +"transient $n $case %FT%TZ" >>"$out/times"
    PYTHONPATH="$out/head" python -m pytest "${select[@]}" --accel-json "$out/transient$n-$case.json" \
      >"$out/transient$n-$case.log" 2>&1
    wait "$neighbour"
  done
  git checkout -q perf_tests/conftest.py
  exit 0
fi
if [ "$what" = calibrated ]; then  # the standard neighbour: a second copy of the same tests, looping
  for i in 1 2; do  # twice, as the guide says: one calibration is one sample of the neighbour's phase
    [ -e "$out/calibrate$i.log" ] && continue
    date -u +"calibrate $i %FT%TZ" >>"$out/times"
    PYTHONPATH="$out/head" python -m pytest "${select[@]}" --accel-calibrate >"$out/calibrate$i.log" 2>&1
  done
  for case in unchanged planted; do
    git checkout -q perf_tests/conftest.py
    [ "$case" = planted ] && sed "s|@QUIET_WAIT@|$here/../quiet-wait|" "$here/plant.py" >>perf_tests/conftest.py
    rm -f "$out/stop"
    ( while [ ! -e "$out/stop" ]; do
        PYTHONPATH="$out/head" python -m pytest "${tests[@]}" --device cpu -p no:cacheprovider \
          --accel-baselines "$out/neighbour-bl" -q \
          >>"$out/neighbour.log" 2>&1 || true
      done ) &
    sleep 20
    date -u +"calibrated $n $case %FT%TZ" >>"$out/times"
    PYTHONPATH="$out/head" python -m pytest "${select[@]}" --accel-json "$out/calibrated$n-$case.json" \
      >"$out/calibrated$n-$case.log" 2>&1
    touch "$out/stop"
    wait
  done
  git checkout -q perf_tests/conftest.py
  exit 0
fi
git checkout -q perf_tests/conftest.py
date -u +"run $n unchanged %FT%TZ" >>"$out/times"
PYTHONPATH="$out/head" python -m pytest "${select[@]}" --accel-json "$out/run$n-unchanged.json" >"$out/run$n-unchanged.log" 2>&1
sed "s|@QUIET_WAIT@|$here/../quiet-wait|" "$here/plant.py" >>perf_tests/conftest.py
date -u +"run $n planted %FT%TZ" >>"$out/times"
PYTHONPATH="$out/head" python -m pytest "${select[@]}" --accel-json "$out/run$n-planted.json" >"$out/run$n-planted.log" 2>&1
git checkout -q perf_tests/conftest.py
date -u +"run $n done %FT%TZ" >>"$out/times"
