"""Does the gate call a flash -> math SDPA fallback in the suite's own tests regressed, and stay quiet without it?

    python docs/studies/backend-switch/backend_switch.py --records 2 --runs 3 \
        --out docs/studies/backend-switch/backend-switch-raw.json

Records ``--records`` baselines of the suite's SDPA-bound CPU tests (the attention forwards on the
flash kernel, the MMDiT joint block forward on the default SDPA) into a scratch folder, then runs
them ``--runs`` times unchanged and ``--runs`` times with every SDPA call forced to the math kernel
(``force_math_sdpa.py`` beside this script, loaded with ``-p``), alternating. Each run is the README's
command as a user types it (a fresh ``pytest`` process, the default tolerance). Keeps every verdict
with its reason; prints, per scenario, the count of each outcome. Not a test: about 15 minutes.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # docs/studies/<study>/ -> the repository root
SELECTION = (
    "(test_attention_forward and flash and not backward)"
    " or (test_joint_block and forward and sdpa and not math and not backward)"
)


def suite(baselines: Path, results: Path, *extra: str) -> tuple[float, int, str]:
    started = time.monotonic()
    plugin_folder = str(Path(__file__).resolve().parent)  # force_math_sdpa.py, loaded with -p
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([plugin_folder, os.environ.get("PYTHONPATH", "")])}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "perf_tests", "--device", "cpu", "-q", "-p", "no:cacheprovider",
         "-k", SELECTION, "--accel-baselines", str(baselines), "--accel-json", str(results), *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    return time.monotonic() - started, ran.returncode, ran.stdout[-3000:]


def collect(path: Path, scenario: str, run: int, seconds: float, code: int) -> list[dict[str, object]]:
    rows = []
    for entry in json.loads(path.read_text())["results"]:
        verdict = entry.get("verdict") or {}
        time_verdict = verdict.get("time") or {}
        rows.append(
            {
                "scenario": scenario,
                "run": run,
                "test": entry["test"],
                "outcome": verdict.get("outcome", "none"),
                "ratio": time_verdict.get("ratio"),
                "reason": time_verdict.get("reason"),
                "operators": verdict.get("operators", []),
                "state": entry.get("state", {}),
                "run_seconds": seconds,
                "exit_code": code,
            }
        )
    return rows


def summarize(rows: list[dict[str, object]]) -> list[str]:
    lines = [
        "| scenario | verdicts | regressed | noisy | unchanged | improved | new |",
        "|---|---|---|---|---|---|---|",
    ]
    for scenario in dict.fromkeys(str(r["scenario"]) for r in rows):
        count = collections.Counter(str(r["outcome"]) for r in rows if r["scenario"] == scenario)
        total = sum(count.values())
        lines.append(
            f"| {scenario} | {total} | {count['regressed']} | {count['noisy']} | {count['unchanged']} | "
            f"{count['improved']} | {count['new']} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("backend-switch-raw.json"))
    parser.add_argument("--summarize", action="store_true", help="only print the table of --out")
    options = parser.parse_args()
    if options.summarize:
        print("\n".join(summarize(json.loads(options.out.read_text()))))
        return
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        baselines = folder / "baselines"
        for record in range(options.records):
            seconds, code, tail = suite(baselines, folder / f"record-{record}.json", "--accel-update")
            print(f"record {record + 1}: {seconds:.0f} s, exit {code}", flush=True)
            if code != 0:
                sys.exit(f"recording failed:\n{tail}")
        # The recorded run medians, kept beside the verdicts: a verdict is only as good as its baseline.
        (recorded,) = baselines.glob("*/smoke.json")
        entries = json.loads(recorded.read_text())["entries"]
        runs = {test: entry["throughput"].get("run_medians") for test, entry in entries.items()}
        options.out.with_suffix(".recordings.json").write_text(json.dumps(runs, indent=1) + "\n")
        for run in range(options.runs):
            for scenario, extra in (("unchanged", ()), ("SDPA forced to math", ("-p", "force_math_sdpa"))):
                results = folder / f"{scenario[:4]}-{run}.json"
                seconds, code, _ = suite(baselines, results, *extra)
                rows += collect(results, scenario, run, seconds, code)
                options.out.write_text(json.dumps(rows, indent=1) + "\n")
                print(f"{scenario} run {run + 1}: {seconds:.0f} s, exit {code}", flush=True)
    print("\n".join(summarize(rows)))


if __name__ == "__main__":
    main()
