"""The README's operator-diff example, run end to end, with what the diff costs on a regression.

    python docs/studies/operator-tables/operator_example.py \
        --out docs/studies/operator-tables/operator-example-raw.json [--reps 3]

1. Record ``docs/examples/operator-diff`` twice on its flash SDPA kernel into a scratch baseline
   folder (two recordings: the gate needs the between-run spread).
2. Switch the kernel to math (``ATTENTION_BACKEND=MATH``, as a lost backend selection would) and run
   the same command ``--reps`` times with operator tables on (``auto``, with ``--accel-trace``) and
   ``--reps`` times with them off, alternating. Each run's exit code, wall time and whole output
   are kept: the README quotes the first ``auto`` run, and the wall-time difference of the pairs is
   the diff's cost on a confirmed regression (one profile after every confirmation).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # docs/studies/<study>/ -> the repository root
EXAMPLE = "docs/examples/operator-diff"


def run(baselines: Path, *args: str, backend: str = "FLASH_ATTENTION") -> dict[str, object]:
    """One pytest process on the example; its exit code, wall seconds and output."""
    command = [sys.executable, "-m", "pytest", EXAMPLE, "--device", "cpu", "-p", "no:cacheprovider",
               "--accel-baselines", str(baselines), *args]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "ATTENTION_BACKEND": backend}
    )
    wall = time.perf_counter() - started
    return {"args": list(args), "backend": backend, "exit_code": done.returncode, "wall_seconds": round(wall, 2),
            "output": done.stdout + done.stderr}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=3)
    options = parser.parse_args()
    runs: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as scratch:
        baselines, traces = Path(scratch) / "bl", Path(scratch) / "traces"
        for _ in range(2):
            runs.append(run(baselines, "--accel-update"))
            print(f"recorded: exit {runs[-1]['exit_code']}, {runs[-1]['wall_seconds']} s", flush=True)
        for rep in range(options.reps):
            for mode in ("auto", "off") if rep % 2 == 0 else ("off", "auto"):
                extra = ("--accel-trace", str(traces)) if mode == "auto" else ()
                runs.append(run(baselines, f"--accel-operators={mode}", *extra, backend="MATH"))
                print(f"math, operators {mode}: exit {runs[-1]['exit_code']}, {runs[-1]['wall_seconds']} s",
                      flush=True)  # fmt: skip
    walls = {mode: [float(r["wall_seconds"]) for r in runs if f"--accel-operators={mode}" in r["args"]]  # type: ignore[arg-type]
             for mode in ("auto", "off")}  # fmt: skip
    summary = {
        "regressed": {mode: sum("perf regressed:" in str(r["output"]) for r in runs
                                if f"--accel-operators={mode}" in r["args"]) for mode in walls},  # type: ignore[operator]
        "median_wall_seconds": {mode: statistics.median(w) for mode, w in walls.items()},
        "median_extra_seconds": statistics.median(a - o for a, o in zip(walls["auto"], walls["off"], strict=True)),
    }  # fmt: skip
    document = {"host": platform.processor() or platform.machine(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "summary": summary, "runs": runs}  # fmt: skip
    options.out.write_text(json.dumps(document, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
