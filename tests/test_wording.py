"""The words a person reads of a time or memory verdict (core/wording.py), golden, for fixed figures.

The rules' tests pin outcomes and figures; these pin the sentences, so a rewording changes this file only.
"""

from __future__ import annotations

import math

import pytest

from pytest_accel.core import wording
from pytest_accel.core.outcomes import Cause, Outcome, Rule, Sight
from pytest_accel.judgement.verdict import Observation, VerdictPolicy, judge_time

UNSTEADY = wording.unsteady(0.36, 0.25, 0.03)
COPY = wording.state_moved("memory", 1.4, 0.99, 1.01)
SHARED = wording.host_shared(0.45, 0.02)
BAND = wording.band(1.07, 0.992, 1.121, 0.95, normalized=True)
NEIGHBOUR = "beside the standard neighbour (its calibration,"  # how each calibrated clause opens

GOLDEN = [
    (UNSTEADY, "the spread of this run (±36% IQR/median) is above ±25% (baseline ±3%)", "unsteady"),
    (wording.too_unsteady(UNSTEADY), f"{UNSTEADY}: the machine is too unsteady to judge", "too_unsteady"),
    (wording.unsteady_short(0.36, 0.25), "unsteady: ±36% spread (limit ±25%)", "unsteady_short"),
    (wording.unsteady_but_separated(UNSTEADY, 0.05),
     f"; {UNSTEADY}, but its fastest quarter of rounds is slower than the slow end of the baseline by more than the 5% "
     "tolerance (an unsteady machine slows some rounds, not three in four)", "unsteady_but_separated"),
    (wording.probe_drift(3.0),
     "the reference kernel ran 3.00x as long as when the baseline was recorded: the machine (or torch's matmul) is in "
     "another state; re-record the baseline if this is the new normal", "probe_drift"),
    (wording.probe_drift_short(3.0), "reference kernel 3.00x as long", "probe_drift_short"),
    (COPY, "a large memory copy took 1.40x as long, relative to the reference kernel, as in the baseline's recordings "
     "(they spanned 0.99-1.01x)", "state_moved"),
    (wording.state_moved("fresh", 1.5, 0.98, 1.01) + wording.state_fault_share(0.5),
     "touching freshly mapped memory (page faults) took 1.50x as long, relative to the reference kernel, as in the "
     "baseline's recordings (they spanned 0.98-1.01x); this test's own page faults took 50% of its time",
     "state_moved_faults"),
    (wording.state_explains(COPY, math.log(1.25)),
     f"the machine is in a state its baseline did not cover: {COPY}; a workload bound by it could look 25% slower "
     "without any change of code: not judged", "state_explains"),
    (wording.state_explains_short(wording.state_moved_short("memory", 1.4), math.log(1.25)),
     "state: memory copy 1.40x, up to 25%", "state_explains_short"),
    (wording.state_beyond(COPY, math.log(1.25)),
     f"; the machine's state could explain up to 25%: {COPY}; this is beyond it", "state_beyond"),
    (wording.state_ruled_out(math.log(1.25)), "the machine's state (up to 25%)", "state_ruled_out"),
    (SHARED, "other processes used 45% of the host's CPU time during this measurement (its baseline's recordings: at "
     "most 2%)", "host_shared"),
    (wording.neighbour_bound(1, 0.45, math.log(1.2)),
     f"{NEIGHBOUR} 1 run(s), other processes at up to 45% of the host) this test was at most 20% slower",
     "neighbour_bound"),
    (wording.neighbour_reach(2, -math.log(0.74), math.log(1.02)),
     f"{NEIGHBOUR} 2 run(s)) this test's time read up to 26% shorter", "neighbour_reach_faster"),
    (wording.neighbour_reach(2, 0.0, math.log(1.18)),
     f"{NEIGHBOUR} 2 run(s)) this test's time read up to 18% longer, and a neighbour's phase can move it as far the "
     "other way", "neighbour_reach_slower"),
    (wording.uncalibrated(1.024, SHARED),
     f"time +2.4%, but {SHARED}, and no calibration run of this test saw a neighbour this busy (record one with "
     "--accel-calibrate): a neighbour slows the reference kernel too, so it can hide a slowdown as well as make one: "
     "not judged", "uncalibrated"),
    (wording.cards_busy(1.024, 3.0, 7, 0.0, 0.2),
     "time +2.4%, but 3.0 of the run's 7 other cards were measuring beside it (on average) and its recordings, none "
     "in a run of 8 cards, saw 0.0 to 0.2: another regime of the node's shared host CPU, PCIe and power, which can "
     "hide a slowdown as well as make one: not judged", "cards_busy"),
    (wording.cards_busy(0.97, 1.0, 1, None, None),
     "time -3.0%, but 1.0 of the run's 1 other cards were measuring beside it (on average) and its recordings, none "
     "in a run of 2 cards, do not say how many: another regime of the node's shared host CPU, PCIe and power, which "
     "can hide a slowdown as well as make one: not judged", "cards_busy_unknown"),
    (wording.cards_busy(1.5, 0.0, 0, 6.5, 7.0),
     "time +50.0%, but it ran alone (no other card in its run) and its recordings saw 6.5 to 7.0 busy beside them: "
     "another regime of the node's shared host CPU, PCIe and power, which can hide a slowdown as well as make one: "
     "not judged", "cards_busy_alone"),
    (wording.cards_busy_short(3.0, 0.0, 0.2), "3.0 other cards busy, recorded 0.0-0.2", "cards_busy_short"),
    (wording.uncalibrated_short(0.45), "a neighbour at 45%, uncalibrated", "uncalibrated_short"),
    (wording.neighbour_explains("<band>", "<shared>", "<moved>", math.log(1.25), 0.05),
     "<band>, but <shared>; <moved>, so a neighbour explains up to 25%; with that and the interval taken off, the "
     "slowdown is within the 5% tolerance: not judged", "neighbour_explains"),
    (wording.neighbour_explains_short(0.45, math.log(1.25)), "a neighbour at 45% explains 25%", "explains_short"),
    (wording.neighbour_ruled_out(0.45, math.log(1.2)), "a neighbour (45% of the host; calibrated: at most 20% slower)",
     "neighbour_ruled_out"),
    (wording.neighbour_beyond("<shared>", "<moved>"), "; <shared>, but <moved>: this is beyond it", "neighbour_beyond"),
    (wording.neighbour_hides(math.log(1.03), "<reach>", bound_said=True),
     "and by 3.0% more: a neighbour's phase can move it as far the other way", "neighbour_hides_bound_said"),
    (wording.neighbour_hides(math.log(1.18), "<reach>", bound_said=False),
     "widened by 18.0%, what a neighbour could hide: <reach>", "neighbour_hides"),
    (BAND, "time +7.0% [95% CI -0.8% .. +12.1%] relative to the reference kernel", "band_normalized"),
    (wording.band(1.07, 0.992, 1.121, 0.95, normalized=False), "time +7.0% [95% CI -0.8% .. +12.1%]", "band_seconds"),
    (wording.regressed(BAND, 0.05, "; <clauses>"), f"{BAND}, beyond the 5% tolerance; <clauses>", "regressed"),
    (wording.improved(BAND), f"{BAND}: faster than the baseline; refresh it with --accel-update", "improved"),
    (wording.unchanged(BAND, 0.05, 0.0, "; <sees>"), f"{BAND}, within the 5% tolerance; <sees>", "unchanged"),
    (wording.unchanged(BAND, 0.05, math.log(1.03), "; <sees>"),
     f"{BAND}, within the 5% tolerance with the 3% a neighbour explains taken off; <sees>", "unchanged_explained"),
    (wording.assumed_spread(0.02),
     "; the baseline has one recording, so the spread between processes is assumed (2%), not measured: record it "
     "again (--accel-update) to measure it", "assumed_spread"),
    (wording.could_see(0.114, ""), "; could see a slowdown of 11% or more", "could_see"),
    (wording.could_see(0.15, "; <limit>"), "; could see a slowdown of 15% or more; <limit>", "could_see_limited"),
    (wording.sight_widened(math.log(1.042), COPY), f" (widened by 4.2%: {COPY})", "sight_widened"),
    (wording.speedup_not_claimed(math.log(1.28), COPY, hides=True),
     f"; a speedup up to 28.0% is not claimed, and a slowdown that size could hide: {COPY}", "speedup_not_claimed"),
    (wording.memory(100 * 2**20, 110 * 2**20, None), "peak memory 100.0 MiB -> 110.0 MiB, within tolerance", "memory"),
    (wording.memory(100 * 2**20, 120 * 2**20, 0.1), "peak memory 100.0 MiB -> 120.0 MiB, beyond the 10% tolerance",
     "memory_beyond"),
    (wording.confirmed("<first>", [1.2, 1.19]), "<first>; confirmed by 2 re-measurement(s) (+20.0%, +19.0%)",
     "confirmed"),
    (wording.not_confirmed(1.2, "<last>"), "a first measurement said +20.0%, re-measurement did not confirm it: <last>",
     "not_confirmed"),
    (wording.count_new(12_345.6), "12,346 instructions per call counted; nothing recorded for this count key: new",
     "count_new"),
    (wording.counted("regressed", 1e8, 1.002e8, 0.001, None),
     "instructions per call 100,000,000 -> 100,200,000 (+0.2%, margin 0.10%): regressed", "counted"),
    (wording.counted("regressed", 1e8, 1e8, 0.001, (10_000, 10_300)),
     "instructions per call 100,000,000 -> 100,000,000 (+0.0%, margin 0.10%); simulated last-level misses per call "
     "10,000 -> 10,300 (+3.0%): regressed", "counted_misses"),
    (wording.counted("unchanged", 12_000, 12_108, 1 / 12, (0, 0)),
     "instructions per call 12,000 -> 12,108 (+0.9%, margin 8.33%): unchanged", "counted_no_misses_recorded"),
    (wording.count_moved("logf", 0, 30_000), "logf: 0 -> 30,000 per call (new)", "count_moved_new"),
    (wording.count_moved("add", 100_000, 0), "add: 100,000 -> 0 per call (gone)", "count_moved_gone"),
    (wording.count_moved("copy", 200_000, 350_000), "copy: 200,000 -> 350,000 per call (+75.0%)", "count_moved"),
    (wording.count_grew("test_a[b]", "cpu-x-2c-avx2-valgrind3.19.0", "<said>", ("<copy>", "<logf>")),
     "perf work counted grew: test_a[b] (under cpu-x-2c-avx2-valgrind3.19.0)\n  counted work: <said>\n    <copy>\n"
     "    <logf>", "count_grew"),
    (wording.count_grew("test_a[b]", "<key>", "<said>", ()),
     "perf work counted grew: test_a[b] (under <key>)\n  counted work: <said>", "count_grew_nothing_moved"),
    (wording.count_same_work("<said>"),
     "the work counted is the same (<said>): the time moved without the instructions (or the misses, where "
     "simulated): threads, waiting, the memory system or the host", "count_same_work"),
    (wording.not_counted("valgrind is not on PATH"), "not counted: valgrind is not on PATH", "not_counted"),
]  # fmt: skip


@pytest.mark.parametrize(("said", "golden"), [pytest.param(s, g, id=name) for s, g, name in GOLDEN])
def test_each_sentence_in_full(said: str, golden: str) -> None:
    assert said == golden


@pytest.mark.parametrize(
    ("cause", "spread", "within", "runs", "nights", "golden"),
    [
        (Sight.ROUNDS, 0.02, 0.09, 3, 0,
         "this run's rounds against the baseline's (±9.4%): a longer --accel-measure-seconds narrows it"),
        (Sight.RECORDINGS, 0.02, 0.01, 1, 0,
         "its one recording, which cannot show the spread between processes (SD 2.0% assumed): record it again "
         "(--accel-update)"),
        (Sight.RECORDINGS, 0.061, 0.01, 3, 0,
         "the spread of its 3 recordings (SD 6.1% between processes): recordings at other times (--accel-update keeps "
         "up to 10) measure it better"),
        (Sight.NIGHTS, 0.052, 0.01, 3, 14,
         "its drift between nights (SD 5.2% over its 14 newest nights at one level in the history): unchanged code "
         "moves this much from night to night here; a steadier host narrows it"),
        (Sight.TYPICAL, 0.04, 0.02, 3, 0,
         "the spread between processes typical of this baseline file (SD 4.0%): a quieter machine narrows it"),
        (Sight.FLOOR, 0.02, 0.04, 3, 0,
         "the smallest spread between processes assumed for any test (SD 2.0%, measured on a quiet VM): its "
         "recordings agree more closely than that"),
    ],
)  # fmt: skip
def test_what_limited_the_sight_in_full(
    cause: Sight, spread: float, within: float, runs: int, nights: int, golden: str
) -> None:
    assert wording.limited_by(cause, spread, within, runs, nights) == f"; limited by {golden}"


def test_the_remedy_of_each_cause() -> None:
    assert wording.REMEDY == {
        Cause.NO_SAMPLES: "record a baseline: pytest <same args> --accel-update",
        Cause.UNSTEADY: "a quieter machine",
        Cause.STATE: "a quieter machine",
        Cause.NEIGHBOUR: "a quieter machine",
        Cause.UNCALIBRATED: "calibrate beside a neighbour (--accel-calibrate)",
        Cause.STATE_UNPROBED: "free memory for them (out of memory?)",
        Cause.PROBE_DRIFT: "re-record if that is the new normal (--accel-update)",
        Cause.CARDS_BUSY: "record in a run of as many cards (--accel-update with the same -n), or run as recorded",
    }


def test_a_regression_beyond_the_machines_state_in_full() -> None:
    """End to end: judge_time's reason for a 3x slowdown while the copy probe read 1.40x its recordings."""

    def observation(centre: float, state: dict[str, float], runs: tuple[float, ...] = ()) -> Observation:
        samples = [centre * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(30)]
        recorded = ({"compute": 1.00e-3, "memory": 3.00e-3}, {"compute": 1.02e-3, "memory": 3.03e-3},
                    {"compute": 0.99e-3, "memory": 3.01e-3})  # fmt: skip
        return Observation(samples, [1e-3] * 30, None, runs, state, recorded if runs else ())

    now = observation(0.03, {"compute": 1e-3, "memory": 4.2e-3})
    verdict = judge_time(now, observation(0.01, {}, (10.0, 10.1, 9.9)), VerdictPolicy())
    assert (verdict.outcome, verdict.rule) == (Outcome.REGRESSED, Rule.INTERVAL)
    assert verdict.reason == (
        "time +200.0% [95% CI +129.1% .. +214.2%] relative to the reference kernel, beyond the 5% tolerance; the "
        "machine's state could explain up to 25%: a large memory copy took 1.40x as long, relative to the reference "
        "kernel, as in the baseline's recordings (they spanned 0.99-1.01x); this is beyond it"
    )
    assert verdict.ruled_out == ("the machine's state (up to 25%)",)


def test_a_long_function_name_is_cut_to_100_characters() -> None:
    name = "void at::native::DEFAULT::vectorized_loop<" + "x" * 200 + ">"
    said = wording.count_moved(name, 1000.0, 2000.0)
    assert said == f"{name[:97]}...: 1,000 -> 2,000 per call (+100.0%)"
