#!/usr/bin/env bash
# Does the +10% plant (spin_plant.py, fn mode) reach the MMDiT forward-backward blocks and train steps?
# Four MMDiT tests, alternating a plain and a planted process, three of each, into empty baselines (no
# verdicts: the raw seconds per call are what is compared). Usage, from the repository root:
#   docs/studies/recorded-build/plant_reach.sh CLONE OUT     # CLONE: a clone of the code under study
#   python docs/studies/recorded-build/plant_reach.py OUT
set -uo pipefail
clone=$(cd "${1:?give a clone}" && pwd)
mkdir -p "${2:?give a folder}"
out=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
cd "$clone"
select=(perf_tests/test_mmdit.py -k "test_joint_block and (forward-1024-sdpa] or forward-backward-1024-sdpa] or
  forward-backward-512-sdpa]) or test_train_step and 16-sdpa]")
for i in 1 2 3; do
  for case in plain planted; do
    plant=()
    [ "$case" = planted ] && plant=(-p spin_plant)
    env PYTHONPATH="$clone:$here/../quiet-wait" ACCEL_SPIN=0.10 ACCEL_SPIN_OF=fn python -m pytest "${select[@]}" \
      "${plant[@]}" --device cpu -p no:cacheprovider --accel-baselines "$out/bl-$case-$i" \
      --accel-json "$out/$case-$i.json" -q >"$out/$case-$i.log" 2>&1
  done
done
