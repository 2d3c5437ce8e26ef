"""The neighbour this project's users have: a second perf suite beside the measured run.

Shared by the study harnesses (false-alarms, sensitivity, ab-pr, structure), which import it from this folder.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # docs/studies/<study>/ -> the repository root


class Neighbour:
    """A second perf suite, run over and over beside the measured one, with throw-away baselines."""

    def __init__(self, scratch: Path, paths: Sequence[str] = ("perf_tests",)) -> None:
        self._scratch = scratch
        self._paths = list(paths)  # what the neighbour runs: the suite, or (the standard neighbour) the run's own tests
        self._process: subprocess.Popen[bytes] | None = None

    def keep_running(self) -> None:
        """Start the second suite, again whenever it has finished."""
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "pytest", *self._paths, "--device", "cpu", "-q", "-p", "no:cacheprovider",
                 "--accel-baselines", str(self._scratch / "neighbour-baselines")],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip

    def stop(self) -> None:
        """End it (and wait, so no process is left behind)."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
