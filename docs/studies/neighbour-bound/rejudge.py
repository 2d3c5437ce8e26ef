"""Judge saved ``--accel-json`` result files again, under the verdict rules of this tree (first look only).

    python docs/studies/neighbour-bound/rejudge.py BASELINE_DIR RESULTS.json [RESULTS.json ...]

For a change of the verdict rules after a study ran: each measurement of each file is judged
against its entry in ``BASELINE_DIR`` (one device key, the smoke profile) with the default policy,
as the gate's first look does. Re-measurements and the fresh-process confirmation are not
replayed (they need the workload), so a first-look "regressed" is a suspect, not a verdict: it
bounds the false alarms from above. Prints, per file, the count of each outcome and how many
figures could see a 10% slowdown, then each first-look regression and improvement.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

from pytest_accel.core.outcomes import Outcome
from pytest_accel.judgement.baselines import BaselineStore
from pytest_accel.judgement.gate import _observation
from pytest_accel.judgement.results import load_results
from pytest_accel.judgement.verdict import VerdictPolicy, judge_time, pooled_run_spread


def main(root: Path, results: list[Path]) -> None:
    (path,) = root.glob("*/smoke.json")
    entries = BaselineStore(root).load(path.parent.name, "smoke")
    pooled = pooled_run_spread([entry.run_medians for entry in entries.values()])
    print(f"typical between-run SD of {root}: {pooled}")
    suspects = []
    for result in results:
        counts: collections.Counter[str] = collections.Counter()
        sees = []
        for (test, metric), measurement in load_results(result).measurements.items():
            entry = entries.get((test, metric))
            if entry is None:
                continue
            verdict = judge_time(_observation(measurement), _observation(entry, pooled), VerdictPolicy())
            counts[verdict.outcome.value] += 1
            if verdict.detectable is not None:
                sees.append(verdict.detectable)
            if verdict.outcome in (Outcome.REGRESSED, Outcome.IMPROVED):
                suspects.append(f"  {result.name}: {verdict.outcome.value} {test} [{metric}]: {verdict.reason}")
        sees.sort()
        middle = f"{sees[len(sees) // 2]:.1%}" if sees else "-"
        seen = sum(s <= 0.10 for s in sees)
        print(f"{result.name}: {dict(counts)}; sees 10%: {seen} of {len(sees)} (median {middle})")
    print("\n".join(suspects))


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
