"""Measurement x baseline -> verdict: regressed, improved, unchanged, noisy or new.

Pure logic: no torch, no pytest. The rules, in order:

1. No baseline (or one taken with a different workload or setting)      -> NEW
2. The machine misbehaves: the normalised samples spread far wider than the baseline's, the
   reference kernel runs at a very different speed than when the baseline was recorded, or the
   figure looks slower beyond the tolerance while the machine's state shifted that way by more than
   the tolerance beyond what the baseline's recordings covered (the state shift, below)  -> NOISY
   Other processes used far more of the host's CPU than in any recording (a neighbour, see
   judgement/neighbour.py): NOISY whichever way the figure reads when no calibration covers a
   neighbour this busy; else a slowdown is judged only beyond what a neighbour moved this test in
   its calibration runs (the neighbour bound), and is NOISY when a bound beyond the tolerance could
   explain it (as a state shift beyond the tolerance). A smaller bound is taken off the reading and
   widens the interval's slow side (rule 3).
3. Time ratio of this run's median to the median of the baseline's recorded runs, computed on
   normalised samples (each round over its adjacent probe round, or for a pipelined measurement over
   the median of its probe block) when both sides have them,
   else on raw seconds, with an interval at the policy's confidence combining the within-run and
   between-run errors:
       ratio > 1 + tolerance and the interval excludes 1                 -> REGRESSED
       ratio < 1 / (1 + tolerance) and the interval excludes 1           -> IMPROVED
       otherwise                                                         -> UNCHANGED
   The state shift widens the interval on its side: the memory and latency probes' times relative
   to the reference kernel's, now against the range the baseline's recordings saw (beside a
   calibrated neighbour, and its calibration runs'); a workload bound
   by memory could have moved that much relative to the reference kernel without any change of
   code. A probe now relatively slower widens the lower bound (a slowdown could be the machine's:
   beyond the tolerance, the verdict is noisy), a faster one the upper bound (a speedup could be).
   Every verdict carries the smallest slowdown it could have called (``detectable``).
4. A REGRESSED time verdict is re-measured (the fixture does it) and stands only if every
   confirmation also says REGRESSED; a confirmation that is NOISY makes the whole NOISY. An
   IMPROVED one is re-measured once, the same way: a false "improved" asks for a baseline refresh
   from a biased run.
5. Peak memory: growth beyond memory_tolerance and MEMORY_SLACK_BYTES    -> REGRESSED

Why both tolerance and significance: on the 2-core machine the suite is calibrated on, the
within-run interval is far narrower than the run-to-run drift, so significance alone flags that drift
(small on normalised samples, several times larger on raw ones: docs/measurements.md); the tolerance
alone flags a noisy run whose median wandered. Together, and with confirmations, they gave the
false-alarm and catch rates in docs/sensitivity.md.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, final

from pytest_accel.core.measurement import UNPROBED, compared_samples, probe_normalized
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Verdict
from pytest_accel.core.stats import (
    mann_whitney_p,
    median,
    quantile,
    ratio_confidence_interval,
    relative_spread,
)
from pytest_accel.core.units import format_percent_change as _percent
from pytest_accel.judgement.drift import NightDrift
from pytest_accel.judgement.neighbour import (
    CALIBRATED,
    QUIETER,
    Beside,
    covered_states,
    host_shared,
    neighbour_bound,
    weigh_neighbour,
)
from pytest_accel.judgement.policy import VerdictPolicy
from pytest_accel.judgement.sight import Width, between_run, could_see, detectable_slowdown, limited_by
from pytest_accel.judgement.state import StateShift, state_shift
from pytest_accel.judgement.structures import StructureVerdict

__all__ = [
    "CALIBRATED",
    "BesideRecorded",
    "Observation",
    "Outcome",
    "StateShift",
    "VerdictPolicy",
    "VerdictRecord",
    "combine",
    "detectable_slowdown",
    "host_shared",
    "judge_memory",
    "judge_time",
    "neighbour_bound",
    "pooled_run_spread",
    "state_shift",
]


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
    # processes used, of each calibration run beside the standard neighbour (--accel-calibrate).
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


@final
@dataclass(frozen=True)
class BesideRecorded:
    """What a sitting of a figure's recorded build beside this tree said (judgement/recorded_build.py), as reports
    keep it; ``said`` None: no word (no sitting was held, or it gave no answer), ``detail`` says why."""

    commit: str  # the recorded build's commit; empty when the baseline names none that can be checked out
    said: Outcome | None  # this tree against the recorded build, measured in one sitting
    detail: str  # the sitting's figures, or why it gave no word
    minutes: float = 0.0  # what the sitting took

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as stored under each verdict's ``beside_recorded``."""
        said = None if self.said is None else self.said.value
        return {"commit": self.commit, "said": said, "detail": self.detail, "minutes": round(self.minutes, 2)}

    @classmethod
    def from_dict(cls, data: object) -> BesideRecorded:
        """Inverse of ``to_dict``; raises ``ValueError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"beside_recorded: expected an object, got {type(data).__name__}")
        commit, said, detail, minutes = (data.get(key) for key in ("commit", "said", "detail", "minutes"))
        if not isinstance(commit, str) or not isinstance(detail, str):
            raise ValueError("beside_recorded: 'commit' and 'detail' must be strings")
        if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not minutes >= 0:
            raise ValueError(f"beside_recorded: 'minutes' must be a number >= 0, got {minutes!r}")
        try:
            outcome = None if said is None else Outcome(said)
        except ValueError:
            raise ValueError(f"beside_recorded: unknown 'said' {said!r}") from None
        return cls(commit, outcome, detail, float(minutes))


@final
@dataclass(frozen=True)
class VerdictRecord:
    """One measurement's verdict as reports see it: time, memory (when known), re-measurements taken,
    for a confirmed regression the lines that say which operators changed (core/operator_table.py), and
    the structural verdict (judgement/structures.py) when a record was taken."""

    time: Verdict
    memory: Verdict | None = None
    remeasurements: int = 0
    operators: tuple[str, ...] = ()
    structure: StructureVerdict | None = None
    beside_recorded: BesideRecorded | None = None  # the recorded build's sitting, when a suspect asked for one

    @property
    def host_moved(self) -> bool:
        """Read slower than its stored figure and passed: its recorded build, measured beside it, read the same
        (or slower). Not the code: the host moved since the recordings (a sitting is held only in their environment)."""
        said = None if self.beside_recorded is None else self.beside_recorded.said
        return self.time.outcome is Outcome.UNCHANGED and said in (Outcome.UNCHANGED, Outcome.IMPROVED)

    @property
    def outcome(self) -> Outcome:
        """The worst outcome: a memory regression, or a structural change that fails, counts like a time regression."""
        if self.memory is not None and self.memory.outcome is Outcome.REGRESSED:
            return Outcome.REGRESSED
        if self.structure is not None and self.structure.fails:
            return Outcome.REGRESSED
        return self.time.outcome

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as stored in ``--accel-json`` under each result's ``verdict``."""
        return {
            "outcome": self.outcome.value,
            "time": self.time.to_dict(),
            "memory": None if self.memory is None else self.memory.to_dict(),
            "remeasurements": self.remeasurements,
            "operators": list(self.operators),
            "structure": None if self.structure is None else self.structure.to_dict(),
            "beside_recorded": None if self.beside_recorded is None else self.beside_recorded.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: object) -> VerdictRecord:
        """Inverse of ``to_dict``; raises ``ValueError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"verdict: expected an object, got {type(data).__name__}")
        memory = data.get("memory")
        remeasurements = data.get("remeasurements", 0)
        if isinstance(remeasurements, bool) or not isinstance(remeasurements, int) or remeasurements < 0:
            raise ValueError(f"verdict: 'remeasurements' must be an integer >= 0, got {remeasurements!r}")
        operators = data.get("operators", [])
        if not isinstance(operators, list) or not all(isinstance(line, str) for line in operators):
            raise ValueError(f"verdict: 'operators' must be a list of strings, got {type(operators).__name__}")
        structure, beside = data.get("structure"), data.get("beside_recorded")
        return cls(
            Verdict.from_dict(data.get("time"), "time"),
            None if memory is None else Verdict.from_dict(memory, "memory"),
            remeasurements,
            tuple(operators),
            None if structure is None else StructureVerdict.from_dict(structure),
            None if beside is None else BesideRecorded.from_dict(beside),
        )


def pooled_run_spread(entries: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """The typical between-run SD of a baseline file: the median over its entries (those with two or more
    recordings) of each one's SD of log run medians, and how many entries it comes from.

    None when no entry has two recordings. The median, not a pooled variance: a few tests that move
    far more than the rest between processes (DataLoader workers, a decode kernel) would otherwise set
    the width of every other test's interval (docs/sensitivity.md, docs/measurements.md).
    """
    spreads = [statistics.stdev(math.log(r) for r in runs) for runs in entries if len(runs) >= 2]
    return (median(spreads), float(len(spreads))) if spreads else None


def _ratio_interval(
    now: Sequence[float],
    then: Sequence[float],
    run_medians: Sequence[float],
    policy: VerdictPolicy,
    pooled: tuple[float, float] | None = None,
    nights: NightDrift | None = None,
) -> tuple[float, Width]:
    """Ratio of this run's median to the baseline runs' median, and its interval's half-width (log scale) by parts.

    Two independent errors add on the log scale: the within-run one (the distribution-free
    interval of this run's samples against the latest baseline samples) and the between-run one
    (``sight.between_run``). Two recordings that disagree count too: the README asks for two or three,
    and a pair far apart (one process off, seen on the 2-core VM) put the centre off the truth, which
    unchanged code then read as a false "improved" run after run (docs/measurements.md).
    """
    runs = tuple(run_medians) or (median(then),)
    ratio = median(now) / median(runs)
    _, within_low, within_high = ratio_confidence_interval(now, then, policy.confidence)
    within = (math.log(within_high) - math.log(within_low)) / 2
    between, source, spread = between_run(runs, pooled, policy.between_run_floor, policy.confidence, nights)
    return ratio, Width(within, between, source, spread, len(runs), nights.nights if nights is not None else 0)


def _separated(now: Sequence[float], then: Sequence[float], runs: Sequence[float], tolerance: float) -> bool:
    """Whether this run's fast quartile lies beyond the baseline's slow end by more than the tolerance.

    The slow end: the latest recording's slow quartile, or a slower recorded run's median. A machine
    made unsteady by a neighbour slows some rounds and leaves the fast ones as they were; a workload
    that became slower and more variable (an SDPA call that fell back from the flash kernel to math
    spread several times as wide on a quiet 2-core VM: docs/measurements.md) moves them all.
    """
    slow_end = max((quantile(then, 0.75), *runs))
    return quantile(now, 0.25) > slow_end * (1 + tolerance)


# What would let a new figure be judged.
RECORD = "record a baseline: pytest <same args> --accel-update"


def _noisy_state(shift: StateShift, tolerance: float, normalized: bool) -> Verdict:
    explains = math.expm1(shift.slower) * 100
    return Verdict(
        Outcome.NOISY,
        "time",
        f"the machine is in a state its baseline did not cover: {shift.why_slower}; a workload bound by it could "
        f"look {explains:.0f}% slower without any change of code: not judged",
        normalized=normalized,
        detectable=detectable_slowdown(shift.slower, tolerance),
        abstention=Abstention(
            f"state: {shift.short_slower}, up to {explains:.0f}%", QUIETER, waits=True, cause=Cause.STATE
        ),
    )


def _unsteady(
    now: Sequence[float], then: Sequence[float], runs: Sequence[float], policy: VerdictPolicy, normalized: bool
) -> tuple[Verdict | None, str]:
    """The spread rule: (None, "") for a steady run; else the noisy verdict, and the clause a regression
    still carries when the run's fastest quarter is beyond the baseline's slow end ("" when it is not)."""
    spread_now, spread_then = relative_spread(now), relative_spread(then)
    spread_limit = max(policy.noisy_spread_floor, policy.noisy_spread_factor * spread_then)
    if spread_now <= spread_limit:
        return None, ""
    unsteady = (
        f"the spread of this run (±{spread_now * 100:.0f}% IQR/median) is above ±{spread_limit * 100:.0f}% "
        f"(baseline ±{spread_then * 100:.0f}%)"
    )
    too_unsteady = Verdict(
        Outcome.NOISY,
        "time",
        f"{unsteady}: the machine is too unsteady to judge",
        normalized=normalized,
        abstention=Abstention(
            f"unsteady: ±{spread_now * 100:.0f}% spread (limit ±{spread_limit * 100:.0f}%)",
            QUIETER,
            waits=True,
            cause=Cause.UNSTEADY,
        ),
    )
    if not _separated(now, then, runs, policy.tolerance):
        return too_unsteady, ""
    return too_unsteady, (
        f"; {unsteady}, but its fastest quarter of rounds is slower than the slow end of the baseline by more "
        f"than the {policy.tolerance:.0%} tolerance (an unsteady machine slows some rounds, not three in four)"
    )


_UNPROBED = Verdict(
    Outcome.NOISY,
    "time",
    "the machine's state probes could not run (their buffers could not be allocated: out of memory?), so "
    "nothing is known of the machine's state: not judged",
    abstention=Abstention(
        "state probes could not run", "free memory for them (out of memory?)", cause=Cause.STATE_UNPROBED
    ),
)


def _probe_drift(current: Observation, baseline: Observation, policy: VerdictPolicy) -> Verdict | None:
    """The noisy verdict when the reference kernel itself runs at another speed than when recorded, else None."""
    drift = median(current.probe_samples) / median(baseline.probe_samples)
    if 1 / policy.probe_drift_limit <= drift <= policy.probe_drift_limit:
        return None
    return Verdict(
        Outcome.NOISY,
        "time",
        f"the reference kernel ran {drift:.2f}x as long as when the baseline was recorded: the machine "
        "(or torch's matmul) is in another state; re-record the baseline if this is the new normal",
        normalized=True,
        abstention=Abstention(
            f"reference kernel {drift:.2f}x as long",
            "re-record if that is the new normal (--accel-update)",
            cause=Cause.PROBE_DRIFT,
        ),
    )


_NO_SAMPLES = Verdict(
    Outcome.NEW, "time", "no samples to compare", abstention=Abstention("no samples", RECORD, cause=Cause.NO_SAMPLES)
)


def judge_time(current: Observation, baseline: Observation, policy: VerdictPolicy) -> Verdict:
    """Compare the time of one measurement with its baseline (rules 2-3 of the module docstring)."""
    now, then = current.normalized, baseline.normalized
    normalized = bool(now and then)
    if not normalized:
        now, then = tuple(current.samples), tuple(baseline.samples)
    if not now or not then:
        return _NO_SAMPLES
    if current.state.get(UNPROBED):
        return _UNPROBED
    # Recorded run medians are normalised exactly when the baseline has probe samples.
    runs = baseline.run_medians if normalized == bool(baseline.probe_samples) else ()
    too_unsteady, unsteady = _unsteady(now, then, runs, policy, normalized)
    if too_unsteady is not None and not unsteady:
        return too_unsteady
    shift = StateShift()
    if normalized:
        if (drifted := _probe_drift(current, baseline, policy)) is not None:
            return drifted
        covered = covered_states(current.state, baseline.run_states, baseline.calibration, policy)
        shift = state_shift(current.state, covered, policy.state_noise_floor)
    pooled = baseline.pooled_spread if runs else None
    drift = baseline.night_drift
    nights = drift if runs and drift is not None and drift.normalized == normalized else None
    ratio, width = _ratio_interval(now, then, runs, policy, pooled, nights)
    half_width = width.half_width
    beyond_state = ""
    ruled_out: list[str] = []
    if ratio > 1 + policy.tolerance and shift.slower > policy.state_limit:
        # The shift bounds how much slower the machine's state could make a workload bound by that
        # probe's resource; a slowdown beyond the tolerance even with all of it (and the interval)
        # taken off is not the machine's: a flash -> math fallback read many times slower than the gather's
        # wandering state could explain (docs/studies/backend-switch).
        if ratio * math.exp(-half_width - shift.slower) <= 1 + policy.tolerance:
            return _noisy_state(shift, policy.tolerance, normalized)
        beyond_state = (
            f"; the machine's state could explain up to {math.expm1(shift.slower) * 100:.0f}%: {shift.why_slower}; "
            "this is beyond it"
        )
        ruled_out.append(f"the machine's state (up to {math.expm1(shift.slower) * 100:.0f}%)")
    shared = host_shared(current.state, baseline.run_states, policy.foreign_cpu_margin) if normalized else ""
    beside = Beside(shift)
    if shared:
        calibrated = runs or (median(then),)
        weighed = weigh_neighbour(
            current.state, baseline.calibration, calibrated, (ratio, half_width), shift, shared, policy
        )
        if isinstance(weighed, Verdict):
            return replace(weighed, normalized=normalized)
        beside = weighed
        ruled_out += [beside.short] if beside.short else []
    shift, explained, masked = beside.shift, beside.explained, beside.masked
    # A shift is a bound on a bias, not a random error: it widens its own side of the interval linearly.
    low, high = ratio * math.exp(-half_width - shift.slower), ratio * math.exp(half_width + shift.faster)
    hides = max(masked, shift.faster)  # a faster state hides a slowdown its size (studies/spaced-recordings)
    detectable = detectable_slowdown(half_width + shift.slower + hides, policy.tolerance, explained + hides)
    p_value = mann_whitney_p(now, then)
    band = f"time {_percent(ratio)} [{policy.confidence:.0%} CI {_percent(low)} .. {_percent(high)}]"
    if normalized:
        band += " relative to the reference kernel"
    sight = limited_by(width, shift.slower, policy.tolerance, masked, shift.faster)
    sees = could_see(detectable, shift, shared, "" if sight is None else sight[1], beside.hidden)
    if ratio * math.exp(-explained) > 1 + policy.tolerance and low > 1:
        outcome, text = (
            Outcome.REGRESSED,
            f"{band}, beyond the {policy.tolerance:.0%} tolerance{unsteady}{beyond_state}{beside.clause}"
            f"{_assumed_spread(runs, pooled, policy)}",
        )
    elif ratio < 1 / (1 + policy.tolerance) and high < 1:
        outcome, text = Outcome.IMPROVED, f"{band}: faster than the baseline; refresh it with --accel-update"
    else:
        within = f"{policy.tolerance:.0%} tolerance"
        if explained > 0:
            within += f" with the {math.expm1(explained) * 100:.0f}% a neighbour explains taken off"
        outcome, text = Outcome.UNCHANGED, f"{band}, within the {within}{sees}"
    if too_unsteady is not None and outcome is not Outcome.REGRESSED:
        return too_unsteady  # the wide spread was let through only for a slowdown that clears the interval
    kept = tuple(ruled_out) if outcome is Outcome.REGRESSED else ()
    limit = None if sight is None else sight[0]
    return Verdict(outcome, "time", text, ratio, low, high, p_value, normalized, detectable, kept, sight=limit)


def _assumed_spread(runs: Sequence[float], pooled: tuple[float, float] | None, policy: VerdictPolicy) -> str:
    """The clause a regression carries when its between-run spread was assumed, not measured: a baseline
    of one recording in a file without any entry of two. A tiny Python call moved far more than the
    assumed floor between two pytest runs in one process on the 2-core VM (docs/studies/test-stability)."""
    if len(runs) >= 2 or pooled is not None:
        return ""
    return (
        f"; the baseline has one recording, so the spread between processes is assumed ({policy.between_run_floor:.0%})"
        ", not measured: record it again (--accel-update) to measure it"
    )


def judge_memory(current: Observation, baseline: Observation, policy: VerdictPolicy) -> Verdict | None:
    """Compare peak memory; None when either side does not know it."""
    if current.peak_memory_bytes is None or baseline.peak_memory_bytes is None:
        return None
    now, then = current.peak_memory_bytes, baseline.peak_memory_bytes
    growth = now - then
    ratio = now / then if then > 0 else math.inf
    text = f"peak memory {then / 2**20:.1f} MiB -> {now / 2**20:.1f} MiB"
    if growth > max(policy.memory_tolerance * then, policy.memory_slack_bytes):
        return Verdict(
            Outcome.REGRESSED,
            "memory",
            f"{text}, beyond the {policy.memory_tolerance:.0%} tolerance",
            ratio=ratio,
        )
    return Verdict(Outcome.UNCHANGED, "memory", f"{text}, within tolerance", ratio=ratio)


def combine(first: Verdict, confirmations: Sequence[Verdict]) -> Verdict:
    """Rule 4: a regression (or an improvement) stands only if every re-measurement confirms it."""
    if first.outcome not in (Outcome.REGRESSED, Outcome.IMPROVED) or not confirmations:
        return first
    if any(v.outcome is Outcome.NOISY for v in confirmations):
        noisy = next(v for v in confirmations if v.outcome is Outcome.NOISY)
        reason = f"first {first.reason}; then {noisy.reason}"
        return Verdict(Outcome.NOISY, first.metric, reason, ratio=first.ratio, abstention=noisy.abstention)
    if all(v.outcome is first.outcome for v in confirmations):
        ratios = [first.ratio or 1.0, *(v.ratio or 1.0 for v in confirmations)]
        return Verdict(
            first.outcome,
            first.metric,
            f"{first.reason}; confirmed by {len(confirmations)} re-measurement(s) "
            f"({', '.join(_percent(r) for r in ratios[1:])})",
            ratio=median(ratios),
            low=first.low,
            high=first.high,
            p_value=first.p_value,
            normalized=first.normalized,
            detectable=first.detectable,
            ruled_out=first.ruled_out,
            remeasured=tuple(ratios[1:]),
        )
    last = confirmations[-1]
    return Verdict(
        last.outcome,
        first.metric,
        f"a first measurement said {_percent(first.ratio or 1.0)}, re-measurement did not confirm it: {last.reason}",
        ratio=last.ratio,
        low=last.low,
        high=last.high,
        p_value=last.p_value,
        normalized=last.normalized,
        detectable=last.detectable,
        sight=last.sight,
    )
