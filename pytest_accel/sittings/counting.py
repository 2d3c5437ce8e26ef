"""The counting process: the selected perf tests once more, in one pytest under callgrind, each measurement's
calls counted instead of timed (``engine/counting.py``), read back into ``Count`` s.

One process for the whole selection: torch is imported once, uninstrumented. Its threads are pinned to
one (``OMP_NUM_THREADS=1``, ``--accel-cpu-threads 1``): with two, OpenMP's waiting is counted and two
processes' counts differ. The cache simulated is fixed (``CACHE``), not the host's, so a count does not
depend on which host of a kind took it. Where valgrind is missing or the process fails, ``CountRun.problem``
says why: nothing is counted, and nothing passes for counted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import final

from pytest_accel.core.counts import Count, read_annotated, read_totals
from pytest_accel.core.environment import ENVIRONMENT_PROVENANCE
from pytest_accel.engine.counting import COUNT_INTO_ENV, COUNTED, loader_variables
from pytest_accel.engine.processes import run_child
from pytest_accel.judgement.confirm import FRESH_PROCESS_ENV, ChildSettings
from pytest_accel.judgement.results import ResultsError, load_results

__all__ = ["CACHE", "COUNT_TIMEOUT_SECONDS", "ONE_THREAD", "CountRun", "count_selection", "valgrind_version"]

# The simulated caches (size, associativity, line): a common x86 server core's L1s and an 8 MiB last level.
CACHE = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64")
COUNT_TIMEOUT_SECONDS = 1800
# Threads pinned to one for every library torch may run on.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


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


def count_selection(tests: Sequence[str], rootdir: Path, settings: ChildSettings) -> CountRun:
    """Count every measurement of ``tests`` in one pytest under callgrind (see the module's docstring)."""
    started = time.monotonic()
    version = valgrind_version()
    if version is None:
        return CountRun(problem="valgrind is not installed (apt-get install valgrind)")
    if not sys.platform.startswith("linux"):
        return CountRun(problem=f"counting runs on Linux only (this is {sys.platform})")
    with tempfile.TemporaryDirectory(prefix="pytest-accel-count-") as scratch:
        folder = Path(scratch)
        child = replace(settings, cpu_threads=1)
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no", "--cache-sim=yes", *CACHE,
            f"--callgrind-out-file={folder}/callgrind.out.%p",
            sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
            "--benchmark-disable", "--accel-json", str(folder / "results.json"), *child.arguments(),
        ]  # fmt: skip
        env = {**os.environ, **ONE_THREAD, COUNT_INTO_ENV: scratch, FRESH_PROCESS_ENV: "1", "PYTHONHASHSEED": "0"}
        env.update(loader_variables(os.environ))
        log = folder / "output.log"
        try:
            with log.open("w", encoding="utf-8") as sink:
                ran = run_child(command, rootdir, env, sink, timeout=COUNT_TIMEOUT_SECONDS)
        except OSError as error:
            return CountRun(problem=f"the counting process did not start: {error}", valgrind=version)
        took = time.monotonic() - started
        if ran.timed_out:
            return CountRun(problem=f"the counting process did not finish in {COUNT_TIMEOUT_SECONDS} s", seconds=took)
        read = _read(folder)
        if not read.counts and not read.missing:
            tail = " | ".join(log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:])
            problem = f"the counting process counted nothing (exit {ran.returncode}): {tail}"
            return CountRun(problem=problem, valgrind=version, seconds=took)
        return replace(read, valgrind=version, seconds=took, environment=_environment(folder / "results.json"))


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
