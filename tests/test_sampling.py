"""The measurement loop with a fake clock: every branch, no real timing."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_accel.engine.devices.cpu import HostTimer
from pytest_accel.engine.sampling import MeasureConfig, MeasurementError, check_finite, measure


class FakeClock:
    """A clock that only moves when the fake workload runs."""

    def __init__(self) -> None:
        self.now = 0.0
        self.syncs = 0

    def __call__(self) -> float:
        return self.now

    def sync(self) -> None:
        self.syncs += 1


def workload(clock: FakeClock, durations: Iterator[float], output: object = 1.0) -> tuple[list[int], object]:
    calls = [0]

    def fn() -> object:
        calls[0] += 1
        clock.now += next(durations)
        return output

    return calls, fn


def constant(value: float) -> Iterator[float]:
    while True:
        yield value


FAST = MeasureConfig(measure_seconds=0.1, round_seconds=0.01, min_rounds=5, max_rounds=50)


def test_compiling_first_calls_stay_out_of_the_figure() -> None:
    clock = FakeClock()
    # two slow "compile" calls, then a steady 1 ms per call
    durations = iter([5.0, 0.5, *([0.001] * 100_000)])
    _, fn = workload(clock, durations)
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=8, unit="images", config=FAST)
    assert result.warmup_settled
    assert result.warmup_calls == 5  # 2 slow + 3 agreeing
    assert result.seconds_per_call == pytest.approx(0.001)
    assert result.items_per_second == pytest.approx(8000)


@pytest.mark.parametrize("steady", [0.001, 0.9, 5.0], ids=["1ms", "0.9s", "5s"])
def test_a_first_call_beyond_the_warmup_budget_still_settles(steady: float) -> None:
    """A minute of compilation in the first call, then steady calls (up to 5 s each, past the 3 s budget)."""
    clock = FakeClock()
    _, fn = workload(clock, iter([60.0, *([steady] * 100_000)]))
    config = MeasureConfig(warmup_max_seconds=3.0, measure_seconds=0.1, round_seconds=0.01, min_rounds=3)
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="images", config=config)
    assert result.warmup_settled
    assert result.warmup_calls == 4  # the compiling call + a window of 3
    assert result.seconds_per_call == pytest.approx(steady)


def test_slow_unsteady_calls_stop_warming_up_after_a_window_past_the_budget() -> None:
    clock = FakeClock()
    _, fn = workload(clock, iter([60.0, *([1.0, 2.0] * 100_000)]))
    config = MeasureConfig(warmup_max_seconds=3.0, measure_seconds=0.1, round_seconds=0.01, min_rounds=3)
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=config)
    assert not result.warmup_settled
    assert result.warmup_calls == 4  # 1 + 3 calls after the first (4 s of them) spend the 3 s budget


def test_calls_per_round_and_rounds_follow_the_budgets() -> None:
    clock = FakeClock()
    _, fn = workload(clock, constant(0.001))
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="samples", config=FAST)
    assert result.calls_per_round == 10  # round_seconds 0.01 / 1 ms
    assert len(result.samples) == 10  # measure_seconds 0.1 / (10 calls x 1 ms)


def test_rounds_are_clamped_to_min_and_max() -> None:
    clock = FakeClock()
    _, slow = workload(clock, constant(1.0))
    result = measure(slow, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=FAST)
    assert len(result.samples) == FAST.min_rounds
    assert result.calls_per_round == 1
    clock2 = FakeClock()
    _, quick = workload(clock2, constant(1e-6))
    many = MeasureConfig(measure_seconds=100.0, round_seconds=1e-6, min_rounds=5, max_rounds=7)
    result = measure(quick, timer=HostTimer(clock2, clock2.sync), items_per_call=1, unit="x", config=many)
    assert len(result.samples) == 7


def test_unsettled_warmup_is_reported_not_hidden() -> None:
    clock = FakeClock()
    alternating = iter([0.001, 0.002] * 100_000)
    _, fn = workload(clock, alternating)
    config = MeasureConfig(warmup_max_calls=20, measure_seconds=0.05, round_seconds=0.001, min_rounds=3)
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=config)
    assert not result.warmup_settled
    assert result.warmup_calls == 20


def test_timer_synchronizes_around_every_region() -> None:
    clock = FakeClock()
    _, fn = workload(clock, constant(0.001))
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=FAST)
    regions = result.warmup_calls + 1 + len(result.samples)  # the untimed memory call is a region too
    assert clock.syncs == 2 * regions


def test_mark_step_after_every_call_and_peak_memory_reset_before_rounds() -> None:
    clock = FakeClock()
    calls, fn = workload(clock, constant(0.001))
    events: list[str] = []
    result = measure(
        fn,
        timer=HostTimer(clock, clock.sync),
        items_per_call=1,
        unit="x",
        mark_step=lambda: events.append("step"),
        reset_peak_memory=lambda: events.append("reset"),
        peak_memory_bytes=lambda: 1234,
        config=FAST,
    )
    assert events.count("step") == calls[0]
    assert events.index("reset") == result.warmup_calls  # after warm-up, before the memory call
    assert events.count("reset") == 1  # one memory call, untimed: the rounds keep their pages
    assert events.count("step") == result.warmup_calls + 1 + len(result.samples) * result.calls_per_round
    assert result.peak_memory_bytes == 1234


def test_peak_memory_is_the_memory_calls_and_excludes_the_probe() -> None:
    clock = FakeClock()
    live = [0]
    peaks = iter(range(1, 10**6))

    def fn() -> float:
        clock.now += 0.001
        live[0] = next(peaks)
        return 1.0

    def probe() -> float:
        clock.now += 0.001
        live[0] = 10**9  # the probe's allocations: must not count
        return 1.0

    result = measure(
        fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", probe=probe,
        reset_peak_memory=lambda: live.__setitem__(0, 0), peak_memory_bytes=lambda: live[0], config=FAST,
    )  # fmt: skip
    assert result.peak_memory_bytes == result.warmup_calls + 1  # the call after warm-up, not the probe's
    assert len(result.probe_samples) == len(result.samples)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_or_inf_output_fails(bad: float) -> None:
    clock = FakeClock()
    _, fn = workload(clock, constant(0.001), output={"loss": torch.tensor([1.0, bad])})
    with pytest.raises(MeasurementError, match=r"output\['loss'\] is not finite"):
        measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=FAST)


def test_output_going_nan_during_timing_fails() -> None:
    clock = FakeClock()
    outputs = iter([torch.ones(2)] * 6 + [torch.full((2,), math.nan)] * 100_000)
    calls = [0]

    def fn() -> torch.Tensor:
        calls[0] += 1
        clock.now += 0.001
        return next(outputs)

    where = r"(output of round \d+|warm-up call \d+'s output)"
    with pytest.raises(MeasurementError, match=where + ": output is not finite"):
        measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=FAST)


def test_a_nan_on_one_warm_up_call_only_fails() -> None:
    """Every warm-up call's output is checked, not only the first and the last."""
    clock = FakeClock()
    calls = [0]

    def fn() -> torch.Tensor:
        calls[0] += 1
        clock.now += 0.001
        return torch.full((2,), math.nan) if calls[0] == 2 else torch.ones(2)

    with pytest.raises(MeasurementError, match="warm-up call 2's output: output is not finite"):
        measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=FAST)


def test_a_nan_in_one_timed_round_fails_naming_the_round() -> None:
    clock = FakeClock()
    calls = [0]
    nan_at = [-1]

    def fn() -> torch.Tensor:
        calls[0] += 1
        clock.now += 0.001
        return torch.full((2,), math.nan) if calls[0] == nan_at[0] else torch.ones(2)

    clean = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=FAST)
    calls[0], nan_at[0] = 0, clean.warmup_calls + 1 + 3 * clean.calls_per_round  # round 3, after the memory call
    with pytest.raises(MeasurementError, match="the last call's output of round 3: output is not finite"):
        measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=FAST)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex64"])
def test_numpy_outputs_are_checked_too(dtype: str) -> None:
    import numpy

    bad = numpy.array([1.0, math.nan]).astype(dtype)
    with pytest.raises(MeasurementError, match="not finite"):
        check_finite(bad, "x")
    with pytest.raises(MeasurementError, match="not finite"):
        check_finite(bad[1], "x")  # a numpy scalar
    check_finite(numpy.array([1, 2]), "integers cannot be NaN")
    check_finite(numpy.ones(3, dtype=dtype), "finite")


@pytest.mark.parametrize("step", [0.0, -0.001, math.nan, math.inf])
def test_a_clock_that_does_not_advance_properly_fails(step: float) -> None:
    clock = FakeClock()
    _, fn = workload(clock, constant(step))
    with pytest.raises(MeasurementError, match="finite and positive"):
        measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=FAST)


def test_exceptions_from_the_workload_propagate() -> None:
    clock = FakeClock()

    def fn() -> None:
        raise ZeroDivisionError("inside the kernel")

    with pytest.raises(ZeroDivisionError, match="inside the kernel"):
        measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=FAST)


@pytest.mark.parametrize("items", [0, -1, math.nan])
def test_items_must_be_positive(items: float) -> None:
    clock = FakeClock()
    with pytest.raises(MeasurementError, match="items per call"):
        measure(lambda: None, timer=HostTimer(clock, clock.sync), items_per_call=items, unit="x")


@pytest.mark.parametrize(
    "field, value",
    [("min_rounds", 0), ("measure_seconds", 0.0), ("round_seconds", math.nan), ("warmup_window", 0)],
)
def test_config_rejects_nonsense(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        MeasureConfig(**{field: value})  # type: ignore[arg-type]


def test_config_rejects_min_above_max() -> None:
    with pytest.raises(ValueError, match="min_rounds"):
        MeasureConfig(min_rounds=10, max_rounds=5)


def test_check_finite_walks_containers_and_ignores_integers() -> None:
    check_finite((torch.ones(3), [1.0, {"a": torch.arange(3)}]), "ok")
    with pytest.raises(MeasurementError, match=r"output\[1\]\[0\]"):
        check_finite((torch.ones(1), [math.nan]), "here")


FLOATING = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64]


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.sampled_from([0.0, 1.0, -2.5, 6.0e4, -6.0e4, 3.0e38, -3.0e38, math.inf, -math.inf, math.nan]),
        min_size=0,
        max_size=64,
    ),
    dtype=st.sampled_from(FLOATING),
)
def test_the_finite_check_agrees_with_an_element_wise_one(values: list[float], dtype: torch.dtype) -> None:
    # Large finite values overflow a sum (fp16's 6e4, float32's 3e38): the check must not call them
    # non-finite, and a NaN or Inf anywhere must never hide behind a cancelling sum.
    tensor = torch.tensor(values, dtype=torch.float64).to(dtype)
    expected = bool(torch.isfinite(tensor).all())
    if expected:
        check_finite(tensor, "finite")
    else:
        with pytest.raises(MeasurementError, match="not finite"):
            check_finite(tensor, "non-finite")


class Prefetcher:
    """A loader with background workers on the fake clock: a batch every ``period`` seconds, at most
    ``depth`` batches ready ahead of the consumer. Calling it takes the next batch (waiting if needed)."""

    def __init__(self, clock: FakeClock, period: float, depth: int) -> None:
        self.clock, self.period, self.depth = clock, period, depth
        self.ready: list[float] = []  # when each batch was (or will be) ready
        self.taken: list[float] = []  # when each batch was consumed

    def __call__(self) -> float:
        i = len(self.taken)
        # Batch i starts when batch i-1 is made and a queue slot is free (batch i-depth consumed).
        start = max(self.ready[i - 1] if i else 0.0, self.taken[i - self.depth] if i >= self.depth else 0.0)
        self.ready.append(start + self.period)
        self.clock.now = max(self.clock.now, self.ready[i]) + 1e-5  # a ready batch costs 10 us to collate
        self.taken.append(self.clock.now)
        return 1.0


def _measure_loader(pipelined: bool, head_start: float) -> Any:
    """Workers make a batch every 10 ms (100 batches/s), 4 ahead at most; the probe takes 10 ms a call."""
    clock = FakeClock()
    loader = Prefetcher(clock, period=0.010, depth=4)
    clock.now = head_start  # time the workers ran before measuring began (a full queue after 40 ms)

    def probe(clock: FakeClock = clock) -> float:
        clock.now += 0.010
        return 1.0

    config = MeasureConfig(measure_seconds=1.0, round_seconds=0.04, min_rounds=10)
    timer = HostTimer(clock, clock.sync)
    return measure(loader, timer=timer, items_per_call=1, unit="b", config=config, probe=probe, pipelined=pipelined)


def test_pipelined_measures_the_rate_the_producers_sustain() -> None:
    """Probe rounds between rounds let the workers refill the queue: the figure overstates their rate."""
    assert _measure_loader(pipelined=False, head_start=0.0).items_per_second > 150  # the pauses refill the queue
    pipelined = _measure_loader(pipelined=True, head_start=0.0)
    assert pipelined.items_per_second == pytest.approx(100, rel=0.05)
    # Normalised by the probe block's median (its rounds are not adjacent to the workload's).
    assert len(set(pipelined.probe_samples)) == 1 and len(pipelined.probe_samples) == len(pipelined.samples)


def test_pipelined_calibrates_on_the_sustained_rate_not_on_queued_batches() -> None:
    """With a full queue, warm-up calls take 10 us: calibrating on them would make rounds of 4,000 calls."""
    assert _measure_loader(pipelined=False, head_start=1.0).calls_per_round > 1000
    pipelined = _measure_loader(pipelined=True, head_start=1.0)
    assert pipelined.calls_per_round == 4  # 4 x 10 ms per 40 ms round
    assert pipelined.items_per_second == pytest.approx(100, rel=0.05)
    # No timed round is served from the queue refilled during the probe block: every round takes ~40 ms.
    assert max(pipelined.samples) / min(pipelined.samples) < 1.01
