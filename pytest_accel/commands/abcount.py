"""``ab --count``: two builds compared by the work counted, not by time.

One pytest process per side, each counting the selection under callgrind (``--accel-count
--benchmark-disable``): the base's counts recorded into the sitting's folder, the head's judged against
them by the count rule (``judgement/rules/count.py``), with the project's own policy. Counts repeat to a few
instructions in a million whatever the host's load (docs/studies/counted-work), so each test is decided at
once: no pairs, no sequential plan, nothing inconclusive but a test that could not be counted. A sitting's
"pair" is then the one run of each side. Pure apart from reading the runs' result files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import final

from pytest_accel.commands.absides import ProcessRun
from pytest_accel.commands.abtracks import Key
from pytest_accel.core.outcomes import Outcome
from pytest_accel.core.units import format_percent_change
from pytest_accel.judgement.paired import PairedVerdict
from pytest_accel.judgement.rules.count import CountVerdict

__all__ = ["COUNT_ARGS", "RECORD_ARGS", "Counted", "counted_tests", "instructions"]

COUNT_ARGS = ("--accel-count", "--benchmark-disable")  # each side's run: counted, not timed
RECORD_ARGS = ("--accel-update",)  # the base's: its counts recorded into the sitting's folder


@final
@dataclass(frozen=True)
class Counted:
    """One test and metric: its verdict as ``ab`` reports it, the count rule's verdict, the side that failed."""

    verdict: PairedVerdict
    count: CountVerdict | None = None
    failed_on: str = ""


def _failed(name: str, test: str, run: ProcessRun) -> Counted:
    return Counted(PairedVerdict(Outcome.ERROR, 1, reason=f"{name}: {test} failed (see {run.log})"), failed_on=name)


def counted_tests(base: ProcessRun, head: ProcessRun) -> dict[Key, Counted]:
    """Every test and metric either side measured: the head's count verdict against the base's recording.

    A head test that failed only because its count grew is a regression, not an error; one that failed
    otherwise, or whose base failed, is an error of that side; a count missing on either side is not judged
    (ERROR, with the count's own reason), never a pass."""
    measured = {
        name: dict(run.results.measurements) if run.results is not None else {}
        for name, run in (("base", base), ("head", head))
    }
    verdicts = head.results.verdicts if head.results is not None else {}
    recorded = base.results.verdicts if base.results is not None else {}
    tests: dict[Key, Counted] = {}
    for key in sorted(set(measured["base"]) | set(measured["head"])):
        test = key[0]
        record = verdicts.get(key)
        count = None if record is None else record.count
        if test in base.failed:
            tests[key] = _failed("base", test, base)
        elif key not in measured["head"]:
            tests[key] = Counted(PairedVerdict(Outcome.GONE, 1, reason="only the base has this test"))
        elif test in head.failed and (count is None or not count.fails):
            tests[key] = _failed("head", test, head)
        elif count is None:
            tests[key] = Counted(PairedVerdict(Outcome.ERROR, 1, reason="the head's run did not count it"))
        elif count.outcome is Outcome.NEW and key in measured["base"]:
            base_count = recorded.get(key)
            why = base_count.count.reason if base_count is not None and base_count.count is not None else ""
            tests[key] = Counted(PairedVerdict(Outcome.ERROR, 1, reason=f"base: {why or 'not counted'}"), count)
        elif count.outcome is Outcome.NEW:
            tests[key] = Counted(PairedVerdict(Outcome.NEW, 1, reason="only the head has this test"), count)
        elif count.outcome is Outcome.ERROR or count.instructions is None:
            tests[key] = Counted(PairedVerdict(Outcome.ERROR, 1, reason=f"head: {count.reason}"), count)
        else:
            then, now = count.instructions
            ratio = now / then if then > 0 else math.inf
            tests[key] = Counted(PairedVerdict(count.outcome, 1, ratio, ratio, ratio, count.reason), count)
    return tests


def instructions(count: CountVerdict | None) -> dict[str, str]:
    """The table's cells of a counted test: each side's instructions per call, and the change."""
    if count is None or count.instructions is None:
        return {"base": "-", "head": "-", "change": "-"}
    then, now = count.instructions
    change = format_percent_change(now / then) if then > 0 else "-"
    return {"base": f"{then:,.0f} instr/call", "head": f"{now:,.0f} instr/call", "change": change}
