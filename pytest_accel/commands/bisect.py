"""``pytest-accel bisect``: from a range that got slower to the commit that did it, as ``ab`` sittings.

The range runs from a good commit to a bad one (first-parent history: the commits a branch's nights
saw). A first sitting measures the bad commit against the good one: the tests it calls regressed
are searched (``judgement/bisection.py``), every step an ``ab`` sitting of one commit against the
search's anchor. A step that stays inconclusive is measured again, longer (pairs and minutes
doubled, ``tries`` times in all), never taken for good or bad; a commit that cannot be measured
(it does not build, import or collect) is skipped and named. Each culprit is then measured once more
against the commit before it, profiled: its own change and which operators moved.

Exit codes as ``ab``'s: 0 the range did not get slower; 1 it did (the culprit named, or the range it
was narrowed to when the budget ran out); 125 the first sitting could not tell; 2 bad input or a good
commit that cannot be measured; 130 interrupted.
"""

from __future__ import annotations

import math
import re
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, final

from pytest_accel.commands.ab import ABSettings, Sitting, sit
from pytest_accel.commands.absides import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_REGRESSED,
    EXIT_USAGE,
    ABError,
    git,
)
from pytest_accel.core.measurement import short_names
from pytest_accel.core.operator_table import NOTHING_MOVED
from pytest_accel.core.outcomes import Outcome
from pytest_accel.core.units import format_change
from pytest_accel.judgement.bisection import Bisection, Finding, Judged
from pytest_accel.judgement.paired import SequentialPlan
from pytest_accel.judgement.results import load_results
from pytest_accel.judgement.verdict import VerdictRecord
from pytest_accel.outputs.history_store import HistoryError, result_paths
from pytest_accel.outputs.pages import markdown_table
from pytest_accel.storage.files import encode, write_atomically

__all__ = [
    "Bisect",
    "BisectSettings",
    "Reading",
    "document",
    "last_good_night",
    "regressed_tests",
    "report",
    "run_bisect",
]

BISECT_SCHEMA = 1


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "pairs": self.pairs,
        }


def _readings(sitting: Sitting) -> dict[str, Reading]:
    """Per test: regressed when any of its metrics (or its peak memory) regressed; decided only when all were."""
    readings: dict[str, Reading] = {}
    for (test, _), track in sorted(sitting.tracks.items()):
        verdict = track.verdict
        outcome = Outcome.REGRESSED if track.regressed else verdict.outcome
        reading = Reading(outcome, verdict.ratio, verdict.low, verdict.high, len(track.log_ratios))
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
        self.change: dict[str, float] = {}  # per test: the ratio its search looks for (the range's, then a rest's)
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
        self, kind: str, base: int, head: int, tests: Sequence[str], minutes: float, pairs: int, operators: bool = False
    ) -> tuple[Sitting | None, dict[str, Reading]]:
        """One ``ab`` sitting of ``head`` against ``base`` for ``tests`` (all, before the first is known).

        An ``ABError`` of the head (exit 125: it does not import or collect) returns (None, {}); one of
        the base is the user's problem and passes through.
        """
        others = [a for test in self.tests if test not in tests for a in ("--deselect", test)]
        plan = replace(self.settings.plan, max_pairs=max(pairs, self.settings.plan.min_pairs))
        if kind in ("range", "rest"):  # "did it get slower?": one-sided, as a step's question (``split``)
            plan = replace(plan, not_slower_than=plan.tolerance)
        settings = ABSettings(
            pytest_args=(*self.settings.pytest_args, *others),
            base=self.commits[base],
            head=self.commits[head],
            plan=plan,
            plans={test: self.split(test, plan) for test in tests} if kind == "search" else {},
            max_minutes=minutes,
            out=self.settings.out / f"{len(self.log.sittings) + 1:02d}-{kind}-{self.commits[head][:9]}",
            cwd=self.top,
            operators=operators,
            reuse=self.settings.reuse,
            min_rounds=self.settings.min_rounds,
            measure_seconds=self.settings.measure_seconds,
        )
        began = time.monotonic()
        print(
            f"pytest-accel bisect: sitting {len(self.log.sittings) + 1} ({kind}): {self.commits[head][:9]} "
            f"(commit {head} of {len(self.commits) - 1}) against {self.commits[base][:9]}, "
            f"{len(tests) or 'every'} test(s), {minutes:.1f} minutes at most",
            file=sys.stderr,
            flush=True,
        )
        try:
            sitting, _, _ = sit(settings)
        except ABError as error:
            if error.exit_code != EXIT_INCONCLUSIVE:
                raise
            note = str(error).splitlines()[0]
            self.log.add(kind, self.commits[base], self.commits[head], None, {}, time.monotonic() - began, note)
            return None, {}
        readings = _readings(sitting)
        self.log.add(kind, self.commits[base], self.commits[head], sitting, readings, time.monotonic() - began)
        return sitting, readings

    def split(self, test: str, plan: SequentialPlan) -> SequentialPlan:
        """A search step's plan for ``test``: good once the interval's slow end lies within half the change
        searched for (log scale; never below the tolerance), whatever its fast end; bad as ``ab`` calls regressed.

        A step asks on which side of the change a commit lies, not whether it moved by 5% either way:
        the math decode kernel of the 8 forward SDPA tests, unchanged, read 0.984 [0.952 .. 1.017] after
        40 pairs against the good commit, still "inconclusive" by ab's two-sided ±5% (docs/studies/bisect).
        A commit that carries part of a change is placed by which half it is nearer; the rest is measured
        after (``Bisection``).
        """
        half = math.sqrt(self.change.get(test, 1.0)) - 1
        return replace(plan, not_slower_than=max(plan.tolerance, half))

    def measure(self, kind: str, base: int, head: int, tests: Sequence[str]) -> dict[str, Reading] | None:
        """Readings of ``tests``: longer sittings (pairs and minutes doubled) while some stay undecided,
        ``tries`` in all or until the budget ends. None: the head could not be measured at all."""
        minutes, pairs = self.settings.step_minutes, self.settings.plan.max_pairs
        readings: dict[str, Reading] = {}
        undecided = list(tests)
        for _ in range(self.settings.tries):
            if self._left() <= 0:
                break
            sitting, said = self._sitting(kind, base, head, undecided, min(minutes, self._left() / 60), pairs)
            if sitting is None:
                return readings or None
            readings.update(said)
            undecided = [t for t in undecided if t not in readings or readings[t].judged is Judged.UNDECIDED]
            if not undecided or not self.tests:
                break
            minutes, pairs = minutes * 2, pairs * 2
        return readings

    def first(self) -> list[str]:
        """The bad commit against the good one, every test of the selection: the tests that regressed."""
        readings = self.measure("range", 0, len(self.commits) - 1, ())
        if readings is None:
            raise ABError(f"--bad {self.settings.bad}: could not be measured (see {self.settings.out})", EXIT_USAGE)
        self.tests, self.whole = tuple(sorted(readings)), readings
        undecided = [t for t, r in readings.items() if r.judged is Judged.UNDECIDED]
        if undecided:  # measured longer, as a step would be
            self.whole.update(self.measure("range", 0, len(self.commits) - 1, undecided) or {})
        regressed = [test for test, reading in self.whole.items() if reading.judged is Judged.BAD]
        self.change = {test: self.whole[test].ratio or 1.0 for test in regressed}
        return regressed

    def search(self, bisection: Bisection) -> None:
        while (step := bisection.next_step()) is not None:
            if self._left() <= 0:
                self.stopped = f"--max-minutes {self.settings.max_minutes:g} reached"
                return
            readings = self.measure(step.kind, step.anchor, step.commit, step.tests)
            if readings is None:
                bisection.unmeasurable_commit(step.commit, self.log.sittings[-1]["note"])
                if step.kind == "rest":  # the bad commit was measured at first: a passing failure
                    bisection.record(step, {})
                continue
            bisection.record(step, {test: r.judged for test, r in readings.items()})
            if step.kind == "rest":  # a later step of the change: its search looks for what is left
                self.change.update({t: r.ratio or 1.0 for t, r in readings.items() if r.judged is Judged.BAD})

    def explain(self, bisection: Bisection) -> None:
        """Each exact culprit against the commit before it, profiled when asked: its own change and operators."""
        wanted: dict[tuple[int, int], list[str]] = {}
        for test, findings in bisection.findings.items():
            for finding in findings:
                if finding.exact:
                    wanted.setdefault((finding.last_good, finding.culprit), []).append(test)
        for (before, culprit), tests in sorted(wanted.items()):
            if self._left() <= 0:
                return
            sitting, readings = self._sitting(
                "culprit",
                before,
                culprit,
                tests,
                min(self.settings.step_minutes, self._left() / 60),
                self.settings.plan.max_pairs,
                operators=self.settings.operators,
            )
            for test in tests:
                lines: tuple[str, ...] = ()
                if sitting is not None:
                    lines = next((t.operators for (name, _), t in sitting.tracks.items() if name == test), ())
                if test in readings:
                    self.evidence[(test, culprit)] = (readings[test], lines)


_SITTING_FOLDER = re.compile(r"^\d{2,}-(range|search|rest|culprit)-[0-9a-f]{9}$")


def _prepare_out(out: Path) -> None:
    """``--out`` holds only bisect's own files: its answer and a folder per sitting, removed before a new bisect."""
    if out.exists() and not out.is_dir():
        raise ABError(f"--out {out}: exists and is not a folder")
    if not out.is_dir():
        return
    ours = [p for p in out.iterdir() if p.name in ("bisect.json", "bisect.md") or _SITTING_FOLDER.match(p.name)]
    if foreign := sorted(p.name for p in out.iterdir() if p not in ours):
        raise ABError(
            f"--out {out}: holds files bisect did not write ({', '.join(foreign[:3])}); choose another folder"
        )
    for path in ours:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def _range(top: Path, good: str, bad: str) -> tuple[str, ...]:
    """The good commit and every first-parent commit after it up to the bad one, oldest first."""

    def resolve(option: str, rev: str) -> str:
        try:
            return git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        except ABError:
            raise ABError(f"{option} {rev!r}: not a revision of the repository at {top}") from None

    good_sha, bad_sha = resolve("--good", good), resolve("--bad", bad)
    try:
        git(top, "merge-base", "--is-ancestor", good_sha, bad_sha)
    except ABError:
        raise ABError(f"--good {good} is not an ancestor of --bad {bad}: no range between them") from None
    after = git(top, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{good_sha}..{bad_sha}")
    if not after:
        raise ABError(f"--good {good} and --bad {bad} are the same commit: nothing to bisect")
    return (good_sha, *after.split())


def regressed_tests(path: Path) -> list[str]:
    """The tests a result file calls regressed in time or memory (``ResultsError`` names a bad file)."""
    return sorted(_regressed(load_results(path).verdicts))


def _regressed(verdicts: Mapping[tuple[str, str], VerdictRecord | None]) -> set[str]:
    """Tests slower (or fatter) than their baseline: what a bisect by time can search; a change of what ran
    alone is not (its own record says which operators changed)."""
    return {
        test
        for (test, _), v in verdicts.items()
        if v is not None
        and (v.time.outcome is Outcome.REGRESSED or (v.memory is not None and v.memory.outcome is Outcome.REGRESSED))
    }


def last_good_night(history: Path, result_path: Path, tests: Sequence[str]) -> str:
    """The commit of the newest night of ``history``, on the result file's device and before it, that measured
    ``tests`` and regressed none of them: where a bisect of that file's regressions starts."""
    tonight = load_results(result_path)
    nights = []
    for path in result_paths(history):
        night = load_results(path)
        commit = night.provenance.get("commit", "")
        if night.device_key != tonight.device_key or not commit or (tonight.date and night.date >= tonight.date):
            continue
        measured = {test for test, _ in night.measurements}
        if set(tests) <= measured and not set(tests) & _regressed(night.verdicts):
            nights.append((night.date, path.name, commit))
    if not nights:
        raise HistoryError(
            f"{history}: no night on {tonight.device_key} before {tonight.date or result_path.name} measured "
            f"{', '.join(tests)} without a regression: give --good REV"
        )
    return max(nights)[2]


def _label(bisect: Bisect, index: int) -> str:
    sha = bisect.commits[index]
    return f'{sha[:9]} "{bisect.subjects[sha]}"'


def _finding_lines(bisect: Bisect, bisection: Bisection) -> list[str]:
    """Per culprit (or narrowed range): its tests, each test's change over the range and at the culprit."""
    lines: list[str] = []
    by_suspects: dict[tuple[int, ...], list[tuple[str, Finding]]] = {}
    for test, findings in sorted(bisection.findings.items()):
        for finding in findings:
            by_suspects.setdefault(finding.suspects, []).append((test, finding))
    names = dict(zip(bisect.tests, short_names(list(bisect.tests)), strict=True))
    for suspects, found in sorted(by_suspects.items()):
        culprit = suspects[-1]
        if len(suspects) == 1:
            lines.append(f"culprit: {_label(bisect, culprit)}, for {len(found)} test(s):")
        else:
            lines.append(
                f"narrowed to {len(suspects)} commits, {bisect.commits[suspects[0]][:9]} .. "
                f"{bisect.commits[culprit][:9]} (some could not be judged), for {len(found)} test(s):"
            )
        rows = []
        for test, finding in found:
            own, operators = bisect.evidence.get((test, culprit), (None, ()))
            rest = {
                "good": "the whole change",
                "bad": "part of it: a later step follows",
                "undecided": "the rest undecided",
                "": "the whole change",
            }[finding.rest]
            rows.append(
                [
                    names.get(test, test),
                    bisect.whole[test].change if test in bisect.whole else "-",
                    own.change if own is not None else "-",
                    rest,
                ]
            )
        header = ["test", "good -> bad", "the culprit alone (its parent -> it)", "of the change"]
        lines.extend(markdown_table(header, rows).splitlines())
        still = []
        for test, _ in found:
            _, operators = bisect.evidence.get((test, culprit), (None, ()))
            if operators and operators[-1].strip() == NOTHING_MOVED:
                still.append(names.get(test, test))
            elif operators:
                lines.append(f"operators of {names.get(test, test)} (parent -> culprit):")
                lines.extend(f"    {line}" for line in operators)
        if still:
            lines.append(f"operators: {NOTHING_MOVED}, in {len(still)} test(s): {', '.join(still)}")
        lines.append("")
    return lines


def report(bisect: Bisect, bisection: Bisection | None, code: int) -> str:
    """The Markdown page: what was found, what could not be, and what it cost."""
    count = len(bisect.commits) - 1
    lines = [
        f"pytest-accel bisect: {count} commit(s) after good {_label(bisect, 0)}, up to bad {_label(bisect, count)}"
    ]
    if bisection is None or (not bisection.findings and not bisection.searches):
        undecided = [t for t, r in bisect.whole.items() if r.judged is Judged.UNDECIDED]
        if undecided:
            lines.append(
                f"could not tell whether the range got slower: {len(undecided)} test(s) undecided "
                f"({', '.join(undecided[:3])}); nothing was searched"
            )
        else:
            tolerance = f"{bisect.settings.plan.tolerance:.0%}"
            lines.append(
                f"no slowdown over the range: {len(bisect.whole)} test(s), none slower beyond {tolerance} (no culprit)"
            )
    else:
        lines.append("")
        lines.extend(_finding_lines(bisect, bisection))
        others = [t for t, r in bisect.whole.items() if r.judged is not Judged.BAD]
        if others:
            lines.append(
                f"not searched: {len(others)} other test(s) did not get slower over the range (see bisect.json)"
            )
        for test, (good, bad) in sorted(bisection.open_ranges().items()):
            lines.append(
                f"not pinned ({bisect.stopped}): {test}: between {_label(bisect, good)} (good) and "
                f"{_label(bisect, bad)} (bad), {bad - good - 1} commit(s) between them"
            )
    for index, why in sorted((bisection.unmeasurable if bisection else {}).items()):
        lines.append(f"skipped {_label(bisect, index)}: could not be measured ({why})")
    minutes = (time.monotonic() - bisect.started) / 60
    pairs = sum(s["pairs"] for s in bisect.log.sittings)
    lines.append(f"cost: {len(bisect.log.sittings)} sitting(s), {pairs} pair(s), {minutes:.1f} minutes; exit {code}")
    return "\n".join(lines) + "\n"


def document(bisect: Bisect, bisection: Bisection | None, code: int) -> dict[str, Any]:
    """The ``--json`` file: the range, every finding with its evidence, every sitting, the exit code."""
    findings = {}
    for test, found in sorted((bisection.findings if bisection else {}).items()):
        entries = []
        for finding in found:
            own, operators = bisect.evidence.get((test, finding.culprit), (None, ()))
            entries.append(
                {
                    **finding.to_dict(bisect.commits),
                    "subject": bisect.subjects[bisect.commits[finding.culprit]],
                    "culprit_alone": None if own is None else own.to_dict(),
                    "operators": list(operators),
                }
            )
        findings[test] = entries
    return {
        "schema": BISECT_SCHEMA,
        "good": bisect.commits[0],
        "bad": bisect.commits[-1],
        "commits": list(bisect.commits),
        "pytest_args": list(bisect.settings.pytest_args),
        "over_the_range": {test: reading.to_dict() for test, reading in sorted(bisect.whole.items())},
        "findings": findings,
        "not_pinned": {
            test: [bisect.commits[g], bisect.commits[b]]
            for test, (g, b) in sorted((bisection.open_ranges() if bisection else {}).items())
        },
        "skipped": {bisect.commits[i]: why for i, why in sorted((bisection.unmeasurable if bisection else {}).items())},
        "stopped": bisect.stopped,
        "sittings": bisect.log.sittings,
        "seconds": round(time.monotonic() - bisect.started, 1),
        "exit_code": code,
    }


def run_bisect(settings: BisectSettings) -> int:
    """The whole command; returns its exit code (see the module docstring)."""
    settings = replace(settings, out=(settings.cwd / settings.out).resolve())
    _prepare_out(settings.out)
    bisect = Bisect.of_repository(settings)
    print(
        f"pytest-accel bisect: {len(bisect.commits) - 1} commit(s) from {settings.good} to {settings.bad}",
        file=sys.stderr,
    )
    regressed = bisect.first()
    bisection: Bisection | None = None
    if not regressed:
        undecided = any(r.judged is Judged.UNDECIDED for r in bisect.whole.values())
        code = EXIT_INCONCLUSIVE if undecided or not bisect.whole else EXIT_OK
    else:
        bisection = Bisection(bisect.commits, regressed)
        bisect.search(bisection)
        bisect.explain(bisection)
        code = EXIT_REGRESSED
    text = report(bisect, bisection, code)
    settings.out.mkdir(parents=True, exist_ok=True)
    data = encode(document(bisect, bisection, code))
    write_atomically(settings.out / "bisect.json", data)
    if settings.json is not None:
        write_atomically(settings.json, data)
    (settings.out / "bisect.md").write_text(text, encoding="utf-8")
    if settings.markdown is not None:
        settings.markdown.write_text(text, encoding="utf-8")
    print(text)
    return code
