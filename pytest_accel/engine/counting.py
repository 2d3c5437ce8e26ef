"""Counting a workload's calls inside the counting process, under callgrind (``sittings/counting.py`` starts it).

The process runs under ``valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no``: torch and
pytest run uninstrumented (several times faster), and each count switches instrumentation on around its
calls only (``callgrind_control -i on|off``), collects between ``torch._C._valgrind_toggle`` and
``_valgrind_toggle_and_dump_stats``: one numbered callgrind file per count, named in ``counted.jsonl``
in the folder ``COUNT_INTO_ENV`` names.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytest_accel.engine.processes import run_child

__all__ = [
    "COUNTED", "COUNT_CALLS", "COUNT_INTO_ENV", "LOADER_ENV", "WARMUP_CALLS", "as_started", "count_calls",
    "counting_into", "loader_variables",
]  # fmt: skip

# The folder a counting process writes its counts' index into; set only in that process.
COUNT_INTO_ENV = "PYTEST_ACCEL_COUNT_INTO"
# The loader's variables as the parent started the counting process: valgrind sets its own in the process
# it runs (LD_PRELOAD, LD_LIBRARY_PATH), which are not the user's environment.
LOADER_ENV = "PYTEST_ACCEL_COUNT_LOADER"
_LOADER = ("LD_PRELOAD", "LD_LIBRARY_PATH")
COUNTED = "counted.jsonl"  # one line per count: test, metric, calls, pid, dump number, context
WARMUP_CALLS = 2
# Calls counted per measurement: a count repeats to a few instructions in a million (docs/studies/counted-work),
# so more calls buy nothing but time (an SDPA call of the smoke profile costs seconds to a minute under callgrind).
COUNT_CALLS = 1

_dumps = 0  # the callgrind files this process dumped, numbered from 1 as callgrind numbers them


def counting_into() -> Path | None:
    """The folder this process counts into, when it is the counting process."""
    folder = os.environ.get(COUNT_INTO_ENV)
    return Path(folder) if folder else None


def loader_variables(variables: Mapping[str, str]) -> dict[str, str]:
    """What the counting process is told of the loader's variables as its parent had them."""
    return {LOADER_ENV: json.dumps({name: variables[name] for name in _LOADER if name in variables})}


def as_started(variables: Mapping[str, str]) -> dict[str, str]:
    """``variables`` with the loader's as the parent started this process (in the counting process: valgrind
    set its own); unchanged elsewhere."""
    given = variables.get(LOADER_ENV, os.environ.get(LOADER_ENV))
    if given is None:
        return dict(variables)
    kept = {name: value for name, value in variables.items() if name not in _LOADER}
    return {**kept, **json.loads(given)}


def _instrument(on: bool) -> str | None:
    """Switch callgrind's instrumentation of this process on or off; why it could not be, else None."""
    control = shutil.which("callgrind_control")
    if control is None:
        return "callgrind_control is not on PATH (it comes with valgrind)"
    with open(os.devnull, "w", encoding="utf-8") as sink:
        command = [control, "-i", "on" if on else "off", str(os.getpid())]
        ran = run_child(command, Path.cwd(), dict(os.environ), sink, timeout=120)
    if ran.timed_out or ran.returncode != 0:
        return f"callgrind_control -i {'on' if on else 'off'} failed (exit {ran.returncode})"
    return None


def count_calls(fn: Callable[[], Any], synchronize: Callable[[], None], folder: Path, test: str, metric: str) -> None:
    """Count ``COUNT_CALLS`` calls of ``fn`` and name the dump in ``folder``'s index; a count that cannot be
    taken is named there with its problem instead.

    ``WARMUP_CALLS`` uninstrumented first: the workload's lazy setup is not its work, and runs at a fraction of
    the instrumented cost. Switching instrumentation on clears callgrind's simulated caches (valgrind's
    callgrind/main.c, ``set_instrument_state``), so every count starts from the same cold caches, whatever
    ran before it: a count does not depend on the tests selected with it. Instrumentation is off again after
    the count: pytest's own work between tests runs uninstrumented.
    """
    import torch

    global _dumps
    line: dict[str, Any] = {"test": test, "metric": metric, "pid": os.getpid()}
    problem = None if torch._C._valgrind_supported_platform() else f"torch has no valgrind support on {sys.platform}"
    if problem is None:
        for _ in range(WARMUP_CALLS):
            fn()
            synchronize()
        problem = _instrument(on=True)
    if problem is None:
        torch._C._valgrind_toggle()
        for _ in range(COUNT_CALLS):
            fn()
            synchronize()
        torch._C._valgrind_toggle_and_dump_stats()
        _dumps += 1
        line.update(calls=COUNT_CALLS, dump=_dumps, context=_context(torch))
        problem = _instrument(on=False)
    if problem is not None:
        line["problem"] = problem
    with (folder / COUNTED).open("a", encoding="utf-8") as index:
        index.write(json.dumps(line) + "\n")


def _context(torch: Any) -> dict[str, str]:
    """What a count ran with besides the code: the ISA torch dispatches to under valgrind (valgrind shows the
    CPU as it can emulate it), torch's and Python's versions."""
    return {
        "isa": str(torch.backends.cpu.get_cpu_capability()).lower(),
        "torch": str(torch.__version__),
        "python": platform.python_version(),
    }
