"""Confirming a suspected regression in a fresh process: what the child is given and how its word is read
(``sittings/fresh.py`` starts it).

Re-measuring in the same process cannot clear a process-level bias: memory layout, thread
placement and allocator state shift a process's figures as a whole (the same kernel's
probe-normalised median differs between fresh processes, docs/studies/process-levels). So a regression
that survived the in-process confirmations is measured once more by a child ``pytest`` running only
that test (after the test the parent measured before it: a kernel measured first in its process
often sits at a slower level, docs/studies/first-in-process), with the same
device, profile, thresholds and baselines, and the parent's options that decide what code runs
(``-p`` plugins, config file, ini overrides); the test fails only if the child agrees
(``gate.with_fresh_confirmation`` weighs its word). The child takes one reading (no
re-measurement of its own: the parent re-measured in its process), waits for quiet within what is
left of the parent's budget, and spawns no children of its own (``FRESH_PROCESS_ENV``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import final

from pytest_accel.core.environment import ENVIRONMENT_PROVENANCE
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.judgement.results import ResultFile

__all__ = [
    "FRESH_PROCESS_ENV",
    "ChildSettings",
    "FreshVerdict",
    "fresh_verdict",
    "in_fresh_process",
    "inherited_options",
]

FRESH_PROCESS_ENV = "PYTEST_ACCEL_CONFIRMING"


@final
@dataclass(frozen=True)
class FreshVerdict:
    """What the child process concluded for one measurement, or why it could not tell."""

    outcome: Outcome | None  # the child's time verdict; None when it gave none
    detail: str  # the child's reason, or what went wrong
    verdict: Verdict | None = None  # the child's time verdict, with its figures
    waited: float = 0.0  # seconds the child waited for quiet before its verdict
    # the child ran in another environment than this run (a plugin object given to pytest.main...): so would
    # any child this run starts, a recorded-build sitting's included
    other_environment: bool = False


@final
@dataclass(frozen=True)
class ChildSettings:
    """What a child pytest (a confirmation, the calibration's standard load) needs to measure and judge
    exactly as this run does: the resolved device, and this run's value of every setting that
    decides a figure or a verdict, as ini overrides (``options.AccelOptions.child_settings`` lists them)."""

    device: str  # the resolved device kind, never "auto"
    profile: str
    baselines: Path
    ini: tuple[tuple[str, str], ...]  # (ini name, this run's value): accel_tolerance, accel_min_rounds, ...
    cpu_threads: int | None = None  # the CPU device's thread count; None on accelerators
    inherited: tuple[str, ...] = ()  # the parent's options that decide what code runs (inherited_options)

    def with_ini(self, name: str, value: str) -> ChildSettings:
        """These settings with the ini setting ``name`` set to ``value`` (added, or replacing this run's)."""
        return replace(self, ini=(*((n, v) for n, v in self.ini if n != name), (name, value)))

    def arguments(self, baselines: bool = True) -> list[str]:
        """The child's pytest options: the inherited ones first, so this run's resolved settings win;
        ``baselines=False``: without this run's baselines folder (an ``ab`` sitting sets its own)."""
        overrides = [option for name, value in self.ini for option in ("-o", f"{name}={value}")]
        folder = ["--accel-baselines", str(self.baselines)] if baselines else []
        options = [
            *self.inherited,
            "--accel-device", self.device, "--accel-profile", self.profile, *folder,
            *overrides,
            "--accel-structure=off",  # what ran is the parent's to judge: it took the record already
        ]  # fmt: skip
        return [*options, "--accel-cpu-threads", str(self.cpu_threads)] if self.cpu_threads else options


# Options that decide which code a test runs and how pytest is configured: a plugin loaded with
# ``-p`` (one that patches a kernel, say), the config file, ini overrides, the import mode, warning
# filters. A child without them would measure other code than the parent and "refute" its regression.
_WITH_VALUE = frozenset({"-p", "-c", "--config-file", "--rootdir", "--import-mode", "-o", "--override-ini",
                         "-W", "--pythonwarnings", "--confcutdir"})  # fmt: skip
_FLAGS = frozenset({"--noconftest"})
_PATHS = frozenset({"-c", "--config-file", "--rootdir", "--confcutdir"})  # relative to the parent's directory


def inherited_options(args: Sequence[str], invocation_dir: Path) -> tuple[str, ...]:
    """The options of a pytest command line (``args``) that a confirmation child must repeat.

    Accepts the spellings pytest does: ``-p name``, ``-pname``, ``--rootdir dir``, ``--rootdir=dir``.
    Paths are made absolute against ``invocation_dir``: the child runs from the root directory.
    """
    kept: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        name, equals, value = arg.partition("=")
        if arg in _FLAGS:
            kept.append(arg)
        elif name.startswith("--") and name in _WITH_VALUE and equals:
            kept.append(f"{name}={_absolute(name, value, invocation_dir)}")
        elif arg in _WITH_VALUE and index + 1 < len(args):
            kept += [arg, _absolute(arg, args[index + 1], invocation_dir)]
            index += 1
        elif not arg.startswith("--") and arg[:2] in _WITH_VALUE and len(arg) > 2:
            kept.append(arg[:2] + _absolute(arg[:2], arg[2:], invocation_dir))
        index += 1
    return tuple(kept)


# Options that select tests: the accept command names its one test instead.
_SELECTING = ("-k", "-m", "--deselect")
# Options that record: the accept command adds the one it needs.
_RECORDING = ("--accel-update", "--accel-reset-history")


def accept_command(
    nodeid: str, args: Sequence[str], paths: Collection[str], invocation_dir: Path, rootdir: Path, record: str
) -> str:
    """The command that accepts an intended change of one test, pasteable as printed: ``pytest``, the
    test's id (relative to where pytest was started), the user's own options, and ``record``.

    From the user's ``args`` it drops what selects tests (``paths``: the file, folder and node-id
    arguments pytest took as such; ``-k``, ``-m``, ``--deselect``) and what records already; every other
    argument is kept as typed, quoted for a shell.
    """
    file, sep, rest = nodeid.partition("::")
    test = os.path.relpath(rootdir / file, invocation_dir) + sep + rest
    dropped = [False] * len(args)
    unmatched = list(paths)  # each path once, from the end: an option's value may spell a path too
    for index in reversed(range(len(args))):
        if args[index] in unmatched:
            unmatched.remove(args[index])
            dropped[index] = True
    kept: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in _SELECTING:
            index += 2
            continue
        selecting = arg.startswith(_SELECTING) and not arg.startswith("--") and len(arg) > 2  # -kEXPR
        recording = arg.partition("=")[0] in _RECORDING or arg.startswith("--deselect=")
        if not (selecting or recording or dropped[index]):
            kept.append(arg)
        index += 1
    return shlex.join(["pytest", test, *kept, record])


def _absolute(option: str, value: str, invocation_dir: Path) -> str:
    return str(invocation_dir / value) if option in _PATHS and not Path(value).is_absolute() else value


def in_fresh_process() -> bool:
    """Whether this process is itself a confirmation child."""
    return os.environ.get(FRESH_PROCESS_ENV) == "1"


# A child that ran other code outside the repository than its parent: what a child cannot inherit.
_OTHER_ENVIRONMENT = (
    "the confirmation process ran in another environment (digest {theirs}, this run's {ours}: a plugin object "
    "given to pytest.main, or a plugin or variable this run set for itself), so its reading is no confirmation"
)


def fresh_verdict(results: ResultFile, nodeid: str, metric: str, environment: str | None = None) -> FreshVerdict:
    """The child's word on ``metric`` of ``nodeid`` from its result file; none where it ran in another
    environment than its parent (digest ``environment``): it measured other code."""
    theirs = results.provenance.get(ENVIRONMENT_PROVENANCE)
    if environment is not None and theirs != environment:
        return FreshVerdict(None, _OTHER_ENVIRONMENT.format(theirs=theirs, ours=environment), other_environment=True)
    verdict = results.verdicts.get((nodeid, metric))
    if verdict is None:
        return FreshVerdict(None, f"the confirmation process measured no {metric!r} for {nodeid}")
    return FreshVerdict(verdict.time.outcome, verdict.time.reason, verdict.time, results.waited)
