"""The work counted: a measurement's instructions per call under callgrind against its recordings', exactly.

A large workload's count repeats to a few instructions in a million, in another process, beside another
job; a tiny call's moves by a few hundred with the allocator's state (docs/studies/counted-work). So the
rule is a margin, not an interval: the policy's ``count_margin``, at least ``count_floor`` instructions
per call, widened to three times the recordings' own spread where they disagree more. Instructions beyond
it fail; so do simulated last-level cache misses grown beyond ``count_miss_margin`` (a memory-bound
slowdown with the same instructions), where a call misses often enough to tell (``MISSES_FLOOR``).
Nothing recorded: new.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, final

from pytest_accel.core import wording
from pytest_accel.core.counts import Count, moved_functions
from pytest_accel.core.outcomes import Outcome, Rule, outcome_of
from pytest_accel.core.stats import median
from pytest_accel.judgement.policy import VerdictPolicy

__all__ = ["COUNTED", "CountVerdict", "judge_count"]

# ERROR: asked for and not counted (its reason says why): not judged, never a pass.
COUNTED = (Outcome.REGRESSED, Outcome.IMPROVED, Outcome.UNCHANGED, Outcome.NEW, Outcome.ERROR)
# Fewer simulated last-level misses per call than this are not judged: a few hundred move with the
# allocator's addresses from one process to the next.
MISSES_FLOOR = 1000.0


@final
@dataclass(frozen=True)
class CountVerdict:
    """The counted work's verdict: instructions (and misses) per call, recorded and now, and its words."""

    outcome: Outcome  # one of COUNTED
    reason: str
    instructions: tuple[float, float] | None = None  # (recorded, now) per call
    misses: tuple[float, float] | None = None  # (recorded, now) simulated last-level misses per call
    margin: float = 0.0
    moved: tuple[str, ...] = ()  # the functions that moved most, in words
    rule: Rule = Rule.COUNT

    @property
    def fails(self) -> bool:
        return self.outcome is Outcome.REGRESSED

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "reason": self.reason,
            "instructions": None if self.instructions is None else list(self.instructions),
            "misses": None if self.misses is None else list(self.misses),
            "margin": self.margin,
            "moved": list(self.moved),
        }

    @classmethod
    def from_dict(cls, data: object) -> CountVerdict:
        """Inverse of ``to_dict``; raises ``ValueError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"count verdict: expected an object, got {type(data).__name__}")
        outcome = outcome_of(data.get("outcome"), COUNTED, "count verdict")
        reason, margin, moved = data.get("reason", ""), data.get("margin", 0.0), data.get("moved", [])
        if not isinstance(reason, str) or not isinstance(margin, int | float) or isinstance(margin, bool):
            raise ValueError("count verdict: 'reason' must be a string and 'margin' a number")
        if not isinstance(moved, list) or not all(isinstance(line, str) for line in moved):
            raise ValueError("count verdict: 'moved' must be a list of strings")
        pairs = [_pair(data.get(name), name) for name in ("instructions", "misses")]
        return cls(outcome, reason, pairs[0], pairs[1], float(margin), tuple(moved))


def _pair(value: object, name: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        raise ValueError(f"count verdict: {name!r} must be [recorded, now] or null")
    return float(value[0]), float(value[1])


def _margin(values: Sequence[float], floor: float, least: float = 0.0) -> float:
    """The policy's margin (a fraction, and ``least`` per call), or three times the recordings' own relative
    range where that is wider."""
    centre = median(values)
    if centre <= 0:
        return floor
    own = 3 * (max(values) - min(values)) / centre if len(values) >= 2 else 0.0
    return max(floor, least / centre, own)


def judge_count(recorded: Sequence[Count], now: Count, policy: VerdictPolicy) -> CountVerdict:
    """``now`` against its recordings (oldest first): regressed, improved, unchanged, or new."""
    if not recorded:
        return CountVerdict(Outcome.NEW, wording.count_new(now.instructions), margin=policy.count_margin)
    latest = recorded[-1]
    then = median([count.instructions for count in recorded])
    margin = _margin([count.instructions for count in recorded], policy.count_margin, policy.count_floor)
    ratio = now.instructions / then if then > 0 else math.inf if now.instructions > 0 else 1.0
    misses = None
    missed = [count.ll_misses for count in recorded if count.ll_misses is not None]
    outcome = Outcome.UNCHANGED
    if ratio > 1 + margin:
        outcome = Outcome.REGRESSED
    elif ratio < 1 / (1 + margin):
        outcome = Outcome.IMPROVED
    if missed and now.ll_misses is not None:
        misses = (median(missed), now.ll_misses)
        miss_margin = _margin(missed, policy.count_miss_margin)
        if max(misses) >= MISSES_FLOOR and misses[1] > misses[0] * (1 + miss_margin):
            outcome = Outcome.REGRESSED  # more of the same work goes to memory: slower with the same instructions
        elif outcome is Outcome.IMPROVED and misses[1] > misses[0]:
            outcome = Outcome.UNCHANGED  # fewer instructions for more misses is no claimed speedup
    moved = () if outcome is Outcome.UNCHANGED else tuple(wording.count_moved(*m) for m in moved_functions(latest, now))
    reason = wording.counted(outcome.value, then, now.instructions, margin, misses)
    return CountVerdict(outcome, reason, (then, now.instructions), misses, margin, moved)
