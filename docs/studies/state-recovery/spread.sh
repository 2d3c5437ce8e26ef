#!/bin/bash
# The 8 forward SDPA tests in N fresh processes, each one's result file kept: what the state probes
# do to the rounds that follow them. Run from the repository root.
#   docs/studies/state-recovery/spread.sh OUT N [CODE] [PYTEST ARGS...]
# CODE: a checkout of the code to measure (default: this one), e.g. `git worktree add /tmp/old 047c671`.
set -euo pipefail
out=$1 n=$2 code=${3:-$PWD}
shift $(( $# < 3 ? $# : 3 ))
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
git -C "$code" rev-parse --short HEAD > "$out/code-commit"
for i in $(seq "$n"); do
  (cd "$code" && PYTHONPATH="$code:$here" python -m pytest perf_tests/test_attention.py --device cpu -q \
     -p no:cacheprovider -k "test_attention_forward and sdpa and not backward" \
     --accel-baselines "$out/no-baselines" --accel-json "$out/run-$i.json" "$@" > "$out/run-$i.log" 2>&1)
done
rm -rf "$out/no-baselines"
python "$here/summary.py" "$out"/run-*.json | tee "$out/summary.txt"
