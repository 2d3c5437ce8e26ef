"""What ``--accel-update`` and ``--accel-stale`` decide from a run: the entries to record, the entries gone stale.

Pure: no torch, no pytest. The session hands in what the run measured and collected; the store
(baselines.py) writes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from pytest_accel.core.energy import of_result
from pytest_accel.core.measurement import Measurement
from pytest_accel.judgement.baselines import (
    BaselineEntry,
    BaselineStore,
    card_history,
    mode_provenance,
    run_history,
    state_history,
    time_history,
)

__all__ = ["orphaned_tests", "recorded_entries", "stale_lines", "stale_tests"]


def recorded_entries(
    measured: Iterable[tuple[str, Measurement]],
    previous: Mapping[tuple[str, str], BaselineEntry],
    provenance_now: Mapping[str, str],
    provenance: Mapping[str, str],
    reset: bool,
    now: str,
) -> list[BaselineEntry]:
    """One entry per (test, measurement): its figures, the recordings kept by ``run_history``,
    ``state_history`` and ``time_history`` (this one taken ``now``), and a tolerance someone set by hand
    in the previous entry (it survives a refresh)."""
    entries = []
    for test, m in measured:
        earlier = previous.get((test, m.name))
        entries.append(
            BaselineEntry(
                test=test,
                metric=m.name,
                unit=m.unit,
                items_per_call=m.items_per_call,
                samples=m.samples,
                probe_samples=m.probe_samples,
                run_medians=run_history(earlier, m, provenance_now, reset),
                run_states=state_history(earlier, m, provenance_now, reset),
                run_times=time_history(earlier, m, provenance_now, reset, now),
                run_cards=card_history(earlier, m, provenance_now, reset),
                energy_per_item=None if (energy := of_result(m.extra)) is None else energy.joules_per_item,
                peak_memory_bytes=m.peak_memory_bytes,
                tolerance=None if earlier is None else earlier.tolerance,
                memory_tolerance=None if earlier is None else earlier.memory_tolerance,
                provenance={**provenance, **mode_provenance(m)},  # graph / cold figures say so
                operators=m.operators,
            )
        )
    return entries


def stale_tests(recorded: Iterable[str], collected: Collection[str], rootpath: Path) -> list[str]:
    """The recorded tests that no longer exist, sorted: only those whose file was collected or is gone
    (a run of one file says nothing of the others)."""
    files = {nodeid.split("::", 1)[0] for nodeid in collected}

    def stale(test: str) -> bool:
        path = test.split("::", 1)[0]
        return test not in collected and (path in files or not (rootpath / path).exists())

    return sorted({test for test in recorded if stale(test)})


def stale_lines(
    store: BaselineStore,
    where: tuple[str, str, int],
    recorded: Collection[str],
    collected: Collection[str],
    rootpath: Path,
    prune: bool,
) -> list[str]:
    """``--accel-stale``: a line per stale test of the file at ``where`` (device key, profile, world size);
    ``--accel-prune`` (``prune``) also removes their entries from it."""
    tests = stale_tests(recorded, collected, rootpath)
    if prune and tests:
        store.prune(*where, {test for test in recorded if test not in tests})
    verb = "removed" if prune else "stale"
    return [f"accel: {verb}: {test}" for test in tests] or [f"accel: no stale entries in {store.path_for(*where)}"]


def orphaned_tests(
    baselined: Iterable[str], collected: Collection[str], new: Iterable[str]
) -> list[tuple[str, tuple[str, ...]]]:
    """Baselined tests that no longer exist (not ``collected``, selected or not) while a test of their file ran
    with no baseline of its own (``new``): renamed, or a parametrization id changed. (the orphan, the new tests
    of its file), sorted: its baseline judges nothing now, and the new test passes as "new"."""
    new_by_file: dict[str, list[str]] = {}
    for test in new:
        new_by_file.setdefault(test.split("::", 1)[0], []).append(test)
    return sorted(
        (test, tuple(sorted(new_by_file[test.split("::", 1)[0]])))
        for test in set(baselined)
        if test not in collected and test.split("::", 1)[0] in new_by_file
    )
