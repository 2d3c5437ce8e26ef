"""Two readings of one suspect weighed together: a re-measurement, or a fresh process's measurement.

A re-measurement that reads "unchanged" is not always a refutation. One whose interval is clear of
no change on the suspect's side agrees, when the two figures together (their geometric mean, the
interval of two independent readings) are beyond the tolerance; one whose interval reaches both no
change and the suspect's figure could not tell; any other refutes. In one quiet run a planted
slowdown whose fresh process's interval reached both passed as "unchanged" when such a reading
counted as a refutation (docs/studies/quiet-wait, run 6).

Two readings can also be too far apart for one level, whatever each says: on unchanged code the math
SDPA decode kernel read slower in a run and far slower still in the fresh process that was to confirm
it (docs/studies/first-in-process). Pure: no torch, no pytest.
"""

from __future__ import annotations

import enum
import math

from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.core.units import format_change

__all__ = ["AGAIN", "Reading", "apart", "clear_of_the_gap", "weigh"]

# What would let a figure be judged that two readings could not settle.
AGAIN = "run them again in a new process (pytest <same args> -k <test>)"


class Reading(enum.Enum):
    """What a second reading that said "unchanged" says of a suspect."""

    AGREES = "agrees"
    CANNOT_TELL = "cannot tell"
    REFUTES = "refutes"


def weigh(first: Verdict, second: Verdict, tolerance: float) -> tuple[Reading, str]:
    """How ``second`` (an "unchanged" reading) bears on ``first`` (regressed or improved), and the two
    figures together as text (as ``format_change`` writes them; "" when a figure is missing)."""
    figures = (first.ratio, first.low, first.high, second.ratio, second.low, second.high)
    if second.outcome is not Outcome.UNCHANGED or any(f is None or f <= 0 for f in figures):
        return Reading.REFUTES, ""
    assert first.ratio and first.low and first.high and second.ratio and second.low and second.high
    side = 1.0 if first.outcome is Outcome.REGRESSED else -1.0  # the suspect's direction, in logs
    this, that = side * math.log(first.ratio), side * math.log(second.ratio)
    near, far = sorted((side * math.log(second.low), side * math.log(second.high)))
    this_near = min(side * math.log(first.low), side * math.log(first.high))
    mean = (this + that) / 2
    half = math.hypot(this - this_near, that - near) / 2  # two independent readings, each its own interval
    low, high = sorted((math.exp(side * (mean - half)), math.exp(side * (mean + half))))
    together = format_change(math.exp(side * mean), low, high)
    if mean <= math.log1p(tolerance) or far <= math.log1p(tolerance):
        return Reading.REFUTES, together  # together within the tolerance, or the second sure it is within
    if near > 0:
        return Reading.AGREES, together
    return (Reading.CANNOT_TELL if far >= this else Reading.REFUTES), together


def clear_of_the_gap(first: Verdict, second: Verdict, tolerance: float) -> bool:
    """Whether two processes that read one outcome (regressed, or improved) at levels ``apart`` still read it
    with the gap between them taken as the figure's spread between processes: the nearer end of either
    interval, moved by that gap towards no change, is still beyond ``tolerance``. A planted threefold
    slowdown read at two levels is regressed whatever its level; unchanged code read slower at two levels
    far apart is not, since its gap reaches back past no change (docs/studies/first-in-process)."""
    figures = (first.ratio, first.low, first.high, second.ratio, second.low, second.high)
    if any(f is None or f <= 0 for f in figures) or first.outcome is not second.outcome:
        return False
    assert first.ratio and first.low and first.high and second.ratio and second.low and second.high
    gap = abs(math.log(first.ratio / second.ratio))
    if first.outcome is Outcome.REGRESSED:
        return min(first.low, second.low) * math.exp(-gap) > 1 + tolerance
    if first.outcome is Outcome.IMPROVED:
        return max(first.high, second.high) * math.exp(gap) < 1 / (1 + tolerance)
    return False


def apart(first: Verdict, second: Verdict) -> bool:
    """Whether two processes' readings of one figure are further apart than their intervals allow for
    one level: the gap between the figures (log) is wider than the two half-widths added in quadrature.

    Each interval holds the spread between processes that the baseline's recordings showed, so a wider
    gap says the figure's level moves between processes by more than they showed, and neither reading
    can be taken as the level. Of 354 fresh-process confirmations in the studies' raw files, 8 were this
    far apart, 7 of them the math decode kernel's (docs/studies/first-in-process).
    False when a figure is missing.
    """
    figures = (first.ratio, first.low, first.high, second.ratio, second.low, second.high)
    if any(f is None or f <= 0 for f in figures):
        return False
    assert first.ratio and first.low and first.high and second.ratio and second.low and second.high
    gap = abs(math.log(first.ratio / second.ratio))
    return gap > math.hypot(math.log(first.high / first.low) / 2, math.log(second.high / second.low) / 2)
