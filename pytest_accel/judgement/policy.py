"""The thresholds of a time and memory verdict, each with the measurement that set its default."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import final

__all__ = ["TOLERANCE", "VerdictPolicy"]

# Smallest slowdown that fails: clear of the run-to-run drift of normalised samples, below the planted
# slowdowns the suite must catch (docs/sensitivity.md). Every verdict and command that judges a change
# defaults to it. Measured: normalised SDPA drifted 2% (CV) between processes (docs/measurements.md).
TOLERANCE = 0.05


@final
@dataclass(frozen=True)
class VerdictPolicy:
    """The thresholds of a verdict; defaults measured on the suite's CI machine (docs/sensitivity.md)."""

    tolerance: float = TOLERANCE
    # Peak memory must grow by this fraction and by MEMORY_SLACK_BYTES to fail.
    memory_tolerance: float = 0.10
    memory_slack_bytes: int = 8 * 2**20  # allocator rounding and RSS page noise on the CPU
    # Energy per item must grow by this fraction, in every window read, to fail (judgement/energy.py): as peak
    # memory's; a device counter's resolution over a window was not measured yet (no device with one ran it).
    energy_tolerance: float = 0.10
    # Of the ratio's interval: the tolerance and the re-measurements guard against the spurious
    # "significant" results it lets through, and a 0.99 level would need 1.73x the rounds for the same
    # power ((2.58 / 1.96)²).
    confidence: float = 0.95
    # Noisy when the now-spread (IQR/median) of the compared samples exceeds both the floor and
    # factor x the baseline's spread: the floor lies between a quiet run's spread and a busy second job's.
    # Measured on the 2-core VM: quiet runs 4-12%, beside a busy second job 20-60% (docs/sensitivity.md).
    noisy_spread_floor: float = 0.25
    noisy_spread_factor: float = 3.0
    # Smallest run-to-run spread (SD of log medians) assumed between processes, whatever the
    # recorded runs show: a process's memory layout and thread placement shift its figure as a
    # whole, which no within-run statistic sees.
    # Measured: 2% CV of the normalised SDPA figure across fresh processes, quiet 2-core VM (docs/measurements.md).
    between_run_floor: float = 0.02
    # Noisy when the reference kernel runs this many times faster or slower than when the baseline
    # was recorded: quiet runs stayed within 0.76-1.5x, so 2x means a different machine state
    # (throttling, another job hogging the device, another build of torch's matmul).
    probe_drift_limit: float = 2.0
    # Above this state shift (log scale) a verdict is noisy rather than merely wider: the tolerance
    # itself (None) or a fixed figure. Below it, the shift widens the interval (rule 3).
    state_shift_limit: float | None = None
    # Run-to-run noise of a state probe's time relative to the reference kernel, ignored by the state
    # shift: the copy carries the host's memory bandwidth, which moves with its other tenants.
    # Measured, quiet 2-core VM: the copy -2%..+5% over 8 fresh processes, +10% in a later run (docs/measurements.md).
    state_noise_floor: float = 0.10
    # Noisy when a figure looks slower while other processes used this much more of the host's CPU
    # than in any recording: the default lies well between a quiet host and a second perf suite beside it.
    # Measured on the 2-core VM: 0-0.5% quiet, 43-55% beside a second suite (docs/sensitivity.md).
    foreign_cpu_margin: float = 0.15
    # The work counted under callgrind: instructions per call beyond this fail (or beyond three times the
    # recordings' own spread, where wider). Measured: unchanged SDPA moved 0.032% at most (docs/studies/counted-work).
    count_margin: float = 0.001
    # ... and never below this many instructions per call: the allocator's and the interpreter's paths move a
    # tiny call's count from one process to the next. Measured: up to 88 per call (docs/studies/counted-work).
    count_floor: float = 1000.0
    # Simulated last-level cache misses per call beyond this fail: the same work gone to memory.
    # Measured: unchanged SDPA's misses repeated within 0.004% (docs/studies/counted-work).
    count_miss_margin: float = 0.02

    def __post_init__(self) -> None:
        for name in ("tolerance", "memory_tolerance", "noisy_spread_floor", "state_noise_floor", "foreign_cpu_margin"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.state_shift_limit is not None and not (
            math.isfinite(self.state_shift_limit) and self.state_shift_limit > 0
        ):
            raise ValueError(f"state_shift_limit must be a positive number or None, got {self.state_shift_limit!r}")
        if self.noisy_spread_factor < 1 or self.probe_drift_limit <= 1:
            raise ValueError("noisy_spread_factor must be >= 1 and probe_drift_limit > 1")

    @property
    def state_limit(self) -> float:
        """The state shift (log) above which a slowdown the state could explain is not judged."""
        return self.state_shift_limit if self.state_shift_limit is not None else math.log1p(self.tolerance)
