"""What limits a verdict's sight: the smallest slowdown it could call, and the part of its interval that sets it.

A time verdict's interval adds two independent errors on the log scale: this run's rounds against
the baseline's (``within``) and the spread between processes (``between``: the baseline's own
recordings, the file's typical spread, or the assumed floor), and the machine's state widens its slow
side linearly. When the interval, not the tolerance, sets the sight, the verdict names the widest
part and what would narrow it: the fix differs (a longer measurement, more recordings, a quieter
machine), and the sight's figure alone does not say which.

Measured on the 2-core AMD VM, 8 forward SDPA tests, three recordings minutes apart
(docs/studies/sight): hours later the flash decode kernel's sight was set by the spread of its three
recordings between processes, not by its rounds.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, final

from pytest_accel.core import wording
from pytest_accel.core.outcomes import Sight
from pytest_accel.core.stats import z_score
from pytest_accel.judgement.drift import NightDrift

Source = Literal["recordings", "nights", "typical", "floor"]  # which SD set the between-process part


@final
@dataclass(frozen=True)
class Width:
    """A verdict's half-width (log scale) by its parts, and where the between-process part came from."""

    within: float  # this run's rounds against the baseline's latest samples
    between: float  # the spread between processes, widened for the uncertainty of the centre
    source: Source  # which SD set ``between``
    spread: float  # that SD (log scale)
    runs: int  # how many recorded runs the centre comes from
    nights: int = 0  # how many nights of the history the drift comes from (source "nights")

    @property
    def half_width(self) -> float:
        return math.hypot(self.within, self.between)


def between_run(
    runs: Sequence[float],
    pooled: tuple[float, float] | None,
    floor: float,
    confidence: float,
    nights: NightDrift | None = None,
) -> tuple[float, Source, float]:
    """The between-run half-width (log scale) of a baseline's centre and one new run, which SD set it, and that SD.

    The SD is the entry's own, but never below the file's typical one (``pooled_run_spread``) nor
    ``floor``: three recordings that happened to agree cannot make a test look steadier than the host's
    tests typically are (three close numbers made a later drift "regressed" on the AMD VM,
    docs/sensitivity.md), while a test that is truly noisier keeps its own width. Normal quantile: the
    typical SD comes from the whole file, not from three numbers. Nor below the figure's drift between
    nights in the nightly history (``judgement.drift``): recordings minutes apart cannot show how far
    the host moves over hours. Widened by sqrt(1 + 1/runs) for the uncertainty of the centre.
    """
    own = statistics.stdev(math.log(r) for r in runs) if len(runs) >= 2 else 0.0
    typical = pooled[0] if pooled is not None else 0.0
    candidates: list[tuple[float, Source]] = [(own, "recordings"), (typical, "typical"), (floor, "floor")]
    if nights is not None:
        candidates.append((nights.spread, "nights"))
    spread, source = max(candidates, key=lambda pair: pair[0])
    return z_score(confidence) * spread * math.sqrt(1 + 1 / len(runs)), source, spread


def limited_by(
    width: Width, slower_shift: float, tolerance: float, hidden: float = 0.0, faster_shift: float = 0.0
) -> tuple[Sight, str] | None:
    """(the short cause, the clause) of the widest part of the interval, when the interval rather than
    the tolerance sets the sight; None when the tolerance does. The state's part is linear on the slow
    side, as is what a calibrated load could hide (``hidden``, log) or a state faster than the
    recordings' (``faster_shift``); the others add in quadrature, so each is compared by what it alone
    would give."""
    if hidden == 0 and faster_shift == 0 and math.exp(width.half_width + slower_shift) - 1 <= tolerance:
        return None
    between = {
        "recordings": Sight.RECORDINGS,
        "nights": Sight.NIGHTS,
        "typical": Sight.TYPICAL,
        "floor": Sight.FLOOR if width.runs > 1 else Sight.RECORDINGS,
    }
    state = slower_shift + (faster_shift if faster_shift > hidden else 0.0)  # the larger of the two hides
    parts = {Sight.ROUNDS: width.within, between[width.source]: width.between, Sight.STATE: state, Sight.HIDDEN: hidden}
    cause = max(parts, key=lambda name: parts[name])
    if cause in (Sight.STATE, Sight.HIDDEN):
        return cause, ""  # each has its own clause ("widened by ...")
    return cause, wording.limited_by(cause, width.spread, width.within, width.runs, width.nights)


def detectable_slowdown(half_width: float, tolerance: float, explained: float = 0.0) -> float:
    """The smallest slowdown a verdict with this interval can call: beyond the tolerance (with the part a
    calibrated load explains, log, taken off) and the interval."""
    return max((1 + tolerance) * math.exp(explained), math.exp(half_width)) - 1
