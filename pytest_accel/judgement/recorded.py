"""The recorded build measured beside this one: the last word on a suspect against stored baselines.

A stored figure cannot tell the code's slowdown from the host's: on the 2-core VMs the memory-bound
kernels' level moved 5-13% against the matmul reference within an hour of their recordings, with
no state probe reading the move (docs/studies/spaced-recordings), and a fresh process of the same
build reads the same moved level. The build that was recorded can be measured again, now, beside
this one: when the baseline names a clean commit of this repository and nothing else of the
environment changed since (torch, CUDA, the Habana plugin, the device model), a regression the gate
and the fresh process confirmed, or a figure the gate left unjudged while it read slower (the
machine's state, a neighbour, two processes apart), is measured as a ``pytest-accel ab`` sitting of
that commit against this tree, in alternating fresh processes, so both builds meet the same host.
The test fails only when the sitting says regressed; when it says unchanged, what moved since the
recordings was the host.

Not possible, and then the verdict stands on the earlier evidence, saying why: a baseline taken
with local changes, a commit this clone does not hold (a shallow checkout), or an environment that
changed or cannot be shown unchanged (a torch upgrade, a library rebuilt, a plugin on ``PYTHONPATH``,
a variable: a sitting runs both builds in this run's environment, so it would carry the change on both
sides and call it "not the code"; the stored figure alone judges it, and the failure names the change).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import final

from pytest_accel.core.environment import ENVIRONMENT_PROVENANCE
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Verdict
from pytest_accel.core.units import format_change
from pytest_accel.engine.processes import GitError, git, run_child
from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.confirm import ChildSettings
from pytest_accel.judgement.paired import PairedVerdict
from pytest_accel.judgement.verdict import BesideRecorded
from pytest_accel.storage.files import StoreError, read_document

__all__ = [
    "RecordedWord", "measure_beside_recorded", "recorded_commit", "with_recorded_word", "worth_a_sitting",
]  # fmt: skip

# Beyond the sitting's own budget: the worktree's checkout, the workers' imports, the last pair.
_GRACE_SECONDS = 300


@final
@dataclass(frozen=True)
class RecordedWord:
    """What a sitting of the recorded build against this tree said of one figure, or why none was held."""

    commit: str  # the recorded commit ("" when none could be measured)
    detail: str  # the sitting's figures, or why there was no sitting
    verdict: PairedVerdict | None = None  # this tree against the recorded build; None: no sitting's word
    seconds: float = 0.0  # what the sitting took (0: none was held)

    def kept(self) -> BesideRecorded:
        """What reports keep of this word (``VerdictRecord.beside_recorded``)."""
        said = None if self.verdict is None else self.verdict.outcome
        return BesideRecorded(self.commit, said, self.detail, self.seconds / 60)


def recorded_commit(
    entry: BaselineEntry,
    provenance: Mapping[str, str],
    rootdir: Path,
    environment_changes: Callable[[str], str] = lambda digest: "",
) -> tuple[str, str]:
    """The commit the baseline's newest recording measured, when it can be measured again as it was:
    (commit, ""), or ("", why not). ``environment_changes``: what changed since the environment of that
    digest, in a few words ("diffusers 0.30.0 -> 0.31.0"), or "" where its record is not kept.

    A sitting runs both builds in this run's environment: it can only say "not the code" when that
    environment is the recordings' own, proved by equal digests (``core/environment.py``)."""
    commit = entry.provenance.get("commit", "")
    if not commit or commit == "unknown":
        return "", "the recordings name no commit"
    if commit.endswith("+dirty"):
        return "", f"recorded with local changes to {commit.removesuffix('+dirty')}"
    if changes := _environment_changes(entry.provenance, provenance):
        return "", f"{changes} since the recordings, which a checkout does not undo"
    then, now = entry.provenance.get(ENVIRONMENT_PROVENANCE), provenance.get(ENVIRONMENT_PROVENANCE)
    if then is None or now is None:
        whose = "the recordings do not" if then is None else "this run does not"
        return "", f"{whose} name their environment, so nothing proves it unchanged"
    if then != now:
        said = environment_changes(then) or f"environment {then} -> {now}"
        return "", f"the environment changed since the recordings: {said}"  # no checkout undoes it
    try:
        git(rootdir, "cat-file", "-e", f"{commit}^{{commit}}", timeout=30)
    except GitError:
        return "", f"commit {commit} is not in this clone (a shallow one?)"
    return commit, ""


# What a run's provenance says of the code and the moment rather than of its environment, and the environment's
# digest (weighed apart, to name what changed).
_NOT_ENVIRONMENT = frozenset({"commit", "date", "profile", "world_size", ENVIRONMENT_PROVENANCE})


def _environment_changes(then: Mapping[str, str], now: Mapping[str, str]) -> str:
    """'torch 2.12.1+cpu -> 2.13.0+cpu, python 3.11.7 -> 3.12.1' for what both name and differ in; '' if none."""
    changed = sorted(key for key in then.keys() & now.keys() - _NOT_ENVIRONMENT if then[key] != now[key])
    return ", ".join(f"{key} {then[key]} -> {now[key]}" for key in changed)


def measure_beside_recorded(
    test: str, metric: str, commit: str, rootdir: Path, settings: ChildSettings, tolerance: float, minutes: float
) -> RecordedWord:
    """An ``ab`` sitting of ``commit`` (the base) against the working tree (the head) for ``test`` alone, run
    with this run's device, profile and settings, within ``minutes``; its word on ``metric``."""
    started = time.monotonic()
    word = _sit(test, metric, commit, rootdir, settings, tolerance, minutes)
    return replace(word, seconds=time.monotonic() - started)


def _sit(
    test: str, metric: str, commit: str, rootdir: Path, settings: ChildSettings, tolerance: float, minutes: float
) -> RecordedWord:
    with tempfile.TemporaryDirectory(prefix="pytest-accel-recorded-") as scratch:
        out = Path(scratch) / "ab"
        command = [
            sys.executable, "-m", "pytest_accel", "ab", "--base", commit, "--out", str(out), "--no-operators",
            "--tolerance", f"{tolerance}", "--max-minutes", f"{minutes:g}",
            "--", test, *settings.arguments(baselines=False),
        ]  # fmt: skip
        log = Path(scratch) / "output.log"
        try:
            with log.open("w", encoding="utf-8") as sink:
                ran = run_child(command, rootdir, os.environ, sink, timeout=minutes * 60 + _GRACE_SECONDS)
        except OSError as error:
            return RecordedWord(commit, f"the sitting did not start: {error}")
        if ran.timed_out:
            return RecordedWord(commit, f"the sitting did not finish in {minutes:g} minutes")
        try:
            document = read_document(out / "comparison.json")
        except StoreError as error:
            return RecordedWord(commit, f"the sitting wrote an unreadable answer: {error}")
        if document is None:
            tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-2:]
            return RecordedWord(commit, f"the sitting wrote no answer (exit {ran.returncode}): {' '.join(tail)}")
        return _word_for(document, test, metric, commit)


def _word_for(document: object, test: str, metric: str, commit: str) -> RecordedWord:
    tests = document.get("tests") if isinstance(document, dict) else None
    for row in tests if isinstance(tests, list) else []:
        if isinstance(row, dict) and row.get("test") == test and row.get("metric") == metric:
            try:
                verdict = PairedVerdict.from_dict(row)
            except (KeyError, TypeError, ValueError) as error:
                return RecordedWord(commit, f"the sitting's answer for the test is unreadable: {error}")
            return RecordedWord(commit, _figures(verdict), verdict)
    return RecordedWord(commit, f"the sitting measured no {metric!r} for the test")


def _figures(verdict: PairedVerdict) -> str:
    said = f"{verdict.outcome.value} after {verdict.pairs} pair{'s' if verdict.pairs != 1 else ''}"
    if verdict.ratio is not None and verdict.low is not None and verdict.high is not None:
        said = f"{format_change(verdict.ratio, verdict.low, verdict.high)}, {said}"
    return f"{said} ({verdict.reason})" if verdict.reason else said


_SAME = "the recorded build, measured beside this one, read the same"
_SLOWER_STILL = "the recorded build, measured beside this one, read slower still"
# Said of a figure the stored baseline read slower and its recorded build, beside it, did not (reports find them
# by VerdictRecord.host_moved). A sitting is held only in the recordings' own environment (recorded_commit), so
# what moved is the host.
_HOST_MOVED = "not the code: the host moved since the recordings (the environment is as recorded)"
_UNTOLD = "the recorded build beside this one could not tell"


def worth_a_sitting(verdict: Verdict, tolerance: float) -> bool:
    """Whether a sitting beside the recorded build could settle ``verdict``: a confirmed regression, or a figure
    left unjudged while it read slower than ``tolerance`` (or gave no reading: the machine's state, a neighbour,
    two processes too far apart). Not a throttled device: both builds would meet its clock alike."""
    if verdict.outcome is Outcome.REGRESSED:
        return True
    if (
        verdict.outcome is not Outcome.NOISY
        or verdict.abstention is None
        or verdict.abstention.why.startswith("throttled")
    ):
        return False
    return verdict.ratio is None or verdict.ratio > 1 + tolerance


def with_recorded_word(suspect: Verdict, word: RecordedWord, tolerance: float) -> Verdict:
    """A suspect (``worth_a_sitting``) after its recorded build was measured beside this tree: regressed when
    the sitting says so (a figure the stored baseline left unjudged then takes the sitting's figures);
    unchanged when the sitting finds this tree no slower than the recorded build beyond ``tolerance`` (the
    host moved since the recordings: the sitting could have seen a slowdown of ``tolerance``); noisy when it
    could not tell. Without a sitting the suspect stands as it was, saying why."""
    beside = f"commit {word.commit}" if word.commit else "the recorded build"
    paired = word.verdict
    if paired is None:
        return replace(suspect, reason=f"{suspect.reason}; not measured beside {beside}: {word.detail}")
    if paired.outcome is Outcome.REGRESSED and suspect.outcome is Outcome.REGRESSED:
        return replace(suspect, reason=f"{suspect.reason}; confirmed beside {beside} in one sitting: {word.detail}")
    if paired.outcome is Outcome.REGRESSED:
        return Verdict(
            Outcome.REGRESSED, "time", f"{suspect.reason}; judged beside {beside} in one sitting: {word.detail}",
            ratio=paired.ratio, low=paired.low, high=paired.high, normalized=suspect.normalized, detectable=tolerance,
        )  # fmt: skip
    if paired.outcome in (Outcome.UNCHANGED, Outcome.IMPROVED):
        read = _SAME if paired.outcome is Outcome.UNCHANGED else _SLOWER_STILL
        said = f"{read} ({beside}): {word.detail}: {_HOST_MOVED}"
        return replace(
            suspect, outcome=Outcome.UNCHANGED, reason=f"{suspect.reason}; {said}", detectable=tolerance, sight=None,
            abstention=None,
        )  # fmt: skip
    return replace(
        suspect,
        outcome=Outcome.NOISY,
        reason=f"{suspect.reason}; {_UNTOLD} ({beside}): {word.detail}; not judged",
        abstention=Abstention(
            _UNTOLD,
            f"measure the two longer: pytest-accel ab --base {word.commit} -- <this test>",
            cause=Cause.RECORDED_BUILD,
        ),
    )
