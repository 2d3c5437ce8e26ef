"""Calibration beside the standard neighbour: how far another perf job moves each test.

A host shared with another job (a build, a second test run) slows a workload by more than any
state probe shows: threads wait for a core, caches and memory bandwidth are shared. How much
depends on the workload (a DataLoader with worker processes doubles, a cache-resident kernel
moves a few percent), so it is measured per test: ``--accel-calibrate`` runs the selected perf
tests beside *the standard neighbour*, a second copy of the same tests in another ``pytest``
process (launched detached), restarted whenever it ends. Each test's figure there, over its quiet
recordings' median, is stored with its baseline entry (``BaselineEntry.calibration``); the verdict
then judges a slowdown on a shared host only beyond that bound (``neighbour.neighbour_bound``),
instead of abstaining on all.

The neighbour is another perf job on purpose, not a busy loop: a spinning thread takes a core and
little else, while the suite's own kernels compete for what real neighbours do (threads, caches,
memory bandwidth, allocation, worker processes). ``sittings/calibrate.py`` runs it; this module
turns what the tests read beside it into baseline entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pytest_accel.core.measurement import Measurement, display_name
from pytest_accel.judgement.baselines import BaselineEntry, calibrated

__all__ = ["calibrate_entries"]

def calibrate_entries(
    measured: Iterable[tuple[str, Measurement]], previous: Mapping[tuple[str, str], BaselineEntry], margin: float
) -> tuple[list[BaselineEntry], list[str]]:
    """The baseline entries with this calibration run (test id, measurement) added, and a line for each
    measurement that was not added (no baseline to calibrate, or why ``calibrated`` refused it)."""
    entries: list[BaselineEntry] = []
    skipped: list[str] = []
    for test, measurement in measured:
        earlier = previous.get((test, measurement.name))
        shown = display_name(test, measurement.name)
        if earlier is None:
            skipped.append(f"{shown}: no baseline to calibrate: record it first (--accel-update)")
            continue
        result = calibrated(earlier, measurement, margin)
        if isinstance(result, str):
            skipped.append(f"{shown}: {result}")
        else:
            entries.append(result)
    return entries, skipped
