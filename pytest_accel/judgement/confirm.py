"""Confirming a suspected regression in a fresh process.

Re-measuring in the same process cannot clear a process-level bias: memory layout, thread
placement and allocator state shift a process's figures as a whole (seen here: the same kernel's
probe-normalised median differed by up to 10% between fresh processes). So a regression that
survived the in-process confirmations is measured once more by a child ``pytest`` running only
that test, with the same device, profile, thresholds and baselines; the test fails only if the
child agrees. The child does not spawn children of its own (``FRESH_PROCESS_ENV``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from pytest_accel.judgement.verdict import VerdictRecord

__all__ = ["FRESH_PROCESS_ENV", "ChildSettings", "FreshVerdict", "confirm_in_fresh_process", "in_fresh_process"]

FRESH_PROCESS_ENV = "PYTEST_ACCEL_CONFIRMING"
# A child that has not answered in this long is abandoned; the in-process verdict then stands.
CHILD_TIMEOUT_SECONDS = 900


@final
@dataclass(frozen=True)
class FreshVerdict:
    """What the child process concluded for one measurement, or why it could not tell."""

    outcome: str | None  # "regressed", "unchanged", ... ; None when the child gave no verdict
    detail: str  # the child's reason, or what went wrong


@final
@dataclass(frozen=True)
class ChildSettings:
    """What a confirmation child needs to measure and judge exactly as this run does."""

    device: str  # the resolved device kind, never "auto"
    profile: str
    baselines: Path
    measure_seconds: float
    warmup_max_seconds: float
    tolerance: float
    memory_tolerance: float
    state_noise_floor: float
    foreign_cpu_margin: float
    confirmations: int
    cpu_threads: int | None  # the CPU device's thread count; None on accelerators

    def arguments(self) -> list[str]:
        """The child's pytest options."""
        options = [
            "--accel-device", self.device, "--accel-profile", self.profile,
            "--accel-baselines", str(self.baselines), "--accel-measure-seconds", str(self.measure_seconds),
            "-o", f"accel_tolerance={self.tolerance}",
            "-o", f"accel_memory_tolerance={self.memory_tolerance}",
            "-o", f"accel_state_noise_floor={self.state_noise_floor}",
            "-o", f"accel_foreign_cpu_margin={self.foreign_cpu_margin}",
            "-o", f"accel_confirmations={self.confirmations}",
            "-o", f"accel_warmup_max_seconds={self.warmup_max_seconds}",
        ]  # fmt: skip
        return [*options, "--accel-cpu-threads", str(self.cpu_threads)] if self.cpu_threads else options


def in_fresh_process() -> bool:
    """Whether this process is itself a confirmation child."""
    return os.environ.get(FRESH_PROCESS_ENV) == "1"


def confirm_in_fresh_process(
    nodeid: str, metric: str, rootdir: Path, settings: ChildSettings, env: Mapping[str, str] | None = None
) -> FreshVerdict:
    """Run ``pytest <nodeid>`` with ``settings`` in a child and return its verdict for ``metric``."""
    with tempfile.TemporaryDirectory(prefix="pytest-accel-confirm-") as scratch:
        results = Path(scratch) / "results.json"
        command = [
            sys.executable, "-m", "pytest", nodeid, "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
            "--accel-json", str(results), *settings.arguments(),
        ]  # fmt: skip
        child_env = {**(env if env is not None else os.environ), FRESH_PROCESS_ENV: "1"}
        try:
            ran = subprocess.run(
                command, cwd=rootdir, env=child_env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_SECONDS
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return FreshVerdict(None, f"the confirmation process did not finish: {error}")
        if not results.exists():
            tail = (ran.stdout + ran.stderr).strip().splitlines()[-3:]
            return FreshVerdict(None, f"the confirmation process wrote no results (exit {ran.returncode}): {tail}")
        try:
            return _verdict_for(json.loads(results.read_text()), nodeid, metric)
        except (ValueError, TypeError, AttributeError) as error:
            return FreshVerdict(None, f"the confirmation process wrote an unreadable result: {error}")


def _verdict_for(document: Mapping[str, Any], nodeid: str, metric: str) -> FreshVerdict:
    for entry in document.get("results", []):
        if entry.get("test") == nodeid and entry.get("name") == metric and entry.get("verdict"):
            time = VerdictRecord.from_dict(entry["verdict"]).time
            return FreshVerdict(time.outcome.value, time.reason)
    return FreshVerdict(None, f"the confirmation process measured no {metric!r} for {nodeid}")
