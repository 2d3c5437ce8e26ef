#!/usr/bin/env bash
# The count floor: two tiny calls recorded once, then counted in N more processes (after study.sh setup OUT).
#   docs/studies/counted-work/floor.sh OUT N      # then: python docs/studies/counted-work/summarize.py OUT/tiny
set -uo pipefail
out=$(cd "${1:?give the study folder}" && pwd)
runs=${2:-4}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/tiny"
cd "$out/tiny"
cp "$here/test_tiny.py" .
select=(test_tiny.py --device cpu -p no:cacheprovider --accel-baselines "$out/tiny/bl" --accel-count --benchmark-disable)
"$out/venv/bin/python" -m pytest "${select[@]}" --accel-update >record.log 2>&1
for i in $(seq "$runs"); do
  "$out/venv/bin/python" -m pytest "${select[@]}" --accel-json "run$i.json" >"run$i.log" 2>&1
done
