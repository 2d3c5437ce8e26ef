"""Calibration beside the standard neighbour: how far another perf job moves each test.

A host shared with another job (a build, a second test run) slows a workload by more than any
state probe shows: threads wait for a core, caches and memory bandwidth are shared. How much
depends on the workload (a DataLoader with worker processes doubles, a cache-resident kernel
moves a few percent), so it is measured per test: ``--accel-calibrate`` runs the selected perf
tests beside *the standard neighbour*, a second copy of the same tests in another ``pytest``
process (launched detached), restarted whenever it ends. Each test's figure there, over its quiet
recordings' median, is stored with its baseline entry (``BaselineEntry.calibration``); the verdict
then judges a slowdown on a shared host only beyond that bound (``rules/neighbour.py``'s ``neighbour_bound``),
instead of abstaining on all.

The neighbour is another perf job on purpose, not a busy loop: a spinning thread takes a core and
little else, while the suite's own kernels compete for what real neighbours do (threads, caches,
memory bandwidth, allocation, worker processes). ``sittings/calibrate.py`` runs it; this module
turns what the tests read beside it into baseline entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from pytest_accel.core.measurement import CALIBRATED, FOREIGN_CPU, NOT_PROBE_TIMES, Measurement, display_name
from pytest_accel.core.stats import median
from pytest_accel.judgement.baselines import MAX_RUN_HISTORY, BaselineEntry

__all__ = ["calibrate_entries", "calibrated"]


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


def calibrated(previous: BaselineEntry, measurement: Measurement, margin: float) -> BaselineEntry | str:
    """``previous`` with ``measurement`` (taken beside the standard neighbour) added as a calibration run,
    or why it cannot be: a figure of another workload, or a neighbour that did not load the host.

    ``margin``: how much more of the host's CPU other processes must have used than in any quiet
    recording for the run to say anything about a neighbour (the verdict's foreign_cpu_margin).
    """
    share = measurement.state.get(FOREIGN_CPU)
    quiet = max((state[FOREIGN_CPU] for state in previous.run_states if FOREIGN_CPU in state), default=0.0)
    if bool(previous.probe_samples) != bool(measurement.probe_samples):
        return "the baseline and this run differ in whether they have probe samples"
    if previous.unit != measurement.unit or previous.items_per_call != measurement.items_per_call:
        return "the workload changed since the baseline was recorded: record it again first"
    if share is None or share <= quiet + margin:
        shown = "unknown" if share is None else f"{share:.0%}"
        return (
            f"the neighbour used {shown} of the host's CPU: not more than the quiet recordings' "
            f"{quiet:.0%} + {margin:.0%}"
        )
    # The run's state probes too: the state a neighbour puts the machine in is covered by this run's
    # figure, so a verdict beside a neighbour compares the state now with these as well (covered_states).
    probes = {name: s for name, s in measurement.state.items() if name not in NOT_PROBE_TIMES and s > 0}
    run = {**probes, CALIBRATED: median(measurement.compared_samples), FOREIGN_CPU: share}
    return replace(previous, calibration=(*previous.calibration, run)[-MAX_RUN_HISTORY:])
