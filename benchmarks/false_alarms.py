"""Does the README's own command cry wolf? Unchanged code, committed baselines, quiet and with a neighbour.

    python benchmarks/false_alarms.py --quiet 5 --busy 5 --out docs/false-alarms-raw.json

Runs ``pytest perf_tests --device cpu`` (the README's command, unchanged code, the committed
baselines, the default tolerance) ``--quiet`` times on its own, then ``--busy`` times with the
neighbour this project's users have beside it: a second ``pytest perf_tests --device cpu`` (memory-
bound kernels, allocation, DataLoader worker processes), restarted whenever it finishes, writing
nothing. Keeps every verdict and each run's wall time, and prints per scenario the count of each
outcome, the regressed share, the wall time, and how many figures could see a 10% slowdown.
Not a test: it takes about half an hour. ``--record N`` first records N baselines into a scratch
folder and judges against those (for a host the committed baselines do not cover).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from neighbour import Neighbour

ROOT = Path(__file__).resolve().parents[1]


def suite(results: Path, *extra: str) -> tuple[float, int]:
    """One run of the README's command; returns (wall seconds, exit code)."""
    started = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "perf_tests", "--device", "cpu", "-q", "-p", "no:cacheprovider",
         "--accel-json", str(results), *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    return time.monotonic() - started, ran.returncode


def collect(path: Path, scenario: str, run: int, seconds: float, code: int) -> list[dict[str, object]]:
    document = json.loads(path.read_text())
    rows = []
    for entry in document["results"]:
        verdict = entry.get("verdict") or {}
        time_verdict = verdict.get("time") or {}
        rows.append(
            {
                "scenario": scenario,
                "run": run,
                "test": entry["test"] + ("" if entry["name"] == "throughput" else f" [{entry['name']}]"),
                "outcome": verdict.get("outcome", "none"),
                "ratio": time_verdict.get("ratio"),
                "detectable": time_verdict.get("detectable"),
                "reason": time_verdict.get("reason"),
                "run_seconds": seconds,
                "exit_code": code,
            }
        )
    return rows


def summarize(rows: list[dict[str, object]]) -> list[str]:
    lines = [
        "| scenario | runs | verdicts | regressed | noisy | unchanged | improved | new | sees 10% "
        "| wall time per run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for scenario in dict.fromkeys(str(r["scenario"]) for r in rows):
        chosen = [r for r in rows if r["scenario"] == scenario and r["outcome"] != "none"]
        runs = sorted({int(r["run"]) for r in chosen})  # type: ignore[call-overload]
        count = {
            o: sum(r["outcome"] == o for r in chosen) for o in ("regressed", "noisy", "unchanged", "improved", "new")
        }
        sees = sum(r["detectable"] is not None and float(r["detectable"]) <= 0.10 for r in chosen)  # type: ignore[arg-type]
        judged = sum(r["detectable"] is not None for r in chosen)
        walls = sorted({(int(r["run"]), float(r["run_seconds"])) for r in chosen})  # type: ignore[call-overload, arg-type]
        wall = " / ".join(f"{w / 60:.1f}" for _, w in walls) + " min"
        n = len(chosen)
        lines.append(
            f"| {scenario} | {len(runs)} | {n} | {count['regressed']} ({count['regressed'] / max(n, 1):.1%}) | "
            f"{count['noisy']} ({count['noisy'] / max(n, 1):.0%}) | {count['unchanged']} | {count['improved']} | "
            f"{count['new']} | {sees} of {judged} | {wall} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", type=int, default=5)
    parser.add_argument("--busy", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("false-alarms-raw.json"))
    parser.add_argument("--summarize", action="store_true", help="only print the table of --out")
    parser.add_argument(
        "--record",
        type=int,
        default=0,
        help="first record this many baselines into a scratch folder and judge against them, not the committed "
        "ones (a host whose cache sizes differ from the recordings' sees every figure as new)",
    )
    options = parser.parse_args()
    if options.summarize:
        print("\n".join(summarize(json.loads(options.out.read_text()))))
        return
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        chosen: tuple[str, ...] = ()
        if options.record:
            chosen = ("--accel-baselines", str(folder / "baselines"))
            for record in range(options.record):
                seconds, code = suite(folder / f"record-{record}.json", *chosen, "--accel-update")
                print(f"record {record + 1}: {seconds:.0f} s, exit {code}", flush=True)
        for run in range(options.quiet):
            seconds, code = suite(folder / f"quiet-{run}.json", *chosen)
            rows += collect(folder / f"quiet-{run}.json", "unchanged, quiet", run, seconds, code)
            options.out.write_text(json.dumps(rows, indent=1) + "\n")
            print(f"quiet run {run + 1}: {seconds:.0f} s, exit {code}", flush=True)
        neighbour = Neighbour(folder)
        try:
            for run in range(options.busy):
                neighbour.keep_running()
                time.sleep(5)  # the neighbour is past its imports
                results = folder / f"busy-{run}.json"
                process = subprocess.Popen(
                    [sys.executable, "-m", "pytest", "perf_tests", "--device", "cpu", "-q", "-p", "no:cacheprovider",
                     "--accel-json", str(results), *chosen],
                    cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
                started = time.monotonic()
                while process.poll() is None:
                    neighbour.keep_running()
                    time.sleep(1)
                seconds = time.monotonic() - started
                rows += collect(results, "unchanged, a second perf suite beside it", run, seconds, process.returncode)
                options.out.write_text(json.dumps(rows, indent=1) + "\n")
                print(f"busy run {run + 1}: {seconds:.0f} s, exit {process.returncode}", flush=True)
        finally:
            neighbour.stop()
    print("\n".join(summarize(rows)))


if __name__ == "__main__":
    main()
