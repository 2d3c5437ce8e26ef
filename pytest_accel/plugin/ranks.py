"""Under torchrun: a test that fails on one rank fails on every rank, naming the rank.

Registered by the session only in a multi-rank job. After each perf test's call phase, the ranks
exchange their outcomes through the coordinator; a failure anywhere turns every rank's report into
a failure that names the failing rank, so that rank 0's report (the one that is printed and
written) tells the truth about the whole job; and no rank ends its session before every rank has.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import final

import pytest

from pytest_accel.engine.distributed import Coordinator, RankFailure

__all__ = ["RankAgreement"]


@final
class RankAgreement:
    """The pytest hooks of a multi-rank run."""

    def __init__(self, coordinator: Coordinator) -> None:
        self._coordinator = coordinator

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Post this rank's failures at once; agree on the call phase's outcome with every rank."""
        report: pytest.TestReport = yield
        if "throughput" not in getattr(item, "fixturenames", ()):
            return report
        rank = self._coordinator.world.rank
        if report.failed:
            self._coordinator.post_failure(item.nodeid, f"{report.when} failed: {_summary(report)}")
        if report.when != "call" and not report.failed:
            return report
        if report.when != "call":
            return report  # a setup failure: posted above; other ranks see it while they wait
        try:
            outcomes = self._coordinator.exchange(item.nodeid, "outcome", report.outcome)
        except RankFailure as failure:
            if not report.failed:
                report.outcome = "failed"
                report.longrepr = f"failed on another rank: {failure}"
            return report
        failed = [r for r, outcome in enumerate(outcomes) if outcome == "failed" and r != rank]
        if failed and not report.failed:
            report.outcome = "failed"
            report.longrepr = f"this test failed on rank(s) {failed}; see their output (rank {rank} passed)"
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """No rank leaves before every rank has finished its tests: torchrun ends the whole job when the
        first rank exits, which would cut off the others' reports of a failure."""
        try:
            self._coordinator.exchange("session", "finished", "")
        except RankFailure as failure:
            # Exit non-zero: torchrun then stops the job's other workers (a hung rank would otherwise
            # keep the job alive as long as it hangs), and the job fails naming the rank.
            print(f"accel: rank {self._coordinator.world.rank}: {failure}", file=sys.stderr)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _summary(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message)[:300]  # "RuntimeError: boom"
    text = str(report.longreprtext).strip().splitlines()
    return text[-1][:300] if text else "no message"
