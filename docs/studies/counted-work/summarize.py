"""Per judged run of study.sh: how many counts came out unchanged, regressed, improved or new, and each count's
instructions per call as a ratio to the recording's (the lowest and highest of the run).

    python docs/studies/counted-work/summarize.py OUT
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from pytest_accel.judgement.results import load_results


def main(folder: Path) -> int:
    for path in sorted(folder.glob("*.json")):
        verdicts = load_results(path).verdicts
        outcomes: Counter[str] = Counter()
        ratios = []
        for record in verdicts.values():
            count = record.count
            outcomes["none" if count is None else count.outcome.value] += 1
            if count is not None and count.instructions is not None:
                ratios.append(count.instructions[1] / count.instructions[0])
        spread = f"{(min(ratios) - 1) * 100:+.4f}% .. {(max(ratios) - 1) * 100:+.4f}%" if ratios else "-"
        said = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
        print(f"{path.stem:28s} {said:32s} instructions per call against the recording: {spread}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
