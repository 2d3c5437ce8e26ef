#!/bin/bash
# The README suite's sight, quiet: three recordings minutes apart, then one run, as the README says
# (`pytest perf_tests --device cpu --accel-update`, then `pytest perf_tests --device cpu`), into OUT;
# then each figure's "sees" re-judged from the files. Run from the repository root.
#   docs/studies/state-recovery/suite_sees.sh OUT [CODE]
set -euo pipefail
out=$1 code=${2:-$PWD}
root=$PWD
mkdir -p "$out"
git -C "$code" rev-parse --short HEAD > "$out/code-commit"
suite() { (cd "$code" && PYTHONPATH="$code" python -m pytest perf_tests --device cpu -q -p no:cacheprovider \
            --accel-baselines "$out/bl" "$@"); }
for i in 1 2 3; do
  start=$(date +%s); suite --accel-update > "$out/record-$i.log" 2>&1 || true
  echo "record $i: $(( $(date +%s) - start )) s" | tee -a "$out/seconds"
done
start=$(date +%s); suite --accel-json "$out/run.json" > "$out/run.log" 2>&1 || true
echo "run: $(( $(date +%s) - start )) s" | tee -a "$out/seconds"
python "$root/docs/studies/sight/rejudge.py" "$out/bl" "$out/run.json" > "$out/sees.txt"
tail -1 "$out/sees.txt"
