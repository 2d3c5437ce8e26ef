"""The two sides of a ``pytest-accel ab`` sitting: their trees and their runs.

A side's tree is the working tree or a git revision checked out into a temporary worktree (its
submodules too). A side's runs are forks of a worker process of its own (abworker.py), a fresh
worker every few runs, or a fresh ``python -m pytest`` per run; each run leaves a ``ProcessRun``:
its exit code, the tests it failed, its result file. Process groups are killed on every way out.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import final

from pytest_accel.commands import abworker
from pytest_accel.engine.devices.hostalloc import ask_for_huge_pages
from pytest_accel.engine.environment import editable_sources
from pytest_accel.engine.machine import PEAK_FILE_ENV
from pytest_accel.engine.processes import GitError, kill_group, run_child, start_group
from pytest_accel.engine.processes import git as run_git
from pytest_accel.judgement.results import ResultFile, ResultsError, load_results

__all__ = [
    "EXIT_INCONCLUSIVE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_REGRESSED", "EXIT_USAGE", "LOG_TAIL_LINES",
    "ABError", "ProcessRun", "Side", "Worker", "commit_of", "forget_worktrees", "git", "log_tail", "run_process",
    "spread", "worktree",
]  # fmt: skip

EXIT_OK, EXIT_REGRESSED, EXIT_USAGE, EXIT_INCONCLUSIVE, EXIT_INTERRUPTED = 0, 1, 2, 125, 130
LOG_TAIL_LINES = 25
_SUMMARY_LINE = re.compile(r"^(FAILED|ERROR) (\S+)")


class ABError(Exception):
    """Bad input, or a side that cannot be measured; ``exit_code`` says which (2 or 125)."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@final
@dataclass(frozen=True)
class Side:
    name: str  # "base" or "head"
    label: str  # what the user asked for, for the table
    commit: str  # the commit checked out ("" outside git)
    root: Path  # the tree's top folder
    cwd: Path  # where pytest runs: the user's folder, inside this tree
    python: str
    peak_file: Path | None = None  # where its runs share the device's peaks (engine.machine.shared_peak)
    # The working tree this side's checkout stands in for: a PYTHONPATH entry inside it (a package in a
    # sub-folder, a src/ layout) is taken from this side's tree, not the working tree. None: this is it.
    checkout_of: Path | None = None
    variables: tuple[tuple[str, str], ...] = ()  # set for this side's runs alone (--base-env NAME=VALUE)

    def describe(self) -> dict[str, str]:
        described = {"label": self.label, "commit": self.commit, "root": str(self.root), "python": self.python}
        return {**described, **{f"env {name}": value for name, value in self.variables}}


def git(cwd: Path, *args: str) -> str:
    """``git ARGS`` in ``cwd``; an ``ABError`` with git's words when it fails."""
    try:
        return run_git(cwd, *args)
    except GitError as error:
        missing = str(error) == "git is not installed"
        raise ABError(f"{error} (ab checks revisions out with git worktree)" if missing else str(error)) from None


def commit_of(top: Path, rev: str, option: str = "--base/--head") -> str:
    """The commit ``rev`` names; an ``ABError`` naming ``option`` when it names none."""
    try:
        return git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except ABError:
        raise ABError(f"{option} {rev!r}: not a revision of the repository at {top}") from None


# The worktrees checked out now: removed by ``forget_worktrees`` too, when a parent's end ends this process.
_LIVE_WORKTREES: set[Path] = set()


def forget_worktrees() -> None:
    """Remove the folders of the worktrees checked out now (git prunes their records later)."""
    for folder in list(_LIVE_WORKTREES):
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def worktree(top: Path, commit: str, name: str) -> Iterator[Path]:
    """``commit`` checked out, with its submodules, into a temporary worktree, removed on the way out."""
    folder = Path(tempfile.mkdtemp(prefix=f"pytest-accel-ab-{name}-"))
    _LIVE_WORKTREES.add(folder)
    try:
        git(top, "worktree", "add", "--detach", "--quiet", str(folder), commit)
        if (folder / ".gitmodules").is_file():  # the revision's submodules, at the commits it pins
            git(folder, "submodule", "update", "--init", "--recursive", "--quiet")
        yield folder
    finally:
        with contextlib.suppress(ABError):
            git(top, "worktree", "remove", "--force", str(folder))
        shutil.rmtree(folder, ignore_errors=True)
        _LIVE_WORKTREES.discard(folder)
        with contextlib.suppress(ABError):
            git(top, "worktree", "prune")


@final
@dataclass(frozen=True)
class ProcessRun:
    """One fresh pytest process of one side."""

    returncode: int
    results: ResultFile | None
    failed: frozenset[str]  # node ids pytest reported FAILED or ERROR
    log: Path
    seconds: float


def _environment(side: Side) -> dict[str, str]:
    # The tree's own code first: an installed (editable) copy of the project would otherwise answer
    # for both sides. Compiled code must be built per tree: that is what --base-python is for.
    paths = [str(side.root)] + ([str(side.root / "src")] if (side.root / "src").is_dir() else [])
    # An editable install from a sub-folder of the working tree (a monorepo's packages/foo): its side's copy.
    for source in editable_sources() if side.checkout_of is not None else ():
        if (mapped := _in_side(str(source), side)) != str(source) and mapped not in paths:
            paths += [mapped, *([str(Path(mapped) / "src")] if (Path(mapped) / "src").is_dir() else [])]
    inherited = [_in_side(entry, side) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(paths + inherited),
        "PYTEST_ACCEL_AB_SIDE": side.name,
        **({PEAK_FILE_ENV: str(side.peak_file)} if side.peak_file is not None else {}),
        **dict(side.variables),
    }
    # The worker imports torch before its runs' plugin could ask for huge pages: ask here, for both
    # sides alike (under --accel-host-allocator system the runs then say glibc-huge).
    ask_for_huge_pages("steady", environment)
    return environment


def _in_side(entry: str, side: Side) -> str:
    """A PYTHONPATH entry as this side sees it: inside the working tree its checkout stands in for, the same
    folder of this side's tree (else both sides would import the working tree's code there); else as it is."""
    if side.checkout_of is None:
        return entry
    try:
        inside = Path(entry).resolve().relative_to(side.checkout_of.resolve())
    except (ValueError, OSError):
        return entry
    return str(side.root / inside)


def log_tail(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join("    " + line for line in lines[-LOG_TAIL_LINES:])


def spread(args: Sequence[str]) -> bool:
    """Whether pytest ``args`` spread the tests over xdist workers (``-n N``, ``-nN``, ``--numprocesses``; not 0)."""
    for index, arg in enumerate(args):
        if arg == "--":
            return False
        value = None
        if arg in ("-n", "--numprocesses"):
            value = args[index + 1] if index + 1 < len(args) else None
        elif arg.startswith("--numprocesses="):
            value = arg.partition("=")[2]
        elif arg.startswith("-n") and len(arg) > 2 and not arg.startswith("--"):
            value = arg[2:]
        if value is not None and value not in ("0", "no"):
            return True
    return False


def _arguments(args: Sequence[str], result: Path, empty_baselines: Path, budget: tuple[int, float | None]) -> list[str]:
    """A side's pytest arguments: the user's (after ab's rounds, so a user's ``-o`` wins), then where its
    results go and an empty baseline folder. Spread over xdist workers (``-n``), each test on the same card in
    both builds' runs (``--accel-fixed-cards``): a pair's two figures of a test come from one card."""
    # One argument each, "--option=path": pytest picks the rootdir before plugins declare their
    # options, so a path given as a separate argument counts as a test path and, lying in the
    # scratch folder, would move a config-less tree's rootdir (and its test ids) to a common parent.
    return [
        "-o", f"accel_min_rounds={budget[0]}", "-o", "accel_state_probes=false",
        "-o", "accel_energy_seconds=0",
        *(["-o", f"accel_measure_seconds={budget[1]}"] if budget[1] is not None else []), *args,
        f"--accel-json={result}", f"--accel-baselines={empty_baselines}", "--accel-structure=off",
        "-p", "no:cacheprovider", "-rfE", *(["--accel-fixed-cards"] if spread(args) else []),
    ]  # fmt: skip


def _finished(side: Side, returncode: int, result: Path, log: Path, started: float) -> ProcessRun:
    """What one run of a side left: its exit code, the tests it failed, its result file."""
    failed = frozenset(
        match.group(2)
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
        if (match := _SUMMARY_LINE.match(line))
    )
    results = None
    if result.exists():
        try:
            results = load_results(result)
        except ResultsError as error:
            raise ABError(f"{side.name}: {error}", EXIT_USAGE if side.name == "base" else EXIT_INCONCLUSIVE) from None
    return ProcessRun(returncode, results, failed, log, time.monotonic() - started)


def run_process(
    side: Side, args: Sequence[str], result: Path, log: Path, empty_baselines: Path, budget: tuple[int, float | None]
) -> ProcessRun:
    """One pytest process of one side; its process group is killed on any way out but its own end."""
    command = [side.python, "-m", "pytest", *_arguments(args, result, empty_baselines, budget)]
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as sink:
        returncode = run_child(command, side.cwd, _environment(side), sink, stdin=None).returncode
    assert returncode is not None  # no timeout: the sitting's budget is checked between runs
    return _finished(side, returncode, result, log, started)


# The worker runs as a script, by its path (see abworker.py for why not ``-m``): nothing of the
# package is imported before the side's own copy, and ``ps`` shows a short command line.
_WORKER_SCRIPT = str(Path(abworker.__file__).resolve())


@final
class Worker:
    """A side's worker process (abworker.py): each run a fresh fork of it; killed with its group on close."""

    def __init__(self, side: Side, log: Path) -> None:
        self.side, self.log, self.runs = side, log, 0
        self.busy = False  # a run was asked for and not answered (an interrupt came in between)
        with log.open("w", encoding="utf-8") as sink:  # what the worker says outside any run
            self.child = start_group(
                [side.python, _WORKER_SCRIPT], side.cwd, _environment(side),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink, text=True,
            )  # fmt: skip

    @property
    def alive(self) -> bool:
        return self.child.poll() is None

    def run(
        self, args: Sequence[str], result: Path, log: Path, empty_baselines: Path, budget: tuple[int, float | None]
    ) -> ProcessRun:
        """One run of the selection in a fork of the worker; a worker that died answers with its exit code."""
        started = time.monotonic()
        self.runs += 1
        assert self.child.stdin is not None and self.child.stdout is not None
        request = {"args": _arguments(args, result, empty_baselines, budget), "log": str(log)}
        self.busy = True
        try:
            self.child.stdin.write(json.dumps(request) + "\n")
            self.child.stdin.flush()
            answer = self.child.stdout.readline()
        except (BrokenPipeError, OSError):
            answer = ""
        self.busy = False
        try:
            returncode = int(json.loads(answer)["returncode"]) if answer else None
        except (ValueError, KeyError, TypeError):
            returncode = None
        if returncode is None:  # the process ended (or broke the protocol): its words go into this run's log
            if self.alive:
                kill_group(self.child)
            returncode = self.child.wait() or 3
            with log.open("a", encoding="utf-8") as sink:
                sink.write(self.log.read_text(encoding="utf-8", errors="replace"))
        return _finished(self.side, returncode, result, log, started)

    def close(self) -> None:
        """End of stdin ends an idle worker; a busy one, or one that does not end within 10 s, is
        stopped (SIGTERM: it ends and reaps its run), then its group is killed."""
        with contextlib.suppress(OSError):
            if self.child.stdin is not None:
                self.child.stdin.close()
        if not self.busy:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.child.wait(10.0)
        kill_group(self.child)  # also what the runs left behind in its group
        if self.child.stdout is not None:
            self.child.stdout.close()
