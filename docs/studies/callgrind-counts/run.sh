#!/usr/bin/env bash
# Counts of 5 SDPA calls under callgrind: twice unchanged (side by side, each the other's neighbour), then planted.
# From the repository root: bash docs/studies/callgrind-counts/run.sh
set -euo pipefail
here=docs/studies/callgrind-counts
py=$(python3 -c "import sys; print(sys.executable)")  # the interpreter itself: valgrind does not follow a shim
count() {  # name, extra arguments: the counted total into raw/<name>.txt, with the wall time
    local name=$1; shift
    local started=$SECONDS
    OMP_NUM_THREADS=1 valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$here/raw/$name.%p" \
        "$py" "$here/count_sdpa.py" "$@" >"$here/raw/$name.log" 2>&1
    { grep -h '^totals:' "$here"/raw/"$name".*.1; echo "wall $((SECONDS - started)) s"; } >"$here/raw/$name.txt"
    rm -f "$here"/raw/"$name".[0-9]*
}
count unchanged-a & count unchanged-b & wait
count plant-1-add --adds 1 & count plant-5-adds --adds 5 & wait
cat "$here"/raw/*.txt
