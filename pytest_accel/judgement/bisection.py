"""Which commit of a range made a test slower: the search, apart from the sittings that measure it.

Pure logic: no torch, no pytest, no processes (``pytest_accel.commands.bisect`` runs the sittings).
The range is a list of commits, the good one first (index 0) and the bad one last. Each test has
its own search: a commit known good and one known bad, both judged against the same *anchor* (the
good commit, or the culprit a search found before), and the commits it could not judge. A step
measures one commit against an anchor for every test whose search would measure that commit
next, so tests that regressed together share sittings while their answers agree and part when
they do not.

- **Judged at a step**: ``BAD`` (regressed against the anchor), ``GOOD`` (unchanged or improved),
  ``UNDECIDED`` (the sitting made no claim after the runner's longer tries): never taken as either;
  the search goes round it, and the answer names it among the commits that could be the culprit.
  A commit that cannot be measured at all (does not build or import) is skipped for every test.
- **The culprit**: the first bad commit after the last good one, when no commit between them was
  left undecided or skipped; otherwise the search narrowed the culprit to those commits.
- **The rest of the change**: a culprit that is not the bad commit itself is measured against the
  bad commit. Slower still: the change came in more than one step, and a second search, anchored
  at the first culprit, finds the next (a change planted in two steps names both, docs/studies/bisect).
  Not slower: the culprit explains the whole change.
- **A withdrawn culprit**: one that read not slower against the commit before it and again, measured
  longer, against its anchor, was a step's misreading (a bimodal kernel once read a harmless commit
  as slower, docs/studies/bisect). It is withdrawn and its search resumes after it, unless a later
  finding of the test already starts there (the rest was slower: the next step was found from it).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, final

__all__ = ["Bisection", "Finding", "Judged", "Step"]


class Judged(enum.Enum):
    """What one step said of one test."""

    BAD = "bad"  # slower than the anchor: regressed
    GOOD = "good"  # not slower than the anchor: unchanged or improved
    UNDECIDED = "undecided"  # no claim, even measured longer; or the test failed at that commit


@final
@dataclass(frozen=True)
class Step:
    """One sitting to run: ``commit`` (an index of the range) against ``anchor``, for ``tests``.

    ``kind``: "search" (a commit between a search's good and bad ones) or "rest" (the bad commit
    against a culprit: is there more to the change than the culprit?).
    """

    kind: str
    anchor: int
    commit: int
    tests: tuple[str, ...]


@final
@dataclass(frozen=True)
class Finding:
    """A commit a search ended on: the first bad one, against ``anchor``, after the last good one.

    ``suspects``: the commits that could have made the change, oldest first; one (the culprit) when
    the search is exact, more when it had to go round commits it could not judge. ``rest``: what the
    bad commit read against this one ("good": the culprit explains the whole change; "bad": another
    step followed, found by the next finding; "undecided"; "" when the culprit is the bad commit).
    """

    anchor: int
    last_good: int
    suspects: tuple[int, ...]
    rest: str = ""

    @property
    def exact(self) -> bool:
        return len(self.suspects) == 1

    @property
    def culprit(self) -> int:
        """The first bad commit the search measured (the last of ``suspects``)."""
        return self.suspects[-1]

    def to_dict(self, commits: Sequence[str]) -> dict[str, Any]:
        return {
            "anchor": commits[self.anchor],
            "last_good": commits[self.last_good],
            "suspects": [commits[i] for i in self.suspects],
            "exact": self.exact,
            "rest": self.rest,
        }


@dataclass
class _Search:
    anchor: int
    good: int
    bad: int
    blocked: set[int] = field(default_factory=set)  # commits this test's steps left undecided


class Bisection:
    """The searches of every regressed test over one range (see the module docstring)."""

    def __init__(self, commits: Sequence[str], regressed: Iterable[str]) -> None:
        if len(commits) < 2:
            raise ValueError("a range needs a good and a bad commit")
        self.commits = tuple(commits)
        self.last = len(self.commits) - 1
        self.searches = {test: _Search(0, 0, self.last) for test in sorted(set(regressed))}
        self.findings: dict[str, list[Finding]] = {test: [] for test in self.searches}
        self.rest_due: dict[str, int] = {}  # test -> the culprit whose rest is still to be measured
        self.unmeasurable: dict[int, str] = {}  # commit index -> why no test could be measured there
        self.withdrawn: dict[str, list[Finding]] = {}  # test -> culprits found, then read not slower twice

    def _candidates(self, search: _Search) -> list[int]:
        return [i for i in range(search.good + 1, search.bad) if i not in search.blocked and i not in self.unmeasurable]

    def _settle(self) -> None:
        """Searches with nothing left to measure become findings; a culprit before the bad commit owes its rest."""
        for test, search in list(self.searches.items()):
            if self._candidates(search):
                continue
            suspects = tuple(i for i in range(search.good + 1, search.bad + 1) if i == search.bad or (
                i in search.blocked or i in self.unmeasurable))  # fmt: skip
            self.findings[test].append(Finding(search.anchor, search.good, suspects))
            del self.searches[test]
            if search.bad != self.last:
                self.rest_due[test] = search.bad

    def next_step(self) -> Step | None:
        """The step that serves the most tests next: a commit in the middle of their searches, or, once every
        search has ended, the bad commit against a culprit. None when nothing is left to measure."""
        self._settle()
        wanted: dict[tuple[int, int], list[str]] = {}
        for test, search in self.searches.items():
            candidates = self._candidates(search)
            middle = (search.good + search.bad) / 2
            commit = min(candidates, key=lambda i: (abs(i - middle), i))
            wanted.setdefault((search.anchor, commit), []).append(test)
        if wanted:
            (anchor, commit), tests = max(wanted.items(), key=lambda item: (len(item[1]), -item[0][1]))
            return Step("search", anchor, commit, tuple(tests))
        rests: dict[int, list[str]] = {}
        for test, culprit in self.rest_due.items():
            rests.setdefault(culprit, []).append(test)
        if rests:
            culprit = min(rests)
            return Step("rest", culprit, self.last, tuple(sorted(rests[culprit])))
        return None

    def record(self, step: Step, judged: Mapping[str, Judged]) -> None:
        """What ``step``'s sitting said of each of its tests (a test it did not say counts as undecided)."""
        for test in step.tests:
            said = judged.get(test, Judged.UNDECIDED)
            if step.kind == "rest":
                del self.rest_due[test]
                findings = self.findings[test]
                findings[-1] = replace(findings[-1], rest=said.value)
                if said is Judged.BAD:  # another step of the change lies between the culprit and the bad commit
                    self.searches[test] = _Search(step.anchor, step.anchor, self.last)
                continue
            search = self.searches[test]
            if said is Judged.BAD:
                search.bad = step.commit
            elif said is Judged.GOOD:
                search.good = step.commit
            else:
                search.blocked.add(step.commit)

    def withdraw(self, test: str, culprit: int) -> None:
        """``test``'s exact culprit read not slower twice after its search named it: withdrawn, and the
        search resumes after it (see the module docstring). A culprit that is the bad commit itself
        leaves nothing to resume: the range's change is then not pinned for that test."""
        findings = self.findings[test]
        finding = next(f for f in findings if f.exact and f.culprit == culprit)
        findings.remove(finding)
        self.withdrawn.setdefault(test, []).append(finding)
        found_from_it = any(f.anchor == culprit for f in findings)
        if not found_from_it and culprit != self.last and test not in self.searches:
            self.searches[test] = _Search(finding.anchor, culprit, self.last)

    def unmeasurable_commit(self, index: int, why: str) -> None:
        """A commit that could not be measured at all (it does not build, import or collect): every search skips it."""
        self.unmeasurable[index] = why

    def open_ranges(self) -> dict[str, tuple[int, int]]:
        """Each unfinished search's range as (last good, first bad): what a stopped bisect narrowed it to."""
        return {test: (s.good, s.bad) for test, s in self.searches.items()}
