"""Per-pair log ratios of a pytest-accel ab sitting, from its runs folder (base-NN.json, head-NN.json).

    python3 docs/studies/ab-pr/pairs.py .pytest-accel-ab/runs             # mean and SD per test
    python3 docs/studies/ab-pr/pairs.py .pytest-accel-ab/runs --json      # the log ratios themselves

A run's figure is its median probe-normalised seconds per call, as ab takes it.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path


def figures(path: Path) -> dict[str, float]:
    out = {}
    for entry in json.loads(path.read_text())["results"]:
        samples, probes = entry["samples"], entry.get("probe_samples") or []
        compared = [s / p for s, p in zip(samples, probes, strict=True)] if probes else samples
        out[entry["test"]] = statistics.median(compared)
    return out


def pairs(folder: Path) -> dict[str, list[float]]:
    ratios: dict[str, list[float]] = {}
    for head in sorted(folder.glob("head-[0-9]*.json")):
        base = folder / head.name.replace("head", "base")
        if base.exists():
            then, now = figures(base), figures(head)
            for test in sorted(set(then) & set(now)):
                ratios.setdefault(test, []).append(math.log(now[test] / then[test]))
    return ratios


if __name__ == "__main__":
    found = pairs(Path(sys.argv[1]))
    if "--json" in sys.argv:
        print(json.dumps(found, indent=1))
    for test, values in found.items():
        spread = statistics.stdev(values) if len(values) > 1 else float("nan")
        print(f"{test}: {len(values)} pairs, mean {math.expm1(statistics.mean(values)):+.1%}, SD {spread:.1%}",
              file=sys.stderr)  # fmt: skip
