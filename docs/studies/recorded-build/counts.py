"""Each run's time verdicts, with what the sitting of the recorded build beside it said (study.sh's runs).

    python docs/studies/recorded-build/counts.py OUT run1-unchanged run1-planted ...

Per test: the outcome, the figure against the stored baseline, and the sitting's words when one was held;
then the counts, and for a planted run how many of the 8 were caught (regressed).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# The sitting's words in a verdict's reason (pytest_accel/judgement/recorded.py).
BESIDE = re.compile(
    r"((?:confirmed|judged) beside commit \w+ in one sitting: [^;]*"
    r"|the recorded build, measured beside this one, read the same \(commit \w+\): [^:]*"
    r"|the recorded build beside this one could not tell[^;]*"
    r"|not measured beside [^;]*)"
)


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
            said = BESIDE.search(time["reason"])
            ratio = time.get("ratio")
            change = "-" if ratio is None else f"{ratio - 1:+.1%}"
            test = row["test"].split("[")[-1].rstrip("]")
            print(f"  {test:34s} {time['outcome']:10s} {change:8s} {said.group(1) if said else ''}")
        print("  counts:", ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
