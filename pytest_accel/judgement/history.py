"""Change points in a figure's nightly history, found statistically. Pure: no torch, no pytest.

Binary segmentation: for a series, try every split into a left and a right part (each at least
MIN_SEGMENT long); take the split whose Mann-Whitney statistic is largest (its p-value the smallest,
told apart where p underflows); keep it if p < ALPHA
and the medians differ by more than the tolerance, then look for more change points on each side.
The first night of the right part is the night the change appeared. A fixed "N% worse than
yesterday" rule flags every noisy night; a change point needs a sustained shift.

Every split of a segment pools the same values, so one ranking serves them all: the rank sum of a
left part is a running sum, and the tie correction is the segment's. Each level costs one sort, not
one per split (1,000 nights: milliseconds, where a test per split took seconds); the p-values are
``mann_whitney_p``'s, exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import final

from pytest_accel.core.stats import median
from pytest_accel.judgement.policy import TOLERANCE

__all__ = ["ALPHA", "MIN_SEGMENT", "ChangePoint", "change_points", "split_p_values", "split_z_scores"]

# The false-positive rate per accepted split: a nightly job with 50 figures sees one spurious
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


def change_points(values: Sequence[float], tolerance: float = TOLERANCE) -> list[ChangePoint]:
    """All change points of ``values``, in order (see the module docstring)."""
    found: list[ChangePoint] = []
    _segment(list(values), 0, tolerance, found)
    return sorted(found, key=lambda point: point.index)


def split_p_values(values: Sequence[float]) -> list[float]:
    """``mann_whitney_p(values[:k], values[k:])`` for every k in 1 .. len - 1, from one ranking of ``values``."""
    return [min(1.0, math.erfc(z / math.sqrt(2.0))) for z in split_z_scores(values)]  # 2 * the normal tail


def split_z_scores(values: Sequence[float]) -> list[float]:
    """The Mann-Whitney z statistic (>= 0, continuity-corrected) of every split k in 1 .. len - 1.

    The split to take is chosen on z, not on p: beyond z = 38 the normal tail underflows to 0, and on
    a long clean history (2,000 nights, a noise-free step at night 1,500) many splits read p = 0,
    so taking the first of them put a false change point at night 1,380.
    """
    total = len(values)
    order = sorted(range(total), key=lambda index: values[index])
    ranks = [0.0] * total
    tie_term = 0.0
    start = 0
    while start < total:  # average ranks over runs of equal values, as mann_whitney_p ranks them
        end = start
        while end + 1 < total and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2.0 + 1.0
        tie_term += (end - start + 1) ** 3 - (end - start + 1)
        start = end + 1
    z_scores, rank_sum = [], 0.0
    for n in range(1, total):
        rank_sum += ranks[n - 1]
        m = total - n
        u = rank_sum - n * (n + 1) / 2.0
        variance = n * m / 12.0 * ((total + 1) - tie_term / (total * (total - 1)))
        if variance <= 0:
            z_scores.append(0.0)
            continue
        z_scores.append(max((abs(u - n * m / 2.0) - 0.5) / math.sqrt(variance), 0.0))  # 0.5: continuity correction
    return z_scores


def _segment(values: list[float], offset: int, tolerance: float, found: list[ChangePoint]) -> None:
    if len(values) < 2 * MIN_SEGMENT:
        return
    z_scores = split_z_scores(values)
    # The first split with the largest statistic (z_scores[k - 1] is the split at k): the smallest p-value,
    # told apart even where p underflows.
    split = max(range(MIN_SEGMENT, len(values) - MIN_SEGMENT + 1), key=lambda k: z_scores[k - 1])
    p_value = min(1.0, math.erfc(z_scores[split - 1] / math.sqrt(2.0)))
    ratio = median(values[split:]) / median(values[:split])
    if p_value >= ALPHA or abs(ratio - 1) <= tolerance:
        return
    found.append(ChangePoint(offset + split, ratio, p_value))
    _segment(values[:split], offset, tolerance, found)
    _segment(values[split:], offset + split, tolerance, found)
