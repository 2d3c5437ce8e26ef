#!/usr/bin/env bash
# A math SDPA call counted on torch's AVX2 path, then on its portable one (the kernels a counting process runs).
# From the repository root: bash docs/studies/counted-work/portable_path.sh > docs/studies/counted-work/raw/portable-path.txt
set -euo pipefail
here=docs/studies/counted-work
py=$(python3 -c "import sys; print(sys.executable)")
scratch=$(mktemp -d)
for mode in avx2 portable; do
  if [ $mode = portable ]; then
    set -- ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 ONEDNN_MAX_CPU_ISA=SSE41
  else
    set --
  fi
  env OMP_NUM_THREADS=1 "$@" valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no \
    --callgrind-out-file="$scratch/$mode.%p" "$py" "$here/portable_path.py" 2>&1 | grep "counted call"
  grep -h "^totals" "$scratch/$mode".*.1
done
rm -rf "$scratch"
