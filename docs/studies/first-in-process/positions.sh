#!/usr/bin/env bash
# The math SDPA decode test measured in four positions in its process, alternating, each a fresh
# process and no baselines (every figure "new"): alone, after the file's first test, in the 8
# forward SDPA tests, after a trivial measured test. Usage (from the repository root):
#   docs/studies/first-in-process/positions.sh OUT_DIR [ROUNDS]
# then: python docs/studies/first-in-process/levels.py OUT_DIR/*.json
set -uo pipefail
out=${1:?give a folder for the result files}
rounds=${2:-4}
here=docs/studies/first-in-process
mkdir -p "$out"
common=(--device cpu -p no:cacheprovider -q --accel-baselines "$out/none")
decode="test_attention_forward and math-llama70b-decode"
for i in $(seq 1 "$rounds"); do
  python -m pytest perf_tests/test_attention.py "${common[@]}" -k "$decode" \
    --accel-json "$out/alone-$i.json" >/dev/null 2>&1
  python -m pytest perf_tests/test_attention.py "${common[@]}" -k "test_attention_forward and (math-sd3-128px-b2 or math-llama70b-decode)" \
    --accel-json "$out/after-$i.json" >/dev/null 2>&1
  python -m pytest perf_tests/test_attention.py "${common[@]}" -k "test_attention_forward and sdpa and not backward" \
    --accel-json "$out/suite-$i.json" >/dev/null 2>&1
  python -m pytest "$here/test_tiny_predecessor.py" perf_tests/test_attention.py "${common[@]}" \
    -k "tiny or ($decode)" --accel-json "$out/tiny-$i.json" >/dev/null 2>&1
done
