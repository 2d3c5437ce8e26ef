"""Pure statistics on timing samples: no torch, no pytest, so it is tested fast and exhaustively."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["iqr", "median", "quantile", "relative_spread"]


def quantile(samples: Sequence[float], q: float) -> float:
    """The q-quantile (0 <= q <= 1) by linear interpolation between order statistics (numpy's default)."""
    if not samples:
        raise ValueError("quantile of no samples")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile level {q} is outside [0, 1]")
    ordered = sorted(samples)
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
