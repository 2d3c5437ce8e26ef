"""Per test over result files of fresh processes: the within-run spread, the spread of the figure (the
median of round / reference-kernel round) between processes, and the rounds right after the state
probes against the others (the kept round that follows them is index 4, 8, ... with STATE_EVERY 4).

    python docs/studies/state-recovery/summary.py RUN.json [RUN.json ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict


def main(paths: list[str]) -> None:
    per: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            results = json.load(handle)["results"]
        for result in results:
            samples, probes = result["samples"], result["probe_samples"]
            ratios = [s / p for s, p in zip(samples, probes, strict=True)]
            after = statistics.median(samples[4::4])
            others = statistics.median(s for i, s in enumerate(samples) if i % 4)
            name = result["test"].split("[", 1)[1].rstrip("]")
            per[name].append((statistics.median(ratios), result["figures"]["spread"], after / others))
    print(f"{len(paths)} processes")
    print(f"{'test':36} {'spread (median)':>16} {'between processes':>18} {'after probes':>13}")
    for name, rows in sorted(per.items()):
        figures = [row[0] for row in rows]
        between = statistics.stdev(figures) / statistics.mean(figures) if len(figures) > 1 else float("nan")
        spread = statistics.median(row[1] for row in rows)
        after = statistics.median(row[2] for row in rows)
        print(f"{name:36} {spread:>15.1%} {between:>17.1%} {after:>12.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
