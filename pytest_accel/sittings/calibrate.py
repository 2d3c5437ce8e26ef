"""The standard neighbour a calibration measures beside (``judgement/calibrate.py`` says why): this run's perf
tests, run again and again by another pytest, detached, watched by a thread that restarts it when it ends."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import final

from pytest_accel.engine.processes import LIFELINE_REMOVE_ENV, alive, launch_detached, stop_detached
from pytest_accel.judgement.confirm import FRESH_PROCESS_ENV, ChildSettings

__all__ = ["StandardLoad"]

# How often the watcher checks that the neighbour still runs (and restarts it when it has ended).
_POLL_SECONDS = 0.5
# A neighbour gets this long to end after SIGTERM before it is killed.
_STOP_GRACE_SECONDS = 10.0


@final
class StandardLoad:
    """This run's perf tests, run again and again by another pytest beside it, writing nothing of ours.

    Started before the first measurement and stopped at the end of the run. It is launched detached
    (not a child of this process, which would count its CPU time as this job's own) in a process
    group of its own, so stopping it ends its DataLoader workers too; it is a confirmation-like
    process (``FRESH_PROCESS_ENV``), so it never spawns confirmations of its own, and it records
    into a scratch baseline folder that is removed with it.
    """

    def __init__(self, tests: Sequence[str], rootdir: Path, settings: ChildSettings) -> None:
        self._tests = list(tests)
        self._rootdir = rootdir
        self._settings = settings
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._pid: int | None = None
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None
        self.failure = ""  # why the watcher gave up restarting it, if it did

    def command(self, scratch: Path) -> list[str]:
        """The neighbour's command line: the same tests, device and settings, scratch baselines."""
        settings = replace(self._settings, baselines=scratch)
        return [
            sys.executable, "-m", "pytest", *self._tests, "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
            *settings.arguments(),
        ]  # fmt: skip

    def description(self) -> str:
        """What runs beside this run, for its terminal."""
        return (
            f"calibrating beside the standard neighbour: a second copy of these {len(self._tests)} perf "
            "test(s) in another pytest process, restarted whenever it ends"
        )

    def start(self) -> None:
        """Start the neighbour and the watcher that restarts it whenever it ends."""
        self._scratch = tempfile.TemporaryDirectory(prefix="pytest-accel-neighbour-")
        self._spawn()
        self._watcher = threading.Thread(target=self._watch, name="accel-neighbour", daemon=True)
        self._watcher.start()

    def _spawn(self) -> None:
        assert self._scratch is not None
        # Detached, not this process's child: the host-share meter counts this process's children
        # (its DataLoader workers) as its own.
        command = self.command(Path(self._scratch.name))
        # If this process dies (SIGKILL too), the neighbour ends itself and removes this folder (the lifeline).
        env = {**os.environ, FRESH_PROCESS_ENV: "1", LIFELINE_REMOVE_ENV: self._scratch.name}
        self._pid = launch_detached(command, self._rootdir, env)

    def _watch(self) -> None:
        while not self._stopping.wait(_POLL_SECONDS):
            if self._pid is not None and not alive(self._pid):
                try:
                    self._spawn()
                except OSError as error:  # said at the end, not raised
                    self.failure = f"the standard neighbour could not be started again: {error}"
                    return

    def stop(self) -> None:
        """End the neighbour (its whole process group) and wait for it; remove its scratch folder."""
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join()
        if self._pid is not None:
            stop_detached(self._pid, _STOP_GRACE_SECONDS)
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
