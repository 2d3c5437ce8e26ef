"""Each run's time verdicts, with what the sitting of the recorded build beside it said (study.sh's runs).

    python docs/studies/recorded-build/counts.py OUT run1-unchanged run1-planted ...

Per test: the outcome, the figure against the stored baseline, and the sitting's words when one was held;
then the counts.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# The sitting's words in a verdict's reason (pytest_accel/judgement/recorded_build.py), for files written before each
# verdict kept its sitting under ``beside_recorded``.
BESIDE = re.compile(
    r"((?:confirmed|judged) beside commit \w+ in one sitting: [^;]*"
    r"|the recorded build, measured beside this one, read the same \(commit \w+\): [^:]*"
    r"|the recorded build beside this one could not tell[^;]*"
    r"|not measured beside [^;]*)"
)


def _sitting(verdict: dict) -> str:
    """The sitting's word: the record's field where the code wrote one, else the reason's words."""
    beside = verdict.get("beside_recorded")
    if beside is not None:
        said = beside["said"] or "no word"
        return f"beside {beside['commit'] or 'no commit'}: {said}, {beside['detail']} ({beside['minutes']} min)"
    found = BESIDE.search(verdict["time"]["reason"])
    return found.group(1) if found else ""


def main(folder: Path, names: list[str]) -> None:
    for name in names:
        path = folder / f"{name}.json"
        if not path.exists():
            print(f"{name}: no file")
            continue
        counts: dict[str, int] = {}
        print(f"== {name}")
        for row in json.loads(path.read_text())["results"]:
            time = row["verdict"]["time"]
            counts[time["outcome"]] = counts.get(time["outcome"], 0) + 1
            ratio = time.get("ratio")
            change = "-" if ratio is None else f"{ratio - 1:+.1%}"
            test = row["test"].split("::")[-1]
            print(f"  {test:60s} {time['outcome']:10s} {change:8s} {_sitting(row['verdict'])}")
        print("  counts:", ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
