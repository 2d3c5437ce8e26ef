"""Does the README's own command cry wolf? Unchanged code, committed baselines, quiet and with a neighbour.

    python docs/studies/false-alarms/false_alarms.py --quiet 5 --busy 5 \
        --out docs/studies/false-alarms/false-alarms-raw.json

Runs ``pytest perf_tests --device cpu`` (the README's command, unchanged code, the committed
baselines, the default tolerance) ``--quiet`` times on its own, then ``--busy`` times with the
neighbour this project's users have beside it: a second ``pytest perf_tests --device cpu`` (memory-
bound kernels, allocation, DataLoader worker processes), restarted whenever it finishes, writing
nothing. Keeps every verdict and each run's wall time, and prints per scenario the count of each
outcome, the regressed share, the wall time, and how many figures could see a 10% slowdown.
Not a test: it takes about half an hour. ``--record N`` first records N baselines into a scratch
folder and judges against those (for a host the committed baselines do not cover); ``--baselines
DIR`` keeps them for later invocations. ``--planted-quiet`` / ``--planted-busy`` add runs with a
planted slowdown (a quarter more attention work in every SDPA call, ``more_attention.py`` beside this script)
to measure what the gate catches, quiet and beside the neighbour. For the catch rate of the forward
attention kernels, where SDPA is the whole cost:

    python docs/studies/false-alarms/false_alarms.py --record 3 --baselines /tmp/b --quiet 1 --busy 1 \
        --planted-quiet 1 --planted-busy 3 --select 'perf_tests/test_attention.py -k "forward and not backward"'
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The shared neighbour (docs/studies/shared/neighbour.py) is imported from its own folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))

from neighbour import Neighbour

ROOT = Path(__file__).resolve().parents[3]  # docs/studies/<study>/ -> the repository root
PATHS = ["perf_tests"]  # what the suite runs (--select narrows it)
# The planted slowdown: a quarter more attention work in every SDPA call (more_attention.py, beside this script).
PLANT = ("-p", "more_attention")


def command(results: Path, *extra: str) -> list[str]:
    """The README's command with a results file and the study's extra arguments."""
    return [sys.executable, "-m", "pytest", *PATHS, "--device", "cpu", "-q", "-p", "no:cacheprovider",
            "--accel-json", str(results), *extra]  # fmt: skip


def environment(planted: bool) -> dict[str, str]:
    """This process's environment; with ``planted``, the slowdown plugin importable (this folder on the path)."""
    env = dict(os.environ)
    if planted:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent), env.get("PYTHONPATH")]))
    return env


def suite(results: Path, *extra: str, planted: bool = False) -> tuple[float, int]:
    """One run of the README's command; returns (wall seconds, exit code)."""
    started = time.monotonic()
    ran = subprocess.run(
        command(results, *extra), cwd=ROOT, capture_output=True, text=True, timeout=3600, env=environment(planted)
    )
    return time.monotonic() - started, ran.returncode


def beside(neighbour: Neighbour, results: Path, *extra: str, planted: bool = False) -> tuple[float, int]:
    """One run of the README's command with the neighbour running all along; returns (wall seconds, exit code)."""
    neighbour.keep_running()
    time.sleep(5)  # the neighbour is past its imports
    process = subprocess.Popen(
        command(results, *extra), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=environment(planted),
    )  # fmt: skip
    started = time.monotonic()
    while process.poll() is None:
        neighbour.keep_running()
        time.sleep(1)
    return time.monotonic() - started, process.returncode


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


def per_run(rows: list[dict[str, object]], marker: str = "sdpa") -> list[str]:
    """Per run of each planted scenario: the verdicts of the tests whose id holds ``marker`` (the planted
    slowdown is in SDPA: those are the tests it must fail), with their ratios."""
    lines = ["| scenario | run | caught (regressed) | noisy | unchanged | ratios |", "|---|---|---|---|---|---|"]
    for scenario in dict.fromkeys(str(r["scenario"]) for r in rows if str(r["scenario"]).startswith("planted")):
        for run in sorted({int(r["run"]) for r in rows if r["scenario"] == scenario}):  # type: ignore[call-overload]
            chosen = [r for r in rows if r["scenario"] == scenario and r["run"] == run and marker in str(r["test"])]
            count = {o: sum(r["outcome"] == o for r in chosen) for o in ("regressed", "noisy", "unchanged")}
            ratios = ", ".join("-" if r["ratio"] is None else f"{float(r['ratio']):.2f}" for r in chosen)  # type: ignore[arg-type]
            lines.append(
                f"| {scenario} | {run + 1} | {count['regressed']} of {len(chosen)} | {count['noisy']} | "
                f"{count['unchanged']} | {ratios} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", type=int, default=5, help="unchanged runs on their own")
    parser.add_argument("--busy", type=int, default=5, help="unchanged runs beside the neighbour")
    parser.add_argument("--planted-quiet", type=int, default=0, help="runs with the planted slowdown, on their own")
    parser.add_argument("--planted-busy", type=int, default=0, help="runs with the planted slowdown, beside it")
    parser.add_argument("--out", type=Path, default=Path("false-alarms-raw.json"))
    parser.add_argument("--summarize", action="store_true", help="only print the table of --out")
    parser.add_argument("--select", default="", help="test paths and options instead of perf_tests (one string)")
    parser.add_argument(
        "--record",
        type=int,
        default=0,
        help="first record this many baselines into a scratch folder and judge against them, not the committed "
        "ones (a host whose cache sizes differ from the recordings' sees every figure as new)",
    )
    parser.add_argument("--baselines", type=Path, default=None, help="judge against (and --record into) this folder")
    parser.add_argument(
        "--same-neighbour",
        action="store_true",
        help="beside runs have the standard neighbour (a second copy of the selected tests), not the whole suite",
    )
    parser.add_argument(
        "--calibrate", type=int, default=0, help="after recording, this many --accel-calibrate runs (the README's step)"
    )
    options = parser.parse_args()
    if options.summarize:
        rows = json.loads(options.out.read_text())
        print("\n".join([*summarize(rows), "", *per_run(rows)]))
        return
    if options.select:
        PATHS[:] = shlex.split(options.select)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        chosen: tuple[str, ...] = ()
        if options.record or options.baselines or options.calibrate:
            chosen = ("--accel-baselines", str(options.baselines or folder / "baselines"))
            for record in range(options.record):
                seconds, code = suite(folder / f"record-{record}.json", *chosen, "--accel-update")
                print(f"record {record + 1}: {seconds:.0f} s, exit {code}", flush=True)
            for calibration in range(options.calibrate):
                seconds, code = suite(folder / f"calibrate-{calibration}.json", *chosen, "--accel-calibrate")
                print(f"calibrate {calibration + 1}: {seconds:.0f} s, exit {code}", flush=True)
        scenarios = [
            ("unchanged, quiet", options.quiet, False, False),
            ("planted +25% attention, quiet", options.planted_quiet, False, True),
            ("unchanged, a second perf suite beside it", options.busy, True, False),
            ("planted +25% attention, a second perf suite beside it", options.planted_busy, True, True),
        ]
        # The neighbour of the "beside" runs: a second perf suite, or with --same-neighbour the standard
        # neighbour --accel-calibrate measures beside (a second copy of the run's own tests).
        neighbour = Neighbour(folder, PATHS if options.same_neighbour else ("perf_tests",))
        try:
            for scenario, count, busy, planted in scenarios:
                extra = (*chosen, *PLANT) if planted else chosen
                for run in range(count):
                    results = folder / f"{scenario[:9]}-{busy}-{run}.json"
                    if busy:
                        seconds, code = beside(neighbour, results, *extra, planted=planted)
                    else:
                        seconds, code = suite(results, *extra, planted=planted)
                    rows += collect(results, scenario, run, seconds, code)
                    options.out.write_text(json.dumps(rows, indent=1) + "\n")
                    print(f"{scenario} {run + 1}: {seconds:.0f} s, exit {code}", flush=True)
                if busy:
                    neighbour.stop()
        finally:
            neighbour.stop()
    print("\n".join([*summarize(rows), "", *per_run(rows)]))


if __name__ == "__main__":
    main()
