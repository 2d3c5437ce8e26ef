#!/usr/bin/env bash
# Capture every call of the time and memory rules, with the tree checked out at BEFORE: the plugin's fast tests,
# then the README suite recorded twice, judged quiet, and judged beside a second suite. From the repository root:
#   docs/studies/rules-replay/capture.sh BEFORE OUT      # a worktree of BEFORE in OUT/tree, captures in OUT/
#   PYTHONPATH=. python docs/studies/rules-replay/replay.py OUT/*.[0-9]*   # judged again by this tree's rules
set -uo pipefail
before=${1:?give the commit whose rules to capture}
out=${2:?give a folder}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
git worktree add --detach "$out/tree" "$before" >/dev/null
cd "$out/tree"
export PYTHONPATH="$out/tree:$here"
RULES_CAPTURE="$out/tests" python3 -m pytest -p rules_capture -q >"$out/tests.log" 2>&1
for i in 1 2; do
  python3 -m pytest perf_tests --device cpu --accel-baselines "$out/bl" --accel-update -q >"$out/record$i.log" 2>&1
done
RULES_CAPTURE="$out/quiet" python3 -m pytest -p rules_capture perf_tests --device cpu --accel-baselines "$out/bl" \
  -q >"$out/quiet.log" 2>&1
python3 -m pytest perf_tests --device cpu --accel-baselines "$out/neighbour-bl" -q >/dev/null 2>&1 &
RULES_CAPTURE="$out/beside" python3 -m pytest -p rules_capture perf_tests --device cpu --accel-baselines "$out/bl" \
  -q >"$out/beside.log" 2>&1
wait
