"""What the machine's state and a neighbour could explain: the shifts a verdict must not call regressions.

Pure logic, no torch, no pytest. ``state_shift``: the state probes (a large copy, a random gather, fresh
pages) now, relative to the reference kernel, against the range the baseline's recordings saw, a bound
rather than a veto. A neighbour's rule (the host's share, the calibrated bound) is ``neighbour.py``'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import final

from pytest_accel.core.measurement import FAULT_SHARE, FOREIGN_CPU
from pytest_accel.core.stats import median

__all__ = ["StateShift", "state_shift"]


# What each state probe's time says, for reasons (see engine/machine.py's state_probes).
_STATE_NAMES = {
    "memory": "a large memory copy",
    "latency": "a random gather",
    "fresh": "touching freshly mapped memory (page faults)",
    "compute": "the reference kernel",
}

_SHORT_NAMES = {"memory": "memory copy", "latency": "random gather", "fresh": "page faults"}


FRESH = "fresh"  # the fresh-pages probe (engine/machine.py)
# Entries of a state that are not a probe's time.
_NOT_PROBES = frozenset({"compute", FOREIGN_CPU, FAULT_SHARE})


def _in_share(excess: float, share: float) -> float:
    """A resource's excess (log) as it moves a workload that spends ``share`` of its time on it."""
    return math.log1p(share * math.expm1(excess)) if excess > 0 else 0.0


@final
@dataclass(frozen=True)
class StateShift:
    """How far the machine's state lies outside what a baseline's recordings saw, in each direction.

    ``slower``: the largest excess (log ratio) of a probe that now takes relatively longer, so a
    workload bound by what it measures could look slower without any change of code; ``faster``:
    the same the other way. Zero when nothing moved beyond the recorded range and the noise floor.
    """

    slower: float = 0.0
    faster: float = 0.0
    why_slower: str = ""
    why_faster: str = ""
    short_slower: str = ""  # ``why_slower`` in a few words: "page faults 1.44x"


def state_shift(
    now: Mapping[str, float], recorded: Sequence[Mapping[str, float]], noise_floor: float = 0.10
) -> StateShift:
    """Compare this run's state probes with the recordings' (see ``StateShift``).

    For each probe beside ``compute``: its time relative to the reference kernel's, now, against
    the same relative time in each recording (centred on their median). Only the excess beyond the
    recorded range, widened by ``noise_floor`` (the probes' own run-to-run noise), counts: the
    recordings' spread is already in the between-run error. Nothing to compare (no states on one
    side) is no shift.

    The fresh-pages probe's excess counts only in the share of the workload's time that its own page
    faults took (``FAULT_SHARE``, where measured): dearer page faults slow a workload by their excess
    times the share of its time it spends faulting, and one that faults nothing not at all. The copy and
    the gather keep their whole excess: no counter tells how much of a workload they stand for.
    """
    if "compute" not in now:
        return StateShift()
    share = now.get(FAULT_SHARE)
    slower, faster, why_slower, why_faster, short_slower = 0.0, 0.0, "", "", ""
    for name, seconds in sorted(now.items()):
        pairs = [(s[name], s["compute"]) for s in recorded if name in s and "compute" in s]
        if name in _NOT_PROBES or not pairs or seconds <= 0 or min(p for p, _ in pairs) <= 0:
            continue
        history = [math.log(p / c) for p, c in pairs]
        centre = median(history)
        relative = math.log(seconds / now["compute"]) - centre
        low, high = min(history) - centre, max(history) - centre
        why = (
            f"{_STATE_NAMES.get(name, name)} took {math.exp(relative):.2f}x as long, relative to the reference "
            f"kernel, as in the baseline's recordings (they spanned {math.exp(low):.2f}-{math.exp(high):.2f}x)"
        )
        up, down = relative - high - noise_floor, low - noise_floor - relative
        if name == FRESH and share is not None:
            up, down = _in_share(up, share), _in_share(down, share)
            why += f"; this test's own page faults took {share:.0%} of its time"
        if up > slower:
            slower, why_slower = up, why
            short_slower = f"{_SHORT_NAMES.get(name, name)} {math.exp(relative):.2f}x"
        if down > faster:
            faster, why_faster = down, why
    return StateShift(slower, faster, why_slower, why_faster, short_slower)
