"""Is the structural verdict noise-free, does it catch what it claims, and what does it cost?

    python docs/studies/structure/structure_study.py --records /tmp/structure --quiet 8 --beside 3 --second-host 3 \
        --plants 5 --cost 2 --out docs/studies/structure/study-raw.json
    python docs/studies/structure/structure_study.py --summarize --out docs/studies/structure/study-raw.json

1. Records the suite's structure once (``--accel-structure-only --accel-update``) into ``--records``,
   with the planted-change workloads (``docs/studies/structure/plants``) unchanged.
2. Unchanged code, judged against those records: ``--quiet`` runs of the README's command with
   ``--accel-structure-only``; ``--beside`` pairs of two such runs at once (each the other's
   neighbour: another perf job); ``--second-host`` runs as a host with other cores would be: one
   CPU thread (``--accel-cpu-threads 1``). Every "changed" is a false alarm.
3. ``--plants`` runs of each planted change (flash -> math SDPA, a ``.contiguous()`` copy, a host
   sync, a graph break, a recompilation), half quiet, half beside a second perf suite
   (docs/studies/shared/neighbour.py). Each must read "changed", naming the change.
4. ``--cost`` pairs of timed runs of the README's command, structure off then on: the wall time the
   structural record adds (these runs judge the timed path's records against the untimed ones too).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# The shared neighbour (docs/studies/shared/neighbour.py) is imported from its own folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))

from neighbour import Neighbour

ROOT = Path(__file__).resolve().parents[3]  # docs/studies/<study>/ -> the repository root
PLANTS = ("math", "contiguous", "sync", "break", "recompile")
PLANT_TESTS = "docs/studies/structure/plants/test_plants.py"


def pytest_command(records: Path, results: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "--device", "cpu", "-q", "-p", "no:cacheprovider",
            f"--accel-baselines={records}", f"--accel-json={results}", *extra]  # fmt: skip


def start(records: Path, results: Path, *extra: str, plant: str = "") -> subprocess.Popen[str]:
    env = {**os.environ, "STRUCTURE_PLANT": plant}
    return subprocess.Popen(
        pytest_command(records, results, *extra), cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def verdicts(results: Path) -> list[dict[str, Any]]:
    """Each measurement's structural verdict (test, outcome, lines) from a results file."""
    if not results.exists():
        return []
    rows = []
    for entry in json.loads(results.read_text())["results"]:
        structure = (entry.get("verdict") or {}).get("structure")
        if structure is not None:
            rows.append({"test": entry["test"], "outcome": structure["outcome"], "lines": structure["lines"]})
    return rows


def finish(process: subprocess.Popen[str], results: Path, scenario: str, run: int, started: float) -> dict[str, Any]:
    output, _ = process.communicate(timeout=3600)
    rows = verdicts(results)
    counts = {o: sum(r["outcome"] == o for r in rows) for o in ("changed", "unchanged", "new")}
    print(f"{scenario} #{run}: exit {process.returncode}, {counts}, {time.monotonic() - started:.0f} s", flush=True)
    return {
        "scenario": scenario, "run": run, "exit_code": process.returncode, "seconds": time.monotonic() - started,
        "counts": counts, "changed": [r for r in rows if r["outcome"] == "changed"],
        "tail": output.splitlines()[-3:],
    }  # fmt: skip


def one(records: Path, scratch: Path, scenario: str, run: int, *extra: str, plant: str = "") -> dict[str, Any]:
    results = scratch / f"{scenario.replace(' ', '-')}-{run}.json"
    started = time.monotonic()
    return finish(start(records, results, *extra, plant=plant), results, scenario, run, started)


def pair(records: Path, scratch: Path, scenario: str, run: int, *extra: str) -> list[dict[str, Any]]:
    """Two runs at once, each the other's neighbour."""
    started, processes = time.monotonic(), []
    for side in (0, 1):
        results = scratch / f"{scenario.replace(' ', '-')}-{run}-{side}.json"
        processes.append((start(records, results, *extra), results))
    return [finish(p, results, scenario, 2 * run + side, started) for side, (p, results) in enumerate(processes)]


class Beside:
    """docs/studies/shared/neighbour.py's second perf suite, kept running from a thread."""

    def __init__(self, scratch: Path) -> None:
        self._neighbour, self._stop = Neighbour(scratch), threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._neighbour.keep_running()
            self._stop.wait(1.0)

    def __enter__(self) -> Beside:
        self._thread.start()
        time.sleep(20)  # past the neighbour's imports and collection: its kernels are running
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._neighbour.stop()


def summarize(rows: list[dict[str, Any]]) -> None:
    by: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by.setdefault(row["scenario"], []).append(row)
    for scenario, runs in by.items():
        changed = sum(r["counts"]["changed"] for r in runs)
        judged = sum(r["counts"]["changed"] + r["counts"]["unchanged"] for r in runs)
        seconds = ", ".join(f"{r['seconds']:.0f}" for r in runs)
        print(f"{scenario}: {len(runs)} runs, {changed} changed of {judged} judged; seconds {seconds}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=Path, default=None, help="structure records folder (made if absent)")
    parser.add_argument("--quiet", type=int, default=0)
    parser.add_argument("--beside", type=int, default=0, help="pairs of concurrent runs")
    parser.add_argument("--second-host", type=int, default=0)
    parser.add_argument("--plants", type=int, default=0, help="runs of each planted change")
    parser.add_argument("--cost", type=int, default=0, help="pairs of timed runs, structure off then on")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--summarize", action="store_true")
    args = parser.parse_args()
    if args.summarize:
        summarize(json.loads(args.out.read_text()))
        return
    scratch = Path(tempfile.mkdtemp(prefix="structure-study-"))
    records = args.records or scratch / "records"
    rows: list[dict[str, Any]] = []

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n")

    suite = ("perf_tests", PLANT_TESTS, "--accel-structure-only")
    if not (records / "structure").exists():
        rows.append(one(records, scratch, "record", 0, *suite, "--accel-update"))
    for run in range(args.quiet):
        rows.append(one(records, scratch, "unchanged, quiet", run, *suite))
        save()
    for run in range(args.beside):
        rows += pair(records, scratch, "unchanged, beside a second run", run, *suite)
        save()
    for run in range(args.second_host):
        rows.append(one(records, scratch, "unchanged, one CPU thread", run, *suite, "--accel-cpu-threads", "1"))
        save()
    quiet_plants, beside_plants = (args.plants + 1) // 2, args.plants // 2
    for run in range(quiet_plants):
        for plant in PLANTS:
            rows.append(one(records, scratch, f"planted {plant}, quiet", run, PLANT_TESTS, "--accel-structure-only",
                            plant=plant))  # fmt: skip
        save()
    if beside_plants:
        with Beside(scratch):
            for run in range(beside_plants):
                for plant in PLANTS:
                    rows.append(one(records, scratch, f"planted {plant}, beside", run, PLANT_TESTS,
                                    "--accel-structure-only", plant=plant))  # fmt: skip
                save()
    for run in range(args.cost):
        rows.append(one(records, scratch, "timed, structure off", run, "perf_tests", "--accel-structure=off"))
        rows.append(one(records, scratch, "timed, structure on", run, "perf_tests"))
        save()
    save()
    summarize(rows)


if __name__ == "__main__":
    main()
