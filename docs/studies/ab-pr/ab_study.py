"""Does ``pytest-accel ab`` hold its false-alarm rate, and how fast does it catch a slowdown?

    python docs/studies/ab-pr/ab_study.py record --pairs 40 --out docs/studies/ab-pr/ab-aa-pairs.json  # A/A pairs
    python docs/studies/ab-pr/ab_study.py simulate docs/studies/ab-pr/ab-aa-pairs.json  # the rule on them
    python docs/studies/ab-pr/ab_study.py live --runs 4 --out docs/studies/ab-pr/ab-live-raw.json  # real sittings
    python docs/studies/ab-pr/ab_study.py live --tests 8 --runs 1 --out pr-raw.json    # the PR selection

A scratch git repository holds the three kernels of ``docs/studies/sensitivity/sensitivity.py`` (SDPA at the SD3
smoke shape, an MLP, a conv) as perf tests. Commit ``c0`` is the base; commit ``c1`` makes every
call 10% slower (a same-thread spin proportional to the call's own time: the slowdown scales with
the machine's drift, as a slower kernel's would).

- ``record``: A/A sittings of a fixed number of pairs (``--min-pairs N --max-pairs N``, no early
  stop), quiet and then with the neighbour this project's users have (a second
  ``pytest perf_tests --device cpu`` beside it, restarted whenever it ends): the raw per-pair log
  ratios, the noise the stopping rule must live with.
- ``simulate``: the default stopping rule on sequences resampled from those pairs, 20,000 per test
  and condition: as recorded (A/A), and shifted by a 5% (the tolerance: the worst case for a false
  "regressed"), 10% and 25% slowdown; the outcome rates and the pairs each verdict took.
- ``live``: real ``pytest-accel ab`` sittings with the default plan, A/A and 10% slower, quiet and
  beside the neighbour; verdicts, pairs and wall time to the verdict. ``--tests 1`` selects only
  the SDPA kernel (one test); ``--tests 8`` the PR workflow's selection (the 8 forward SDPA kernels
  of a copy of ``perf_tests``; c1 makes every SDPA call 10% slower), ``--scenarios`` picks A/A or
  the slowdown, ``--ab-args`` passes options such as ``--reuse 1``.
Not a test: it takes tens of minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# The shared neighbour and the sensitivity study's kernels, each imported from its own study folder.
STUDIES = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(STUDIES / "shared"), str(STUDIES / "sensitivity")]

from neighbour import ROOT, Neighbour  # noqa: E402
from sensitivity import TEST_FILE  # noqa: E402

from pytest_accel.core.outcomes import PAIRED, Outcome  # noqa: E402
from pytest_accel.judgement.paired import SequentialPlan, judge_pairs  # noqa: E402

KERNELS = TEST_FILE.replace('float(os.environ.get("SENSITIVITY_EXTRA_WORK", "0"))', "__import__('slowdown').SLOWDOWN")
PYTEST_ARGS = ["test_kernels.py", "--device", "cpu", "-q", "-o", "filterwarnings="]


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def make_repo(folder: Path) -> None:
    """c0: the kernels; c1: the same, 10% slower per call."""
    _git(folder, "init", "-q")
    (folder / "test_kernels.py").write_text(KERNELS)
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "slowdown.py").write_text("SLOWDOWN = 0.0\n")
    _git(folder, "add", "-A")
    _git(folder, "-c", "user.name=study", "-c", "user.email=study@localhost", "commit", "-qm", "c0")
    _git(folder, "tag", "c0")
    (folder / "slowdown.py").write_text("SLOWDOWN = 0.10\n")
    _git(folder, "-c", "user.name=study", "-c", "user.email=study@localhost", "commit", "-qam", "c1")
    _git(folder, "tag", "c1")
    _git(folder, "checkout", "-q", "c0")


# The PR workflow's own selection: the 8 forward SDPA kernels of the suite.
PR_ARGS = ["perf_tests/test_attention.py", "-k", "sdpa and not backward", "--device", "cpu", "-q", "-o",
           "filterwarnings="]  # fmt: skip
# c1 of the PR repository: every SDPA call 10% slower (a same-thread spin proportional to the call's time).
PLANT = """

# Planted by docs/studies/ab-pr/ab_study.py: a tenth more attention work per call.
import time as _time

import torch.nn.functional as _F

_sdpa = _F.scaled_dot_product_attention


def _slower(*args, **kwargs):
    start = _time.perf_counter()
    out = _sdpa(*args, **kwargs)
    until = _time.perf_counter() + (_time.perf_counter() - start) * 0.10
    while _time.perf_counter() < until:
        pass
    return out


_F.scaled_dot_product_attention = _slower
"""


def make_pr_repo(folder: Path) -> None:
    """c0: a copy of this project's perf suite; c1: the same with every SDPA call 10% slower."""
    _git(folder, "init", "-q")
    shutil.copytree(ROOT / "perf_tests", folder / "perf_tests", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "pytest.ini").write_text("[pytest]\npythonpath = perf_tests\n")
    _git(folder, "add", "-A")
    _git(folder, "-c", "user.name=study", "-c", "user.email=study@localhost", "commit", "-qm", "c0")
    _git(folder, "tag", "c0")
    with (folder / "perf_tests" / "conftest.py").open("a") as conftest:
        conftest.write(PLANT)
    _git(folder, "-c", "user.name=study", "-c", "user.email=study@localhost", "commit", "-qam", "c1")
    _git(folder, "tag", "c1")
    _git(folder, "checkout", "-q", "c0")


class Beside:
    """The neighbour, kept running for as long as the block lasts (None: quiet)."""

    def __init__(self, scratch: Path | None) -> None:
        self.neighbour = None if scratch is None else Neighbour(scratch)
        self.stopping = threading.Event()

    def __enter__(self) -> Beside:
        if self.neighbour is not None:
            neighbour = self.neighbour
            neighbour.keep_running()

            def loop() -> None:
                while not self.stopping.wait(2.0):
                    neighbour.keep_running()

            threading.Thread(target=loop, daemon=True).start()
            time.sleep(5)
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        if self.neighbour is not None:
            time.sleep(2.1)
            self.neighbour.stop()


def sitting(folder: Path, head: str, extra: list[str], tests: int) -> dict[str, object]:
    """One ``pytest-accel ab --base c0 --head HEAD`` sitting; its comparison document and wall time."""
    selection = PR_ARGS if tests == 8 else PYTEST_ARGS + (["-k", "sdpa"] if tests == 1 else [])
    out = folder / "ab-out"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest_accel", "ab", "--base", "c0", "--head", head, "--out", str(out), *extra,
         "--", *selection],
        cwd=folder, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1, 125):
        raise SystemExit(f"ab failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    document = json.loads((out / "comparison.json").read_text())
    return {"exit_code": done.returncode, "seconds": seconds, "document": document}


def record(options: argparse.Namespace) -> None:
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        make_repo(folder)
        for condition in options.conditions:
            with Beside(folder if condition == "busy" else None):
                for index in range(options.sittings):
                    pairs = ["--min-pairs", str(options.pairs), "--max-pairs", str(options.pairs)]
                    result = sitting(folder, "c0", [*pairs, "--max-minutes", "120"], 3)
                    for test in result["document"]["tests"]:  # type: ignore[index]
                        rows.append({"condition": condition, "sitting": index, "test": test["test"],
                                     "log_ratios": test["log_ratios"]})  # fmt: skip
                    print(f"{condition} sitting {index + 1}: {result['seconds']:.0f} s", flush=True)
                    options.out.write_text(json.dumps(rows, indent=1) + "\n")


def simulate(options: argparse.Namespace) -> None:
    rows = json.loads(options.recorded.read_text())
    plan = SequentialPlan()
    rng = random.Random(1)
    print(f"default plan: tolerance {plan.tolerance:.0%}, alpha {plan.alpha}, looks {plan.looks}\n")
    print("| condition | test | recorded pairs | mean | per-pair SD | slowdown | regressed | unchanged | improved |"
          " inconclusive | median pairs to a verdict |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for condition in sorted({row["condition"] for row in rows}):
        for test in sorted({row["test"] for row in rows if row["condition"] == condition}):
            pool = [x for r in rows if r["condition"] == condition and r["test"] == test for x in r["log_ratios"]]
            mean = sum(pool) / len(pool)
            sd = (sum((x - mean) ** 2 for x in pool) / (len(pool) - 1)) ** 0.5
            centred = [x - mean for x in pool]
            for slowdown in (0.0, 0.05, 0.10, 0.25):
                # A/A: the pairs as recorded, their own small bias included. A slowdown: the pairs
                # centred, then shifted, so that the true ratio is exactly 1 + slowdown.
                source = pool if slowdown == 0 else centred
                counts = {outcome: 0 for outcome in PAIRED}
                pairs_taken = []
                for _ in range(options.sequences):
                    ratios: list[float] = []
                    while True:
                        ratios.append(rng.choice(source) + math.log1p(slowdown))
                        last = len(ratios) >= plan.max_pairs
                        verdict = judge_pairs(ratios, plan, last=last)
                        if verdict.outcome is not Outcome.PENDING:
                            break
                    counts[verdict.outcome] += 1
                    pairs_taken.append(len(ratios))
                pairs_taken.sort()
                n = options.sequences
                print(
                    f"| {condition} | {test.split('::')[-1]} | {len(pool)} | {math.expm1(mean):+.1%} | {sd:.1%} |"
                    f" {'as recorded (A/A)' if slowdown == 0 else f'{slowdown:.0%}'} |"
                    f" {counts[Outcome.REGRESSED] / n:.2%} | {counts[Outcome.UNCHANGED] / n:.1%} |"
                    f" {counts[Outcome.IMPROVED] / n:.2%} | {counts[Outcome.INCONCLUSIVE] / n:.1%} |"
                    f" {pairs_taken[n // 2]} |"
                )


def _decided_at(document: dict[str, Any], test: dict[str, Any]) -> float | None:
    """The sitting's clock when this test's verdict came (the end of its last pair); None if unknown."""
    clock = document.get("pair_seconds") or []
    return clock[test["pairs"] - 1] if 0 < test["pairs"] <= len(clock) else None


def live(options: argparse.Namespace) -> None:
    rows: list[dict[str, object]] = json.loads(options.out.read_text()) if options.resume else []
    first_run: dict[tuple[object, object], int] = {}  # --resume numbers its sittings after those in --out
    for row in rows:
        key = (row["condition"], row["scenario"])
        first_run[key] = max(first_run.get(key, 0), int(row["run"]) + 1)  # type: ignore[call-overload]
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (make_pr_repo if options.tests == 8 else make_repo)(folder)
        for condition in options.conditions:
            with Beside(folder if condition == "busy" else None):
                for number in range(options.runs):
                    for scenario, head in (("A/A", "c0"), ("10% slower", "c1")):
                        if scenario not in options.scenarios:
                            continue
                        index = first_run.get((condition, scenario), 0) + number
                        result = sitting(folder, head, options.ab_args, options.tests)
                        document = result["document"]
                        for test in document["tests"]:  # type: ignore[index]
                            rows.append({
                                "condition": condition, "scenario": scenario, "run": index, "tests": options.tests,
                                "test": test["test"], "outcome": test["outcome"], "pairs": test["pairs"],
                                "ratio": test["ratio"], "low": test["low"], "high": test["high"],
                                "sitting_seconds": result["seconds"], "sitting_pairs": document["pairs"],
                                "decided_at_seconds": _decided_at(document, test),
                                "exit_code": result["exit_code"], "ab_args": options.ab_args,
                            })  # fmt: skip
                        outcomes = [t["outcome"] for t in document["tests"]]  # type: ignore[index]
                        print(
                            f"{condition} {scenario} {index + 1}: {outcomes} in {result['seconds']:.0f} s", flush=True
                        )
                        options.out.write_text(json.dumps(rows, indent=1) + "\n")
    summarize_live(rows)


def summarize_live(rows: list[dict[str, object]]) -> None:
    print("| condition | tests selected | scenario | verdicts | regressed | unchanged | inconclusive | improved |"
          " median minutes per sitting | median pairs | minutes to the 7th verdict, per sitting |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    groups = sorted({(r["condition"], r["tests"], r["scenario"]) for r in rows}, key=str)
    for condition, tests, scenario in groups:
        group = [r for r in rows if (r["condition"], r["tests"], r["scenario"]) == (condition, tests, scenario)]
        count = {
            o: sum(r["outcome"] == o for r in group) for o in ("regressed", "unchanged", "inconclusive", "improved")
        }
        minutes = sorted(float(r["sitting_seconds"]) / 60 for r in group)  # type: ignore[arg-type]
        pairs = sorted(int(r["pairs"]) for r in group)  # type: ignore[call-overload]
        seventh = []  # per sitting: minutes until 7 of its tests had a verdict (8-test selection)
        for run in sorted({r["run"] for r in group}, key=str):
            times = sorted(
                float(r["decided_at_seconds"])  # type: ignore[arg-type]
                for r in group
                if r["run"] == run
                and r.get("decided_at_seconds") is not None
                and r["outcome"] in ("regressed", "unchanged", "improved")
            )
            seventh.append(f"{times[6] / 60:.1f}" if len(times) >= 7 else "-")
        print(f"| {condition} | {tests} | {scenario} | {len(group)} | {count['regressed']} | {count['unchanged']} |"
              f" {count['inconclusive']} | {count['improved']} | {minutes[len(minutes) // 2]:.1f} |"
              f" {pairs[len(pairs) // 2]} | {', '.join(seventh)} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record")
    rec.add_argument("--pairs", type=int, default=40)
    rec.add_argument("--sittings", type=int, default=1)
    rec.add_argument("--conditions", nargs="+", default=["quiet", "busy"], choices=["quiet", "busy"])
    rec.add_argument("--out", type=Path, default=Path("ab-aa-pairs.json"))
    sim = commands.add_parser("simulate")
    sim.add_argument("recorded", type=Path)
    sim.add_argument("--sequences", type=int, default=20000)
    liv = commands.add_parser("live")
    liv.add_argument("--runs", type=int, default=4)
    liv.add_argument("--tests", type=int, default=3, choices=[1, 3, 8], help="8: the PR workflow's selection")
    liv.add_argument("--scenarios", nargs="+", default=["A/A", "10% slower"], choices=["A/A", "10% slower"])
    liv.add_argument("--ab-args", nargs="*", default=[], help="more pytest-accel ab options (e.g. --reuse 1)")
    liv.add_argument("--conditions", nargs="+", default=["quiet", "busy"], choices=["quiet", "busy"])
    liv.add_argument("--out", type=Path, default=Path("ab-live-raw.json"))
    liv.add_argument("--resume", action="store_true", help="add to the rows already in --out")
    liv.add_argument("--summarize", action="store_true", help="only print the table of --out")
    options = parser.parse_args()
    if options.command == "record":
        record(options)
    elif options.command == "simulate":
        simulate(options)
    elif options.summarize:
        summarize_live(json.loads(options.out.read_text()))
    else:
        live(options)


if __name__ == "__main__":
    main()
