"""What the machine's state and a neighbour could explain: the shifts a verdict must not call regressions.

Pure logic, no torch, no pytest. Three sources, each bounded rather than vetoing:

- ``state_shift``: the state probes (a large copy, a random gather, fresh pages) now, relative to
  the reference kernel, against the range the baseline's recordings saw;
- ``host_shared``: other processes' share of the host's CPU now against the recordings';
- ``neighbour_bound``: how far the standard neighbour moved this test in its calibration runs
  (``neighbour_reach``: how far it moved it either way, what it could hide).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import final

from pytest_accel.core.measurement import FAULT_SHARE, FOREIGN_CPU
from pytest_accel.core.stats import median

__all__ = [
    "CALIBRATED",
    "StateShift",
    "host_shared",
    "neighbour_bound",
    "neighbour_reach",
    "neighbour_ruled_out",
    "state_shift",
]


def host_shared(now: Mapping[str, float], recorded: Sequence[Mapping[str, float]], margin: float) -> str:
    """Why the host was shared beyond what the recordings saw ("" when it was not, or nothing is known)."""
    seen = [s[FOREIGN_CPU] for s in recorded if FOREIGN_CPU in s]
    share = now.get(FOREIGN_CPU)
    if share is None or not seen or share <= max(seen) + margin:
        return ""
    return (
        f"other processes used {share:.0%} of the host's CPU time during this measurement (its baseline's "
        f"recordings: at most {max(seen):.0%})"
    )


# The key of a calibration run's compared figure (its other key is FOREIGN_CPU).
CALIBRATED = "median"


def neighbour_bound(
    now: Mapping[str, float], calibration: Sequence[Mapping[str, float]], runs: Sequence[float], margin: float
) -> tuple[float, str] | None:
    """How much slower (log) a neighbour made this test in its calibration runs, and a clause that says so.

    Each calibration run (``--accel-calibrate``) measured the test beside the standard neighbour;
    its compared figure over the quiet recordings' median (``runs``) is how far that neighbour moved
    this test. The bound is the largest of those moves (none: 0), and it covers a neighbour up to
    the busiest calibration run's share of the host's CPU plus ``margin``. None when no calibration
    run covers a neighbour as busy as now's: the neighbour's effect on this test is unknown.
    """
    seen = _covering(now, calibration, margin)
    if not seen:
        return None
    centre = median(runs)
    moved = max(0.0, *(math.log(c[CALIBRATED] / centre) for c in seen))
    busiest = max(c[FOREIGN_CPU] for c in seen)
    return moved, (
        f"beside the standard neighbour (its calibration, {len(seen)} run(s), other processes at up to "
        f"{busiest:.0%} of the host) this test was at most {math.expm1(moved) * 100:.0f}% slower"
    )


def neighbour_reach(
    now: Mapping[str, float], calibration: Sequence[Mapping[str, float]], runs: Sequence[float], margin: float
) -> tuple[float, str] | None:
    """How far (log) a neighbour moved this test's figure either way in its calibration runs, and a clause
    that says so; None when none covers now's share or none moved it.

    Figures are relative to the reference kernel, which a neighbour slows too, so a neighbour can make a
    test look faster: a math decode kernel read faster in one calibration run, and unchanged code beside
    that neighbour was then called "improved", each time confirmed in a fresh process (the 2-core Intel
    VM, docs/studies/sight). Which way it moves a test is the neighbour's phase, not a property of the
    test: on the 2-core AMD VM the same kernel read slower in both calibration runs, then, beside the
    same neighbour, an exact planted slowdown read as less than the tolerance in two of three runs,
    where beside its recorded build it read in full (docs/studies/recorded-build). So a move of either
    sign bounds what a neighbour could hide, as far the other way.
    """
    seen = _covering(now, calibration, margin)
    if not seen:
        return None
    moves = [math.log(c[CALIBRATED] / median(runs)) for c in seen]
    faster, slower = max(0.0, *(-m for m in moves)), max(0.0, *moves)
    if faster == slower == 0:
        return None
    calibrated = f"beside the standard neighbour (its calibration, {len(seen)} run(s)) this test's time read up to"
    if faster >= slower:
        return faster, f"{calibrated} {-math.expm1(-faster) * 100:.0f}% shorter"
    return (
        slower,
        f"{calibrated} {math.expm1(slower) * 100:.0f}% longer, and a neighbour's phase can move it as far the "
        "other way",
    )


def _covering(
    now: Mapping[str, float], calibration: Sequence[Mapping[str, float]], margin: float
) -> Sequence[Mapping[str, float]]:
    """The calibration runs that cover a neighbour as busy as now's: all of them, or none."""
    share = now.get(FOREIGN_CPU)
    seen = [c for c in calibration if FOREIGN_CPU in c and CALIBRATED in c]
    if share is None or not seen or share > max(c[FOREIGN_CPU] for c in seen) + margin:
        return ()
    return seen


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


def neighbour_ruled_out(now: Mapping[str, float], moved: float) -> str:
    """A neighbour ruled out, in a few words: how busy the host was, how far calibration saw it move the test
    (``moved``: the log bound of ``neighbour_bound``)."""
    return (
        f"a neighbour ({now.get(FOREIGN_CPU, 0.0):.0%} of the host; calibrated: at most {math.expm1(moved):.0%} slower)"
    )
