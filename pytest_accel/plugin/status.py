"""What a long measurement is doing, said while it runs: a full-profile test spends minutes in
warm-up (compilation, graph capture) and rounds with nothing else on screen.

One line per phase (warming up, timing rounds, re-measuring a suspect), and only once the test has
run past a threshold: on a terminal after ``TTY_SECONDS``, in a log (CI) after ``LOG_SECONDS``, so
a quick test says nothing and a CI log gets at most ``LINES_PER_TEST`` lines a test. The line goes
through pytest's terminal reporter with capture suspended, as pytest's live logging does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import final

__all__ = ["LINES_PER_TEST", "LOG_SECONDS", "TTY_SECONDS", "LiveStatus"]

# A test quicker than this says nothing. A person at a terminal wonders after a few seconds; a CI log
# is read afterwards, where a line per phase of a test that took half a minute or more is the story.
TTY_SECONDS = 5.0
LOG_SECONDS = 30.0
# The most lines one test may add: its phases are few (warm-up, rounds, then each re-measurement's).
LINES_PER_TEST = 8


@final
class LiveStatus:
    """Called by the measuring loop with (phase, detail); says a phase once the test is past ``after`` seconds."""

    def __init__(
        self, test: str, say: Callable[[str], None], after: float, clock: Callable[[], float] = time.monotonic
    ):
        self._test, self._say, self._after, self._clock = test, say, after, clock
        self._began = clock()
        self._said: str | None = None  # the phase last said
        self._lines = 0

    @classmethod
    def shown(cls, test: str, say: Callable[[str], None], tty: bool) -> LiveStatus:
        """The status of one test, for a terminal (``tty``) or a log."""
        return cls(test, say, TTY_SECONDS if tty else LOG_SECONDS)

    def __call__(self, phase: str, detail: str) -> None:
        """The loop's word, at each call or round: said once per phase, after the threshold, within the cap."""
        if phase == self._said or self._lines >= LINES_PER_TEST:
            return
        elapsed = self._clock() - self._began
        if elapsed < self._after:
            return
        self._said, self._lines = phase, self._lines + 1
        self._say(f"accel: {self._test}: {phase} ({detail}; {elapsed:.0f} s into the test)")
