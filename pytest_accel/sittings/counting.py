"""The counting processes: the selected perf tests once more, in pytest under callgrind, each measurement's
calls counted instead of timed (``engine/counting.py``), read back into ``Count`` s.

One process per core, each a share of the selection: torch is imported once per process, uninstrumented,
and a count does not depend on what runs beside it. Each runs one thread (``OMP_NUM_THREADS=1``,
``--accel-cpu-threads 1``): with two, OpenMP's waiting is counted and two processes' counts differ; and torch's
portable kernels (``COUNTING_ENV``), far faster to count than its AVX2 ones. The
cache simulated is fixed (``CACHE``), not the host's, so a count does not depend on which host of a kind
took it. Where valgrind is missing or a process fails, ``CountRun.problem`` says why: nothing is counted,
and nothing passes for counted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import final

from pytest_accel.core.counts import Count, read_annotated, read_totals
from pytest_accel.core.environment import ENVIRONMENT_PROVENANCE
from pytest_accel.engine.counting import COUNT_INTO_ENV, COUNTED, loader_variables
from pytest_accel.engine.processes import kill_group, start_group
from pytest_accel.judgement.confirm import FRESH_PROCESS_ENV, ChildSettings
from pytest_accel.judgement.results import ResultsError, load_results

__all__ = ["CACHE", "COUNTING_ENV", "COUNT_TIMEOUT_SECONDS", "CountRun", "count_selection", "valgrind_version"]

# The simulated caches (size, associativity, line): a common x86 server core's L1s and an 8 MiB last level.
CACHE = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64")
COUNT_TIMEOUT_SECONDS = 1800
# What a counting process runs with: one thread for every library torch may run on, and the portable kernels:
# torch's default (not AVX2) ATen kernels, MKL and oneDNN at SSE4. valgrind runs AVX2's fused multiply-adds
# through a helper call each, several times slower to count (docs/studies/counted-work); the portable path is
# also the same on every x86-64 host.
COUNTING_ENV = {
    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
    "ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41",
}  # fmt: skip


@final
@dataclass(frozen=True)
class CountRun:
    """What the counting process counted, by (test, metric); ``problem``: why it counted nothing (or not all)."""

    counts: dict[tuple[str, str], Count] = field(default_factory=dict)
    missing: dict[tuple[str, str], str] = field(default_factory=dict)  # a measurement it could not count, and why
    problem: str | None = None
    valgrind: str = ""  # valgrind's version, part of the counts' key
    environment: str | None = None  # the counting process's environment digest (core/environment.py)
    seconds: float = 0.0


def valgrind_version() -> str | None:
    """The installed valgrind's version (``3.19.0``); None when valgrind is not installed."""
    found = shutil.which("valgrind")
    if found is None:
        return None
    printed = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    return printed.strip().removeprefix("valgrind-") or None


def shares_of(tests: Sequence[str], shares: int, costs: Mapping[str, float]) -> list[list[str]]:
    """``tests`` in ``shares`` shares, each in the selection's order: by their recorded instructions where every
    test has them (the largest first, each to the share with the least so far), else one in ``shares`` each. A
    prefill counted 4.8 G instructions per call where a decode step counted 9 M: in turn, the 8 forward SDPA
    tests split 9.9 G to 2.9 G instructions per call, by their recordings 6.4 G to 6.3 G (the counting run then
    took 83 s where the base's took 86 s: each process's start, imports and collection under valgrind weigh as
    much; docs/studies/counted-work)."""
    if not all(costs.get(test, 0) > 0 for test in tests):
        return [list(tests[share::shares]) for share in range(shares)]
    loads: list[float] = [0.0] * shares
    chosen: list[list[str]] = [[] for _ in range(shares)]
    for test in sorted(tests, key=lambda t: -costs[t]):
        least = loads.index(min(loads))
        loads[least] += costs[test]
        chosen[least].append(test)
    place = {test: index for index, test in enumerate(tests)}
    return [sorted(share, key=place.__getitem__) for share in chosen]


def count_selection(
    tests: Sequence[str],
    rootdir: Path,
    settings: ChildSettings,
    misses: bool = False,
    processes: int = 0,
    costs: Mapping[str, float] | None = None,
) -> CountRun:
    """Count every measurement of ``tests`` under callgrind (see the module's docstring), in ``processes``
    counting processes side by side (0: one per core), each a share of the tests (``shares_of``, by ``costs``:
    each test's recorded instructions): a count does not depend on what runs beside it, and each process runs
    one thread."""
    started = time.monotonic()
    version = valgrind_version()
    if version is None:
        return CountRun(problem="valgrind is not installed (apt-get install valgrind)")
    if not sys.platform.startswith("linux"):
        return CountRun(problem=f"counting runs on Linux only (this is {sys.platform})")
    shares = max(1, min(len(tests), processes or os.cpu_count() or 1))
    with tempfile.TemporaryDirectory(prefix="pytest-accel-count-") as scratch:
        folders = [Path(scratch) / str(share) for share in range(shares)]
        children: list[subprocess.Popen[str]] = []
        try:
            for share, folder in zip(shares_of(tests, shares, costs or {}), folders, strict=True):
                folder.mkdir()
                children.append(_start(share, folder, rootdir, settings, misses))
            ended = [_wait(child, started) for child in children]
        except OSError as error:
            return CountRun(problem=f"the counting process did not start: {error}", valgrind=version)
        finally:
            for child in children:
                if child.poll() is None:
                    kill_group(child)
        took = time.monotonic() - started
        if any(code is None for code in ended):
            return CountRun(problem=f"the counting process did not finish in {COUNT_TIMEOUT_SECONDS} s", seconds=took)
        reads = [_read(folder) for folder in folders]
        counts = {key: count for read in reads for key, count in read.counts.items()}
        missing = {key: why for read in reads for key, why in read.missing.items()}
        if not counts and not missing:
            log = folders[0] / "output.log"
            tail = " | ".join(log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:])
            problem = f"the counting process counted nothing (exit {ended[0]}): {tail}"
            return CountRun(problem=problem, valgrind=version, seconds=took)
        environments = {_environment(folder / "results.json") for folder in folders}
        environment = environments.pop() if len(environments) == 1 else "differ between the counting processes"
        return CountRun(counts, missing, None, version, environment, took)


def _start(
    tests: Sequence[str], folder: Path, rootdir: Path, settings: ChildSettings, misses: bool
) -> subprocess.Popen[str]:
    """One counting process for ``tests``, writing into ``folder``; ``misses``: with the caches simulated."""
    cache = ["--cache-sim=yes", *CACHE] if misses else ["--cache-sim=no"]
    arguments = replace(settings, cpu_threads=1).arguments()
    command = [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no", *cache,
        f"--callgrind-out-file={folder}/callgrind.out.%p",
        sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
        "--benchmark-disable", "--accel-json", str(folder / "results.json"), *arguments,
    ]  # fmt: skip
    env = {**os.environ, **COUNTING_ENV, COUNT_INTO_ENV: str(folder), FRESH_PROCESS_ENV: "1", "PYTHONHASHSEED": "0"}
    env.update(loader_variables(os.environ))
    with (folder / "output.log").open("w", encoding="utf-8") as sink:
        return start_group(command, rootdir, env, stdout=sink)


def _wait(child: subprocess.Popen[str], started: float) -> int | None:
    """The child's exit code; None when it outlasted the counting's time."""
    try:
        return child.wait(max(1.0, COUNT_TIMEOUT_SECONDS - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        return None


def _environment(results: Path) -> str | None:
    """The environment digest the counting process's result file names; None where it wrote none."""
    try:
        return load_results(results).provenance.get(ENVIRONMENT_PROVENANCE)
    except (OSError, ResultsError):
        return None


def _read(folder: Path) -> CountRun:
    """The counts the process named in its index, each read from its callgrind file."""
    index = folder / COUNTED
    counts: dict[tuple[str, str], Count] = {}
    missing: dict[tuple[str, str], str] = {}
    if not index.exists():
        return CountRun()
    annotate = shutil.which("callgrind_annotate")
    for text in index.read_text(encoding="utf-8").splitlines():
        line = json.loads(text)
        key = (str(line["test"]), str(line["metric"]))
        if "problem" in line:
            missing[key] = str(line["problem"])
            continue
        dump = folder / f"callgrind.out.{line['pid']}.{line['dump']}"
        try:
            dumped = dump.read_text(encoding="utf-8", errors="replace")
            events = read_totals(dumped)
        except (OSError, ValueError) as error:
            missing[key] = f"its callgrind file could not be read: {error}"
            continue
        functions: tuple[tuple[str, int], ...] = ()
        if annotate is not None:
            shown = subprocess.run(
                [annotate, "--inclusive=no", "--show=Ir", "--auto=no", "--threshold=100", str(dump)],
                capture_output=True, text=True, timeout=300, check=False,
            ).stdout  # fmt: skip
            functions = read_annotated(shown)
        counts[key] = Count(int(line["calls"]), events, functions, dict(line.get("context", {})))
    return CountRun(counts, missing)
