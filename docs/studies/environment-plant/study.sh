#!/usr/bin/env bash
# A slowdown from the environment, not the repository: three recordings of the 8 forward SDPA tests in a clean
# clone, then runs judged against them: unchanged; +10% from a pytest plugin on PYTHONPATH (the quiet-wait study's
# spin_plant, fn mode: each timed call spins 10% of its own time; what runs is unchanged); +10% in the working
# tree (the recorded-build study's plant, in perf_tests/conftest.py). Usage, from the repository root:
#   docs/studies/environment-plant/study.sh setup OUT     # a venv with torch 2.13.0 and the clone of HEAD, editable
#   docs/studies/environment-plant/study.sh record OUT    # three recordings into OUT/bl
#   docs/studies/environment-plant/study.sh run OUT N     # run N: unchanged, environment, tree
#   python docs/studies/recorded-build/counts.py OUT run1-unchanged run1-environment run1-tree
# The venv is the user's setup this models: the repository installed editable, its libraries beside it. (Run from
# a clone put on PYTHONPATH beside an editable install elsewhere, the other checkout's files would be stamped as
# the environment.)
set -uo pipefail
what=${1:?setup, record or run}
out=${2:?give a folder}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
python="$out/venv/bin/python"
select=(perf_tests/test_attention.py -k "test_attention_forward and sdpa and not backward" --device cpu
        -p no:cacheprovider --accel-baselines "$out/bl")
if [ "$what" = setup ]; then
  git clone -q "$(git rev-parse --show-toplevel)" "$out/head"
  python3 -m venv "$out/venv"
  "$python" -m pip install --quiet torch==2.13.0 numpy
  "$python" -m pip install --quiet -e "$out/head"
  exit 0
fi
cd "$out/head"
if [ "$what" = record ]; then
  for i in 1 2 3; do
    date -u +"record $i %FT%TZ $(git rev-parse --short=12 HEAD)" >>"$out/times"
    "$python" -m pytest "${select[@]}" --accel-update >"$out/record$i.log" 2>&1
  done
  exit 0
fi
n=${3:?give the run number}
git checkout -q perf_tests/conftest.py
date -u +"run $n unchanged %FT%TZ" >>"$out/times"
"$python" -m pytest "${select[@]}" --accel-json "$out/run$n-unchanged.json" >"$out/run$n-unchanged.log" 2>&1
date -u +"run $n environment %FT%TZ" >>"$out/times"
PYTHONPATH="$here/../quiet-wait" ACCEL_SPIN=0.10 ACCEL_SPIN_OF=fn \
  "$python" -m pytest "${select[@]}" -p spin_plant --accel-json "$out/run$n-environment.json" \
  >"$out/run$n-environment.log" 2>&1
sed "s|@QUIET_WAIT@|$here/../quiet-wait|" "$here/../recorded-build/plant.py" >>perf_tests/conftest.py
date -u +"run $n tree %FT%TZ" >>"$out/times"
"$python" -m pytest "${select[@]}" --accel-json "$out/run$n-tree.json" >"$out/run$n-tree.log" 2>&1
git checkout -q perf_tests/conftest.py
date -u +"run $n done %FT%TZ" >>"$out/times"
