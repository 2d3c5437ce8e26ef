"""A second change-point detector, in the style of Apache Otava (formerly Hunter), and the choice of detector.

Pure: no torch, no pytest. ``history.change_points`` (binary segmentation, Mann-Whitney) is the other.

Windowed means, t-tested (``windowed_change_points``)::

    candidates = {}
    for each window of WINDOW nights, stepping WINDOW // 2:
        bisect(window)                       # e-divisive means: the split that maximises
                                             #   n*m/(n+m) * (mean(left) - mean(right))**2,
                                             # kept if Welch's p < WINDOWED_ALPHA, then each side
    repeat:                                  # pruning over the whole series
        for each candidate: Welch p and median ratio of the segments either side (to its neighbours)
        drop the weakest if p >= WINDOWED_ALPHA or the ratio is within the tolerance
    until nothing is dropped

Windows keep the candidate search linear in the number of nights, and let an old change not mask a
new one; the pruning pass re-tests every candidate against its final neighbours, as Otava does. A
t-test on means is the most powerful test of a clean shift in normal noise, and the least robust to
an outlier night: on synthetic nights like this project's (log-normal noise, slow outlier nights)
segmentation found more shifts, sooner (docs/studies/history/README.md), so it stays the default.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from pytest_accel.core.stats import median, t_cdf
from pytest_accel.judgement.history import MIN_SEGMENT, ChangePoint, change_points
from pytest_accel.judgement.policy import TOLERANCE

__all__ = ["DEFAULT_DETECTOR", "DETECTORS", "WINDOW", "WINDOWED_ALPHA", "welch_p", "windowed_change_points"]

# Nights per window: wide enough that two segments of 15 nights each give a t-test power near 1 for a
# 10% shift at 3% night-to-night noise, narrow enough that a change is judged against the recent level
# (Otava's default is 50 points; nightly history moves more slowly than per-commit runs).
WINDOW = 30
# Welch's p-value a change point must stay under after pruning. Otava's default (0.001) is for
# per-commit series of hundreds of points; 0.01 matches ``history.ALPHA``, so the two detectors differ
# in their statistic, not in their error budget.
WINDOWED_ALPHA = 0.01


def welch_p(first: Sequence[float], second: Sequence[float]) -> float:
    """Two-sided p-value of Welch's t-test (unequal variances); 1.0 when neither side varies and the means tie."""
    n, m = len(first), len(second)
    if n < 2 or m < 2:
        raise ValueError("Welch's t-test needs two values a side")
    mean_first, mean_second = sum(first) / n, sum(second) / m
    var_first = sum((x - mean_first) ** 2 for x in first) / (n - 1)
    var_second = sum((x - mean_second) ** 2 for x in second) / (m - 1)
    standard_error = var_first / n + var_second / m
    if standard_error == 0:
        return 1.0 if mean_first == mean_second else 0.0
    t = (mean_second - mean_first) / math.sqrt(standard_error)
    df = standard_error**2 / (
        (var_first / n) ** 2 / max(n - 1, 1) + (var_second / m) ** 2 / max(m - 1, 1)
    )  # Welch-Satterthwaite
    return min(1.0, 2.0 * t_cdf(-abs(t), df))


def _best_split(values: Sequence[float], start: int, end: int) -> int | None:
    """The split of values[start:end] with the largest e-divisive means statistic; None when too short."""
    if end - start < 2 * MIN_SEGMENT:
        return None
    total = sum(values[start:end])
    left_sum, best, best_score = 0.0, None, -1.0
    for split in range(start + 1, end - MIN_SEGMENT + 1):
        left_sum += values[split - 1]
        n, m = split - start, end - split
        if n < MIN_SEGMENT:
            continue
        gap = left_sum / n - (total - left_sum) / m
        score = n * m / (n + m) * gap * gap
        if score > best_score:
            best, best_score = split, score
    return best


def _bisect(values: Sequence[float], start: int, end: int, found: set[int]) -> None:
    split = _best_split(values, start, end)
    if split is None or welch_p(values[start:split], values[split:end]) >= WINDOWED_ALPHA:
        return
    found.add(split)
    _bisect(values, start, split, found)
    _bisect(values, split, end, found)


def _judge(values: Sequence[float], points: list[int], at: int) -> ChangePoint:
    """The change point ``points[at]`` tested against the segments up to its neighbours."""
    start = points[at - 1] if at > 0 else 0
    end = points[at + 1] if at + 1 < len(points) else len(values)
    before, after = values[start : points[at]], values[points[at] : end]
    # Two candidates a night or two apart (found in overlapping windows): the short segment between
    # them is no evidence, so the pair is judged weak and the pruning keeps one of them.
    short = min(len(before), len(after)) < MIN_SEGMENT
    return ChangePoint(points[at], median(after) / median(before), 1.0 if short else welch_p(before, after))


def windowed_change_points(values: Sequence[float], tolerance: float = TOLERANCE) -> list[ChangePoint]:
    """All change points of ``values``, in order (see the module docstring)."""
    candidates: set[int] = set()
    for start in range(0, max(len(values) - WINDOW, 0) + WINDOW // 2, WINDOW // 2):
        _bisect(values, start, min(start + WINDOW, len(values)), candidates)
    points = sorted(candidates)
    while points:
        judged = [_judge(values, points, at) for at in range(len(points))]
        weak = [(c.p_value, at) for at, c in enumerate(judged) if c.p_value >= WINDOWED_ALPHA]
        small = [(abs(c.ratio - 1), at) for at, c in enumerate(judged) if abs(c.ratio - 1) <= tolerance]
        if weak:
            points.pop(max(weak)[1])  # the least significant first: its neighbours' segments then grow
        elif small:
            points.pop(min(small)[1])
        else:
            return judged
    return []


# The two detectors the study compares, by name (``pytest-accel history`` runs segmentation).
DETECTORS: dict[str, Callable[[Sequence[float], float], list[ChangePoint]]] = {
    "segmentation": change_points,
    "windowed": windowed_change_points,
}
# Segmentation found more planted shifts, sooner, with as few false change points, and ranks are not
# thrown by an outlier night (docs/studies/history/README.md).
DEFAULT_DETECTOR = "segmentation"
