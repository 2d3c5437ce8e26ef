"""Per run of misses.sh: each test's instructions and simulated last-level misses per call against the recording's.

python docs/studies/counted-work/misses.py OUT/misses
"""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_accel.judgement.results import load_results


def main(folder: Path) -> int:
    for path in sorted(folder.glob("run*.json")):
        for (test, _), record in sorted(load_results(path).verdicts.items()):
            count = record.count
            if count is None or count.instructions is None or count.misses is None:
                print(f"{path.stem} {test}: {count}")
                continue
            (then, now), (missed, misses) = count.instructions, count.misses
            name = test.rpartition("[")[2].rstrip("]")
            print(
                f"{path.stem} {name:24s} {count.outcome.value:9s} instructions {(now / then - 1) * 100:+.4f}%"
                f"  LL misses per call {missed:,.0f} -> {misses:,.0f} ({(misses / missed - 1) * 100:+.3f}%)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
