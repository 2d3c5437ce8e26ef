"""Judge result files twice, first look only: without and with each figure's drift between the nights
of a history folder filed before that result (no re-measurement, no fresh process: the same rounds both
ways, so only the drift differs).

    python docs/studies/drift/replay.py BASELINES HISTORY RESULT.json [RESULT.json ...]

Pure: reads the files, measures nothing.
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path

from pytest_accel.core.stats import median
from pytest_accel.judgement.baselines import BaselineStore
from pytest_accel.judgement.drift import night_drifts
from pytest_accel.judgement.gate import _observation
from pytest_accel.judgement.results import load_results
from pytest_accel.judgement.verdict import VerdictPolicy, judge_time, pooled_run_spread
from pytest_accel.outputs.history_store import result_paths


def main(argv: list[str]) -> int:
    store, history = BaselineStore(Path(argv[0])), [load_results(p) for p in result_paths(Path(argv[1]))]
    policy = VerdictPolicy()
    tally: dict[str, Counter[str]] = {"without": Counter(), "with": Counter()}
    sights: dict[str, list[float]] = {"without": [], "with": []}
    for name in argv[2:]:
        result = load_results(Path(name))
        entries = store.load(result.device_key, result.profile)
        pooled = pooled_run_spread([e.run_medians for e in entries.values()])
        earlier = sorted((n for n in history if n.device_key == result.device_key and n.date < result.date),
                         key=lambda n: n.date)  # fmt: skip
        series: dict[tuple[str, str], list[tuple[float, bool]]] = {}
        for night in earlier:
            for key, m in night.measurements.items():
                series.setdefault(key, []).append((median(m.compared_samples), bool(m.probe_samples)))
        drifts = night_drifts(series)
        print(f"== {name} ({result.date}, {len(earlier)} earlier nights)")
        for key, measurement in sorted(result.measurements.items()):
            entry = entries.get(key)
            if entry is None:
                continue
            row = []
            for mode, drift in (("without", None), ("with", drifts.get(key))):
                verdict = judge_time(_observation(measurement), _observation(entry, pooled, drift), policy)
                tally[mode][verdict.outcome.value] += 1
                if verdict.detectable is not None:
                    sights[mode].append(verdict.detectable)
                sees = "-" if verdict.detectable is None else f"{verdict.detectable * 100:.1f}%"
                limit = verdict.sight.value if verdict.sight else "-"
                row.append(f"{verdict.outcome.value:9s} sees {sees:6s} {limit:26s}")
            drift = drifts.get(key)
            moved = "-" if drift is None else f"{drift.spread * 100:.1f}%/{drift.nights}"
            print(f"  {key[0].split('[')[-1][:-1]:34s} drift {moved:9s} | {' | '.join(row)}")
    for mode in ("without", "with"):
        seen = f"median sight {statistics.median(sights[mode]) * 100:.1f}%" if sights[mode] else ""
        print(f"{mode} drift: {dict(tally[mode])} {seen}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
