"""Every child process pytest-accel starts, and how each ends: the one home of process groups.

A measuring child starts processes of its own (DataLoader workers, a torchrun rank, the calibration's load):
killing only the child would leave them running, competing with whatever is measured next. So a
child is started in a new session, and when it overruns its time, or the parent is interrupted
while it runs, its whole group gets SIGTERM, then SIGKILL. Who starts what:

- ``run_child``: a pytest that runs to its end (the fresh-process confirmation, ``ab``'s fresh
  runs, ``pytest-accel baselines --prune``);
- ``start_group``: a long-lived child spoken to over pipes (``ab``'s side workers), ended with
  ``kill_group``;
- ``launch_detached`` / ``stop_detached``: a process that must not be this one's child (the
  calibration's standard load: the host-share meter counts children as this job's own);
- ``git``: a git command, its output or a ``GitError`` with git's own words.

Every child dies with this process however it ends, SIGKILL included, through its **lifeline**: a
pipe whose write end only this process holds (forks of it close their copy). Each child started
here inherits the read end, named by ``LIFELINE_ENV``; a pytest child with this plugin watches it
(``watch_lifeline``), and at its end of file (every write end closed: this process exited, was
killed, or crashed) kills its own process group, after removing the folder ``LIFELINE_REMOVE_ENV``
names. Not a parent-death signal: the calibration's load is deliberately not this process's child (its
parent is a launcher that exits at once, and ``PR_SET_PDEATHSIG`` fires when the parent *thread*
ends), and it would reach only the child, not its DataLoader workers. Not a process group shared
with this one: a signal to this group would reach them, but nobody sends one to a SIGKILLed
process's group, and the host-share meter must not count that load as this process.

The one process that cannot come through here is ``ab``'s worker itself (commands/abworker.py):
it runs before a side's own copy of the package is imported, so it imports nothing of it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, final

__all__ = [
    "LIFELINE_ENV",
    "LIFELINE_REMOVE_ENV",
    "ChildRun",
    "GitError",
    "alive",
    "git",
    "kill_group",
    "launch_detached",
    "run_child",
    "start_group",
    "stop_detached",
    "watch_lifeline",
]

# A group gets this long to end after each signal (SIGTERM, then SIGKILL) before the next.
_GROUP_GRACE_SECONDS = 5.0
# The lifeline's read end in a child (see the module docstring), and a folder it removes when its parent ends.
LIFELINE_ENV = "PYTEST_ACCEL_LIFELINE_FD"
LIFELINE_REMOVE_ENV = "PYTEST_ACCEL_LIFELINE_REMOVE"
_lifeline: tuple[int, int] | None = None  # (read end, write end) of this process's lifeline, made at its first child
# xdist's marks of a worker: a child started from one (a fresh-process confirmation) is one pytest of its own,
# not a worker (pytest-benchmark turns its timing off where it finds PYTEST_XDIST_WORKER). Its card or cores,
# pytest-accel's own variables, it keeps.
_XDIST_WORKER_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def _lifeline_read_end() -> int:
    """This process's lifeline's read end, for a child to inherit (the pipe is made once)."""
    global _lifeline
    if _lifeline is None:
        _lifeline = os.pipe()  # both ends non-inheritable (PEP 446): a child gets the read end by pass_fds only
    return _lifeline[0]


def _forget_lifeline() -> None:
    """In a fork (a DataLoader worker): close the copy of the write end, so the pipe ends with this process."""
    global _lifeline
    if _lifeline is not None:
        for fd in _lifeline:
            with contextlib.suppress(OSError):
                os.close(fd)
        _lifeline = None


os.register_at_fork(after_in_child=_forget_lifeline)


def _tied(env: Mapping[str, str]) -> tuple[dict[str, str], tuple[int]]:
    """A child's environment and the descriptors it inherits: the lifeline's read end, named; no xdist
    worker's marks (``_XDIST_WORKER_VARIABLES``)."""
    fd = _lifeline_read_end()
    own = {name: value for name, value in env.items() if name not in _XDIST_WORKER_VARIABLES}
    return {**own, LIFELINE_ENV: str(fd)}, (fd,)


def watch_lifeline(on_end: Callable[[], None] | None = None) -> bool:
    """In a child started here: end this process's group when its parent ends (see the module docstring),
    after ``on_end`` (what must not outlive it: ``ab``'s worktrees).

    Only a process group's leader with a pipe at the named descriptor watches (every child started
    here is one); the variable is removed at once, so the child's own children never read it: a
    descriptor number means nothing in another process. Returns whether a watch started.
    """
    value = os.environ.pop(LIFELINE_ENV, None)
    remove = os.environ.pop(LIFELINE_REMOVE_ENV, None)
    try:
        fd = int(value or "")
        if os.getpgrp() != os.getpid() or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
    except (ValueError, OSError):
        return False

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(fd, 64):  # nothing is ever written: it returns b"" when the parent has ended
                pass
        if remove:
            shutil.rmtree(remove, ignore_errors=True)
        if on_end is not None:
            with contextlib.suppress(Exception):  # the kill below must come whatever the clean-up met
                on_end()
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="accel-lifeline", daemon=True).start()
    return True


@final
@dataclass(frozen=True)
class ChildRun:
    """How a child ended: its exit code, or None when it overran ``timeout`` and was killed."""

    returncode: int | None

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def start_group(
    command: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    *,
    stdin: IO[Any] | int | None = subprocess.DEVNULL,
    stdout: IO[Any] | int | None = None,
    stderr: IO[Any] | int | None = subprocess.STDOUT,
    text: bool = False,
) -> subprocess.Popen[Any]:
    """Start ``command`` in a new session (its own process group), which ``kill_group`` ends whole; it is
    tied to this process by the lifeline."""
    tied, fds = _tied(env)
    return subprocess.Popen(
        list(command), cwd=cwd, env=tied, stdin=stdin, stdout=stdout, stderr=stderr, text=text,
        start_new_session=True, pass_fds=fds,
    )  # fmt: skip


def run_child(
    command: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    output: IO[str] | int | None,
    timeout: float | None = None,
    stdin: int | None = subprocess.DEVNULL,
) -> ChildRun:
    """Run ``command`` in a new process group, stdout and stderr both into ``output`` (a file,
    ``subprocess.DEVNULL``, or None: this process's stdout); its group is killed when it overruns
    ``timeout`` or on any exception (KeyboardInterrupt included) while waiting."""
    child = start_group(command, cwd, env, stdin=stdin, stdout=output)
    try:
        return ChildRun(child.wait(timeout))
    except subprocess.TimeoutExpired:
        return ChildRun(None)
    finally:
        if child.poll() is None:
            kill_group(child)


def kill_group(child: subprocess.Popen[Any]) -> None:
    """SIGTERM the child's process group, then SIGKILL what is left of it (after 5 s each at most)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, sig)
        try:
            child.wait(_GROUP_GRACE_SECONDS)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # processes the child left behind in its group
        os.killpg(child.pid, signal.SIGKILL)


# Starts the command and exits at once, so the command is not a child of the process that asked; the
# lifeline's read end passes through it.
_LAUNCHER = (
    "import os, subprocess, sys\n"
    f"child = subprocess.Popen(sys.argv[1:], start_new_session=True, pass_fds=(int(os.environ['{LIFELINE_ENV}']),),"
    " stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "print(child.pid)"
)


def launch_detached(command: Sequence[str], cwd: Path, env: Mapping[str, str]) -> int:
    """Start ``command`` in a process group of its own, not as this process's child; returns its pid.

    Raises ``OSError`` naming why when it cannot be started.
    """
    tied, fds = _tied(env)
    try:
        launched = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, *command],
            cwd=cwd, env=tied, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True, pass_fds=fds,
        )  # fmt: skip
        return int(launched.stdout)
    except subprocess.CalledProcessError as error:
        raise OSError(f"the launcher exited {error.returncode}: {error.stderr.strip()[-300:]}") from None
    except (subprocess.SubprocessError, ValueError) as error:
        raise OSError(f"the launcher failed: {error}") from None


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie does not: an init that is slow to reap it must not hide its end)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def stop_detached(pid: int, grace: float) -> None:
    """End a detached process's whole group (SIGTERM, ``grace`` seconds, then SIGKILL) and wait for it."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sent)
        deadline = time.monotonic() + grace
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not alive(pid):
            return


class GitError(Exception):
    """A git command that failed, or no git; the message is git's own words."""


def git(cwd: Path, *args: str, timeout: float | None = None) -> str:
    """``git ARGS`` in ``cwd``: its stripped stdout; ``GitError`` when git is missing, fails or overruns."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except (OSError, subprocess.SubprocessError) as error:
        raise GitError(f"git {' '.join(args)}: {error}") from None
    if done.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()
