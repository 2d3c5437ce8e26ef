"""A long test's live status (plugin/status.py): a line per phase past a threshold, bounded."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import sys

import pytest
from support import FAST_OPTIONS

from pytest_accel.plugin import status
from pytest_accel.plugin.status import LINES_PER_TEST, LiveStatus


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_quick_test_says_nothing_and_a_long_one_says_each_phase_once() -> None:
    said: list[str] = []
    clock = Clock()
    live = LiveStatus("t.py::test_k", said.append, after=30.0, clock=clock)
    for call in range(1, 4):
        clock.now += 5.0
        live("warming up", f"{call} call(s), the last 5.00 s")
    assert said == []  # 15 s in
    clock.now += 20.0
    live("warming up", "4 call(s), the last 20.0 s")
    live("warming up", "5 call(s), the last 1.00 ms")
    live("timing rounds", "round 1 of 20, 1 call(s) each")
    live("timing rounds", "round 2 of 20, 1 call(s) each")
    assert said == [
        "accel: t.py::test_k: warming up (4 call(s), the last 20.0 s; 35 s into the test)",
        "accel: t.py::test_k: timing rounds (round 1 of 20, 1 call(s) each; 35 s into the test)",
    ]


def test_a_log_gets_a_bounded_number_of_lines() -> None:
    said: list[str] = []
    live = LiveStatus("t.py::test_k", said.append, after=0.0)
    for index in range(100):
        live(f"re-measuring a suspect ({index}): warming up", "1 call(s)")
    assert len(said) == LINES_PER_TEST


SLOW_WARMUP = """
import time


def test_long(throughput):
    throughput(lambda: time.sleep(0.002), items=1, unit="naps")
"""


def test_the_phases_reach_the_output_while_capture_is_on(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a log (not a terminal) past the threshold (here 0 s): one line per phase, outside the captured output."""
    monkeypatch.setattr(status, "LOG_SECONDS", 0.0)
    perf_pytester.makepyfile(test_long=SLOW_WARMUP)
    result = perf_pytester.runpytest("--device", "cpu", *FAST_OPTIONS)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "accel: test_long.py::test_long: warming up (1 call(s), the last *; * s into the test)",
            "accel: test_long.py::test_long: timing rounds (round 1 of *, * call(s) each; * s into the test)",
        ]
    )


ONE_SECOND_CALLS = """
import time


def test_long(throughput):
    throughput(lambda: time.sleep(1.0), items=1, unit="naps")
"""


@pytest.mark.slow
def test_a_terminal_sees_the_phase_of_a_test_past_five_seconds(pytester: pytest.Pytester) -> None:
    """pytest on a pseudo-terminal: a workload of 1 s calls is past TTY_SECONDS during its warm-up or its
    rounds, and the terminal shows that phase while the test runs (not only in a failure's capture)."""
    pytester.makepyfile(test_long=ONE_SECOND_CALLS)
    leader, follower = pty.openpty()
    command = [
        sys.executable, "-m", "pytest", "--device", "cpu", "-p", "no:cacheprovider", "-o", "accel_min_rounds=3",
        "--accel-measure-seconds", "0.05", "--accel-structure=off", "--accel-operators=off",
    ]  # fmt: skip
    child = subprocess.Popen(command, cwd=pytester.path, stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    with contextlib.suppress(OSError):  # EIO once the child has closed the terminal
        while chunk := os.read(leader, 4096):
            chunks.append(chunk)
    os.close(leader)
    assert child.wait(120) == 0
    output = b"".join(chunks).decode(errors="replace")
    assert "accel: test_long.py::test_long: " in output and " s into the test)" in output, output
