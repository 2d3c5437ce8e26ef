"""What operator tables cost: seconds per test at --accel-update, and whether a profile
taken in a process moves the figures of the tests measured after it.

    python docs/studies/operator-tables/operator_cost.py \
        --out docs/studies/operator-tables/operator-cost.json [--reps 3]

1. Cost: the CPU suite (smoke) recorded into a scratch folder with ``--accel-operators=auto`` and
   with ``=off``, alternating, ``--reps`` times each; per test, the median difference of pytest's
   "call" duration (``--durations=0``) is the table's cost at --accel-update. The same for a
   regression is one profile (no baseline is written then): the update figure bounds it.
2. Perturbation: the SDPA forward tests measured with ``--accel-operators=always`` (a profile after
   every measurement, so each test is measured right after one) against ``=off``, alternating; per
   test, the ratio of the medians of its seconds per call. A profiler that left hooks or threads
   behind would show as ratios above 1.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # docs/studies/<study>/ -> the repository root
DURATION = re.compile(r"^([0-9.]+)s call\s+(\S+)$", re.MULTILINE)


def run(args: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "perf_tests", "--device", "cpu", "-p", "no:cacheprovider", "-q", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return done.stdout + done.stderr


def cost(reps: int, select: str) -> dict[str, object]:
    calls: dict[str, dict[str, list[float]]] = {}
    walls: dict[str, list[float]] = {"auto": [], "off": []}
    for rep in range(reps):
        for mode in ("auto", "off") if rep % 2 == 0 else ("off", "auto"):
            with tempfile.TemporaryDirectory() as scratch:
                started = time.perf_counter()
                out = run(["--accel-update", "--accel-baselines", scratch, f"--accel-operators={mode}",
                           "--durations=0", "-k", select])  # fmt: skip
                walls[mode].append(time.perf_counter() - started)
            for seconds, test in DURATION.findall(out):
                calls.setdefault(test, {"auto": [], "off": []})[mode].append(float(seconds))
            print(f"cost rep {rep} {mode}: {walls[mode][-1]:.0f} s", flush=True)
    per_test = {
        test: statistics.median(a - o for a, o in zip(both["auto"], both["off"], strict=False))
        for test, both in calls.items()
        if both["auto"] and both["off"]
    }
    return {"walls": walls, "per_test_extra_seconds": per_test, "calls": calls}


def perturbation(reps: int, select: str) -> dict[str, object]:
    figures: dict[str, dict[str, list[float]]] = {}
    for rep in range(reps):
        for mode in ("always", "off") if rep % 2 == 0 else ("off", "always"):
            with tempfile.TemporaryDirectory() as scratch:
                result = Path(scratch) / "r.json"
                run(["--accel-baselines", scratch, f"--accel-operators={mode}", "--accel-json", str(result),
                     "-k", select])  # fmt: skip
                for entry in json.loads(result.read_text())["results"]:
                    seconds = statistics.median(entry["samples"])
                    figures.setdefault(entry["test"], {"always": [], "off": []})[mode].append(seconds)
            print(f"perturbation rep {rep} {mode}", flush=True)
    ratios = {
        test: statistics.median(both["always"]) / statistics.median(both["off"])
        for test, both in figures.items()
        if both["always"] and both["off"]
    }
    return {"ratios": ratios, "figures": figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cost-k", default="not distributed")
    parser.add_argument("--perturbation-k", default="test_attention_forward and not backward and sdpa")
    options = parser.parse_args()
    report = {
        "cost": cost(options.reps, options.cost_k),
        "perturbation": perturbation(options.reps, options.perturbation_k),
    }
    options.out.write_text(json.dumps(report, indent=1) + "\n")
    extra = report["cost"]["per_test_extra_seconds"]  # type: ignore[index]
    print(f"cost: median {statistics.median(extra.values()):.2f} s, max {max(extra.values()):.2f} s per test")
    ratios = report["perturbation"]["ratios"]  # type: ignore[index]
    print(f"perturbation: median ratio {statistics.median(ratios.values()):.4f} over {len(ratios)} tests")


if __name__ == "__main__":
    main()
