"""Per run of one ab sitting's folder: each test's median seconds per call, raw and probe-normalised,
and the spread of the pairs' log ratios both ways; for one test (a part of its id), every pair.

    python docs/studies/bisect/runs.py SITTING_FOLDER [TEST_PART]

SITTING_FOLDER is a sitting's ``--out`` (a bisect keeps one per sitting under its own ``--out``);
its ``runs/base-NN.json`` and ``runs/head-NN.json`` are the pairs' result files. The worker column
is the run's worker process (ab's ``--reuse``, 5 runs each).
"""

from __future__ import annotations

import glob
import json
import math
import statistics
import sys
from pathlib import Path

from pytest_accel.core.measurement import compared_samples

REUSE = 5


def load(folder: str, side: str) -> dict[str, dict[int, tuple[float, float, float]]]:
    """test -> run number -> (median seconds, median normalised, median probe seconds)."""
    out: dict[str, dict[int, tuple[float, float, float]]] = {}
    for path in sorted(glob.glob(f"{folder}/runs/{side}-[0-9][0-9].json")):
        run = int(path[-7:-5])
        for result in json.loads(Path(path).read_text(encoding="utf-8"))["results"]:
            if not result.get("samples"):
                continue
            test = result["test"].split("[")[-1].rstrip("]")
            probes = result["probe_samples"]
            out.setdefault(test, {})[run] = (
                statistics.median(result["samples"]),
                statistics.median(compared_samples(result["samples"], probes)),
                statistics.median(probes) if probes else math.nan,
            )
    return out


def main(folder: str, shown: str | None) -> None:
    base, head = load(folder, "base"), load(folder, "head")
    print("test | pairs | SD of log ratios: raw, normalised | SD of runs: raw, normalised, probe")
    for test in sorted(base):
        runs = sorted(set(base[test]) & set(head.get(test, {})))
        if len(runs) < 3:
            continue
        raw = [math.log(head[test][i][0] / base[test][i][0]) for i in runs]
        norm = [math.log(head[test][i][1] / base[test][i][1]) for i in runs]
        sides = [base[test][i] for i in runs] + [head[test][i] for i in runs]
        spreads = [statistics.stdev([math.log(s[k]) for s in sides]) for k in range(3)]
        print(
            f"{test} | {len(runs)} | {statistics.stdev(raw):.3f}, {statistics.stdev(norm):.3f} | "
            + ", ".join(f"{x:.3f}" for x in spreads)
        )
        if shown and shown in test:
            for i in runs:
                print(f"    run {i} worker {(i - 1) // REUSE + 1}: base {base[test][i][0] * 1e3:.3f} ms, "
                      f"head {head[test][i][0] * 1e3:.3f} ms")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
