"""Every sentence a person reads of a time or memory verdict, keyed by the rule that says it.

The rules (judgement/rules/) decide with figures and causes; this module turns those figures into
words, and only this one. ``tests/test_wording.py`` pins the words; the rules' tests pin outcomes and
figures, so rewording a message breaks no logic test. Pure: no torch, no pytest.
"""

from __future__ import annotations

import math

from pytest_accel.core.outcomes import Cause, Sight
from pytest_accel.core.units import format_joules
from pytest_accel.core.units import format_percent_change as percent

# What would let a figure be judged, by the cause that left it unjudged.
RECORD = "record a baseline: pytest <same args> --accel-update"
QUIETER = "a quieter machine"
CALIBRATE = "calibrate beside a neighbour (--accel-calibrate)"
REMEDY = {
    Cause.NO_SAMPLES: RECORD,
    Cause.UNSTEADY: QUIETER,
    Cause.STATE: QUIETER,
    Cause.NEIGHBOUR: QUIETER,
    Cause.UNCALIBRATED: CALIBRATE,
    Cause.CARDS_BUSY: "record in a run of as many cards (--accel-update with the same -n), or run as recorded",
    Cause.STATE_UNPROBED: "free memory for them (out of memory?)",
    Cause.PROBE_DRIFT: "re-record if that is the new normal (--accel-update)",
}


def grown(log_excess: float) -> str:
    """A log excess as a whole percentage: ``0.095`` -> ``10``."""
    return f"{math.expm1(log_excess) * 100:.0f}"


# --- samples ---------------------------------------------------------------------------------------

NO_SAMPLES = "no samples to compare"
NO_SAMPLES_SHORT = "no samples"
UNPROBED = (
    "the machine's state probes could not run (their buffers could not be allocated: out of memory?), so "
    "nothing is known of the machine's state: not judged"
)
UNPROBED_SHORT = "state probes could not run"


# --- unsteady --------------------------------------------------------------------------------------


def unsteady(now: float, limit: float, then: float) -> str:
    """The run's spread against its limit (figures: IQR/median)."""
    said = f"the spread of this run (±{now * 100:.0f}% IQR/median) is above ±{limit * 100:.0f}%"
    return f"{said} (baseline ±{then * 100:.0f}%)"


def too_unsteady(clause: str) -> str:
    return f"{clause}: the machine is too unsteady to judge"


def unsteady_short(now: float, limit: float) -> str:
    return f"unsteady: ±{now * 100:.0f}% spread (limit ±{limit * 100:.0f}%)"


def unsteady_but_separated(clause: str, tolerance: float) -> str:
    """What a regression says when it was let through an unsteady run."""
    return (
        f"; {clause}, but its fastest quarter of rounds is slower than the slow end of the baseline by more "
        f"than the {tolerance:.0%} tolerance (an unsteady machine slows some rounds, not three in four)"
    )


# --- probe drift -----------------------------------------------------------------------------------


def probe_drift(drift: float) -> str:
    return (
        f"the reference kernel ran {drift:.2f}x as long as when the baseline was recorded: the machine "
        "(or torch's matmul) is in another state; re-record the baseline if this is the new normal"
    )


def probe_drift_short(drift: float) -> str:
    return f"reference kernel {drift:.2f}x as long"


# --- state -----------------------------------------------------------------------------------------

# What each state probe's time says (engine/machine.py's state_probes), in full and in a few words.
STATE_NAMES = {
    "memory": "a large memory copy",
    "latency": "a random gather",
    "fresh": "touching freshly mapped memory (page faults)",
    "compute": "the reference kernel",
}
STATE_SHORT_NAMES = {"memory": "memory copy", "latency": "random gather", "fresh": "page faults"}


def state_moved(name: str, relative: float, low: float, high: float) -> str:
    """A probe's time now relative to the reference kernel's, against the recordings' range (ratios)."""
    return (
        f"{STATE_NAMES.get(name, name)} took {relative:.2f}x as long, relative to the reference "
        f"kernel, as in the baseline's recordings (they spanned {low:.2f}-{high:.2f}x)"
    )


def state_fault_share(share: float) -> str:
    return f"; this test's own page faults took {share:.0%} of its time"


def state_moved_short(name: str, relative: float) -> str:
    return f"{STATE_SHORT_NAMES.get(name, name)} {relative:.2f}x"


def state_explains(why: str, explains: float) -> str:
    """Not judged: the state could explain the whole slowdown (``explains``: log)."""
    return (
        f"the machine is in a state its baseline did not cover: {why}; a workload bound by it could "
        f"look {grown(explains)}% slower without any change of code: not judged"
    )


def state_explains_short(short: str, explains: float) -> str:
    return f"state: {short}, up to {grown(explains)}%"


def state_beyond(why: str, explains: float) -> str:
    """What a regression says of the state it cleared."""
    return f"; the machine's state could explain up to {grown(explains)}%: {why}; this is beyond it"


def state_ruled_out(explains: float) -> str:
    return f"the machine's state (up to {grown(explains)}%)"


# --- neighbour -------------------------------------------------------------------------------------


def host_shared(share: float, recorded: float) -> str:
    return (
        f"other processes used {share:.0%} of the host's CPU time during this measurement (its baseline's "
        f"recordings: at most {recorded:.0%})"
    )


def neighbour_bound(runs: int, busiest: float, moved: float) -> str:
    return (
        f"beside the standard neighbour (its calibration, {runs} run(s), other processes at up to "
        f"{busiest:.0%} of the host) this test was at most {grown(moved)}% slower"
    )


def neighbour_reach(runs: int, faster: float, slower: float) -> str:
    """How far calibration saw a neighbour move this test, the larger way (log figures)."""
    calibrated = f"beside the standard neighbour (its calibration, {runs} run(s)) this test's time read up to"
    if faster >= slower:
        return f"{calibrated} {-math.expm1(-faster) * 100:.0f}% shorter"
    return f"{calibrated} {grown(slower)}% longer, and a neighbour's phase can move it as far the other way"


def neighbour_ruled_out(share: float, moved: float) -> str:
    return f"a neighbour ({share:.0%} of the host; calibrated: at most {math.expm1(moved):.0%} slower)"


def uncalibrated(ratio: float, shared: str) -> str:
    return (
        f"time {percent(ratio)}, but {shared}, and no calibration run of this test saw a neighbour this busy "
        "(record one with --accel-calibrate): a neighbour slows the reference kernel too, so it can hide a "
        "slowdown as well as make one: not judged"
    )


def uncalibrated_short(share: float) -> str:
    return f"a neighbour at {share:.0%}, uncalibrated"


def neighbour_explains(band: str, shared: str, why_moved: str, widened: float, tolerance: float) -> str:
    return (
        f"{band}, but {shared}; {why_moved}, so a neighbour explains up to {grown(widened)}%; with that "
        f"and the interval taken off, the slowdown is within the {tolerance:.0%} tolerance: not judged"
    )


def neighbour_explains_short(share: float, widened: float) -> str:
    return f"a neighbour at {share:.0%} explains {math.expm1(widened):.0%}"


def neighbour_beyond(shared: str, why_moved: str) -> str:
    return f"; {shared}, but {why_moved}: this is beyond it"


def neighbour_hides(reach: float, why: str, bound_said: bool) -> str:
    """What a calibrated neighbour could hide (log ``reach``); ``bound_said``: the bound's clause said where from."""
    if bound_said:
        return f"and by {math.expm1(reach) * 100:.1f}% more: a neighbour's phase can move it as far the other way"
    return f"widened by {math.expm1(reach) * 100:.1f}%, what a neighbour could hide: {why}"


# --- cards busy ------------------------------------------------------------------------------------


def cards_busy(ratio: float, busy: float, others: int, low: float | None, high: float | None) -> str:
    """Now's figure beside ``busy`` of its run's ``others`` other cards (mean over its rounds); its recordings,
    none in a run of as many cards, saw ``low`` to ``high`` busy (None: none of them says)."""
    if low is None or high is None:
        seen = "do not say how many"
    else:
        seen = f"saw {low:.1f}" + ("" if high == low else f" to {high:.1f}")
    if others == 0:
        beside = f"it ran alone (no other card in its run) and its recordings {seen} busy beside them"
    else:
        beside = (
            f"{busy:.1f} of the run's {others} other cards were measuring beside it (on average) and its "
            f"recordings, none in a run of {others + 1} cards, {seen}"
        )
    return (
        f"time {percent(ratio)}, but {beside}: another regime of the node's shared host CPU, PCIe and power, which "
        "can hide a slowdown as well as make one: not judged"
    )


def cards_busy_short(busy: float, low: float | None, high: float | None) -> str:
    recorded = "unknown" if low is None or high is None else f"{low:.1f}-{high:.1f}"
    return f"{busy:.1f} other cards busy, recorded {recorded}"


# --- interval --------------------------------------------------------------------------------------


def band(ratio: float, low: float, high: float, confidence: float, normalized: bool) -> str:
    said = f"time {percent(ratio)} [{confidence:.0%} CI {percent(low)} .. {percent(high)}]"
    return f"{said} relative to the reference kernel" if normalized else said


def regressed(band: str, tolerance: float, clauses: str) -> str:
    return f"{band}, beyond the {tolerance:.0%} tolerance{clauses}"


def improved(band: str) -> str:
    return f"{band}: faster than the baseline; refresh it with --accel-update"


def unchanged(band: str, tolerance: float, explained: float, sees: str) -> str:
    within = f"{tolerance:.0%} tolerance"
    if explained > 0:
        within += f" with the {grown(explained)}% a neighbour explains taken off"
    return f"{band}, within the {within}{sees}"


def assumed_spread(floor: float) -> str:
    """What a regression says when the spread between processes was assumed, not measured."""
    return (
        f"; the baseline has one recording, so the spread between processes is assumed ({floor:.0%})"
        ", not measured: record it again (--accel-update) to measure it"
    )


def could_see(detectable: float, limit: str) -> str:
    return f"; could see a slowdown of {detectable * 100:.0f}% or more{limit}"


def sight_widened(slower: float, why: str) -> str:
    return f" (widened by {math.expm1(slower) * 100:.1f}%: {why})"


def sight_shared(shared: str) -> str:
    return f"; the host was shared: {shared}"


def speedup_not_claimed(faster: float, why: str, hides: bool) -> str:
    also = ", and a slowdown that size could hide" if hides else ""
    return f"; a speedup up to {math.expm1(faster) * 100:.1f}% is not claimed{also}: {why}"


def limited_by(cause: Sight, spread: float, within: float, runs: int, nights: int) -> str:
    """What limited a verdict's sight (the widest part of its interval, log figures), and what would narrow it."""
    sd = f"SD {spread * 100:.1f}%"  # of the log figure: about the relative SD
    if cause is Sight.ROUNDS:
        why = f"this run's rounds against the baseline's (±{math.expm1(within) * 100:.1f}%)"
        remedy = "a longer --accel-measure-seconds narrows it"
    elif cause is Sight.RECORDINGS and runs == 1:
        why = f"its one recording, which cannot show the spread between processes ({sd} assumed)"
        remedy = "record it again (--accel-update)"
    elif cause is Sight.RECORDINGS:
        why = f"the spread of its {runs} recordings ({sd} between processes)"
        remedy = "recordings at other times (--accel-update keeps up to 10) measure it better"
    elif cause is Sight.NIGHTS:
        why = f"its drift between nights ({sd} over its {nights} newest nights at one level in the history)"
        remedy = "unchanged code moves this much from night to night here; a steadier host narrows it"
    elif cause is Sight.TYPICAL:
        why = f"the spread between processes typical of this baseline file ({sd})"
        remedy = "a quieter machine narrows it"
    else:
        why = f"the smallest spread between processes assumed for any test ({sd}, measured on a quiet VM)"
        remedy = "its recordings agree more closely than that"
    return f"; limited by {why}: {remedy}"


# --- memory ----------------------------------------------------------------------------------------


def energy(then: float, now: float, windows: int, tolerance: float | None) -> str:
    """Energy per item before and after (the median of ``windows``); ``tolerance`` when it grew beyond it in each."""
    said = f"energy per item {format_joules(then)} -> {format_joules(now)} ({(now / then - 1) * 100:+.1f}%"
    said += f", {windows} window{'s' * (windows != 1)})"
    return f"{said}, within tolerance" if tolerance is None else f"{said}, beyond the {tolerance:.0%} tolerance in each"


def memory(then: int, now: int, tolerance: float | None) -> str:
    """Peak memory before and after; ``tolerance`` when it grew beyond it, None when within."""
    said = f"peak memory {then / 2**20:.1f} MiB -> {now / 2**20:.1f} MiB"
    return f"{said}, within tolerance" if tolerance is None else f"{said}, beyond the {tolerance:.0%} tolerance"


# --- count -----------------------------------------------------------------------------------------


def count_new(now: float) -> str:
    return f"{now:,.0f} instructions per call counted; nothing recorded for this count key: new"


def counted(outcome: str, then: float, now: float, margin: float, misses: tuple[float, float] | None) -> str:
    """The work counted, recorded and now (per call), against the margin (a fraction)."""
    moved = percent(now / then) if then > 0 else "new"
    said = f"instructions per call {then:,.0f} -> {now:,.0f} ({moved}, margin {margin:.2%})"
    if misses is not None and max(misses) > 0:
        moved = percent(misses[1] / misses[0]) if misses[0] > 0 else "new"
        said += f"; simulated last-level misses per call {misses[0]:,.0f} -> {misses[1]:,.0f} ({moved})"
    return f"{said}: {outcome}"


def count_moved(function: str, then: float, now: float) -> str:
    """A function whose instructions per call moved (callgrind's own totals)."""
    change = "new" if then == 0 else "gone" if now == 0 else percent(now / then)
    shown = function if len(function) <= _LONGEST_NAME else f"{function[: _LONGEST_NAME - 3]}..."  # C++ templates
    return f"{shown}: {then:,.0f} -> {now:,.0f} per call ({change})"


_LONGEST_NAME = 100


def count_grew(test: str, key: str, said: str, moved: tuple[str, ...]) -> str:
    """The failure of a count that grew: the test, the count key, the counts, the functions that moved most."""
    lines = [f"perf work counted grew: {test} (under {key})", f"  counted work: {said}", *(f"    {m}" for m in moved)]
    return "\n".join(lines)


def count_same_work(said: str) -> str:
    return (
        f"the work counted is the same ({said}): the time moved without the instructions (or the misses, where "
        "simulated): threads, waiting, the memory system or the host"
    )


def count_not_judged(metric: str, said: str, strict: str) -> str:
    """The failure of a count not taken where the run fails what it did not judge (``--accel-strict``)."""
    return f"perf not judged: {metric}: {said}, and {strict}"


def not_counted(why: str) -> str:
    return f"not counted: {why}"


# --- a slowdown the recorded build beside it shared ------------------------------------------------


def bound_moved(was: str, now: str) -> str:
    """A failure's line where the figure left its baseline's bound class under the session's roofline."""
    return f"bound: {was} -> {now} (under the roofline of this run's measured peaks)"


def environment_moved(name: str, change: str) -> str:
    """The failure of a figure slower than its stored one whose recorded build, beside it, read the same while other
    operators ran than at the recordings (the structural record warns only): the environment, not the host."""
    return (
        f"perf regressed: {name}: time {change} against its stored figure; the recorded build, measured beside it,"
        " read the same, yet other operators ran than at the recordings: not the host (a host does not change what"
        " runs) but the environment (a variable, a plugin, a library), which the sitting carried into both builds"
    )


# --- confirmation ----------------------------------------------------------------------------------


def confirmation_noisy(first: str, then: str) -> str:
    return f"first {first}; then {then}"


def confirmed(first: str, ratios: list[float]) -> str:
    return f"{first}; confirmed by {len(ratios)} re-measurement(s) ({', '.join(percent(r) for r in ratios)})"


def not_confirmed(ratio: float, last: str) -> str:
    return f"a first measurement said {percent(ratio)}, re-measurement did not confirm it: {last}"
