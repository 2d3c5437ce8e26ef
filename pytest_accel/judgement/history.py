"""Change points in a figure's nightly history, found statistically. Pure: no torch, no pytest.

Binary segmentation: for a series, try every split into a left and a right part (each at least
MIN_SEGMENT long); take the split whose Mann-Whitney p-value is smallest; keep it if p < ALPHA
and the medians differ by more than the tolerance, then look for more change points on each side.
The first night of the right part is the night the change appeared. A fixed "N% worse than
yesterday" rule flags every noisy night; a change point needs a sustained shift.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import final

from pytest_accel.core.stats import mann_whitney_p, median

__all__ = ["ALPHA", "MIN_SEGMENT", "ChangePoint", "change_points"]

# 1% false-positive rate per accepted split: a nightly job with 50 figures sees one spurious
# candidate every other night before the tolerance filter removes most of them.
ALPHA = 0.01
# Three nights on each side at least. Even perfectly separated, the smallest p-values are 0.081 for
# 3 vs 3 nights, 0.030 for 4 vs 4, 0.012 for 5 vs 5, 0.0085 for 4 vs 8: a change shows up as a
# change point once about 6 nights of history on each side of it exist (per-night verdicts
# against the baseline catch it the first night).
MIN_SEGMENT = 3


@final
@dataclass(frozen=True)
class ChangePoint:
    """A sustained shift: from ``index`` on, the figure's median moved by ``ratio``."""

    index: int  # first point of the new level
    ratio: float  # median after / median before (> 1: larger)
    p_value: float


def change_points(values: Sequence[float], tolerance: float = 0.05) -> list[ChangePoint]:
    """All change points of ``values``, in order (see the module docstring)."""
    found: list[ChangePoint] = []
    _segment(list(values), 0, tolerance, found)
    return sorted(found, key=lambda point: point.index)


def _segment(values: list[float], offset: int, tolerance: float, found: list[ChangePoint]) -> None:
    if len(values) < 2 * MIN_SEGMENT:
        return
    best: tuple[float, int] | None = None
    for split in range(MIN_SEGMENT, len(values) - MIN_SEGMENT + 1):
        p = mann_whitney_p(values[:split], values[split:])
        if best is None or p < best[0]:
            best = (p, split)
    assert best is not None
    p_value, split = best
    ratio = median(values[split:]) / median(values[:split])
    if p_value >= ALPHA or abs(ratio - 1) <= tolerance:
        return
    found.append(ChangePoint(offset + split, ratio, p_value))
    _segment(values[:split], offset, tolerance, found)
    _segment(values[split:], offset + split, tolerance, found)
