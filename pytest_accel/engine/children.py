"""Child pytest processes: each in a process group of its own, killed with its group on any way out.

A measuring child starts processes of its own (DataLoader workers, a torchrun rank, a neighbour):
killing only the child would leave them running, competing with whatever is measured next. So a
child is started in a new session, and when it overruns its time, or the parent is interrupted
while it runs, its whole group gets SIGTERM, then SIGKILL. The fresh-process confirmation and
``pytest-accel ab`` both run their children through ``run_child``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, final

__all__ = ["ChildRun", "kill_group", "run_child"]


@final
@dataclass(frozen=True)
class ChildRun:
    """How a child ended: its exit code, or None when it overran ``timeout`` and was killed."""

    returncode: int | None

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_child(
    command: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    output: IO[str] | int,
    timeout: float | None = None,
    stdin: int | None = subprocess.DEVNULL,
) -> ChildRun:
    """Run ``command`` in a new process group, stdout and stderr both into ``output`` (a file or
    ``subprocess.DEVNULL``); its group is killed when it overruns ``timeout`` or on any exception
    (KeyboardInterrupt included) while waiting."""
    child = subprocess.Popen(
        list(command), cwd=cwd, env=dict(env), stdin=stdin, stdout=output, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        return ChildRun(child.wait(timeout))
    except subprocess.TimeoutExpired:
        return ChildRun(None)
    finally:
        if child.poll() is None:
            kill_group(child)


def kill_group(child: subprocess.Popen[Any]) -> None:
    """SIGTERM the child's process group, then SIGKILL what is left of it (after 5 s each at most)."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, sig)
        try:
            child.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # processes the child left behind in its group
        os.killpg(child.pid, signal.SIGKILL)
