"""The one child-process runner: exit codes, output, and a group killed with everything it started."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from pytest_accel.engine.processes import run_child

# A child that starts a grandchild of its own (as DataLoader workers are), writes its pid, then waits.
_FAMILY = (
    "import subprocess, sys, time\n"
    "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "open(sys.argv[1], 'w').write(str(grandchild.pid))\n"
    "print('started', flush=True)\n"
    "time.sleep(60)\n"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed process that nobody reaped yet is a zombie: dead for our purpose.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def test_an_exit_code_and_the_output_come_back(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with log.open("w") as sink:
        ran = run_child([sys.executable, "-c", "print('hello'); raise SystemExit(3)"], tmp_path, os.environ, sink)
    assert ran.returncode == 3 and not ran.timed_out
    assert log.read_text() == "hello\n"


def test_a_child_started_from_an_xdist_worker_is_no_worker_and_keeps_its_card(tmp_path: Path) -> None:
    """pytest-benchmark turns its timing off where PYTEST_XDIST_WORKER is set: a worker's confirmation
    process must not inherit xdist's marks, only its card (or cores)."""
    env = {**os.environ, "PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2",
           "PYTEST_XDIST_TESTRUNUID": "abc", "PYTEST_ACCEL_WORKER_CARD": "3"}  # fmt: skip
    show = "import os; print(sorted(k for k in os.environ if k.startswith(('PYTEST_XDIST', 'PYTEST_ACCEL_WORKER'))))"
    log = tmp_path / "log"
    with log.open("w") as sink:
        assert run_child([sys.executable, "-c", show], tmp_path, env, sink).returncode == 0
    assert log.read_text() == "['PYTEST_ACCEL_WORKER_CARD']\n"


def test_a_child_that_overruns_is_killed_with_what_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    log = tmp_path / "log"
    with log.open("w") as sink:
        ran = run_child([sys.executable, "-c", _FAMILY, str(pid_file)], tmp_path, os.environ, sink, timeout=5)
    assert ran.timed_out and ran.returncode is None
    assert "started" in log.read_text()
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the grandchild outlived its group's kill"


def test_stdin_is_empty_unless_asked(tmp_path: Path) -> None:
    code = "import sys; print(repr(sys.stdin.read()))"
    with (tmp_path / "log").open("w") as sink:
        assert run_child([sys.executable, "-c", code], tmp_path, os.environ, sink).returncode == 0
    assert (tmp_path / "log").read_text() == "''\n"


# A parent that starts a tied child (which watches its lifeline and starts a grandchild), writes the
# child's pid, then waits to be killed.
_PARENT = (
    "import os, sys, time\n"
    "from pathlib import Path\n"
    "from pytest_accel.engine.processes import start_group\n"
    "child = start_group([sys.executable, '-c', sys.argv[2], sys.argv[1]], Path.cwd(), dict(os.environ))\n"
    "time.sleep(60)\n"
)
_TIED = (
    "import os, subprocess, sys, time\n"
    "from pytest_accel.engine.processes import LIFELINE_ENV, watch_lifeline\n"
    "assert watch_lifeline() and LIFELINE_ENV not in os.environ\n"
    "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "open(sys.argv[1], 'w').write(f'{os.getpid()} {grandchild.pid}')\n"
    "time.sleep(60)\n"
)


def test_a_child_and_what_it_started_die_with_a_parent_killed_by_sigkill(tmp_path: Path) -> None:
    import signal
    import subprocess

    pids = tmp_path / "pids"
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, str(pids), _TIED], cwd=tmp_path)
    deadline = time.monotonic() + 30
    while not (pids.exists() and pids.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child, grandchild = map(int, pids.read_text().split())
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 2
    while (_alive(child) or _alive(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child) and not _alive(grandchild)


def test_a_lifeline_is_watched_only_by_a_group_leader_with_a_pipe() -> None:
    """A variable inherited by a process this module did not start names nothing it can trust."""
    import pytest

    from pytest_accel.engine.processes import LIFELINE_ENV, watch_lifeline

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(LIFELINE_ENV, "0")  # stdin: not a pipe this module made
        assert not watch_lifeline() and LIFELINE_ENV not in os.environ
        patch.setenv(LIFELINE_ENV, "not a number")
        assert not watch_lifeline()
