"""``pytest-accel bisect``: from a range that got slower to the commit that did it, as ``ab`` sittings.

The range runs from a good commit to a bad one (first-parent history: the commits a branch's nights
saw). A first sitting measures the bad commit against the good one: the tests it calls slower are
searched (``judgement/bisection.py``), every step an ``ab`` sitting of one commit against the
search's anchor (the good commit; for the rest of a change, the culprit before). A step that stays
undecided is measured again, longer (pairs and minutes doubled, ``tries`` sittings in all, each
carrying on the pairs of the ones before: one sequential test per step), never taken for good or
bad; a commit whose tests cannot be measured at all (it does not build, import or collect) is
skipped and named. Each culprit found exactly is then measured against the commit before
it, profiled: its own change and which operators moved. One that reads no slowdown there is measured
again against its anchor, longer; not slower again, it was a step's misreading: it is withdrawn, named
as such, and its search resumes after it. Time only: peak memory is ``ab``'s to judge.

Exit codes as ``ab``'s: 0 the range did not get slower, or there is nothing to bisect; 1 it did (the
culprit named, or the range narrowed when the budget ran out or a sitting failed); 125 the first
sitting could not tell; 2 bad input, a bad commit that cannot be measured, or a good one whose side
fails; 130 interrupted (what was found so far is written).
"""

from __future__ import annotations

import re
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_accel.commands.absides import (
    EXIT_INCONCLUSIVE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REGRESSED,
    ABError,
    commit_of,
    git,
)
from pytest_accel.commands.bisectsteps import Bisect, BisectSettings, Reading
from pytest_accel.core.measurement import short_names
from pytest_accel.core.operator_table import NOTHING_MOVED
from pytest_accel.judgement.bisection import Bisection, Finding, Judged
from pytest_accel.outputs.history_store import last_good_night, regressed_tests
from pytest_accel.outputs.pages import markdown_table
from pytest_accel.storage.files import encode, write_atomically

__all__ = [
    "Bisect",
    "BisectSettings",
    "Reading",
    "document",
    "from_night",
    "nothing_to_bisect",
    "report",
    "run_bisect",
]

BISECT_SCHEMA = 1
_SITTING_FOLDER = re.compile(r"^\d{2,}-(range|search|rest|culprit|recheck)-[0-9a-f]{9}$")


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


def from_night(settings: BisectSettings, results: Path, history: Path | None) -> BisectSettings | str:
    """``settings`` for the tests ``results`` calls regressed (added to the pytest arguments), from the newest
    earlier good night of ``history`` when given; or why there is nothing to bisect."""
    tests = regressed_tests(results)
    if not tests:
        return f"{results} has no regressed test: nothing to bisect"
    settings = replace(settings, pytest_args=(*settings.pytest_args, *tests))
    if history is None:
        return settings
    top = Path(git(settings.cwd, "rev-parse", "--show-toplevel")).resolve()
    bad = commit_of(top, settings.bad, "--bad")

    def ancestor(commit: str) -> bool:
        try:
            git(top, "merge-base", "--is-ancestor", commit, bad)
        except ABError:  # not an ancestor, or not in this clone
            return False
        return True

    good = last_good_night(history, results, tests, ancestor)
    print(f"pytest-accel bisect: the newest night that judged these tests unchanged measured {good}", file=sys.stderr)
    if git(top, "rev-parse", f"{good}^{{commit}}") == bad:
        return f"no commit since the last good night ({good[:9]}): the slowdown is not a change of this code"
    return replace(settings, good=good)


def nothing_to_bisect(settings: BisectSettings, why: str) -> int:
    """An answer without a sitting (exit 0), written where a bisect's answer would be."""
    text = f"pytest-accel bisect: {why}\n"
    settings = replace(settings, out=(settings.cwd / settings.out).resolve())
    _prepare_out(settings.out)
    write_answer(settings, text, {"schema": BISECT_SCHEMA, "nothing_to_bisect": why, "exit_code": EXIT_OK})
    print(text, end="")
    return EXIT_OK


def _label(bisect: Bisect, index: int) -> str:
    sha = bisect.commits[index]
    return f'{sha[:9]} "{bisect.subjects[sha]}"'


def _share(finding: Finding, bisect: Bisect, withdrawn: Sequence[Finding] = ()) -> str:
    """How much of the range's change a finding's culprit made, as far as the rest's sitting told (a search
    anchored at a withdrawn culprit, as good as the good commit, looked for the whole change)."""
    from_good = finding.anchor == 0 or any(w.culprit == finding.anchor for w in withdrawn)
    whole = "the whole change" if from_good else "the rest of the change"
    if finding.rest == "":
        return whole if finding.culprit == len(bisect.commits) - 1 else f"the rest not measured ({bisect.stopped})"
    shares = {"good": whole, "bad": "part of it: a later step follows", "undecided": "part or all: the rest undecided"}
    return shares[finding.rest]


def _short_names(bisect: Bisect) -> dict[str, str]:
    """Each test's name as the page shows it: what tells it from the other tests of the selection."""
    return dict(zip(bisect.tests, short_names(list(bisect.tests)), strict=True))


def _named_within(bisect: Bisect, suspects: tuple[int, ...], named: dict[int, int]) -> list[str]:
    """For a narrowed range, the culprits other tests' searches named inside it: where to look first, not
    an answer (in a quiet trial, docs/studies/bisect's quiet-4, the math decode kernel was narrowed to 4
    commits, the last of them the other 7 tests' culprit)."""
    inside = [(commit, named[commit]) for commit in suspects if commit in named]
    return [
        f"within it, {_label(bisect, commit)} is the culprit of {count} other test(s): likely the same change, "
        f"not shown to be; check: pytest-accel ab {bisect.commits[commit - 1][:9]} {bisect.commits[commit][:9]} "
        "-- <this test>"
        for commit, count in inside
    ]


def _finding_lines(bisect: Bisect, bisection: Bisection) -> list[str]:
    """Per culprit (or narrowed range): its tests, each test's change over the range and at the culprit."""
    lines: list[str] = []
    by_suspects: dict[tuple[int, ...], list[tuple[str, Finding]]] = {}
    for test, findings in sorted(bisection.findings.items()):
        for finding in findings:
            by_suspects.setdefault(finding.suspects, []).append((test, finding))
    names = _short_names(bisect)
    named = {suspects[0]: len(found) for suspects, found in by_suspects.items() if len(suspects) == 1}
    for suspects, found in sorted(by_suspects.items()):
        culprit = suspects[-1]
        if len(suspects) == 1:
            lines.append(f"culprit: {_label(bisect, culprit)}, for {len(found)} test(s):")
        else:
            lines.append(
                f"narrowed to {len(suspects)} commits, {bisect.commits[suspects[0]][:9]} .. "
                f"{bisect.commits[culprit][:9]} (some could not be judged), for {len(found)} test(s):"
            )
            lines.extend(_named_within(bisect, suspects, named))
        rows = []
        for test, finding in found:
            own, operators = bisect.evidence.get((test, culprit), (None, ()))
            rest = _share(finding, bisect, bisection.withdrawn.get(test, ()))
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
        alone = {test: _alone(bisect, test, finding) for test, finding in found}
        check = (
            f"check: pytest-accel ab {bisect.commits[found[0][1].last_good][:9]} {bisect.commits[culprit][:9]} "
            "-- <the same tests>"
        )
        doubted = [(test, finding) for test, finding in found if alone[test] is Judged.GOOD]
        if doubted and len(suspects) == 1:
            again = "; ".join(
                f"{names.get(test, test)} against {bisect.commits[finding.anchor][:9]}: {_again(bisect, test, culprit)}"
                for test, finding in doubted
            )
            lines.append(
                f"not slower alone: the culprit against its parent read no slowdown; measured again: {again}; {check}"
            )
        unsure = [names.get(test, test) for test, _ in found if alone[test] is Judged.UNDECIDED]
        if unsure and len(suspects) == 1:
            lines.append(
                f"undecided alone: the culprit against its parent could not tell, for {', '.join(unsure)}; the "
                f"steps before it read it slower; {check}"
            )
        lines.append("")
    return lines


def _again(bisect: Bisect, test: str, culprit: int) -> str:
    """What a doubted culprit read when measured again against its anchor (``Bisect.recheck``)."""
    if (test, culprit) not in bisect.rechecked:
        return f"not measured ({bisect.stopped or 'no time left'})"
    again = bisect.rechecked[(test, culprit)]
    return "could not be measured" if again is None else f"{again.change} ({again.outcome.value})"


def _dict_of(reading: Reading | None) -> dict[str, Any] | None:
    return None if reading is None else reading.to_dict()


def _withdrawn_lines(bisect: Bisect, bisection: Bisection) -> list[str]:
    """Culprits a step named that read not slower against their parent and again against their anchor."""
    names = _short_names(bisect)
    lines = []
    for test, withdrawn in sorted(bisection.withdrawn.items()):
        for finding in withdrawn:
            own, _ = bisect.evidence[(test, finding.culprit)]
            again = bisect.rechecked[(test, finding.culprit)]
            assert again is not None  # withdrawn only on a reading
            settled = bool(bisection.findings[test]) or test in bisection.searches
            lines.append(
                f"withdrawn: {_label(bisect, finding.culprit)} for {names.get(test, test)}: a step read it slower, "
                f"but against its parent it read {own.change} and again against "
                f"{bisect.commits[finding.anchor][:9]} {again.change}: a misreading; "
                + ("the search went on after it" if settled else "nothing else pinned for this test")
            )
    return lines


def _alone(bisect: Bisect, test: str, finding: Finding) -> Judged | None:
    """What the exact culprit against its parent said of ``test`` (None: not measured): the check on a
    step that misread a harmless commit as slower (docs/studies/bisect)."""
    own, _ = bisect.evidence.get((test, finding.culprit), (None, ()))
    return None if own is None or not finding.exact else own.judged


def _slower_alone(judged: Judged | None) -> bool | None:
    """The answer's ``slower_alone``: true (regressed), false (not slower), null (not measured, or undecided)."""
    return None if judged is None or judged is Judged.UNDECIDED else judged is Judged.BAD


def report(bisect: Bisect, bisection: Bisection | None, code: int) -> str:
    """The Markdown page: what was found, what could not be, and what it cost."""
    count = len(bisect.commits) - 1
    lines = [
        f"pytest-accel bisect: {count} commit(s) after good {_label(bisect, 0)}, up to bad {_label(bisect, count)}"
    ]
    if bisection is None or (not bisection.findings and not bisection.searches):
        undecided = [t for t, r in bisect.whole.items() if r.judged is Judged.UNDECIDED and r.compared]
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
        lines.extend(_withdrawn_lines(bisect, bisection))
        others = [t for t, r in bisect.whole.items() if r.judged is not Judged.BAD and r.compared]
        if others:
            lines.append(
                f"not searched: {len(others)} other test(s) did not get slower over the range (see bisect.json)"
            )
        for test, (good, bad) in sorted(bisection.open_ranges().items()):
            lines.append(
                f"not pinned ({bisect.stopped}): {test}: between {_label(bisect, good)} (good) and "
                f"{_label(bisect, bad)} (bad), {bad - good - 1} commit(s) between them"
            )
    if uncompared := sorted(t for t, r in bisect.whole.items() if not r.compared):
        named = ", ".join(f"{t} ({bisect.whole[t].outcome.value})" for t in uncompared[:3])
        lines.append(f"not compared: {len(uncompared)} test(s) measured on one side only, or failing: {named}")
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
                    "slower_alone": _slower_alone(_alone(bisect, test, finding)),
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
        "withdrawn": {
            test: [
                {
                    **finding.to_dict(bisect.commits),
                    "culprit_alone": bisect.evidence[(test, finding.culprit)][0].to_dict(),
                    "again": _dict_of(bisect.rechecked[(test, finding.culprit)]),
                }
                for finding in found
            ]
            for test, found in sorted((bisection.withdrawn if bisection else {}).items())
        },
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


def pin(bisect: Bisect, bisection: Bisection) -> None:
    """Search, measure each culprit against its parent, and recheck a culprit that read not slower there:
    one withdrawn, its search resumes, until nothing is withdrawn, the budget ends or a sitting fails."""
    bisect.search(bisection)
    bisect.explain(bisection)
    while not bisect.stopped and bisect.recheck(bisection):
        bisect.search(bisection)
        bisect.explain(bisection)


def run_bisect(settings: BisectSettings) -> int:
    """The whole command; returns its exit code (see the module docstring)."""
    settings = replace(settings, out=(settings.cwd / settings.out).resolve())
    bisect = Bisect.of_repository(settings)
    _prepare_out(settings.out)
    print(
        f"pytest-accel bisect: {len(bisect.commits) - 1} commit(s) from {settings.good} to {settings.bad}",
        file=sys.stderr,
    )
    regressed = bisect.first()
    bisection: Bisection | None = None
    interrupted = False
    if not regressed:
        undecided = any(r.judged is Judged.UNDECIDED and r.compared for r in bisect.whole.values())
        code = EXIT_INCONCLUSIVE if undecided or not bisect.whole else EXIT_OK
    else:
        bisection, code = Bisection(bisect.commits, regressed), EXIT_REGRESSED
        try:
            pin(bisect, bisection)
        except KeyboardInterrupt:  # what was found so far is still the answer, and is written
            bisect.stopped, interrupted = "interrupted", True
    text = report(bisect, bisection, code)
    write_answer(settings, text, document(bisect, bisection, code))
    print(text)
    return EXIT_INTERRUPTED if interrupted else code


def write_answer(settings: BisectSettings, text: str, answer: Mapping[str, Any]) -> None:
    """The page and the JSON answer, in ``--out`` and where ``--markdown`` and ``--json`` say."""
    settings.out.mkdir(parents=True, exist_ok=True)
    data = encode(answer)
    write_atomically(settings.out / "bisect.json", data)
    if settings.json is not None:
        write_atomically(settings.json, data)
    (settings.out / "bisect.md").write_text(text, encoding="utf-8")
    if settings.markdown is not None:
        settings.markdown.write_text(text, encoding="utf-8")
