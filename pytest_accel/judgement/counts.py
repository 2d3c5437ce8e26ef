"""Counted work on disk, one run's count verdicts (``rules/count.py`` judges each), and what a test's fixture
does with them (``CountPlan``, ``counted``).

A count that grew fails its test even where time passed or could not judge (another job, an unsteady
host): counts do not see the host. One that stayed while time regressed is said under the time failure,
which stands: the same instructions do not prove the same speed (threads, waiting, a slower memory
system, another process).

Files: ``<root>/counts/<count key>/<profile>[-w<N>].json``, kept by the entry store that keeps the
baselines (storage/entries.py: atomically, under a lock, only the counted entries rewritten). The key
is the device key, the ISA valgrind let torch dispatch to, and valgrind's version: what changes a count
without any change of code. The torch build, Python and every library are not in it: a slower torch
is a change to be caught, not another key. Each entry keeps its recordings (``MAX_RUN_HISTORY``),
oldest first. Pure: no torch, no pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, final

from pytest_accel.core import wording
from pytest_accel.core.counts import Count
from pytest_accel.core.outcomes import Outcome
from pytest_accel.core.validation import Invalid
from pytest_accel.judgement.baselines import MAX_RUN_HISTORY
from pytest_accel.judgement.policy import VerdictPolicy
from pytest_accel.judgement.rules.count import CountVerdict, judge_count
from pytest_accel.judgement.structures import RECORD_HINT
from pytest_accel.judgement.verdict import VerdictRecord
from pytest_accel.storage.entries import EntryFiles

__all__ = ["CountGate", "CountPlan", "CountStore", "count_key", "counted"]

_FOLDER = "counts"
Recordings = tuple[Count, ...]


def count_key(device_key: str, isa: str, valgrind: str) -> str:
    """The folder a device's counts are kept under: ``cpu-amd-epyc-f25m1-2c-avx2-valgrind3.19.0``."""
    return f"{device_key}-{isa}-valgrind{valgrind}"


def _recordings(test: str, metric: str, data: object, where: str) -> Recordings:
    place = f"entries[{test!r}][{metric!r}]"
    if not isinstance(data, list) or not data:
        raise Invalid(place, "expected a non-empty list of counts")
    return tuple(Count.from_json(item, f"{place}[{index}]") for index, item in enumerate(data))


@final
class CountStore:
    """The counted work under a baseline root: ``<root>/counts/<key>/<profile>[-w<N>].json``."""

    __slots__ = ("_files", "root")

    def __init__(self, baselines_root: Path) -> None:
        self.root = Path(baselines_root) / _FOLDER
        self._files: EntryFiles[Recordings] = EntryFiles(self.root, _recordings, "count key")

    def path_for(self, key: str, profile: str, world_size: int = 1) -> Path:
        return self._files.path_for(key, profile, world_size)

    def load(self, key: str, profile: str, world_size: int = 1) -> dict[tuple[str, str], Recordings]:
        """The recordings of one file by (test, metric); empty when there is none. A bad one: ``StoreError``."""
        return self._files.load(key, profile, world_size)

    def update(self, key: str, profile: str, world_size: int, counts: Iterable[tuple[str, str, Recordings]]) -> Path:
        """Write the given (test, metric, recordings), keeping every other entry."""
        given = {(test, metric): [count.to_json() for count in recordings] for test, metric, recordings in counts}
        return self._files.update(key, profile, world_size, given)


@final
class CountGate:
    """One run's counts: each judged against its recordings, and kept for ``--accel-update``."""

    def __init__(
        self,
        counts: Mapping[tuple[str, str], Count],
        stored: Callable[[], Mapping[tuple[str, str], Recordings]],
        missing: Mapping[tuple[str, str], str],
        problem: str | None,
    ) -> None:
        self.counts = counts
        self._stored = stored
        self.missing = missing
        self.problem = problem  # why nothing was counted
        self.verdicts: dict[tuple[str, str], CountVerdict] = {}

    def judge(self, test: str, metric: str, policy: VerdictPolicy) -> CountVerdict | str:
        """The verdict of one measurement's count; why it has none when it was not counted."""
        now = self.counts.get((test, metric))
        if now is None:
            return self.problem or self.missing.get((test, metric)) or "the counting process did not count it"
        verdict = judge_count(self._stored().get((test, metric), ()), now, policy)
        self.verdicts[(test, metric)] = verdict
        return verdict

    def recorded_again(self) -> list[tuple[str, str, Recordings]]:
        """Every count of this run appended to its recordings, for ``--accel-update``."""
        stored = self._stored()
        return [
            (test, metric, (*stored.get((test, metric), ()), now)[-MAX_RUN_HISTORY:])
            for (test, metric), now in self.counts.items()
        ]


@final
@dataclass(frozen=True)
class CountPlan:
    """Whether a test's work is counted in this run, and who judges it."""

    test: str = ""
    judge: Callable[[str], CountVerdict | str] | None = None  # metric -> its verdict, or why it was not counted
    # In the counting process: (fn, synchronize, metric) -> None, counts fn's calls (engine/counting.py)
    count: Callable[[Callable[[], Any], Callable[[], None], str], None] | None = None
    key: str = ""  # the count key (judgement/counts.py)
    accept: str = ""  # the command that records it anew
    strict: str | None = None  # why a figure not counted fails its test (--accel-strict); None: it passes
    recording: bool = False  # --accel-update: the counts are recorded, their verdicts reported, not enforced


def counted(
    plan: CountPlan | None, metric: str, record: VerdictRecord, failure: str | None
) -> tuple[VerdictRecord, str | None]:
    """The record with its count verdict, and the failure with what the count says."""
    if plan is None or plan.judge is None:
        return record, failure
    verdict = plan.judge(metric)
    if isinstance(verdict, str):
        missing = CountVerdict(Outcome.ERROR, wording.not_counted(verdict))
        record = replace(record, count=missing)
        if plan.strict is not None and not plan.recording:
            failure = _joined(failure, wording.count_not_judged(metric, missing.reason, plan.strict))
        return record, failure
    record = replace(record, count=verdict)
    if verdict.fails and not plan.recording:
        grew = wording.count_grew(plan.test.rpartition("::")[2], plan.key, verdict.reason, verdict.moved)
        return record, _joined(failure, f"{grew}\n  {RECORD_HINT}: {plan.accept}")
    if failure is not None and record.time.outcome is Outcome.REGRESSED and verdict.outcome is Outcome.UNCHANGED:
        failure = _joined(failure, wording.count_same_work(verdict.reason))
    return record, failure


def _joined(failure: str | None, more: str) -> str:
    return more if failure is None else f"{failure}\n{more}"
