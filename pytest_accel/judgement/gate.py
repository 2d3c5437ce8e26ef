"""The regression gate: a measurement against its baseline entry, with every confirmation of a suspect.

All of confirmation lives here, in order:

1. ``run_gate``: judge the first measurement; while it looks regressed, re-measure in this process
   (up to ``confirmations`` times) through the callable the fixture hands in.
2. ``Gate.judge``: a regression that survived is measured once more in a fresh ``pytest`` process
   (``pytest_accel.judgement.confirm``), and then, where the baseline's build can be checked out, beside
   that build in one ``ab`` sitting (``pytest_accel.judgement.recorded_build``): the test fails only if both
   agree. A figure left unjudged while it read slower is measured beside that build too, and judged there.
3. ``Gate._fails``: whether the outcome fails its test under the run's mode, and the message
   (``pytest_accel.judgement.conclusion``).

No pytest here: the fixture turns a failure message into a test failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import final

from pytest_accel.core.environment import ENVIRONMENT_PROVENANCE
from pytest_accel.core.measurement import FAULT_SHARE, FOREIGN_CPU, Measurement, pooled, throttle_problem
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Verdict
from pytest_accel.judgement.baselines import BaselineEntry, on_card
from pytest_accel.judgement.comparable import COMPARABLE, judged_raw_too, not_comparable
from pytest_accel.judgement.conclusion import GateResult, failure_lines
from pytest_accel.judgement.confirm import ChildSettings, FreshVerdict
from pytest_accel.judgement.drift import NightDrift
from pytest_accel.judgement.energy import with_energy
from pytest_accel.judgement.recorded_build import RecordedWord, with_recorded_word, worth_a_sitting
from pytest_accel.judgement.rules.case import StateShift
from pytest_accel.judgement.rules.state import state_shift
from pytest_accel.judgement.structures import RECORD_HINT
from pytest_accel.judgement.verdict import (
    Observation,
    VerdictPolicy,
    combine,
    judge_memory,
    judge_time,
    pooled_run_spread,
)
from pytest_accel.judgement.weighing import AGAIN, Reading, apart, clear_of_the_gap, weigh

__all__ = [
    "EXTEND_MEASUREMENTS",
    "NO_LAUNCHERS",
    "REFUTED_LIMIT",
    "Gate",
    "GateMode",
    "GateResult",
    "Launchers",
    "Waited",
    "failure_lines",
    "reread",
    "run_gate",
    "shift_from",
    "with_fresh_confirmation",
]

# Extra measurements of a suspect the first one could not decide, pooled with it (run_gate). Beside a
# second perf suite on the 2-core VM one measurement's interval was several times a quiet one's, too
# wide to call a planted slowdown; five measurements' rounds narrow it about sqrt(5) fold
# (docs/sensitivity.md, docs/measurements.md). Only suspects pay: unchanged code that reads within the
# tolerance does not.
EXTEND_MEASUREMENTS = 4
# After this many suspects of one run were refuted by a fresh process (it measured and disagreed), the
# run's process-level bias is shown: later suspects are reported noisy at once, not re-measured in yet
# another process each (on a 2-core VM with a second job beside it that storm took a 3-minute suite to 16 minutes).
REFUTED_LIMIT = 2
# What would let a figure the gate itself left unjudged be judged.
_COOL = "cool the device or lower its load"
_AGAIN = AGAIN


def _observation(
    source: Measurement | BaselineEntry, spread: tuple[float, float] | None = None, drift: NightDrift | None = None
) -> Observation:
    if isinstance(source, BaselineEntry):
        return Observation(
            source.samples,
            source.probe_samples,
            source.peak_memory_bytes,
            source.run_medians,
            {},
            source.run_states,
            source.calibration,
            spread,
            drift,
        )
    return Observation(source.samples, source.probe_samples, source.peak_memory_bytes, (), source.state)


def with_fresh_confirmation(first: Verdict, fresh: FreshVerdict, tolerance: float) -> Verdict:
    """A regressed (or improved) time verdict after a fresh process re-measured it (see
    pytest_accel.judgement.confirm): it stands only if the fresh process says the same, or reads the
    same direction clear of no change with the two processes' figures together beyond ``tolerance``.

    A process-level bias makes a fresh process read no change, so one that does refutes; one whose
    interval reaches both no change and this process's figure could not tell (noisy, not a pass): a
    planted slowdown whose fresh process's interval reached both once passed as "unchanged"
    (docs/studies/quiet-wait). One that says the same, but at a level too far from this process's for
    one level (``apart``), confirms nothing either: unchanged code once read slower in both, at levels
    far apart (docs/studies/first-in-process), unless the outcome holds with that gap taken off
    (``clear_of_the_gap``): a planted threefold slowdown read at two levels is still regressed.
    """
    if fresh.outcome is None:
        return replace(first, reason=f"{first.reason}; no fresh-process confirmation: {fresh.detail}")
    reading, together = (Reading.REFUTES, "") if fresh.verdict is None else weigh(first, fresh.verdict, tolerance)
    says_so = fresh.outcome is first.outcome or reading is Reading.AGREES
    if says_so and fresh.verdict is not None and apart(first, fresh.verdict):
        if clear_of_the_gap(first, fresh.verdict, tolerance):
            return replace(first, reason=f"{first.reason}; {_CLEAR_OF_THE_GAP}: {fresh.detail}")
        return _fresh_noisy(first, f"{_APART}: {fresh.detail}; {_APART_WHY}", _APART, _APART_REMEDY)
    if fresh.outcome is first.outcome:
        return replace(first, reason=f"{first.reason}; confirmed in a fresh process: {fresh.detail}")
    outcome = fresh.outcome
    if {outcome, first.outcome} == {Outcome.REGRESSED, Outcome.IMPROVED}:
        # The processes disagree in direction: one process's measurement alone never fails a test.
        return _fresh_noisy(first, f"{_OPPOSITE}: {fresh.detail}", _OPPOSITE)
    if reading is Reading.AGREES:
        said = f"a fresh process read it too: {fresh.detail}; the two processes together {together}"
        return replace(first, reason=f"{first.reason}; {said}")
    if reading is Reading.CANNOT_TELL:
        said = f"{_CANNOT_TELL}: {fresh.detail}; the two processes together {together}"
        return _fresh_noisy(first, said, _CANNOT_TELL)
    return Verdict(
        outcome,
        "time",
        f"this process said {first.reason}; a fresh process did not confirm it: {fresh.detail}",
        ratio=first.ratio if outcome is Outcome.NOISY else None,
        normalized=first.normalized,
        detectable=first.detectable,
        sight=first.sight,
        abstention=None if fresh.verdict is None else fresh.verdict.abstention,
    )


_CANNOT_TELL = "a fresh process could not tell"
_OPPOSITE = "a fresh process said the opposite"
_APART = "a fresh process read it too far from this one"
_CLEAR_OF_THE_GAP = (
    "confirmed in a fresh process at another level, and beyond the tolerance with the gap between the two taken off"
)
_APART_WHY = "the figure's level moves between processes by more than its recordings showed"
_APART_REMEDY = "record it at other times (--accel-update keeps up to 10 recordings), so they show that spread"


def _fresh_noisy(first: Verdict, said: str, short: str, remedy: str = _AGAIN) -> Verdict:
    said = f"this process said {first.reason}; {said}; not judged"
    return _unsettled(first, said, short, remedy, Cause.FRESH_PROCESS)


def _unsettled(
    figures: Verdict, reason: str, short: str, remedy: str = _AGAIN, cause: Cause = Cause.REMEASUREMENT
) -> Verdict:
    """A noisy time verdict with ``figures``' ratio: two readings that did not settle a suspect."""
    return Verdict(
        Outcome.NOISY,
        "time",
        reason,
        ratio=figures.ratio,
        normalized=figures.normalized,
        detectable=figures.detectable,
        sight=figures.sight,
        abstention=Abstention(short, remedy, cause=cause),
    )


def _throttled(rounds: str) -> Abstention:
    return Abstention(f"throttled in {rounds}", _COOL, cause=Cause.THROTTLED)


def run_gate(
    measurement: Measurement,
    entry: BaselineEntry | None,
    policy: VerdictPolicy,
    provenance: Mapping[str, str],
    remeasure: Callable[[], Measurement],
    confirmations: int,
    gate_memory: bool = True,
    pooled_spread: tuple[float, float] | None = None,
    reconfirm: bool = True,
    night_drift: NightDrift | None = None,
    setup_causes: Mapping[str, tuple[str, str]] | None = None,
) -> GateResult:
    """Judge ``measurement``; re-measure up to ``confirmations`` times while it looks regressed (once
    while it looks improved). ``reconfirm=False``: a decided suspect is not re-measured (a confirmation
    child's one reading is its parent's to weigh); an undecided one is still extended.

    A suspect the first measurement could not decide (slower beyond the tolerance, but its interval
    too wide, or within what a shared host could explain) is measured again, up to EXTEND_MEASUREMENTS
    times, and judged on all its rounds pooled until it is decided. Such a group of measurements
    has re-measured already: it is then confirmed once, by a group of the same size. A confirmation
    that cannot decide is extended the same way.

    A run whose setup differs from the baseline's in what the user can restore (``setup_differs``) is not
    judged: ``setup_causes`` gives, per provenance field, what this run knows of why (which module had
    torch allocate first, a variable the user set) and how to restore it.
    """
    unjudged = not_comparable(measurement, entry, provenance, setup_causes or {})
    if unjudged is not COMPARABLE or entry is None:
        return GateResult(unjudged, None, (measurement,))
    if entry.tolerance is not None or entry.memory_tolerance is not None:
        policy = replace(
            policy,
            tolerance=entry.tolerance if entry.tolerance is not None else policy.tolerance,
            memory_tolerance=entry.memory_tolerance if entry.memory_tolerance is not None else policy.memory_tolerance,
        )
    baseline = _observation(entry, pooled_spread, night_drift)

    def judge(group: Sequence[Measurement]) -> Verdict:
        taken = pooled(group)
        if (throttled := throttle_problem(taken)) is not None:  # never a silent figure; memory still judged
            rounds = f"{taken.throttled_rounds} of {len(taken.samples)} rounds"
            return Verdict(Outcome.NOISY, "time", throttled, abstention=_throttled(rounds))
        return judged_raw_too(judge_time(_observation(taken), baseline, policy), taken, baseline, policy, moved)

    # The environment changed since the recordings: the reference kernel (a matmul) runs the libraries under test
    # too, so a slowdown of theirs can slow it as much as the workload and cancel out of the normalised figure.
    moved = entry.provenance.get(ENVIRONMENT_PROVENANCE) != provenance.get(ENVIRONMENT_PROVENANCE)
    taken = [measurement]
    first = judge(taken)
    while confirmations and _undecided_suspect(first, policy.tolerance) and len(taken) <= EXTEND_MEASUREMENTS:
        taken.append(remeasure())
        first = judge(taken)
    group = len(taken)
    if group > 1:
        first = replace(first, reason=f"{first.reason}; judged on the rounds of {group} measurements pooled")
    again: list[Verdict] = []
    # A suspected regression is re-measured up to ``confirmations`` times; a suspected improvement once
    # (a false one asks the user to refresh the baseline from a biased run, which then cries wolf).
    wanted = {Outcome.REGRESSED: confirmations, Outcome.IMPROVED: min(1, confirmations)}.get(first.outcome, 0)
    wanted = wanted if reconfirm else 0
    while len(again) < (wanted if group == 1 else min(wanted, 1)):
        batch = [remeasure() for _ in range(group)]
        confirmation = judge(batch)
        # A confirmation that cannot decide is extended as the first measurement was: beside a
        # second job one measurement's interval is wide enough to leave a planted slowdown "noisy" after
        # a first reading that called it (docs/sensitivity.md).
        while _undecided_suspect(confirmation, policy.tolerance) and len(batch) <= EXTEND_MEASUREMENTS:
            batch.append(remeasure())
            confirmation = judge(batch)
        confirmation = reread(first, confirmation, policy.tolerance)
        taken += batch
        again.append(confirmation)
        if again[-1].outcome is not first.outcome:
            break
    memory = judge_memory(_observation(measurement), baseline, policy) if gate_memory else None
    return GateResult(combine(first, again), memory, tuple(taken), group, tolerance=policy.tolerance)


def reread(first: Verdict, again: Verdict, tolerance: float) -> Verdict:
    """A re-measurement as it bears on the suspect ``first``: one that read "unchanged" is weighed with
    it (``weighing.weigh``): it agrees (``first``'s outcome), could not tell (noisy), or refutes (as read).
    A planted slowdown whose confirmation's interval reached no change once passed as unchanged
    (docs/studies/quiet-wait, run 8)."""
    if first.outcome not in (Outcome.REGRESSED, Outcome.IMPROVED) or again.outcome is not Outcome.UNCHANGED:
        return again
    reading, together = weigh(first, again, tolerance)
    if reading is Reading.AGREES:
        return replace(again, outcome=first.outcome, reason=f"{again.reason}; with the first, {together}: it agrees")
    if reading is Reading.CANNOT_TELL:
        said = f"{again.reason}; with the first, {together}: it could not tell"
        return _unsettled(again, said, "a re-measurement could not tell")
    return again


def _undecided_suspect(verdict: Verdict, tolerance: float) -> bool:
    """Slower beyond the tolerance, but not called: an interval too wide, or a shared host's bound too close."""
    return (
        verdict.outcome in (Outcome.UNCHANGED, Outcome.NOISY)
        and verdict.ratio is not None
        and verdict.ratio > 1 + tolerance
        and verdict.detectable is not None  # None: nothing more rounds could change (no calibration, a shift)
    )


@final
@dataclass(frozen=True)
class GateMode:
    """How a run treats outcomes (from its options): what fails, and which confirmations it may pay for."""

    update: bool = False  # recording baselines: verdicts are reported, nothing fails, no child is started
    strict: bool = False  # a figure not judged fails: noisy, or new (nothing comparable to judge it against)
    require_baseline: bool = False  # a new (unjudged) measurement fails
    allow_setup_mismatch: bool = False  # a figure whose setup differs from its baseline's passes, not judged
    confirmations: int = 2  # in-process re-measurements of a suspected regression
    # A fresh pytest process confirms a regression; None when this run may not spawn one (turned off,
    # under torchrun, or this process is itself a confirmation child).
    fresh_process: ChildSettings | None = None
    # Seconds this run may wait, in all, for another job to leave before measuring a figure again that
    # abstained because of it (Gate.judge); 0: never wait.
    quiet_wait_seconds: float = 0.0
    # A confirmation child: its one reading (extended while undecided) is the parent's to weigh, which
    # re-measured in its own process already (with_fresh_confirmation).
    one_reading: bool = False
    # A confirmed regression, or a figure left unjudged while it read slower, is measured beside its recorded
    # build (judgement.recorded_build) with these settings, within ``recorded_minutes`` for the whole run; None when
    # this run may not (turned off, under torchrun, in a child).
    recorded: ChildSettings | None = None
    recorded_minutes: float = 0.0


def shift_from(
    recorded: Sequence[Mapping[str, float]], policy: VerdictPolicy, first: Mapping[str, float]
) -> Callable[[Mapping[str, float]], StateShift]:
    """How far a snapshot of the state probes lies outside what ``recorded`` saw, as the verdict weighs
    it (``state_shift``). A snapshot has no share of page faults of its own: the figure's first
    measurement's (``first``) is used."""
    share = {FAULT_SHARE: first[FAULT_SHARE]} if FAULT_SHARE in first else {}
    return lambda now: state_shift({**now, **share}, recorded, policy.state_noise_floor)


@final
@dataclass(frozen=True)
class Waited:
    """A figure that abstained for a cause that may pass, and what waiting for quiet did for it."""

    test: str
    seconds: float  # waited for this figure (0: the run's budget was spent before it)
    outcome: Outcome | None  # the verdict measured after the host was quiet; None: it never got quiet


_WAIT_SPENT = "the run's wait for quiet was spent"
_CHILDREN_DIFFER = "this run's children do not run in its environment, so a sitting of both builds would not either"
# A sitting beside the recorded build needs a few pairs of fresh processes: none starts with less left.
_LEAST_SITTING_MINUTES = 0.5


@final
class _Settle:
    """Whether the machine's state is settled now: the state probes read now (``state_now``) shifted no
    further from the recordings (``shift``) than the verdict lets widen an interval (``limit``). Keeps
    the last unsettled reading in a few words, for a wait in vain. Probes that could not be read
    settle at once: the host's share of other processes decides alone."""

    def __init__(
        self,
        shift: Callable[[Mapping[str, float]], StateShift],
        state_now: Callable[[], Mapping[str, float]],
        limit: float,
    ) -> None:
        self._shift, self._state_now, self._limit = shift, state_now, limit
        self.unsettled = ""

    def __call__(self) -> bool:
        now = self._state_now()
        shift = self._shift(now) if now else StateShift()
        self.unsettled = shift.short_slower if shift.slower > self._limit else ""
        return not self.unsettled


# (test, metric, rootdir, settings, test measured before it, this run's environment digest) -> its word
FreshLauncher = Callable[[str, str, Path, ChildSettings, str | None, str | None], FreshVerdict]
# (entry, this run's provenance, rootdir, what changed since an environment digest) -> (commit, why not)
CommitFinder = Callable[[BaselineEntry, Mapping[str, str], Path, Callable[[str], str]], tuple[str, str]]
# (test, metric, commit, rootdir, settings, tolerance, minutes) -> the sitting's word
SittingLauncher = Callable[[str, str, str, Path, ChildSettings, float, float], RecordedWord]


@final
@dataclass(frozen=True)
class Launchers:
    """What a gate may start to settle a suspect: a fresh pytest, and a sitting beside the recorded build (with
    the check that its commit can be measured again). They start processes, which nothing under ``judgement/``
    does: the plugin hands in ``sittings/``'s."""

    fresh: FreshLauncher
    recorded_commit: CommitFinder
    beside_recorded: SittingLauncher


def _none_fresh(*_: object) -> FreshVerdict:
    return FreshVerdict(None, "this gate was given no way to start a fresh process")


def _none_commit(*_: object) -> tuple[str, str]:
    return "", "this gate was given no way to sit beside the recorded build"


def _none_sitting(*_: object) -> RecordedWord:
    return RecordedWord("", "this gate was given no way to sit beside the recorded build")


NO_LAUNCHERS = Launchers(_none_fresh, _none_commit, _none_sitting)


@final
class Gate:
    """Judges one run's measurements against the stored entries of its device, profile and world size."""

    def __init__(
        self,
        entries: Callable[[], Mapping[tuple[str, str], BaselineEntry]],
        provenance: Mapping[str, str],
        mode: GateMode,
        rootdir: Path,
        gate_memory: bool,
        accept: Callable[[str], str] = lambda test: "pytest ... --accel-reset-history -k <this test>",
        verbose: bool = False,
        quiet: Callable[[float, float, Callable[[], bool] | None], tuple[bool, float]] | None = None,
        drifts: Mapping[tuple[str, str], NightDrift] | None = None,
        setup_causes: Mapping[str, tuple[str, str]] | None = None,
        environment_changes: Callable[[str], str] = lambda digest: "",
        launchers: Launchers = NO_LAUNCHERS,
        card: str | None = None,
    ) -> None:
        self._entries = entries  # loaded lazily: a corrupt file is reported by whoever loads it first
        self._card = card  # this process's card (an xdist worker's): its own recordings judge it (``on_card``)
        # provenance field -> (why this run's setup is what it is, how to restore the baseline's): see run_gate
        self._setup_causes = setup_causes or {}
        # the recordings' environment digest -> what changed since, in a few words ("" where not kept)
        self._environment_changes = environment_changes
        self._children_differ = ""  # why this run's children run in another environment than it, once one did
        self._launchers = launchers
        self._provenance = provenance
        self._mode = mode
        self._rootdir = rootdir
        self._gate_memory = gate_memory
        self._accept = accept  # test id -> the command that records it anew, pasteable as printed
        self._verbose = verbose  # -v: the failure says the whole reasoning too
        self.refuted = 0  # suspects a fresh process refuted (measured unchanged or faster), so far in this run
        # (target share of others, budget s, whether the state is settled now) -> (quiet?, s waited);
        # None: never wait
        self._quiet = quiet
        self.waits: list[Waited] = []  # figures that waited for quiet, in this run
        self._pooled: tuple[tuple[float, float] | None] | None = None  # the file's pooled run spread, once
        self.drifts = drifts or {}  # (test, metric) -> its drift between nights in the history (--accel-history)
        self._tests: tuple[str | None, str | None] = (None, None)  # (the test judged before this one, this one)
        self.sittings: list[RecordedWord] = []  # sittings beside a recorded build, in this run

    def judge(
        self,
        test: str,
        measurement: Measurement,
        policy: VerdictPolicy,
        remeasure: Callable[[], Measurement],
        state_now: Callable[[], Mapping[str, float]] = dict,
    ) -> GateResult:
        """Judge ``measurement`` of ``test``, confirming a suspected regression before it fails.
        ``state_now``: the state probes read now (empty: not known), for a wait for quiet."""
        mode = self._mode
        if test != self._tests[1]:
            self._tests = (self._tests[1], test)
        entry = on_card(self._entries().get((test, measurement.name)), self._card)
        # Recording too: a recording that reads regressed is not merged (plugin/finish.py), so that word must be
        # believable as a failure would be; only a suspect pays for it.
        confirmations = mode.confirmations
        if self._pooled is None:
            self._pooled = (pooled_run_spread([e.run_medians for e in self._entries().values()]),)
        pooled = self._pooled[0]

        def judged(taken: Measurement) -> GateResult:
            return run_gate(
                taken, entry, policy, self._provenance, remeasure, confirmations, self._gate_memory, pooled,
                reconfirm=not mode.one_reading, night_drift=self.drifts.get((test, measurement.name)),
                setup_causes=self._setup_causes,
            )  # fmt: skip

        gate = judged(measurement)
        short = gate.time.abstention
        if entry is not None and short is not None and short.waits and self._quiet is not None and not mode.update:
            settle = _Settle(shift_from(entry.run_states, policy, measurement.state), state_now, policy.state_limit)
            gate = self._after_quiet(test, gate, entry, policy.foreign_cpu_margin, settle, lambda: judged(remeasure()))
        tolerance = policy.tolerance if gate.tolerance is None else gate.tolerance
        if mode.fresh_process is not None and not mode.update:
            if gate.time.outcome is Outcome.REGRESSED:
                time, asked = self._confirm_in_fresh_process(test, measurement.name, gate.time, tolerance)
                gate = replace(gate, time=time, fresh=asked)
            elif gate.time.outcome is Outcome.IMPROVED:  # no storm rule: a refuted speedup fails nothing
                fresh = self._fresh(test, measurement.name)
                gate = replace(gate, time=with_fresh_confirmation(gate.time, fresh, tolerance), fresh=fresh)
        if entry is not None and mode.recorded is not None and worth_a_sitting(gate.time, tolerance):
            gate = self._beside_recorded(test, measurement.name, gate, entry, mode.recorded, tolerance)
        gate = with_energy(gate, entry, policy.energy_tolerance, remeasure, 0 if mode.update else confirmations)
        why = self._fails(gate.outcome, gate.time)
        return replace(gate, failure=None if why is None else self._message(test, gate, entry, why), baseline=entry)

    def _after_quiet(
        self,
        test: str,
        gate: GateResult,
        entry: BaselineEntry,
        margin: float,
        settle: _Settle,
        again: Callable[[], GateResult],
    ) -> GateResult:
        """A figure that abstained for a cause that may pass, judged ``again`` (measured anew) once other
        processes use no more of the host than its recordings saw (plus ``margin``) and the state probes
        are back within what they saw (``settle``), within what is left of the run's waiting budget.

        Another job that leaves (a build, a test run) then costs a wait instead of the figure; one that
        stays leaves the abstention as it was, saying that it waited.
        """
        assert self._quiet is not None
        recorded = max((state[FOREIGN_CPU] for state in entry.run_states if FOREIGN_CPU in state), default=0.0)
        quiet, seconds = self._quiet(recorded + margin, self._wait_left(), settle)
        if not quiet:
            self.waits.append(Waited(test, seconds, None))
            still = f" (the state probes last read: {settle.unsettled})" if settle.unsettled else ""
            said = f"waited {seconds:.0f} s for quiet, in vain{still}" if seconds else _WAIT_SPENT
            return replace(gate, time=replace(gate.time, reason=f"{gate.time.reason}; {said}"))
        result = again()
        self.waits.append(Waited(test, seconds, result.time.outcome))
        waited = f"measured again after waiting {seconds:.0f} s for quiet (the first time: {gate.time.reason})"
        return replace(result, time=replace(result.time, reason=f"{result.time.reason}; {waited}"))

    def _confirm_in_fresh_process(
        self, test: str, metric: str, suspect: Verdict, tolerance: float
    ) -> tuple[Verdict, FreshVerdict | None]:
        """The verdict after the fresh process's word on a suspect (and that word), unless this run already
        showed it cannot be trusted."""
        assert self._mode.fresh_process is not None
        if self.refuted >= REFUTED_LIMIT:
            said = (
                f"{suspect.reason}; not judged: {self.refuted} earlier suspects of this run were refuted by a "
                "fresh process, so this process's figures carry a bias of their own (--accel-strict fails it)"
            )
            why = Abstention(f"{self.refuted} suspects refuted by fresh processes", _AGAIN, cause=Cause.BIASED_PROCESS)
            return Verdict(Outcome.NOISY, "time", said, ratio=suspect.ratio, normalized=suspect.normalized,
                           detectable=suspect.detectable, sight=suspect.sight, abstention=why), None  # fmt: skip
        fresh = self._fresh(test, metric)
        verdict = with_fresh_confirmation(suspect, fresh, tolerance)
        # Refuted: the fresh process measured and disagreed. One that abstained (its machine state not
        # covered), could not tell or could not run said nothing of this process's bias: counting those
        # made three confirmed slowdowns "noisy" beside a job that had left (docs/studies/quiet-wait).
        if verdict.outcome is Outcome.UNCHANGED or fresh.outcome is Outcome.IMPROVED:
            self.refuted += 1
        return verdict, fresh

    def _beside_recorded(
        self, test: str, metric: str, gate: GateResult, entry: BaselineEntry, settings: ChildSettings, tolerance: float
    ) -> GateResult:
        """A suspect after its recorded build was measured beside this tree (judgement.recorded_build), within what is
        left of the run's minutes for such sittings."""
        find = self._launchers.recorded_commit
        commit, why_not = find(entry, self._provenance, self._rootdir, self._environment_changes)
        left = self._mode.recorded_minutes - sum(word.seconds for word in self.sittings) / 60
        if commit and self._children_differ:  # both builds of a sitting would run without what this run has
            commit, why_not = "", f"{_CHILDREN_DIFFER}: {self._children_differ}"
        if not commit:
            word = RecordedWord("", why_not)
        elif left < _LEAST_SITTING_MINUTES:
            word = RecordedWord(
                commit, f"the run's {self._mode.recorded_minutes:g} minutes for such sittings were spent"
            )
        else:
            word = self._launchers.beside_recorded(test, metric, commit, self._rootdir, settings, tolerance, left)
            self.sittings.append(word)
        time = with_recorded_word(gate.time, word, tolerance)
        judged = gate.time.outcome is Outcome.NOISY and time.outcome is not Outcome.NOISY
        return replace(gate, time=time, recorded=word, judged_beside=judged)

    def _wait_left(self) -> float:
        """Seconds left of this run's budget of waiting for quiet."""
        return max(self._mode.quiet_wait_seconds - sum(w.seconds for w in self.waits), 0.0)

    def _fresh(self, test: str, metric: str) -> FreshVerdict:
        """The fresh process's word on ``test``, measured after the test this run judged before it (where
        the recordings measured it too; docs/studies/first-in-process). It waits for quiet as this run
        does, within what is left of this run's budget, and its wait counts against that budget: a fresh
        process that met the gather probe in one of its bursts abstained twice on a real slowdown
        (docs/studies/quiet-wait, run 6)."""
        assert self._mode.fresh_process is not None
        left = self._wait_left() if self._quiet is not None else 0.0
        settings = self._mode.fresh_process.with_ini("accel_quiet_wait_seconds", f"{left:.0f}")
        environment = self._provenance.get(ENVIRONMENT_PROVENANCE)
        fresh = self._launchers.fresh(test, metric, self._rootdir, settings, self._tests[0], environment)
        self._children_differ = self._children_differ or (fresh.detail if fresh.other_environment else "")
        if fresh.waited:
            self.waits.append(Waited(test, fresh.waited, fresh.outcome))
        return fresh

    def _fails(self, outcome: Outcome, time: Verdict) -> str | None:
        """Why an outcome fails its test under the run's mode, or None."""
        mode = self._mode
        if mode.update:
            return None  # recording new baselines: report, do not fail
        if outcome is Outcome.REGRESSED:
            return "regressed"
        if time.abstention is not None and time.abstention.setup and not mode.allow_setup_mismatch:
            return "not judged: the setup differs from the baseline's (--accel-allow-setup-mismatch passes it)"
        if outcome is Outcome.NOISY and mode.strict:
            return "noisy (and --accel-strict is set)"
        if outcome is Outcome.NEW and mode.require_baseline:
            return "no baseline (and --accel-require-baseline is set)"
        if outcome is Outcome.NEW and mode.strict:
            return "not judged: nothing comparable to judge it against (and --accel-strict is set)"
        return None

    def _message(self, test: str, gate: GateResult, entry: BaselineEntry | None, why: str) -> str:
        """The failure block: the headline, then one fact a line (see ``failure_lines``), the command last."""
        lines = failure_lines(test, gate, entry, why, self._provenance, self._verbose)
        if gate.time.abstention is not None and gate.time.abstention.setup:
            return "\n".join(lines)  # the baseline is good: recording over it in this setup would bury it
        return "\n".join([*lines, f"  {RECORD_HINT}: {self._accept(test)}"])
