"""Per judged run of study.sh: how many counts came out unchanged, regressed, improved or new, and each count's
instructions per call as a change from the recording's (the lowest and highest of the run); then, per test, its
change in every run.

    python docs/studies/counted-work/summarize.py OUT
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from pytest_accel.judgement.results import load_results


def main(folder: Path) -> int:
    changes: dict[str, dict[str, float]] = {}
    for path in sorted(folder.glob("*.json")):
        outcomes: Counter[str] = Counter()
        moved = []
        for (test, _), record in sorted(load_results(path).verdicts.items()):
            count = record.count
            outcomes["none" if count is None else count.outcome.value] += 1
            if count is not None and count.instructions is not None:
                change = (count.instructions[1] / count.instructions[0] - 1) * 100
                moved.append(change)
                changes.setdefault(test.rpartition("[")[2].rstrip("]"), {})[path.stem] = change
        spread = f"{min(moved):+.4f}% .. {max(moved):+.4f}%" if moved else "-"
        said = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
        print(f"{path.stem:16s} {said:26s} instructions per call against the recording: {spread}")
    runs = sorted({run for by_run in changes.values() for run in by_run})
    print("\ntest, then its change in instructions per call (%) in each run:", " ".join(runs))
    for test, by_run in sorted(changes.items()):
        print(f"{test:28s}", " ".join(f"{by_run[run]:+.3f}" if run in by_run else "-" for run in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
