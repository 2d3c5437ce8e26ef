#!/usr/bin/env bash
# What a figure costs, on the CPU: the 8 forward SDPA tests and the data path (workers 0/1/2, device decode) of the
# smoke profile measured with a price per hour set in
# the ini alone (the energy window runs; this VM has no powercap, so each figure says why it has no energy), then a
# cross-device report of three result files: the real CPU run and two made from it by editing its device key and
# figures (labelled "constructed" in their keys: no such devices ran), to show the report's cost table.
#   docs/studies/what-a-figure-costs/study.sh OUT
set -euo pipefail
out=${1:?give a folder}
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
python -m pytest perf_tests/test_attention.py perf_tests/test_dataloader.py \
    -k "(test_attention_forward and sdpa and not backward) or test_data_path" --device cpu \
    -p no:cacheprovider --accel-baselines "$out/empty" --accel-json "$out/cpu.json" \
    -o "accel_price_per_hour=cpu=0.40, constructed-gpu=4.00, constructed-gaudi=3.00" -o accel_price_per_kwh=0.15 \
    >"$out/cpu.log" 2>&1 || true
python "$here/construct.py" "$out/cpu.json" "$out"
pytest-accel report "$out/cpu.json" "$out/constructed-gpu.json" "$out/constructed-gaudi.json" \
    --reference constructed-gpu --pivot workers --markdown "$out/report.md" --html "$out/report.html" >/dev/null
# The page as a reader sees it: Debian's Chromium, driven by Playwright, the whole page as one PNG
python "$here/screenshot.py" "$out/report.html" "$out/report.png"
