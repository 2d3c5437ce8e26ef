"""Peak memory: growth beyond the memory tolerance and the slack (allocator rounding, RSS pages) fails."""

from __future__ import annotations

import math

from pytest_accel.core import wording
from pytest_accel.core.outcomes import Outcome, Rule, Verdict
from pytest_accel.judgement.policy import VerdictPolicy
from pytest_accel.judgement.rules.case import Observation

__all__ = ["judge_memory"]


def judge_memory(current: Observation, baseline: Observation, policy: VerdictPolicy) -> Verdict | None:
    """Compare peak memory; None when either side does not know it."""
    if current.peak_memory_bytes is None or baseline.peak_memory_bytes is None:
        return None
    now, then = current.peak_memory_bytes, baseline.peak_memory_bytes
    ratio = now / then if then > 0 else math.inf
    if now - then > max(policy.memory_tolerance * then, policy.memory_slack_bytes):
        said = wording.memory(then, now, policy.memory_tolerance)
        return Verdict(Outcome.REGRESSED, "memory", said, ratio=ratio, rule=Rule.MEMORY)
    return Verdict(Outcome.UNCHANGED, "memory", wording.memory(then, now, None), ratio=ratio, rule=Rule.MEMORY)
