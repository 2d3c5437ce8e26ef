"""The time and memory verdicts' rules, one module each, folded in order by ``judge_time``.

Each time rule takes the ``Case`` (the two observations and the policy) and the ``Reading`` the rules
before it found, and returns either its verdict (it decided: an abstention names its ``Cause``) or a
new reading (what it widens, explains or rules out). Every verdict names the ``Rule`` that decided;
the words come from ``core/wording.py``. Pure: no torch, no pytest.

1. ``samples``: nothing to compare -> NEW; state probes that could not run -> NOISY.
2. ``cards_busy``: as many of the run's other cards measuring beside it as no recording saw -> NOISY.
3. ``unsteady``: the rounds spread far wider than the baseline's -> NOISY, unless the fastest quarter is
   beyond the baseline's slow end (then only a regression may stand).
4. ``probe_drift``: the reference kernel ran at another speed than when recorded -> NOISY.
5. ``state``: the machine's state could explain the slowdown -> NOISY; a smaller shift widens.
6. ``host_shared``: a busier host than any recording saw -> judged only beyond the calibrated bound.
7. ``interval``: the ratio's interval against the tolerance -> REGRESSED, IMPROVED or UNCHANGED.

``memory``: peak memory against its own tolerance. A regression or improvement stands only when
re-measurements confirm it (``judgement/verdict.py``'s ``combine``).
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_accel.core.outcomes import Verdict
from pytest_accel.judgement.policy import VerdictPolicy
from pytest_accel.judgement.rules import cards_busy, host_shared, interval, probe_drift, samples, state, unsteady
from pytest_accel.judgement.rules.case import Case, Observation, Reading
from pytest_accel.judgement.rules.memory import judge_memory

__all__ = ["TIME_RULES", "judge_memory", "judge_time"]

TIME_RULES: tuple[Callable[[Case, Reading], Verdict | Reading], ...] = (
    samples.check, cards_busy.check, unsteady.check, probe_drift.check, state.check, host_shared.check,
)  # fmt: skip


def judge_time(current: Observation, baseline: Observation, policy: VerdictPolicy) -> Verdict:
    """Compare the time of one measurement with its baseline: the rules in order, then the interval."""
    case, reading = Case(current, baseline, policy), Reading()
    for rule in TIME_RULES:
        found = rule(case, reading)
        if isinstance(found, Verdict):
            return found
        reading = found
    return interval.decide(case, reading)
