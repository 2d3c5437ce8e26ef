"""A figure's drift from night to night, read from the nightly history: how far unchanged code moves.

Three recordings made minutes apart show how far one process differs from the next, not how far the
host moves over hours and nights: on the 2-core VMs a launch-bound kernel read slower an hour after
three recordings that agreed closely (docs/studies/sight, docs/studies/drift). The nightly's history
holds the answer: each night is one process measuring the figure at another time. The spread of a
test's newest nights since its last change point (a change of code or host moves the level, which is
not drift) widens its verdict's between-run part like the recordings' own spread does, and the verdict
names it when it sets the sight. Pure: no torch, no pytest.

The newest two nights are left out: a change point needs three nights after it, so until then they
may be a regression's first nights, not drift (a regression's first two nights among steady ones
would widen the bound enough to pass its third). Once followed by two more nights at the old level, a
night that jumped counts in full: a kernel that jumps now and then (math SDPA at SD3 256 px read well
slower, unchanged, half an hour after three recordings that agreed closely; docs/studies/drift) has
exactly the drift a verdict must allow for, which a robust spread would discount as an outlier.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import final

from pytest_accel.judgement.history import MIN_SEGMENT, change_points
from pytest_accel.judgement.policy import TOLERANCE

__all__ = ["DRIFT_NIGHTS", "MIN_NIGHTS", "SEARCHED_NIGHTS", "UNSETTLED", "NightDrift", "night_drift", "night_drifts"]

# The newest nights looked at for change points, and of those after the last one the newest used: a
# fortnight of nights covers weekly patterns (another team's jobs on Mondays) and forgets old hosts.
SEARCHED_NIGHTS = 30
DRIFT_NIGHTS = 14
# Fewer nights give an SD with too few degrees of freedom to widen anything by (as a single recording's).
MIN_NIGHTS = 3
# The newest nights that cannot yet be told from the start of a new level (a change point needs
# MIN_SEGMENT nights after it).
UNSETTLED = MIN_SEGMENT - 1


@final
@dataclass(frozen=True)
class NightDrift:
    """The SD of a figure's log (its relative SD) over ``nights`` nights of unchanged level."""

    spread: float
    nights: int
    normalized: bool  # the nights' figures are relative to the reference kernel (else seconds)


def night_drift(series: Sequence[float], normalized: bool, tolerance: float = TOLERANCE) -> NightDrift | None:
    """The drift of a figure's nightly series (oldest first): the SD of its logs over the newest nights after
    its last change point but the ``UNSETTLED`` newest, at most ``DRIFT_NIGHTS``; None when fewer than
    ``MIN_NIGHTS`` are left."""
    searched = [value for value in series[-SEARCHED_NIGHTS:] if value > 0 and math.isfinite(value)]
    points = change_points(searched, tolerance)
    level = searched[points[-1].index :] if points else searched
    nights = level[:-UNSETTLED][-DRIFT_NIGHTS:]
    if len(nights) < MIN_NIGHTS:
        return None
    return NightDrift(statistics.stdev(math.log(value) for value in nights), len(nights), normalized)


def night_drifts(
    figures: Mapping[tuple[str, str], Sequence[tuple[float, bool]]], tolerance: float = TOLERANCE
) -> dict[tuple[str, str], NightDrift]:
    """Each measurement's drift from its nights' ``(compared figure, normalized)``, oldest first. Only the nights
    measured as the newest was (relative to the reference kernel, or not) are one series."""
    drifts = {}
    for key, nights in figures.items():
        if not nights:
            continue
        normalized = nights[-1][1]
        drift = night_drift([value for value, kind in nights if kind == normalized], normalized, tolerance)
        if drift is not None:
            drifts[key] = drift
    return drifts
