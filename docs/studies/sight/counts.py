"""Each run's time verdicts counted by outcome, for exact_plant.sh and calibrated_neighbour.sh.

python docs/studies/sight/counts.py OUT_DIR LAST [FIRST]
"""

from __future__ import annotations

import json
import sys
from collections import Counter


def main(out: str, last: int, first: int = 1) -> None:
    for run in range(first, last + 1):
        for case in ("unchanged", "planted-10pct"):
            with open(f"{out}/run{run}-{case}.json") as f:
                results = json.load(f)["results"]
            print(run, case, dict(Counter(r["verdict"]["time"]["outcome"] for r in results if r.get("verdict"))))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1)
