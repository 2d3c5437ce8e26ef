#!/usr/bin/env bash
# One bisect trial in a scratch repository (make_range.py), from the repository root:
#   docs/studies/bisect/trial.sh OUT KIND CULPRIT [busy]
# KIND: single | two-step | none (make_range.py); CULPRIT: the planted commit (two-step: it and the next
# but three). "busy": a second perf job (the MMDiT tests, looping) runs beside the whole bisect.
# Writes OUT/make.txt (the commits), OUT/bisect.log, OUT/bisect.json (the answer) and OUT/seconds.
set -uo pipefail
out=${1:?give an output folder}
kind=${2:?single, two-step or none}
culprit=${3:?the planted commit, 1..16}
busy=${4:-}
here=$(pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/repo"
python docs/studies/bisect/make_range.py "$out/repo" --kind "$kind" --culprit "$culprit" \
  --second $((culprit + 4)) --spin "$([ "$kind" = two-step ] && echo 0.08 || echo 0.15)" >"$out/make.txt"
if [ "$busy" = busy ]; then
  rm -f "$out/done"
  ( while [ ! -e "$out/done" ]; do
      python -m pytest perf_tests/test_mmdit.py --device cpu -q -p no:cacheprovider \
        --accel-baselines "$out/neighbour-bl" >>"$out/neighbour.log" 2>&1
    done ) &
  sleep 20
fi
git rev-parse HEAD >"$out/code-commit"
started=$SECONDS
( cd "$out/repo" && python -m pytest_accel bisect --good good --bad HEAD --json "$out/bisect.json" \
    --out "$out/bisect-out" -- perf_tests/test_attention.py --device cpu -k "sdpa and not backward" \
    -p no:cacheprovider ) >"$out/bisect.log" 2>&1
echo "exit $? after $((SECONDS - started)) s" >"$out/seconds"
touch "$out/done"
pkill -f "accel-baselines $out/neighbour-bl" 2>/dev/null || true
cd "$here"
rm -rf "$out/repo" "$out/bisect-out"
