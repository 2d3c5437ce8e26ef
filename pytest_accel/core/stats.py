"""Pure statistics on timing samples: no torch, no pytest, so it is tested fast and exhaustively."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import groupby

__all__ = [
    "iqr",
    "mann_whitney_p",
    "median",
    "quantile",
    "ratio_confidence_interval",
    "relative_spread",
    "t_cdf",
    "t_quantile",
    "z_score",
]


def quantile(samples: Sequence[float], q: float) -> float:
    """The q-quantile (0 <= q <= 1) by linear interpolation between order statistics (numpy's default)."""
    if not samples:
        raise ValueError("quantile of no samples")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile level {q} is outside [0, 1]")
    return _quantile_of_sorted(sorted(samples), q)


def _quantile_of_sorted(ordered: Sequence[float], q: float) -> float:
    """``quantile`` of samples already in ascending order."""
    position = q * (len(ordered) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    weight = position - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * weight


def median(samples: Sequence[float]) -> float:
    """The sample median."""
    return quantile(samples, 0.5)


def iqr(samples: Sequence[float]) -> float:
    """Interquartile range: robust to the odd slow round that a mean or stdev would chase."""
    return quantile(samples, 0.75) - quantile(samples, 0.25)


def relative_spread(samples: Sequence[float]) -> float:
    """IQR over median: the noise of a measurement as a fraction of its size."""
    centre = median(samples)
    return iqr(samples) / centre if centre > 0 else math.inf


# Two-sided standard-normal quantiles for the confidence levels the verdict uses.
_Z_TWO_SIDED = {0.90: 1.6449, 0.95: 1.9600, 0.99: 2.5758, 0.999: 3.2905}


def z_score(confidence: float) -> float:
    """The two-sided standard-normal quantile for a confidence level in the table."""
    if confidence not in _Z_TWO_SIDED:
        raise ValueError(f"confidence must be one of {sorted(_Z_TWO_SIDED)}")
    return _Z_TWO_SIDED[confidence]


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mann_whitney_p(first: Sequence[float], second: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation with tie correction).

    The approximation is good from about 8 samples a side; measurements have at least 10 rounds.
    Returns 1.0 when every value ties (no evidence of a shift).
    """
    n, m = len(first), len(second)
    if n == 0 or m == 0:
        raise ValueError("Mann-Whitney needs samples on both sides")
    pooled = sorted([*first, *second])
    tie_term = 0.0
    if len(set(pooled)) < len(pooled):
        for _, group in groupby(pooled):
            ties = sum(1 for _ in group)
            tie_term += ties**3 - ties
    # A value's rank is the mean of the ranks its tied group spans in the pooled order (1-based);
    # the ranks are integers and halves, so their sum is exact in any order.
    rank_sum_first = sum((bisect_left(pooled, value) + bisect_right(pooled, value) + 1) / 2.0 for value in first)
    u = rank_sum_first - n * (n + 1) / 2.0
    total = n + m
    variance = n * m / 12.0 * ((total + 1) - tie_term / (total * (total - 1)))
    if variance <= 0:
        return 1.0
    z = (abs(u - n * m / 2.0) - 0.5) / math.sqrt(variance)  # 0.5: continuity correction
    return min(1.0, 2.0 * _normal_sf(max(z, 0.0)))


def ratio_confidence_interval(
    current: Sequence[float], baseline: Sequence[float], confidence: float = 0.99
) -> tuple[float, float, float]:
    """Ratio current/baseline of typical values, with a distribution-free confidence interval.

    Hodges-Lehmann on logarithms: the estimate is exp(median of all pairwise log differences),
    and the interval comes from order statistics of those differences (the Mann-Whitney
    inversion), so no normality is assumed. Returns (estimate, low, high).
    """
    z = z_score(confidence)
    if any(value <= 0 for value in (*current, *baseline)):
        raise ValueError("ratios need positive samples")
    n, m = len(current), len(baseline)
    if n == 0 or m == 0:
        raise ValueError("a ratio needs samples on both sides")
    log_current, log_baseline = [math.log(c) for c in current], [math.log(b) for b in baseline]  # n + m logs, not n x m
    differences = sorted([c - b for c in log_current for b in log_baseline])
    estimate = _quantile_of_sorted(differences, 0.5)
    half_width = z * math.sqrt(n * m * (n + m + 1) / 12.0)
    k = max(0, math.floor(n * m / 2.0 - half_width))
    low, high = differences[k], differences[len(differences) - 1 - k]
    return math.exp(estimate), math.exp(low), math.exp(high)


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), by its continued fraction (Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast on this side only
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return math.exp(log_front) * fraction / a


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (0 < p < 1), by bisection on ``t_cdf``: exact to ~1e-10."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile level {p} is outside (0, 1)")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0
