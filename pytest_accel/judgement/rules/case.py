"""What the time rules read: the two observations compared (``Case``) and what the rules folded so far
found (``Reading``): the shifts that widen the interval, the part another process explains, and the clauses a
verdict carries. Each rule takes a case and the reading so far, and returns a new reading or its verdict."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import final

from pytest_accel.core.measurement import compared_samples, probe_normalized
from pytest_accel.core.outcomes import Verdict
from pytest_accel.core.stats import median, ratio_confidence_interval
from pytest_accel.judgement.drift import NightDrift
from pytest_accel.judgement.policy import VerdictPolicy
from pytest_accel.judgement.sight import Width, between_run

__all__ = ["Case", "Observation", "Reading", "StateShift", "pooled_run_spread"]


@final
@dataclass(frozen=True)
class Observation:
    """What is compared of one measurement, now or in the baseline."""

    samples: Sequence[float]  # seconds per call, one per round
    probe_samples: Sequence[float] = ()  # seconds per reference-kernel call, one per round (see Measurement)
    peak_memory_bytes: int | None = None
    run_medians: Sequence[float] = ()  # baseline only: the compared figure of each recorded run
    state: Mapping[str, float] = field(default_factory=dict)  # now only: probe name -> median s/call
    run_states: Sequence[Mapping[str, float]] = ()  # baseline only: the state of each recorded run
    # Baseline only: the compared figure (as in run_medians) and the share of the host's CPU other
    # processes used, of each calibration run (--accel-calibrate).
    calibration: Sequence[Mapping[str, float]] = ()
    # Baseline only: the typical between-run SD of log run medians over the baseline file's entries,
    # and how many entries it comes from (pooled_run_spread); None when unknown.
    pooled_spread: tuple[float, float] | None = None
    # Baseline only: how far the figure moved from night to night in the nightly history (judgement/drift).
    night_drift: NightDrift | None = None

    @property
    def compared(self) -> tuple[float, ...]:
        """What a verdict compares: normalised samples when there is a probe, else seconds."""
        return compared_samples(self.samples, self.probe_samples)

    @property
    def normalized(self) -> tuple[float, ...]:
        """Round time over its probe figure (see Measurement); empty when there is no probe."""
        return probe_normalized(self.samples, self.probe_samples)


def pooled_run_spread(entries: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """The typical between-run SD of a baseline file: the median over its entries (those with two or more
    recordings) of each one's SD of log run medians, and how many entries it comes from.

    None when no entry has two recordings. The median, not a pooled variance: a few tests that move far
    more than the rest between processes would otherwise set every other test's width (docs/measurements.md).
    """
    spreads = [statistics.stdev(math.log(r) for r in runs) for runs in entries if len(runs) >= 2]
    return (median(spreads), float(len(spreads))) if spreads else None


@final
@dataclass(frozen=True)
class Case:
    """One time comparison: the observations, the policy, and what every rule derives from them alike."""

    current: Observation
    baseline: Observation
    policy: VerdictPolicy

    @functools.cached_property
    def normalized(self) -> bool:
        """Both sides have probe-normalised samples: the comparison is relative to the reference kernel."""
        return bool(self.current.normalized and self.baseline.normalized)

    @functools.cached_property
    def now(self) -> tuple[float, ...]:
        return self.current.normalized if self.normalized else tuple(self.current.samples)

    @functools.cached_property
    def then(self) -> tuple[float, ...]:
        return self.baseline.normalized if self.normalized else tuple(self.baseline.samples)

    @functools.cached_property
    def runs(self) -> Sequence[float]:
        """The recorded runs' figures, when they are of the compared kind (normalised exactly when the
        baseline has probe samples); else none."""
        return self.baseline.run_medians if self.normalized == bool(self.baseline.probe_samples) else ()

    @functools.cached_property
    def pooled(self) -> tuple[float, float] | None:
        return self.baseline.pooled_spread if self.runs else None

    @functools.cached_property
    def estimate(self) -> tuple[float, Width]:
        """The ratio of this run's median to the baseline runs' median, and its interval's half-width by parts.

        Two independent errors add on the log scale: the within-run one (the distribution-free interval
        of this run's samples against the latest baseline samples) and the between-run one
        (``sight.between_run``): two recordings that disagree count too.
        """
        drift = self.baseline.night_drift
        nights = drift if self.runs and drift is not None and drift.normalized == self.normalized else None
        runs = tuple(self.runs) or (median(self.then),)
        ratio = median(self.now) / median(runs)
        _, within_low, within_high = ratio_confidence_interval(self.now, self.then, self.policy.confidence)
        within = (math.log(within_high) - math.log(within_low)) / 2
        policy = self.policy
        between, source, spread = between_run(runs, self.pooled, policy.between_run_floor, policy.confidence, nights)
        return ratio, Width(within, between, source, spread, len(runs), nights.nights if nights is not None else 0)

    @property
    def ratio(self) -> float:
        return self.estimate[0]

    @property
    def half_width(self) -> float:
        return self.estimate[1].half_width


@final
@dataclass(frozen=True)
class StateShift:
    """How far the machine's state lies outside what a baseline's recordings saw, in each direction.

    ``slower``: the largest excess (log ratio) of a probe that now takes relatively longer, so a
    workload bound by what it measures could look slower without any change of code; ``faster``:
    the same the other way. Zero when nothing moved beyond the recorded range and the noise floor.
    """

    slower: float = 0.0
    faster: float = 0.0
    why_slower: str = ""
    why_faster: str = ""
    short_slower: str = ""  # ``why_slower`` in a few words: "page faults 1.44x"


@final
@dataclass(frozen=True)
class Reading:
    """What the rules folded so far found: the shift that widens the interval (the state's, or a
    calibrated bound of another process when larger), the part of the reading explained (log: taken off before the
    tolerance), what a slowdown could hide (log), and the clauses and short forms a verdict carries."""

    shift: StateShift = StateShift()
    explained: float = 0.0
    masked: float = 0.0
    unsteady: Verdict | None = None  # an unsteady run, let through only for a slowdown that clears it
    clauses: tuple[str, ...] = ()  # what a regression says it cleared
    ruled_out: tuple[str, ...] = ()  # the same, in a few words
    shared: str = ""  # the host was shared beyond the recordings: how
    hidden: str = ""  # the clause of what another process could hide
