"""Two builds measured in one sitting: a paired comparison with a sequential stopping rule.

Pure logic: no torch, no pytest, no processes (``pytest_accel.commands.ab`` runs them). The design:

- **Pairs.** Base and head run as fresh processes, alternating in ABBA order (base first in even
  pairs, head first in odd ones), so neither side always runs first, warm or cold. One pair gives
  one figure per test: the log of head's median over base's median, each the process's median of
  probe-normalised seconds per call. Drift of the machine over the sitting hits both sides of a
  pair alike and cancels in the ratio; what is left is the process-to-process noise.
- **Interval.** A Student-t interval on the mean log ratio over the pairs so far (the pairs are
  independent; their log ratios are close to normal on the figures recorded in
  docs/sensitivity.md).
- **Looks and the error budget.** Looking after every pair and stopping at the first clear answer
  would spend the error rate again at every look. The rule looks only at a fixed, roughly
  geometric schedule of pair counts (3, 4, 5, 7, 9, 12, 15, ... up to ``max_pairs``), every look
  at one level, chosen so that the chance that any look's interval misses the true ratio is
  ``alpha`` (Pocock's constant boundary; ``calibrated_level`` finds the level by simulating normal
  pairs, since later looks share the earlier looks' pairs). Bonferroni (``alpha`` split equally
  over the looks) ignores that sharing and looks at a stricter level than the budget allows
  (docs/studies/ab-looks, docs/measurements.md). The default ``alpha`` is 0.02, so that an
  unchanged test is called regressed in about ``alpha / 2`` of sittings (fewer in simulation,
  docs/studies/ab-looks). A run stopped early by its time budget takes one last look at the pairs
  it has, in place of the looks it never reached.
- **Claims.** The stored-baseline gate's rule, on the paired interval:
    regressed    slower, significantly (the whole interval lies above 1), by an estimated more
                 than the tolerance
    improved     the mirror image: the whole interval below 1, the estimate below 1 / (1 + tolerance)
    unchanged    the whole interval lies inside [1 / (1 + tolerance), 1 + tolerance]
    inconclusive none of those by the last look: the interval is reported as it stands
  An unchanged build (A/A) is called regressed only when its interval misses the truth, about
  ``alpha / 2`` of the time. A build truly slower by about the tolerance is called regressed
  about half the time it is significant: it did get slower. The first version asked the whole interval
  to lie above 1 + tolerance; a slowdown of twice the tolerance then needed an interval narrower than
  the tolerance either side, and many pairs of the PR workflow's 8 kernels on a 2-core VM
  (docs/sensitivity.md).
"""

from __future__ import annotations

import functools
import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, final

from pytest_accel.core.outcomes import PAIRED, Outcome, outcome_of
from pytest_accel.core.stats import t_cdf, t_quantile
from pytest_accel.judgement.policy import TOLERANCE

__all__ = ["PairedVerdict", "SequentialPlan", "calibrated_level", "judge_pairs", "look_schedule"]

LOOK_GROWTH = 1.25  # each look at this many times the last look's pairs
CALIBRATION_SITTINGS = 20_000  # simulated sittings per (schedule, alpha): the level to about one part in twenty
CALIBRATION_MAX_PAIRS = 200  # beyond this the simulation would take seconds: Bonferroni instead


@functools.lru_cache(maxsize=4096)
def _t(level: float, df: int) -> float:
    return t_quantile(level, df)


def look_schedule(min_pairs: int, max_pairs: int) -> tuple[int, ...]:
    """The pair counts at which the rule looks: min_pairs, then ``LOOK_GROWTH`` times as many each time, then
    max_pairs."""
    if min_pairs < 2:
        raise ValueError(f"min_pairs must be at least 2 (an interval needs two pairs), got {min_pairs}")
    if max_pairs < min_pairs:
        raise ValueError(f"max_pairs ({max_pairs}) is below min_pairs ({min_pairs})")
    looks = [min_pairs]
    while looks[-1] < max_pairs:
        looks.append(min(max_pairs, max(looks[-1] + 1, math.ceil(looks[-1] * LOOK_GROWTH))))
    return tuple(looks)


@functools.lru_cache(maxsize=16)
def calibrated_level(looks: tuple[int, ...], alpha: float) -> float:
    """The two-sided level, the same at every look, at which normal pairs' t-intervals miss the
    true mean at some look of ``looks`` with chance ``alpha``.

    The t statistic of normal pairs does not depend on their mean or spread, so the level depends
    on the schedule alone: ``CALIBRATION_SITTINGS`` seeded sittings (the same answer every time,
    about a second), each look's two-sided p-value, and the ``alpha`` quantile of each sitting's
    smallest one. Only looks beyond the ``alpha`` level need a p-value: a sitting without one has
    its smallest above ``alpha``, above the answer. Past ``CALIBRATION_MAX_PAIRS``: Bonferroni.
    """
    if looks[-1] > CALIBRATION_MAX_PAIRS:
        return alpha / len(looks)
    rng, wanted = random.Random(20261202), set(looks)
    screens = {n: t_quantile(1 - alpha / 2, n - 1) for n in looks}
    smallest: list[float] = []
    for _ in range(CALIBRATION_SITTINGS):
        total = squares = 0.0
        least = 1.0
        for n in range(1, looks[-1] + 1):
            x = rng.gauss(0.0, 1.0)
            total += x
            squares += x * x
            if n in wanted:
                variance = (squares - total * total / n) / (n - 1)
                t = abs(total / n) / math.sqrt(variance / n) if variance > 0 else math.inf
                if t > screens[n]:
                    least = min(least, 2.0 * (1.0 - t_cdf(t, n - 1)))
        if least < alpha:
            smallest.append(least)
    smallest.sort()
    index = int(alpha * CALIBRATION_SITTINGS)
    return smallest[index] if index < len(smallest) else alpha


@final
@dataclass(frozen=True)
class SequentialPlan:
    """How long a sitting may go on and what a claim must clear."""

    tolerance: float = TOLERANCE  # a change smaller than this is "unchanged"
    alpha: float = 0.02  # chance, over the whole sitting, that an interval misses the true ratio
    min_pairs: int = 3
    max_pairs: int = 40
    # A bisect's step asks one question, whether a commit is already slower: set, "unchanged" means no
    # slowdown beyond this (the interval's slow end within it, whatever its fast end). None: within the
    # tolerance, both ways.
    not_slower_than: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.tolerance) and self.tolerance > 0):
            raise ValueError(f"tolerance must be a positive number, got {self.tolerance}")
        if self.not_slower_than is not None and not (
            math.isfinite(self.not_slower_than) and self.not_slower_than >= self.tolerance
        ):
            raise ValueError(f"not_slower_than must be a number >= the tolerance, got {self.not_slower_than}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        look_schedule(self.min_pairs, self.max_pairs)  # validates the pair counts

    @property
    def looks(self) -> tuple[int, ...]:
        return look_schedule(self.min_pairs, self.max_pairs)

    @property
    def alpha_per_look(self) -> float:
        """Every look's two-sided level: ``calibrated_level`` of this schedule and ``alpha``."""
        return calibrated_level(self.looks, self.alpha)

    def interval(self, log_ratios: Sequence[float]) -> tuple[float, float, float]:
        """(ratio, low, high): the mean log ratio's t-interval at this plan's per-look level."""
        n = len(log_ratios)
        mean = statistics.fmean(log_ratios)
        if n < 2:
            return math.exp(mean), 0.0, math.inf
        half = _t(1 - self.alpha_per_look / 2, n - 1) * statistics.stdev(log_ratios) / math.sqrt(n)
        return math.exp(mean), math.exp(mean - half), math.exp(mean + half)

    def pairs_needed(self, log_ratios: Sequence[float]) -> int | None:
        """Roughly how many pairs, at this noise, an interval narrow enough for a claim would take."""
        if len(log_ratios) < 2:
            return None
        spread = statistics.stdev(log_ratios)
        distance = abs(abs(statistics.fmean(log_ratios)) - math.log1p(self.tolerance))
        if spread == 0:
            return len(log_ratios)
        if distance == 0:
            return None
        t = _t(1 - self.alpha_per_look / 2, max(len(log_ratios) - 1, 2))
        return math.ceil((t * spread / distance) ** 2)


DECIDED = frozenset({Outcome.REGRESSED, Outcome.IMPROVED, Outcome.UNCHANGED, Outcome.NEW, Outcome.GONE})


@final
@dataclass(frozen=True)
class PairedVerdict:
    outcome: Outcome  # one of core.outcomes.PAIRED
    pairs: int
    ratio: float | None = None  # head time over base time (geometric mean over the pairs)
    low: float | None = None
    high: float | None = None
    reason: str = ""

    @property
    def decided(self) -> bool:
        return self.outcome in DECIDED

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "pairs": self.pairs,
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairedVerdict:
        return cls(
            outcome=outcome_of(data["outcome"], PAIRED, "paired verdict"),
            pairs=int(data["pairs"]),
            ratio=data.get("ratio"),
            low=data.get("low"),
            high=data.get("high"),
            reason=str(data.get("reason", "")),
        )


def judge_pairs(log_ratios: Sequence[float], plan: SequentialPlan, *, last: bool = False) -> PairedVerdict:
    """The verdict after ``len(log_ratios)`` pairs: a claim at a scheduled look, else pending.

    ``last`` says no more pairs will come (the budget ran out): the rule then takes its final look
    at whatever count it has, and without a claim the answer is inconclusive.
    """
    n = len(log_ratios)
    if any(not math.isfinite(value) for value in log_ratios):
        raise ValueError("log ratios must be finite")
    if n < 2 or (n not in plan.looks and not last):
        if last:
            return PairedVerdict(Outcome.INCONCLUSIVE, n, reason=f"{n} pair(s): too few for an interval")
        return PairedVerdict(Outcome.PENDING, n)
    ratio, low, high = plan.interval(log_ratios)
    limit = 1 + plan.tolerance
    band = f"{plan.tolerance:.0%}"
    if low > 1 and ratio > limit:
        return PairedVerdict(Outcome.REGRESSED, n, ratio, low, high, f"slower, beyond the {band} tolerance")
    if high < 1 and ratio < 1 / limit:
        return PairedVerdict(Outcome.IMPROVED, n, ratio, low, high, f"faster, beyond the {band} tolerance")
    if plan.not_slower_than is not None and high <= 1 + plan.not_slower_than:
        return PairedVerdict(Outcome.UNCHANGED, n, ratio, low, high, f"no slowdown beyond +{plan.not_slower_than:.1%}")
    if 1 / limit <= low and high <= limit:
        return PairedVerdict(Outcome.UNCHANGED, n, ratio, low, high, f"within ±{band}")
    if not last and n < plan.max_pairs:
        return PairedVerdict(Outcome.PENDING, n, ratio, low, high)
    if plan.not_slower_than is not None:
        limit_up = f"+{plan.not_slower_than:.1%}"
        return PairedVerdict(
            Outcome.INCONCLUSIVE, n, ratio, low, high, f"neither regressed nor clearly below {limit_up}"
        )
    needed = plan.pairs_needed(log_ratios)
    hint = f"; about {needed} pairs at this noise would decide" if needed and needed > n else ""
    return PairedVerdict(Outcome.INCONCLUSIVE, n, ratio, low, high, f"straddles the ±{band} band{hint}")
