"""How often does the verdict cry wolf, and how often does it catch a real slowdown?

    python docs/studies/sensitivity/sensitivity.py --runs 30 --out docs/studies/sensitivity/sensitivity-raw.json

Records a baseline of three CPU kernels (SDPA at the SD3 smoke shape, an MLP, a conv) with
``--accel-update`` and pytest-benchmark's ``--benchmark-save`` in the same pytest run, waits,
then runs the same tests again and again, as real users would (a fresh pytest process each time),
in these scenarios, interleaved so that the machine's drift over time hits them alike:

  (a) unchanged                       (c) 10% and 25% slower calls (a same-thread spin)
  (b) unchanged and 25% slower, with the neighbour this project's users have: a second
      ``pytest perf_tests --device cpu`` beside it (memory-bound kernels, allocation, DataLoader
      worker processes), restarted whenever it ends (run as a block at the end)

For every run and test it keeps our verdict and whether pytest-benchmark's
``--benchmark-compare-fail=median:5%`` gate (same rounds: we feed it our samples) flagged it, and
prints the false-alarm rate, the catch rate, the share of "noisy", the smallest slowdown each
verdict could see, and seconds per verdict, per scenario and per test.
Not a test: it takes tens of minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

# The shared neighbour (docs/studies/shared/neighbour.py) is imported from its own folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))

from neighbour import Neighbour

TEST_FILE = """
import os
import time
import torch
import torch.nn.functional as F

# Injected slowdown: after each call, spin on the same thread for EXTRA x that call's own time,
# so the call takes exactly (1 + EXTRA) times as long, and the extra scales with machine drift
# like the work of a kernel that got slower would.
EXTRA = float(os.environ.get("SENSITIVITY_EXTRA_WORK", "0"))
g = torch.Generator().manual_seed(0)


def slowed(fn):
    if not EXTRA:
        return fn
    def call():
        start = time.perf_counter()
        out = fn()
        spin_until = time.perf_counter() + (time.perf_counter() - start) * EXTRA
        while time.perf_counter() < spin_until:
            pass
        return out
    return call


def test_sdpa(throughput):
    q, k, v = (torch.randn(2, 24, 410, 64, generator=g) for _ in range(3))
    with torch.no_grad():
        throughput(slowed(lambda: F.scaled_dot_product_attention(q, k, v)), items=2, unit="samples")


def test_mlp(throughput):
    x = torch.randn(512, 1024, generator=g)
    w1, w2 = torch.randn(1024, 4096, generator=g) / 32, torch.randn(4096, 1024, generator=g) / 64
    throughput(slowed(lambda: F.gelu(x @ w1) @ w2), items=512, unit="tokens")


def test_conv(throughput):
    x = torch.randn(8, 64, 64, 64, generator=g)
    w = torch.randn(64, 64, 3, 3, generator=g) / 24
    with torch.no_grad():
        throughput(slowed(lambda: F.conv2d(x, w, padding=1)), items=8, unit="images")
"""

SCENARIOS_INTERLEAVED = (("unchanged", 0.0), ("slower 10%", 0.10), ("slower 25%", 0.25))
SCENARIOS_BUSY = (
    ("unchanged, a second perf suite beside it", 0.0),
    ("slower 25%, a second perf suite beside it", 0.25),
)


def run_pytest(folder: Path, extra_work: float, tag: str, record: bool) -> dict[str, dict[str, object]]:
    """One pytest process over the test file; returns per-test verdict, benchmark flag and seconds."""
    results = folder / f"{tag}.json"
    junit = folder / f"{tag}.xml"
    args = [
        sys.executable,
        "-m",
        "pytest",
        str(folder / "test_kernels.py"),
        "--device",
        "cpu",
        "-p",
        "no:cacheprovider",
        "--accel-baselines",
        str(folder / "baselines"),
        "--accel-json",
        str(results),
        "--junit-xml",
        str(junit),
        "--benchmark-storage",
        f"file://{folder / 'bench'}",
        "-q",
        "-o",
        "filterwarnings=",
    ]
    if record:  # pytest-benchmark's users store one run and compare against it: save the first only
        args += ["--accel-update"] + (["--benchmark-save=base"] if tag == "baseline-0" else [])
    else:
        args += ["--benchmark-compare=0001", "--benchmark-compare-fail=median:5%"]
    env = {**os.environ, "SENSITIVITY_EXTRA_WORK": str(extra_work)}
    ran = subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    output = ran.stdout + ran.stderr  # pytest-benchmark's regression list goes to either, by version
    flagged = (
        set(re.findall(r"(test_\w+) \(0001", output.split("Performance has regressed", 1)[-1]))
        if ("Performance has regressed" in output)
        else set()
    )
    seconds = {case.get("name"): float(case.get("time", "nan")) for case in ElementTree.parse(junit).iter("testcase")}
    document = json.loads(results.read_text())
    per_test: dict[str, dict[str, object]] = {}
    for entry in document["results"]:
        name = entry["test"].split("::")[-1]
        verdict = entry["verdict"] or {"outcome": "none", "time": {}, "remeasurements": 0}
        per_test[name] = {
            "outcome": verdict["outcome"],
            "ratio": verdict["time"].get("ratio"),
            "remeasurements": verdict.get("remeasurements", 0),
            "benchmark_flagged": name in flagged,
            "seconds": seconds.get(name),
            "raw_median": entry["figures"]["seconds_per_call"],
            "peak_memory_bytes": entry["peak_memory_bytes"],
            "memory_outcome": (verdict.get("memory") or {}).get("outcome"),
            "reason": verdict["time"].get("reason"),
            "detectable": verdict["time"].get("detectable"),
        }
    return per_test


def summarize(rows: list[dict[str, object]]) -> list[str]:
    """The tables: per scenario, then per scenario and test, how often each gate flagged, our noisy share."""
    lines = _table(rows, lambda r: str(r["scenario"]))
    lines += ["", *_table(rows, lambda r: f"{r['scenario']}: {r['test']}")]
    return lines


def _table(rows: list[dict[str, object]], group: Callable[[dict[str, object]], str]) -> list[str]:
    lines = [
        "| scenario | verdicts | ours: regressed | ours: noisy | pytest-benchmark median:5%: flagged "
        "| ours: sees (median) | s/verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for scenario in dict.fromkeys(group(r) for r in rows):
        chosen = [r for r in rows if group(r) == scenario]
        n = len(chosen)
        regressed = sum(r["outcome"] == "regressed" for r in chosen)
        noisy = sum(r["outcome"] == "noisy" for r in chosen)
        bench = sum(bool(r["benchmark_flagged"]) for r in chosen)
        secs = sorted(float(r["seconds"] or 0) for r in chosen)[n // 2]
        seen = sorted(float(r["detectable"]) for r in chosen if r.get("detectable") is not None)  # type: ignore[arg-type]
        sees = f"{seen[len(seen) // 2] * 100:.0f}%" if seen else "-"
        lines.append(
            f"| {scenario} | {n} | {regressed} ({regressed / n:.0%}) | {noisy} ({noisy / n:.0%}) | "
            f"{bench} ({bench / n:.0%}) | {sees} | {secs:.1f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="runs per scenario")
    parser.add_argument("--wait", type=float, default=120.0, help="seconds between baseline and first run")
    parser.add_argument("--recordings", type=int, default=3, help="--accel-update runs that make the baseline")
    parser.add_argument("--out", type=Path, default=Path("sensitivity-raw.json"))
    parser.add_argument("--summarize", action="store_true", help="only print the tables of --out")
    options = parser.parse_args()
    if options.summarize:
        print("\n".join(summarize(json.loads(options.out.read_text()))))
        return
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "test_kernels.py").write_text(TEST_FILE)
        for index in range(options.recordings):  # a baseline is several runs, as nightly updates make it
            run_pytest(folder, 0.0, f"baseline-{index}", record=True)
            time.sleep(10)
        print(f"baseline recorded; waiting {options.wait:.0f} s", flush=True)
        time.sleep(options.wait)
        for index in range(options.runs):
            for scenario, extra in SCENARIOS_INTERLEAVED:
                for test, result in run_pytest(folder, extra, f"{scenario}-{index}".replace(" ", ""), False).items():
                    rows.append({"scenario": scenario, "run": index, "test": test, **result})
            print(f"run {index + 1}/{options.runs} done", flush=True)
            options.out.write_text(json.dumps(rows, indent=1) + "\n")  # partial results survive a stop
        neighbour = Neighbour(folder)
        try:
            for index in range(options.runs):
                for scenario, extra in SCENARIOS_BUSY:
                    neighbour.keep_running()  # a second suite beside, restarted whenever it ends
                    time.sleep(5)
                    tag = f"busy-{extra}-{index}"
                    for test, result in run_pytest(folder, extra, tag, False).items():
                        rows.append({"scenario": scenario, "run": index, "test": test, **result})
                options.out.write_text(json.dumps(rows, indent=1) + "\n")
        finally:
            neighbour.stop()
    options.out.write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(summarize(rows)))


if __name__ == "__main__":
    main()
