"""A bisect's sittings: each step an ``ab`` sitting of one commit against an anchor, measured longer while
undecided (each longer sitting carrying on the shorter ones' pairs: one sequential test per step), within
the bisect's clock; and the log of every sitting for its answer (``pytest_accel.commands.bisect`` runs the
command and writes the answer)."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, final

from pytest_accel.commands.ab import ABSettings, Key, Sitting, deselected, sit
from pytest_accel.commands.absides import EXIT_INCONCLUSIVE, EXIT_USAGE, ABError, commit_of, git
from pytest_accel.core.outcomes import Outcome
from pytest_accel.core.units import format_change
from pytest_accel.judgement.bisection import Bisection, Judged
from pytest_accel.judgement.paired import SequentialPlan

__all__ = ["Bisect", "BisectSettings", "Reading"]
_LEAST_SECONDS = 60.0  # no sitting starts with less of the budget left: one pair of 8 SDPA tests took 30-45 s


@final
@dataclass(frozen=True)
class BisectSettings:
    pytest_args: tuple[str, ...]
    good: str
    bad: str
    plan: SequentialPlan = field(default_factory=SequentialPlan)
    step_minutes: float = 10.0  # a step's first sitting; each longer try doubles it (and its pairs)
    tries: int = 3  # sittings per step at most, while tests stay inconclusive
    max_minutes: float = 120.0  # the whole bisect: no sitting starts past it
    out: Path = Path(".pytest-accel-bisect")
    json: Path | None = None
    markdown: Path | None = None
    operators: bool = True  # profile each culprit against the commit before it
    cwd: Path = field(default_factory=Path.cwd)
    reuse: int = 5
    min_rounds: int = 10
    measure_seconds: float | None = None
    count: bool = False  # each sitting decides by the work counted (ab --count): one run per side, no retries


@final
@dataclass(frozen=True)
class Reading:
    """What one sitting said of one test: its outcome and change (head over base) with the interval."""

    outcome: Outcome
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    pairs: int = 0

    @property
    def change(self) -> str:
        if self.ratio is None or self.low is None or self.high is None:
            return self.outcome.value
        return format_change(self.ratio, self.low, self.high)

    @property
    def judged(self) -> Judged:
        if self.outcome is Outcome.REGRESSED:
            return Judged.BAD
        return Judged.GOOD if self.outcome in (Outcome.UNCHANGED, Outcome.IMPROVED) else Judged.UNDECIDED

    @property
    def compared(self) -> bool:
        """Whether both sides measured it: a test only one side has, or that failed on one, is not measured longer."""
        return self.outcome not in (Outcome.NEW, Outcome.GONE, Outcome.ERROR)

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "pairs": self.pairs,
        }


def _readings(sitting: Sitting) -> dict[str, Reading]:
    """Per test, its time: regressed when any of its metrics regressed; decided only when all were. Peak
    memory is ``ab``'s to judge, not a bisect's: the search looks for the commit that made a test slower."""
    readings: dict[str, Reading] = {}
    for (test, _), track in sorted(sitting.tracks.items()):
        verdict = track.verdict
        reading = Reading(verdict.outcome, verdict.ratio, verdict.low, verdict.high, len(track.log_ratios))
        earlier = readings.get(test)
        if (
            earlier is None
            or reading.judged is Judged.BAD
            or (earlier.judged is Judged.GOOD and reading.judged is Judged.UNDECIDED)
        ):
            readings[test] = reading
    return readings


@dataclass
class _Log:
    """Every sitting the bisect ran, for the report: what it measured, how long, what it said."""

    sittings: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        kind: str,
        base: str,
        head: str,
        sitting: Sitting | None,
        readings: Mapping[str, Reading],
        seconds: float,
        note: str = "",
    ) -> None:
        self.sittings.append(
            {
                "kind": kind,
                "base": base,
                "head": head,
                "pairs": 0 if sitting is None else sitting.pairs,
                "seconds": round(seconds, 1),
                "note": note,
                "tests": {test: reading.to_dict() for test, reading in sorted(readings.items())},
            }
        )


class Bisect:
    """One bisect: the range, its searches, the sittings run so far and the clock."""

    def __init__(
        self, settings: BisectSettings, top: Path, commits: Sequence[str], subjects: Mapping[str, str]
    ) -> None:
        self.settings, self.top, self.commits, self.subjects = settings, top, tuple(commits), dict(subjects)
        self.started = time.monotonic()
        self.log = _Log()
        self.tests: tuple[str, ...] = ()  # every test the first sitting measured
        self.whole: dict[str, Reading] = {}  # good -> bad, per test
        self.evidence: dict[tuple[str, int], tuple[Reading, tuple[str, ...]]] = {}
        # (test, culprit) -> the culprit measured again against its anchor, after its own sitting read it
        # not slower (None: that sitting could not measure it)
        self.rechecked: dict[tuple[str, int], Reading | None] = {}
        self.change: dict[str, Reading] = {}  # per test: the change its search looks for (the range's, then a rest's)
        self.stopped = ""

    @classmethod
    def of_repository(cls, settings: BisectSettings) -> Bisect:
        """The bisect of ``settings``' range in the repository around ``settings.cwd``."""
        top = Path(git(settings.cwd, "rev-parse", "--show-toplevel")).resolve()
        commits = _range(top, settings.good, settings.bad)
        return cls(settings, top, commits, {sha: git(top, "log", "-1", "--format=%s", sha) for sha in commits})

    def _left(self) -> float:
        return self.settings.max_minutes * 60 - (time.monotonic() - self.started)

    def _sitting(
        self,
        kind: str,
        base: int,
        head: int,
        tests: Sequence[str],
        minutes: float,
        try_: int | None = None,
        operators: bool = False,
        earlier: Mapping[Key, tuple[float, ...]] | None = None,
    ) -> tuple[Sitting | None, dict[str, Reading]]:
        """One ``ab`` sitting of ``head`` against ``base`` for ``tests`` (all, before the first is known):
        the ``try_``-th of a step, continuing the ``earlier`` pairs of the step's tries before it (None: a
        sitting of its own, the culprit's, of the first try's pairs).

        The step's tries are one sequential test: their looks follow one schedule up to the pairs of all
        ``tries`` sittings, and a try's end is a look only when it is the last. A try measured longer
        thus keeps what the shorter ones measured: an unchanged math decode kernel read 1.002, 0.997
        and 1.030 in three separate sittings of 20, 40 and 80 pairs, each undecided; the 140 pairs
        together, estimated from the three intervals, about 1.016 [0.984 .. 1.050] (docs/studies/bisect,
        "One step, one test").

        A head that cannot be measured at all (ab's exit 125: it does not build, import or collect)
        returns (None, {}), its reason logged; any other ``ABError`` passes through.
        """
        first = max(self.settings.plan.max_pairs, self.settings.plan.min_pairs)
        tries = 1 if try_ is None else self.settings.tries
        plan = replace(self.settings.plan, max_pairs=first * (2**tries - 1))
        if kind in ("range", "rest"):  # "did it get slower?": one-sided, as a step's question (``split``)
            plan = replace(plan, not_slower_than=plan.tolerance)
        settings = ABSettings(
            pytest_args=(*self.settings.pytest_args, *deselected(self.tests, tests)),
            base=self.commits[base],
            head=self.commits[head],
            plan=plan,
            plans={test: self.split(test, plan) for test in tests} if kind in ("search", "recheck") else {},
            max_minutes=minutes,
            out=self.settings.out / f"{len(self.log.sittings) + 1:02d}-{kind}-{self.commits[head][:9]}",
            cwd=self.settings.cwd,
            operators=operators,
            reuse=self.settings.reuse,
            min_rounds=self.settings.min_rounds,
            measure_seconds=self.settings.measure_seconds,
            count=self.settings.count,
            earlier=dict(earlier or {}),
            sitting_pairs=first * 2 ** (try_ or 0),
            final=try_ is None or try_ >= tries - 1,
        )
        began = time.monotonic()
        print(
            f"pytest-accel bisect: sitting {len(self.log.sittings) + 1} ({kind}): {self.commits[head][:9]} "
            f"(commit {head} of {len(self.commits) - 1}) against {self.commits[base][:9]}, "
            f"{f'{len(tests)} test(s)' if tests else 'all tests'}, {minutes:.1f} minutes at most",
            file=sys.stderr,
            flush=True,
        )
        try:
            sitting, _, _ = sit(settings)
        except ABError as error:
            if error.exit_code != EXIT_INCONCLUSIVE:
                raise
            note = str(error).splitlines()[0].removesuffix(" ends:").rstrip(";")
            self.log.add(kind, self.commits[base], self.commits[head], None, {}, time.monotonic() - began, note)
            return None, {}
        readings = _readings(sitting)
        note = f"continues {max(map(len, earlier.values()))} earlier pair(s)" if earlier else ""
        self.log.add(kind, self.commits[base], self.commits[head], sitting, readings, time.monotonic() - began, note)
        return sitting, readings

    def split(self, test: str, plan: SequentialPlan) -> SequentialPlan:
        """A search step's plan for ``test``: good once the interval's slow end lies below the middle (log
        scale) of no change and the lower bound of the change searched for, never below the tolerance,
        whatever its fast end; bad as ``ab`` calls regressed.

        One-sided: a step asks whether a commit is already slower, not whether it moved by the tolerance
        either way: an unchanged commit's math decode kernel stayed "inconclusive" two-sided after 40 pairs
        (docs/studies/bisect). The change's lower bound, not its estimate: the range sitting's figure was
        picked for looking slow, and a commit that carries all of a smaller true change must not read good.
        """
        change = self.change.get(test)
        low = change.low if change is not None and change.low is not None else 1.0
        return replace(plan, not_slower_than=max(plan.tolerance, math.sqrt(max(low, 1.0)) - 1))

    def measure(
        self, kind: str, base: int, head: int, tests: Sequence[str], first_try: int = 0
    ) -> tuple[dict[str, Reading] | None, bool]:
        """Readings of ``tests``, and whether the budget cut them short: longer sittings (pairs and minutes
        doubled each try, from try ``first_try``) while some stay undecided, ``tries`` in all. None: the
        head could not be measured at all. A test not compared (on one side only, or failing) is not retried."""
        minutes = self.settings.step_minutes * 2**first_try
        readings: dict[str, Reading] = {}
        undecided = list(tests)
        earlier: dict[Key, tuple[float, ...]] = {}
        for try_ in range(first_try, self.settings.tries):
            if self._left() < _LEAST_SECONDS:
                return readings, True
            sitting, said = self._sitting(
                kind, base, head, undecided, min(minutes, self._left() / 60), try_, earlier=earlier
            )
            if sitting is None:
                return readings or None, False
            readings.update(said)
            self.tests = self.tests or tuple(sorted(said))  # the range's first sitting: every test of the selection
            undecided = [t for t in said if said[t].judged is Judged.UNDECIDED and said[t].compared]
            if not undecided:
                break
            earlier = {key: tuple(t.log_ratios) for key, t in sitting.tracks.items() if key[0] in undecided}
            minutes *= 2
        cut = self._left() <= 0 and any(r.judged is Judged.UNDECIDED and r.compared for r in readings.values())
        return readings, cut

    def first(self) -> list[str]:
        """The bad commit against the good one, every test of the selection: the tests that regressed."""
        readings, _ = self.measure("range", 0, len(self.commits) - 1, ())
        if readings is None:
            raise ABError(f"--bad {self.settings.bad}: could not be measured (see {self.settings.out})", EXIT_USAGE)
        self.whole = readings  # ``measure`` named every test of the selection (``self.tests``) at its first sitting
        regressed = [test for test, reading in self.whole.items() if reading.judged is Judged.BAD]
        self.change = {test: self.whole[test] for test in regressed}
        return regressed

    def search(self, bisection: Bisection) -> None:
        """Steps until every search ends, the budget runs out, or a sitting fails for a reason not its head's."""
        while (step := bisection.next_step()) is not None:
            try:
                readings, cut = self.measure(step.kind, step.anchor, step.commit, step.tests)
            except ABError as error:  # the anchor's side, or git: not this commit's fault; say so and stop
                self.stopped = f"a sitting failed: {str(error).splitlines()[0]}"
                return
            if cut:  # a budget cut is not an answer: the step stays open, the range is what it narrowed to
                self.stopped = f"--max-minutes {self.settings.max_minutes:g} reached"
                return
            if readings is None and step.kind == "search":
                bisection.unmeasurable_commit(step.commit, self.log.sittings[-1]["note"])
                continue
            said = {test: r.judged for test, r in (readings or {}).items()}
            bisection.record(step, said)  # a rest that could not be measured is undecided
            if step.kind == "rest":  # a later step of the change: its search looks for what is left
                self.change.update({t: r for t, r in (readings or {}).items() if r.judged is Judged.BAD})

    def explain(self, bisection: Bisection) -> None:
        """Each exact culprit against the commit before it, profiled when asked: its own change and operators."""
        wanted: dict[tuple[int, int], list[str]] = {}
        for test, findings in bisection.findings.items():
            for finding in findings:
                if finding.exact and (test, finding.culprit) not in self.evidence:
                    wanted.setdefault((finding.last_good, finding.culprit), []).append(test)
        for (before, culprit), tests in sorted(wanted.items()):
            if self._left() < _LEAST_SECONDS:
                self.stopped = self.stopped or f"--max-minutes {self.settings.max_minutes:g} reached"
                return
            minutes = min(self.settings.step_minutes, self._left() / 60)
            try:
                sitting, readings = self._sitting(
                    "culprit", before, culprit, tests, minutes, operators=self.settings.operators
                )
            except ABError as error:
                self.stopped = f"a sitting failed: {str(error).splitlines()[0]}"
                return
            for test in tests:
                lines: tuple[str, ...] = ()
                if sitting is not None:
                    lines = next((t.operators for (name, _), t in sitting.tracks.items() if name == test), ())
                if test in readings:
                    self.evidence[(test, culprit)] = (readings[test], lines)

    def recheck(self, bisection: Bisection) -> bool:
        """Each exact culprit whose own sitting read it not slower, measured again against its anchor with
        the step's question, pairs and minutes doubled: read not slower again, it is withdrawn and its
        search resumes (``Bisection.withdraw``). Whether any culprit was withdrawn."""
        wanted: dict[tuple[int, int], list[str]] = {}
        for test, findings in bisection.findings.items():
            for finding in findings:
                own, _ = self.evidence.get((test, finding.culprit), (None, ()))
                doubted = finding.exact and own is not None and own.judged is Judged.GOOD
                if doubted and (test, finding.culprit) not in self.rechecked:
                    wanted.setdefault((finding.anchor, finding.culprit), []).append(test)
        withdrawn = False
        for (anchor, culprit), tests in sorted(wanted.items()):
            try:
                readings, cut = self.measure("recheck", anchor, culprit, tests, first_try=1)
            except ABError as error:
                self.stopped = f"a sitting failed: {str(error).splitlines()[0]}"
                return withdrawn
            for test in tests:
                reading = (readings or {}).get(test)
                self.rechecked[(test, culprit)] = reading
                if reading is not None and reading.judged is Judged.GOOD:
                    bisection.withdraw(test, culprit)
                    withdrawn = True
            if cut:
                self.stopped = f"--max-minutes {self.settings.max_minutes:g} reached"
                return withdrawn
        return withdrawn


def _range(top: Path, good: str, bad: str) -> tuple[str, ...]:
    """The good commit and every first-parent commit after it up to the bad one, oldest first."""

    good_sha, bad_sha = commit_of(top, good, "--good"), commit_of(top, bad, "--bad")
    try:
        git(top, "merge-base", "--is-ancestor", good_sha, bad_sha)
    except ABError:
        raise ABError(f"--good {good} is not an ancestor of --bad {bad}: no range between them") from None
    after = git(top, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{good_sha}..{bad_sha}")
    if not after:
        raise ABError(f"--good {good} and --bad {bad} are the same commit: nothing to bisect")
    return (good_sha, *after.split())
