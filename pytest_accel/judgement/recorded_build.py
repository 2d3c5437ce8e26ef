"""The recorded build measured beside this one: the last word on a suspect against stored baselines.

A stored figure cannot tell the code's slowdown from the host's: on the 2-core VMs the memory-bound
kernels' level moved against the matmul reference within an hour of their recordings, some by more
than the tolerance, with no state probe reading the move (docs/studies/spaced-recordings), and a
fresh process of the same build reads the same moved level. The build that was recorded can be
measured again, now, beside this one: when the baseline names a clean commit of this repository and
nothing else of the environment changed since (torch, CUDA, the Habana plugin, the device model), a
regression the gate and the fresh process confirmed, or a figure the gate left unjudged while it
read slower (the machine's state, another job, two processes apart), is measured as a
``pytest-accel ab`` sitting of that commit against this tree, in alternating fresh processes, so both
builds meet the same host. The test fails only when the sitting says regressed; when it says
unchanged, what moved since the recordings was the host. This module weighs the sitting's word;
``sittings/recorded_build.py`` holds it.

Not possible, and then the verdict stands on the earlier evidence, saying why: a baseline taken
with local changes, a commit this clone does not hold (a shallow checkout), or an environment that
changed or cannot be shown unchanged (a torch upgrade, a library rebuilt, a plugin on ``PYTHONPATH``,
a variable: a sitting runs both builds in this run's environment, so it would carry the change on both
sides and call it "not the code"; the stored figure alone judges it, and the failure names the change), or a run
whose children do not run in its environment (a plugin object given to ``pytest.main()``: a fresh process said so,
and both builds of a sitting would run without it: docs/studies/plants-beside).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import final

from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Verdict
from pytest_accel.core.units import format_change
from pytest_accel.judgement.comparison import Comparison
from pytest_accel.judgement.paired import PairedVerdict
from pytest_accel.judgement.verdict import BesideRecorded

__all__ = ["RecordedWord", "with_recorded_word", "word_from_comparison", "worth_a_sitting"]


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


def word_from_comparison(comparison: Comparison, test: str, metric: str, commit: str) -> RecordedWord:
    """The sitting's word on ``metric`` of ``test``, from the comparison ``ab`` wrote."""
    verdict = comparison.verdict_for(test, metric)
    if verdict is None:
        return RecordedWord(commit, f"the sitting measured no {metric!r} for the test")
    return RecordedWord(commit, _figures(verdict), verdict)


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
    left unjudged while it read slower than ``tolerance`` (or gave no reading: the machine's state, another job,
    two processes too far apart). Not a throttled device: both builds would meet its clock alike."""
    if verdict.outcome is Outcome.REGRESSED:
        return True
    short = verdict.abstention
    if verdict.outcome is not Outcome.NOISY or short is None or short.cause is Cause.THROTTLED:
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
