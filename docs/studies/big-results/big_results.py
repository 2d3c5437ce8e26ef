"""How long `pytest-accel report` and `compare` take on large result files.

    python docs/studies/big-results/big_results.py --entries 20000

Writes two result files of N measurements each (20 rounds, probe samples, a verdict) into a
scratch folder, then times `pytest-accel report A B --markdown` and `pytest-accel compare A B`, each
in a fresh process, as a user runs them: wall seconds, and CPU seconds (which a neighbour on a shared
host does not inflate).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_accel.core.measurement import Measurement
from pytest_accel.judgement.results import Recorded, results_document


def document(entries: int, seed: int, slower: float) -> dict[str, object]:
    rng = random.Random(seed)
    recorded = []
    for index in range(entries):
        level = 0.001 * (1 + index % 50) * (1 + (slower if index % 100 == 0 else 0.0))
        samples = tuple(level * rng.gauss(1.0, 0.02) for _ in range(20))
        probes = tuple(0.0017 * rng.gauss(1.0, 0.01) for _ in range(20))
        measurement = Measurement("images", 8.0, samples, probe_samples=probes, peak_memory_bytes=1 << 20)
        recorded.append(Recorded(f"perf/test_k.py::test_kernel[case-{index}]", "passed", measurement, None))
    return results_document(
        recorded, device_kind="cpu", device_key="cpu-synthetic-2c", provenance={"torch": "2.13"}, profile="smoke",
        world_size=1,
    )  # fmt: skip


def timed(command: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system: what a busy neighbour does not inflate) and the exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    code = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=20000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        a, b = Path(scratch) / "a.json", Path(scratch) / "b.json"
        a.write_text(json.dumps(document(options.entries, 1, 0.0)))
        b.write_text(json.dumps(document(options.entries, 2, 0.3)))
        size = a.stat().st_size / 2**20
        cli = [sys.executable, "-m", "pytest_accel"]
        report, report_cpu, code_r = timed([*cli, "report", str(a), str(b), "--markdown", str(Path(scratch) / "r.md")])
        compare, compare_cpu, code_c = timed([*cli, "compare", str(a), str(b)])
        print(
            f"{options.entries} entries per file ({size:.1f} MiB): report {report:.1f} s (CPU {report_cpu:.1f} s, "
            f"exit {code_r}), compare {compare:.1f} s (CPU {compare_cpu:.1f} s, exit {code_c})"
        )


if __name__ == "__main__":
    main()
