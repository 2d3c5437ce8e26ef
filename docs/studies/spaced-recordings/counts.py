"""Each run's verdicts from exact_plant.sh's result files: the counts per outcome, the sight of each
unchanged figure, and every figure that was not caught (planted) or not unchanged. Usage:
    python docs/studies/spaced-recordings/counts.py OUT_DIR 1 2 3
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
for run in sys.argv[2:]:
    for kind in ("unchanged", "planted-10pct"):
        results = json.loads((out / f"run{run}-{kind}.json").read_text())["results"]
        counts: collections.Counter[str] = collections.Counter()
        rows, sees = [], []
        for result in results:
            time = result["verdict"]["time"]
            counts[time["outcome"]] += 1
            if time["outcome"] == "unchanged" and time.get("detectable"):
                sees.append(round(time["detectable"] * 100, 1))
            change = round((time["ratio"] or 0) * 100 - 100, 1)
            why = (time.get("abstention") or {}).get("why")
            sight = time.get("detectable") and round(time["detectable"] * 100, 1)
            rows.append((result["test"].split("[")[1][:-1], time["outcome"], change, why, sight))
        print(run, kind, dict(counts), "sees", sorted(sees))
        for row in rows:
            if row[1] != "regressed" or kind == "unchanged":
                print("   ", row)
