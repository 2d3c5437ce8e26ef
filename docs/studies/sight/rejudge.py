"""Re-judge result files against a baseline folder, first look only (no re-measurement), and say what
limits each figure's sight: the smallest slowdown it could call, and the part of the interval that set it.

    python docs/studies/sight/rejudge.py BASELINES RESULT.json [RESULT.json ...]

Pure: reads the files, measures nothing. The gate's confirmations (re-measurements, a fresh process)
are not replayed, so an outcome here is the first look's.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from pytest_accel.judgement.baselines import BaselineStore
from pytest_accel.judgement.gate import _observation
from pytest_accel.judgement.results import load_results
from pytest_accel.judgement.rules.case import Case
from pytest_accel.judgement.verdict import VerdictPolicy, judge_time, pooled_run_spread


def main(argv: list[str]) -> int:
    store = BaselineStore(Path(argv[0]))
    policy = VerdictPolicy()
    sights: list[float] = []
    for name in argv[1:]:
        result = load_results(Path(name))
        entries = store.load(result.device_key, result.profile)
        pooled = pooled_run_spread([e.run_medians for e in entries.values()])
        print(f"== {name} ({result.date})")
        for key, measurement in sorted(result.measurements.items()):
            entry = entries.get(key)
            if entry is None:
                continue
            verdict = judge_time(_observation(measurement), _observation(entry, pooled), policy)
            sees = "" if verdict.detectable is None else f"sees {verdict.detectable * 100:4.1f}%"
            if verdict.detectable is not None:
                sights.append(verdict.detectable)
            _, width = Case(_observation(measurement), _observation(entry, pooled), policy).estimate
            parts = f"within ±{width.within * 100:4.1f}% between ±{width.between * 100:4.1f}% ({width.source})"
            limit = verdict.sight.value if verdict.sight else "-"
            print(f"  {key[0].split('[')[-1][:-1]:34s} {verdict.outcome.value:9s} {sees:11s} {parts}  {limit}")
    if sights:
        print(f"median sight {statistics.median(sights) * 100:.1f}% over {len(sights)} figures")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
