#!/usr/bin/env bash
# ab across environments: two virtual environments alike but for a pytest plugin installed in one (a distribution
# with a pytest11 entry point, as plugin libraries register themselves) that plants +10% (the quiet-wait study's
# spin_plant, fn mode), measured with --base-python on the PR workflow's selection (the 8 forward SDPA tests). Run
# after study.sh setup (it reuses OUT/venv and OUT/head):
#   docs/studies/environment-plant/ab_study.sh setup OUT    # OUT/venv-planted: OUT/venv's packages and the plugin
#   docs/studies/environment-plant/ab_study.sh run OUT N    # sitting N: planted head against the clean base, then
#                                                           # the clean environment against itself
set -uo pipefail
what=${1:?setup or run}
out=$(cd "${2:?give a folder}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
clean="$out/venv/bin/python"
planted="$out/venv-planted/bin/python"
if [ "$what" = setup ]; then
  python3 -m venv "$out/venv-planted"
  "$planted" -m pip install --quiet torch==2.13.0 numpy
  "$planted" -m pip install --quiet -e "$out/head"
  site=$("$planted" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  printf '%s\n' "import os, sys" "os.environ.setdefault('ACCEL_SPIN', '0.10')" \
    "os.environ.setdefault('ACCEL_SPIN_OF', 'fn')" "sys.path.append('$here/../quiet-wait')" \
    "from spin_plant import pytest_configure  # noqa: F401" >"$site/zz_accel_plant.py"
  mkdir -p "$site/zz_accel_plant-1.0.dist-info"
  printf 'Metadata-Version: 2.1\nName: zz-accel-plant\nVersion: 1.0\n' >"$site/zz_accel_plant-1.0.dist-info/METADATA"
  printf '[pytest11]\nzz_accel_plant = zz_accel_plant\n' >"$site/zz_accel_plant-1.0.dist-info/entry_points.txt"
  printf 'zz_accel_plant.py,,\n' >"$site/zz_accel_plant-1.0.dist-info/RECORD"
  exit 0
fi
n=${3:?give the sitting number}
cd "$out/head"
select=(perf_tests/test_attention.py --device cpu -k "sdpa and forward")
date -u +"ab $n planted %FT%TZ" >>"$out/times"
"$planted" -m pytest_accel ab --base-python "$clean" --out "$out/ab$n-planted" -- "${select[@]}" \
  >"$out/ab$n-planted.log" 2>&1
echo "exit $?" >>"$out/ab$n-planted.log"
date -u +"ab $n same %FT%TZ" >>"$out/times"
"$clean" -m pytest_accel ab --base-python "$clean" --out "$out/ab$n-same" -- "${select[@]}" \
  >"$out/ab$n-same.log" 2>&1
echo "exit $?" >>"$out/ab$n-same.log"
date -u +"ab $n done %FT%TZ" >>"$out/times"
