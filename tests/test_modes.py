"""Kernel-time modes with fake clocks: graph replay, a cold cache, the compute clock watched (engine/modes.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_accel.core.measurement import (
    COLD,
    EAGER,
    GRAPH,
    THROTTLED_ROUNDS_LIMIT,
    WARM,
    Measurement,
    mode_note,
    throttle_problem,
)
from pytest_accel.core.outcomes import Outcome
from pytest_accel.engine.devices.cpu import HostTimer
from pytest_accel.engine.modes import COLD_CALLS_PER_ROUND, RECOVERY_WAIT_SECONDS, ThrottleWatch, TimingMode
from pytest_accel.engine.sampling import MeasureConfig, measure
from pytest_accel.judgement.gate import run_gate
from pytest_accel.judgement.verdict import VerdictPolicy

FAST = MeasureConfig(measure_seconds=0.1, round_seconds=0.01, min_rounds=5, max_rounds=50)


class Clock:
    """A host clock that moves only when fake work runs; logs what happened in which order."""

    def __init__(self) -> None:
        self.now = 0.0
        self.log: list[str] = []

    def __call__(self) -> float:
        return self.now

    def sync(self) -> None:
        self.log.append("sync")


def kernel(clock: Clock, seconds: float) -> Callable[[], float]:
    def fn() -> float:
        clock.now += seconds
        clock.log.append("call")
        return 1.0

    return fn


def timer(clock: Clock) -> HostTimer:
    return HostTimer(clock, clock.sync)


def test_graph_mode_captures_a_rounds_calls_and_times_one_replay_per_round() -> None:
    clock = Clock()
    captured: list[int] = []

    # An eager call costs 8 us of launch; a replay runs the kernels at 5 us each, as on the H200.
    def graph(fn: Callable[[], Any], calls: int) -> Callable[[], Any]:
        captured.append(calls)

        def replay() -> float:
            clock.now += 5e-6 * calls
            return 1.0

        return replay

    result = measure(
        kernel(clock, 8e-6), timer=timer(clock), items_per_call=1, unit="adds", config=FAST, mode=TimingMode(graph)
    )
    assert captured == [result.calls_per_round]  # captured once, after warm-up, a round's worth
    assert result.seconds_per_call == pytest.approx(5e-6)
    assert result.timing == GRAPH and result.cache == WARM


def test_cold_mode_flushes_before_every_timed_call_outside_the_timer() -> None:
    clock = Clock()

    def flush() -> None:
        clock.now += 1.0  # a flush this slow would dominate any figure that included it
        clock.log.append("flush")

    mode = TimingMode(flush=flush)
    result = measure(kernel(clock, 1e-3), timer=timer(clock), items_per_call=1, unit="calls", config=FAST, mode=mode)
    assert result.seconds_per_call == pytest.approx(1e-3)
    assert result.cache == COLD and result.timing == EAGER
    assert result.calls_per_round == 1  # a call costs its 1 s flush too: one call fills a 10 ms round
    assert len(result.samples) == FAST.min_rounds
    # each timed call: the flush, the timer's start (a sync), the call, the timer's stop (a sync)
    assert clock.log[-4:] == ["flush", "sync", "call", "sync"]
    assert clock.log.count("flush") == 3 + len(result.samples)  # three timed to size the rounds


def test_a_graph_cannot_be_cold() -> None:
    with pytest.raises(ValueError, match="cold=True needs timing='eager'"):
        TimingMode(graph=lambda fn, calls: fn, flush=lambda: None)


def throttling_run(readings: list[float], rounds: int) -> tuple[Measurement, list[float]]:
    """A measurement whose SM clock reads ``readings`` (the first when the rounds start, then one per check)."""
    clock = Clock()
    waits: list[float] = []
    feed = iter(readings)
    last = [readings[-1]]

    def sm_clock() -> float:
        last[0] = next(feed, last[0])
        return last[0]

    config = MeasureConfig(measure_seconds=0.01, round_seconds=0.01, min_rounds=rounds, max_rounds=rounds)
    mode = TimingMode(clock=sm_clock, sleep=waits.append)
    result = measure(kernel(clock, 1e-3), timer=timer(clock), items_per_call=1, unit="calls", config=config, mode=mode)
    return result, waits


def test_a_round_below_three_quarters_of_the_start_clock_is_retaken_after_the_clock_recovers() -> None:
    # start 1980 MHz; round 1 fine; round 2 ends at 1200 (61%): discarded; one poll still low, then back
    result, waits = throttling_run([1980, 1980, 1200, 1300, 1900, 1980], rounds=4)
    assert len(result.samples) == 4
    assert result.throttled_rounds == 0  # retaken: no throttled round is in the figure
    assert len(waits) == 2  # polled until the clock was back
    assert throttle_problem(result) is None
    assert mode_note(result) == ""


def test_a_clock_that_stays_low_keeps_its_rounds_counted_and_the_verdict_says_noisy() -> None:
    result, waits = throttling_run([1980, *([900.0] * 1000)], rounds=4)
    assert len(result.samples) == 4  # after as many retakes as planned rounds, the rounds are kept
    assert result.throttled_rounds == 4  # the 4 kept; the 4 retaken are not in the figure
    assert sum(waits) <= 4 * RECOVERY_WAIT_SECONDS + 1e-9  # every wait bounded
    problem = throttle_problem(result)
    assert problem is not None and "75%" in problem and "throttled" in problem
    verdict = run_gate(result, None, VerdictPolicy(), {}, lambda: result, confirmations=0).time
    assert verdict.outcome is Outcome.NEW and "throttled" in verdict.reason  # new (no baseline), and says why


def test_without_a_clock_nothing_is_discarded() -> None:
    watch = ThrottleWatch(TimingMode(), planned_rounds=3)
    assert not watch.discard() and watch.throttled_rounds == 0


@given(
    start=st.floats(100, 3000),
    readings=st.lists(st.floats(0, 3000), min_size=1, max_size=60),
    planned=st.integers(1, 20),
)
def test_the_watch_retakes_at_most_the_planned_rounds_and_counts_the_low_rounds_it_keeps(
    start: float, readings: list[float], planned: int
) -> None:
    feed = iter([start, *readings])
    watch = ThrottleWatch(TimingMode(clock=lambda: next(feed, start), sleep=lambda seconds: None), planned)
    discarded = 0
    for _ in range(5):  # five rounds' checks; each may poll while it waits
        discarded += watch.discard()
    assert discarded <= planned
    assert discarded + watch.throttled_rounds <= 5  # a low reading is retaken or kept and counted
    assert watch.throttled_rounds == 0 or discarded == planned  # kept only once the retakes ran out


@given(kept=st.integers(1, 500), throttled=st.integers(0, 1000))
def test_a_figure_is_not_judged_exactly_when_throttled_rounds_exceed_the_limit(kept: int, throttled: int) -> None:
    m = Measurement("calls", 1.0, tuple([1e-3] * kept), throttled_rounds=throttled)
    assert (throttle_problem(m) is not None) == (throttled > THROTTLED_ROUNDS_LIMIT * kept)


def test_the_modes_survive_the_dictionary_round_trip_and_are_noted() -> None:
    m = Measurement("calls", 1.0, (1e-3,), timing=GRAPH, throttled_rounds=2)
    again = Measurement.from_dict(m.to_dict())
    assert (again.timing, again.cache, again.throttled_rounds) == (GRAPH, WARM, 2)
    assert m.to_dict()["timing"] == "graph"
    assert mode_note(m) == "graph, 2 throttled"
    assert mode_note(Measurement("calls", 1.0, (1e-3,), cache=COLD)) == "cold"
    assert mode_note(Measurement("calls", 1.0, (1e-3,))) == ""


def test_cold_rounds_hold_at_most_a_hundred_calls_each_timed_alone() -> None:
    clock = Clock()

    def flush() -> None:
        clock.now += 1e-9  # a nearly free flush: the round would otherwise hold 10,000 calls

    mode = TimingMode(flush=flush)
    result = measure(kernel(clock, 1e-6), timer=timer(clock), items_per_call=1, unit="calls", config=FAST, mode=mode)
    assert result.calls_per_round == COLD_CALLS_PER_ROUND
    assert result.seconds_per_call == pytest.approx(1e-6)


def test_a_figure_is_compared_only_with_a_baseline_timed_in_the_same_mode() -> None:
    from pytest_accel.judgement.baselines import BaselineEntry
    from pytest_accel.judgement.recording import recorded_entries

    graph = Measurement("calls", 1.0, (5e-6,) * 3, timing=GRAPH)
    (entry,) = recorded_entries(
        [("t.py::test_add", graph)], {}, {}, {"torch": "2.13"}, False, "2026-12-04T20:51:10+00:00"
    )
    assert entry.provenance == {"torch": "2.13", "timing": "graph"}  # the default (warm) is left out
    assert entry.incomparable(graph, {"torch": "2.13"}) is None
    eager = Measurement("calls", 1.0, (8e-6,) * 3)
    assert entry.incomparable(eager, {}) == (
        "timing graph -> eager",
        "the baseline was timed with timing=graph, this run with timing=eager: another mode",
    )
    old = BaselineEntry("t.py::test_add", "throughput", "calls", 1.0, (8e-6,))  # recorded before modes existed
    assert old.incomparable(eager, {}) is None
    assert "cache=cold" in str(old.incomparable(Measurement("calls", 1.0, (8e-6,), cache=COLD), {}))


def test_a_clock_that_stops_answering_is_no_throttle() -> None:
    readings = iter([1980.0])

    def nvml() -> float:
        return next(readings)  # StopIteration after the first: NVML refusing a query

    watch = ThrottleWatch(TimingMode(clock=nvml), planned_rounds=3)
    assert not watch.discard() and watch.throttled_rounds == 0
