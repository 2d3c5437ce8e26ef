"""One side's process for ``pytest-accel ab``: imports once, runs each pytest in a fresh fork of itself.

``ab`` starts it as ``python <this file's path>`` in the side's folder and environment, so that
nothing of the installed pytest-accel is imported before the side's own copy (a base revision of
pytest-accel itself measures its own plugin; ``-m`` would import the package, and a base revision
older than this file has no such module). Standard library and pytest only. As ``python -m pytest``
does, the worker puts its folder (the side's) first on ``sys.path``, not this file's folder.

Protocol, one JSON object per line: the parent writes ``{"args": [...], "log": PATH}`` on stdin;
the worker forks, the child runs ``pytest.main(args)`` with its output (file descriptors 1 and 2,
so its own children's too) going to the log and exits; the worker answers ``{"returncode": N}``
on its original stdout. End of stdin ends it.

Why a fork per run and not a second ``pytest.main`` in one process: pytest imports a conftest
afresh on every ``pytest.main`` call, so a conftest that patches a library at import (a planted slower
SDPA, say) patched the already patched function again, run after run, and the planted slowdown
grew with every run (docs/sensitivity.md, the ``ab`` sittings). Each run here starts from the
worker's own state, which has imported the libraries the runs use (``torch``, ``transformers``,
...: whatever an earlier run imported from site-packages) and run nothing of the project: the
fresh-process property, without paying process start and those imports every run. Where there is
no ``fork`` (Windows), each run is a fresh ``python -m pytest``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import traceback


def _run_child(request: dict[str, object], report: int) -> None:
    """In the forked child: run pytest into the log, report the libraries it imported, exit."""
    code = 3
    try:
        with open(str(request["log"]), "w", encoding="utf-8") as sink:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
        nothing = os.open(os.devnull, os.O_RDONLY)
        os.dup2(nothing, 0)  # the worker's stdin carries the requests: never the run's to read
        os.close(nothing)
        import pytest

        # The plugins' modules imported before the fork (``_preload``; or by a library: huggingface_hub
        # imports anyio): pytest then warns that it cannot rewrite their asserts, which a project
        # that makes warnings errors would fail on.
        args = ["-W", "ignore::pytest.PytestAssertRewriteWarning", *(str(arg) for arg in request["args"])]  # type: ignore[attr-defined]
        try:
            code = int(pytest.main(args))
        except SystemExit as stop:  # pytest.exit() from a plugin or a test
            code = stop.code if isinstance(stop.code, int) else 1
        sys.stdout.flush()
        sys.stderr.flush()
        libraries = sorted(
            name
            for name, module in list(sys.modules.items())
            if "." not in name and "-packages" in str(getattr(module, "__file__", "") or "")
        )
        os.write(report, json.dumps(libraries).encode())
    except BaseException:  # said in the run's log; the worker answers with the exit code
        traceback.print_exc()
        sys.stderr.flush()
    finally:
        os._exit(code)


# Never imported before a fork: a device runtime's state must be its run's own.
_NOT_PRELOADED = frozenset(("habana_frameworks",))


def _preload(libraries: list[str]) -> None:
    """Import what the runs import from site-packages, once, so that every later fork has it.

    Pytest plugins' distributions too (hypothesis, pytest-benchmark, an installed pytest-accel: never
    a side's own tree, which is not in site-packages): pytest would rewrite their asserts in every
    run, and where bytecode is not written (``PYTHONDONTWRITEBYTECODE``) that is compiling them
    again each time; hypothesis, which its plugin imports at the end of every run, alone cost 2.1 s
    of a 4.5 s run of one small test. Preloaded, their own asserts keep plain messages; a run's
    "cannot rewrite" warning is ignored (``_run_child``)."""
    for name in libraries:
        if name not in sys.modules and name not in _NOT_PRELOADED and name not in ("pytest", "_pytest"):
            # A library that does not import outside a run is simply imported by each run.
            with contextlib.suppress(Exception):
                importlib.import_module(name)


# The run in flight: stopping the worker (SIGTERM) ends it and reaps it first, so that no run is
# left behind as an orphan (or a zombie where nothing reaps orphans: a container without init).
_RUNNING: list[int] = []


def _stop(signum: int, frame: object) -> None:
    for pid in _RUNNING:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    os._exit(128 + signum)


def _fork_run(request: dict[str, object]) -> int:
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.close(read_end)
        _run_child(request, write_end)
    _RUNNING.append(pid)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    _RUNNING.remove(pid)
    # Read after the run has ended, not until end of file: a process the run left behind (a
    # DataLoader worker forked from it) holds the pipe open. The list is far below a pipe's buffer.
    os.set_blocking(read_end, False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
    os.close(read_end)
    with contextlib.suppress(ValueError):
        _preload(json.loads(b"".join(chunks) or b"[]"))
    return os.waitstatus_to_exitcode(status)


def _spawn_run(request: dict[str, object]) -> int:
    with open(str(request["log"]), "w", encoding="utf-8") as sink:
        args = [str(arg) for arg in request["args"]]  # type: ignore[attr-defined]
        return subprocess.call([sys.executable, "-m", "pytest", *args], stdout=sink, stderr=subprocess.STDOUT)


def _may_fork() -> bool:
    """Fork unless there is no fork, or CUDA was initialised here (a forked child could not use it)."""
    if not hasattr(os, "fork"):
        return False
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    return not (cuda is not None and cuda.is_initialized())


def _watch_lifeline() -> None:
    """End this worker's group (it and its runs) when ``ab`` ends, however (SIGKILL included): at the end of
    file of the lifeline ``ab`` passed (the protocol is engine/processes.py's ``watch_lifeline``, written
    again here because the worker imports nothing of the package)."""
    try:
        fd = int(os.environ.pop("PYTEST_ACCEL_LIFELINE_FD", ""))
        os.fstat(fd)
    except (ValueError, OSError):
        return

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(fd, 64):
                pass
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="accel-lifeline", daemon=True).start()


def main() -> int:
    """Serve requests from stdin; answers go to a duplicate of the original stdout."""
    sys.path[0] = os.getcwd()  # run by path, sys.path[0] is this file's folder: make it the run's, as -m does
    if os.getpgrp() == os.getpid():  # started by ab in a session of its own
        _watch_lifeline()
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # a stray print goes where the worker's own words go, never into the answers
    import pytest  # noqa: F401  # imported once, before any fork

    signal.signal(signal.SIGTERM, _stop)

    for line in sys.stdin:
        if not line.strip():
            continue
        code = (_fork_run if _may_fork() else _spawn_run)(json.loads(line))
        answers.write(json.dumps({"returncode": code}) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
