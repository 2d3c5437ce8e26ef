#!/bin/bash
# Consecutive runs (RUNS, default 5) of both test sets beside another test job: the CPU perf suite
# in a loop, in the same worktree of HEAD. Writes OUT/summary and a log per run.
# Usage: docs/studies/test-stability/run.sh [OUT] [WORKTREE]
set -u
OUT=${1:-/tmp/test-stability}; WT=${2:-/tmp/test-stability-tree}; RUNS=${RUNS:-5}; mkdir -p $OUT; rm -f $OUT/stop
REPO=$(git rev-parse --show-toplevel)
cd "$REPO" && git worktree remove --force $WT 2>/dev/null; git worktree prune
git worktree add -f $WT HEAD --detach >/dev/null 2>&1
cd $WT && export PYTHONPATH=$WT
echo "commit $(git rev-parse --short HEAD) start $(date -u +%FT%TZ)" >> $OUT/summary
( n=0; while [ ! -f $OUT/stop ]; do n=$((n+1)); python -m pytest -q -p no:cacheprovider perf_tests --device cpu > $OUT/neighbour-$n.log 2>&1; echo "neighbour $n $(tail -1 $OUT/neighbour-$n.log)" >> $OUT/summary; done ) &
for i in $(seq 1 $RUNS); do
  s=$(date +%s); python -m pytest -q -p no:cacheprovider > $OUT/fast-$i.log 2>&1; rc=$?
  echo "run $i fast rc=$rc $(( $(date +%s)-s )) s: $(tail -1 $OUT/fast-$i.log) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/summary
  s=$(date +%s); python -m pytest -q -p no:cacheprovider -m slow > $OUT/slow-$i.log 2>&1; rc=$?
  echo "run $i slow rc=$rc $(( $(date +%s)-s )) s: $(tail -1 $OUT/slow-$i.log) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/summary
done
touch $OUT/stop; wait
echo "end $(date -u +%FT%TZ)" >> $OUT/summary
cd "$REPO" && git worktree remove --force $WT && git worktree prune
