"""How a figure is taken: warm-up until timings settle, calibrate calls per round, time rounds.

What is measured (a callable and its work per call), how it is timed (a ``RegionTimer`` from the
device seam, or any injected one) and the result (``Measurement``, in ``pytest_accel.core.measurement``) are
separate, after ``torch.utils.benchmark``. The algorithm, after triton's ``do_bench``::

    warm-up:   call fn, timing each call, until the last WARMUP_WINDOW timings agree within
               SETTLE_TOLERANCE (first calls that compile, autotune, capture graphs or grow the
               allocator fall out), or the warm-up budget is spent (then the result says so).
               The budget counts the calls after the first, and is only spent once a whole
               window of them ran: a first call that compiles for a minute, or calls of
               seconds each (a 30-step inference), still get their chance to settle
    calibrate: per-call estimate = median of the settled window;
               calls_per_round = ceil(round_seconds / estimate)
               rounds = clamp(measure_seconds / (calls_per_round * estimate), min_rounds, max_rounds)
    memory:    one untimed call between a peak-memory reset and a peak read: the figure's peak
    measure:   for each round: timer.start(); fn() x calls_per_round; timer.stop()
               sample = round time / calls_per_round  (seconds per call)
               with a probe (a fixed reference kernel), each workload round is followed by a probe
               round, so that sample / probe_sample cancels the machine's drift (see verdict.py)
    pipelined: for a consumer of background producers (a DataLoader with workers), the estimate
               comes from back-to-back blocks of 1, 2, 4, ... calls, and the probe rounds all run
               first, so no pause between workload rounds lets the producers get ahead; one round
               after the probe block drains what the producers made meanwhile and is not kept;
               each round is normalised by the probe block's median (recorded as probe_samples)
    state:     with state probes (a large copy, a random gather: see engine/machine.py), every
               STATE_EVERY-th workload round is also followed by one round of each, then by one
               workload round (and its probe round) that is not kept: the copy leaves the workload's
               caches cold; the medians of all probes are the machine's state (Measurement.state)
    check:     every warm-up call's output and the last output of every timed round are finite
               (torch tensors, numpy arrays and scalars, floats, and containers of them), each
               checked after its timer stopped, so the check costs wall time, never figure time;
               every round time is finite and > 0

Graph replay, a cold cache and the compute clock's watch (``mode``) are engine/modes.py's.

One timer start/stop per round, not per call: on CUDA/HPU the events are recorded back to back
and the host waits once per round, so launch overhead of the timer itself stays out of the figure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, final

try:
    import resource
except ImportError:  # not on Windows: no page-fault counts there
    resource = None  # type: ignore[assignment]

from pytest_accel.core.measurement import FAULT_SHARE, Measurement
from pytest_accel.core.stats import median
from pytest_accel.core.units import format_seconds
from pytest_accel.engine.devices.base import RegionTimer
from pytest_accel.engine.modes import COLD_CALLS_PER_ROUND, ThrottleWatch, TimingMode, timed_calls

__all__ = [
    "HostShareMeter", "MeasureConfig", "MeasurementError", "StateSnapshot", "TimingMode", "check_finite", "measure",
]  # fmt: skip


class MeasurementError(Exception):
    """The workload or the clock produced something that is not a valid measurement."""


# The largest calibration block of a pipelined measurement: 65,536 calls (calls of microseconds).
_MAX_CALIBRATION_CALLS = 1 << 16
# State probes run after every 4th workload round (5 samples of each at the 20-round minimum); the
# round after them is run, not kept: the large copy leaves the workload's caches cold (math SDPA
# decode on a 2-core VM read that round slower than the others; docs/studies/state-recovery, which
# also gives the time the probes add).
STATE_EVERY = 4
_STATE_WARMUP_CALLS = 5  # untimed-for-the-figure calls that size a state probe's rounds


@final
@dataclass(frozen=True)
class MeasureConfig:
    """Time budgets and counts of one measurement; defaults suit a kernel test in the smoke profile."""

    # Warm-up ends when the last WARMUP_WINDOW call timings lie within SETTLE_TOLERANCE of their
    # median: three calls in a row that close means compile / autotune / allocator growth is over
    # (a compiling first call is typically 10-1000x a steady one).
    warmup_window: int = 3
    settle_tolerance: float = 0.10
    # Upper bounds on warm-up: a workload that never settles (a noisy machine) is still measured,
    # and the Measurement records warmup_settled=False so the verdict can say "noisy".
    warmup_max_seconds: float = 3.0
    warmup_max_calls: int = 200
    # One round should be long enough to dwarf the timer's own cost (~5 us host, ~10 us events)
    # and short enough that a burst of machine noise spoils one round, not the figure.
    round_seconds: float = 0.02
    # Total timed budget; with min_rounds it sets the precision of the median.
    measure_seconds: float = 1.0
    # 20 rounds at least: at the per-round noise of a quiet 2-core VM, the interval of a median ratio
    # of 20 against 20 samples at the default confidence is narrower than the default tolerance
    # (docs/measurements.md).
    min_rounds: int = 20
    max_rounds: int = 500
    # A probe round lasts half a workload round: it only needs to see the same machine state.
    probe_round_fraction: float = 0.5
    # Whether the machine-state probes (a copy, a gather, a fresh mapping) run beside the rounds: what
    # lets a verdict against a stored baseline tell a state shift from a regression, at about a third
    # of a short kernel's measuring time. An A/B sitting has no use for them (both sides of a pair
    # share the machine's state) and turns them off.
    state_probes: bool = True
    # The energy window after the timed rounds (engine/energy.py): the workload's calls back to back this long,
    # read by the device's energy counter; 0: energy is not read. 1 s spans many updates of a counter that
    # updates every few milliseconds (RAPL's ~1 ms); on NVML and HLML it was not measured yet.
    energy_seconds: float = 1.0

    def __post_init__(self) -> None:
        for name in ("warmup_window", "warmup_max_calls", "min_rounds", "max_rounds"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (math.isfinite(self.energy_seconds) and self.energy_seconds >= 0):
            raise ValueError(f"energy_seconds must be a number >= 0, got {self.energy_seconds}")
        for name in ("settle_tolerance", "warmup_max_seconds", "round_seconds", "measure_seconds",
                     "probe_round_fraction"):  # fmt: skip
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value}")
        if self.min_rounds > self.max_rounds:
            raise ValueError(f"min_rounds {self.min_rounds} > max_rounds {self.max_rounds}")


def check_finite(value: Any, where: str) -> None:
    """Raise ``MeasurementError`` if ``value`` holds a NaN or Inf (floats, tensors, and containers of them)."""
    problem = _non_finite(value, "output")
    if problem is not None:
        raise MeasurementError(f"{where}: {problem} is not finite (NaN or Inf); a figure for it would be a lie")


def _non_finite(value: Any, path: str) -> str | None:
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if hasattr(value, "is_floating_point") and hasattr(value, "dtype"):
        if value.is_floating_point() or value.is_complex():
            return None if _all_finite(value.detach()) else path
        return None
    if hasattr(value, "dtype") and hasattr(value, "__array__") and getattr(value.dtype, "kind", "") in ("f", "c"):
        import numpy

        return None if bool(numpy.isfinite(value).all()) else path
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, f"{path}[{key!r}]")
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _non_finite(item, f"{path}[{index}]")
            if found:
                return found
    return None


def _all_finite(tensor: Any) -> bool:
    """Whether a floating tensor holds no NaN or Inf, in one reduction (no tensor of its size allocated).

    NaN and Inf survive a sum (NaN + x is NaN, Inf + finite is Inf, Inf - Inf is NaN), so a finite
    sum proves every element finite; only a sum that overflowed (or a real NaN) pays the full
    element-wise check. On a 2 x 24 x 1024 x 64 float32 output: 3.9 ms against 35 ms for
    ``isfinite(x).all()``, which ran on every warm-up call and timed round's output.
    """
    import torch

    half = tensor.dtype in (torch.float16, torch.bfloat16)
    try:
        total = tensor.sum(dtype=torch.float32) if half else tensor.sum()
    except (RuntimeError, TypeError):  # a dtype without a sum (float8 on some builds): the full check
        return bool(torch.isfinite(tensor).all())
    return bool(torch.isfinite(total)) or bool(torch.isfinite(tensor).all())


def _check_duration(seconds: float, what: str) -> float:
    if not math.isfinite(seconds) or seconds <= 0:
        raise MeasurementError(
            f"the device clock gave {seconds!r} s for {what}; timings must be finite and positive "
            "(a clock that does not advance, or a timer stopped before it started)"
        )
    return seconds


# Told the phase and a detail between calls and rounds (never inside a timed region): the live status.
Progress = Callable[[str, str], None]


def _silent(phase: str, detail: str) -> None:
    return None


def _warm_up(
    fn: Callable[[], Any],
    timer: RegionTimer,
    mark_step: Callable[[], None],
    config: MeasureConfig,
    progress: Progress = _silent,
) -> tuple[list[float], bool, float]:
    """Call ``fn`` until timings settle; return (per-call times, settled, wall seconds spent)."""
    times: list[float] = []
    began = time.perf_counter()
    while True:
        timer.start()
        output = fn()
        mark_step()
        times.append(_check_duration(timer.stop(), f"warm-up call {len(times) + 1}"))
        progress("warming up", f"{len(times)} call(s), the last {format_seconds(times[-1])}")
        check_finite(output, f"warm-up call {len(times)}'s output" if len(times) > 1 else "the first call's output")
        window = times[-config.warmup_window :]
        if len(window) == config.warmup_window:
            centre = median(window)
            if all(abs(t - centre) <= config.settle_tolerance * centre for t in window):
                return times, True, time.perf_counter() - began
        # Decided on timer readings only: under torchrun every rank reads the same (slowest) times, so
        # every rank stops warming up after the same call; a per-rank wall clock could disagree.
        after_first = times[1:]
        budget_spent = len(after_first) >= config.warmup_window and sum(after_first) >= config.warmup_max_seconds
        if budget_spent or len(times) >= config.warmup_max_calls:
            return times, False, time.perf_counter() - began


def measure(
    fn: Callable[[], Any],
    *,
    timer: RegionTimer,
    items_per_call: float,
    unit: str,
    flops_per_call: float | None = None,
    bytes_per_call: float | None = None,
    mark_step: Callable[[], None] = lambda: None,
    reset_peak_memory: Callable[[], None] = lambda: None,
    peak_memory_bytes: Callable[[], int | None] = lambda: None,
    device_key: str = "unknown",
    config: MeasureConfig | None = None,
    probe: Callable[[], Any] | None = None,
    pipelined: bool = False,
    state_probes: Mapping[str, Callable[[], Any]] | None = None,
    host_share: HostShareMeter | None = None,
    fault_probe: tuple[str, int] | None = None,
    mode: TimingMode | None = None,
    progress: Progress = _silent,
) -> Measurement:
    """Warm up, calibrate and time ``fn`` (alternating with ``probe`` rounds when given).

    ``pipelined``: ``fn`` consumes what background work produces (DataLoader workers): pauses between rounds
    would let the producers fill their queues, so calls per round come from back-to-back blocks and the probe
    rounds all run first. ``state_probes`` (name -> kernel) are timed every ``STATE_EVERY`` rounds (pipelined:
    in the probe block); ``state`` holds each one's median, and ``compute``, ``probe``'s. ``host_share`` (a
    start/stop meter) adds ``foreign_cpu``: the share of the host's CPU other processes used in the rounds.
    ``fault_probe`` (a state probe's name, the page faults one call of it takes) adds ``fault_share``: the
    share of the workload's time its own page faults took at that probe's cost per fault (not when pipelined).
    ``mode``: graph replay, a cold cache, the clock watched (not when pipelined); ``progress``: the live status.
    """
    config, mode = config or MeasureConfig(), mode or TimingMode()
    _check_arguments(items_per_call, pipelined, mode)
    warmup_times, settled, warmup_seconds = _warm_up(fn, timer, mark_step, config, progress)
    window = median(warmup_times[-config.warmup_window :])
    estimate = _sustained_estimate(fn, timer, mark_step, config) if pipelined else window
    calls_per_round, rounds = _rounds(estimate, config, _flush_seconds(mode, timer, mark_step))
    probe_calls = _probe_calls(probe, timer, mark_step, config) if probe is not None else 0
    state = _StateProbes((state_probes or {}) if config.state_probes else {}, timer, mark_step, config)
    if host_share is not None:
        host_share.start()
    probe_samples: list[float] = []
    if pipelined:
        if probe is not None:
            probe_samples = _probe_block(probe, probe_calls, rounds, timer, mark_step, state)
        # The probe (and the warm-up of the probe) paused the consumer and let the producers refill
        # their queue: one untimed-for-the-figure round drains it before the timed rounds.
        _timed_round(fn, calls_per_round, timer, mark_step)
        timer.stop()
    peak = _memory_call(fn, timer, mark_step, reset_peak_memory, peak_memory_bytes)
    watch, workload = ThrottleWatch(mode, rounds), _round_of(fn, calls_per_round, mode)
    samples, interleaved, faults = _workload_rounds(
        workload, calls_per_round, rounds, None if pipelined else probe, probe_calls, timer, mark_step, state, watch,
        progress,
    )  # fmt: skip
    probe_samples = probe_samples or interleaved
    machine = state.medians(probe_samples)
    if config.state_probes and fault_probe is not None and faults is not None and not pipelined:
        machine.update(_fault_share(fault_probe, machine, faults / (rounds * calls_per_round), median(samples)))
    if host_share is not None:
        machine.update(host_share.stop())
    return Measurement(
        unit=unit,
        items_per_call=float(items_per_call),
        samples=tuple(samples),
        calls_per_round=calls_per_round,
        warmup_calls=len(warmup_times),
        warmup_seconds=warmup_seconds,
        warmup_settled=settled,
        flops_per_call=flops_per_call,
        bytes_per_call=bytes_per_call,
        peak_memory_bytes=peak,
        device_key=device_key,
        probe_samples=tuple(probe_samples),
        state=machine,
        timing=mode.timing,
        cache=mode.cache,
        throttled_rounds=watch.throttled_rounds,
    )


def _check_arguments(items_per_call: float, pipelined: bool, mode: TimingMode) -> None:
    if not (math.isfinite(items_per_call) and items_per_call > 0):
        raise MeasurementError(f"items per call must be a positive number, got {items_per_call!r}")
    if pipelined and (mode.graph is not None or mode.flush is not None):
        raise MeasurementError("a pipelined workload is timed eager and warm: its producers run beside it")


# One round of the workload: (timer, mark_step) -> (its last output, its seconds).
_Round = Callable[[RegionTimer, Callable[[], None]], tuple[Any, float]]


def _round_of(fn: Callable[[], Any], calls: int, mode: TimingMode) -> _Round:
    """How one round of ``calls`` calls is run and timed under ``mode``: back to back (eager), one
    replay of a graph captured now (graph), or each call alone after a flush (cold)."""
    if mode.graph is not None:
        replay = mode.graph(fn, calls)

        def graph_round(timer: RegionTimer, mark_step: Callable[[], None]) -> tuple[Any, float]:
            return _timed_round(replay, 1, timer, mark_step), timer.stop()

        return graph_round
    flush = mode.flush
    if flush is not None:

        def cold_round(timer: RegionTimer, mark_step: Callable[[], None]) -> tuple[Any, float]:
            output, seconds = timed_calls(fn, calls, timer, mark_step, flush)
            return output, sum(_check_duration(s, "a cold call") for s in seconds)

        return cold_round

    def eager_round(timer: RegionTimer, mark_step: Callable[[], None]) -> tuple[Any, float]:
        return _timed_round(fn, calls, timer, mark_step), timer.stop()

    return eager_round


def _rounds(estimate: float, config: MeasureConfig, flush_seconds: float | None = None) -> tuple[int, int]:
    """(calls per round, rounds) for a call of ``estimate`` seconds: the module docstring's calibration.

    Cold (``flush_seconds``: what one flush takes): each call costs its flush too, so the budgets are
    spent on call + flush, with at most COLD_CALLS_PER_ROUND calls a round (each is timed alone)."""
    if flush_seconds is None:
        calls_per_round = max(1, math.ceil(config.round_seconds / estimate))
    else:
        estimate += flush_seconds
        calls_per_round = min(max(1, math.ceil(config.round_seconds / estimate)), COLD_CALLS_PER_ROUND)
    wanted_rounds = math.ceil(config.measure_seconds / (calls_per_round * estimate))
    return calls_per_round, min(max(wanted_rounds, config.min_rounds), config.max_rounds)


def _flush_seconds(mode: TimingMode, timer: RegionTimer, mark_step: Callable[[], None]) -> float | None:
    """What one cache flush takes (the median of three), or None when the mode is warm."""
    if mode.flush is None:
        return None
    times = []
    for _ in range(3):
        _timed_round(mode.flush, 1, timer, mark_step)
        times.append(_check_duration(timer.stop(), "a cache flush"))
    return median(times)


def _memory_call(
    fn: Callable[[], Any],
    timer: RegionTimer,
    mark_step: Callable[[], None],
    reset_peak_memory: Callable[[], None],
    peak_memory_bytes: Callable[[], int | None],
) -> int | None:
    """The peak memory of one untimed call after warm-up: the window opens just before it (on the CPU,
    with the heap's free pages returned first), so neither the probes nor what earlier calls left
    free and reusable hide or inflate what the workload needs."""
    reset_peak_memory()
    output = _timed_round(fn, 1, timer, mark_step)
    timer.stop()  # waits for the call's work
    check_finite(output, "the memory call's output")
    return peak_memory_bytes()


def _workload_rounds(
    run_round: _Round,
    calls_per_round: int,
    rounds: int,
    probe: Callable[[], Any] | None,
    probe_calls: int,
    timer: RegionTimer,
    mark_step: Callable[[], None],
    state: _StateProbes,
    watch: ThrottleWatch,
    progress: Progress = _silent,
) -> tuple[list[float], list[float], int | None]:
    """The timed rounds: seconds per call of each, each followed by a probe round when ``probe`` is
    given (and every ``STATE_EVERY``-th by the state probes, then a round that is not kept); a round
    the ``watch`` saw throttled is retaken; returns (samples, probe samples, the process's minor page
    faults during the workload's kept rounds, or None where the OS does not count them)."""
    samples: list[float] = []
    probe_samples: list[float] = []
    faults: int | None = 0
    recover = False
    while len(samples) < rounds:
        round_index = len(samples)
        if recover:  # after the state probes: a round and its probe round, not kept (see STATE_EVERY)
            run_round(timer, mark_step)
            if probe is not None:
                _timed_round(probe, probe_calls, timer, mark_step)
                timer.stop()
            recover = False
        progress("timing rounds", f"round {round_index + 1} of {rounds}, {calls_per_round} call(s) each")
        before = _minor_faults()  # read outside the timer: the figure does not pay for it
        output, seconds = run_round(timer, mark_step)
        seconds = _check_duration(seconds, f"round {round_index + 1} of {rounds}")
        if watch.discard():
            continue
        samples.append(seconds / calls_per_round)
        after = _minor_faults()
        faults = None if faults is None or before is None or after is None else faults + after - before
        check_finite(output, f"the last call's output of round {round_index + 1}")
        if probe is not None:
            _timed_round(probe, probe_calls, timer, mark_step)
            probe_samples.append(_check_duration(timer.stop(), f"probe round {round_index + 1}") / probe_calls)
            if round_index % STATE_EVERY == STATE_EVERY - 1 and state.sample():
                recover = True
    return samples, probe_samples, faults


def _fault_share(
    fault_probe: tuple[str, int], state: Mapping[str, float], faults_per_call: float, seconds_per_call: float
) -> dict[str, float]:
    """``{FAULT_SHARE: share}``: the workload's page faults per call at the fault probe's cost per fault,
    as a share of its call; nothing when that probe did not run."""
    name, probe_faults = fault_probe
    if name not in state:
        return {}
    return {FAULT_SHARE: min(1.0, faults_per_call * state[name] / probe_faults / seconds_per_call)}


def _minor_faults() -> int | None:
    """This process's minor page faults so far (every thread's), or None where ``resource`` is missing."""
    if resource is None:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _probe_calls(
    probe: Callable[[], Any], timer: RegionTimer, mark_step: Callable[[], None], config: MeasureConfig
) -> int:
    """Warm the probe up; how many of its calls fill its share of a round (``probe_round_fraction``)."""
    probe_times, _, _ = _warm_up(probe, timer, mark_step, config)
    return _calls_in_probe_share(median(probe_times[-config.warmup_window :]), config)


def _calls_in_probe_share(seconds_per_call: float, config: MeasureConfig) -> int:
    """Calls of a probe that fill its share of a round (``probe_round_fraction``): at least one."""
    return max(1, math.ceil(config.round_seconds * config.probe_round_fraction / seconds_per_call))


def _probe_block(
    probe: Callable[[], Any],
    probe_calls: int,
    rounds: int,
    timer: RegionTimer,
    mark_step: Callable[[], None],
    state: _StateProbes,
) -> list[float]:
    """Pipelined workloads: every probe round before the workload's; each round's sample is their median.

    The probe rounds are not adjacent to the workload's: pairing them round by round would only add
    the probe's own noise, so each round is normalised by the block's median instead.
    """
    block = []
    for round_index in range(rounds):
        _timed_round(probe, probe_calls, timer, mark_step)
        block.append(_check_duration(timer.stop(), f"probe round {round_index + 1}") / probe_calls)
        if round_index % STATE_EVERY == 0:
            state.sample()
    return [median(block)] * rounds


def _sustained_estimate(
    fn: Callable[[], Any], timer: RegionTimer, mark_step: Callable[[], None], config: MeasureConfig
) -> float:
    """Seconds per call over back-to-back blocks of 1, 2, 4, ... calls, until a block lasts a round.

    Calls served from a producer's queue are cheap; a block long enough to drain the queue shows
    the rate the producers sustain. Costs about two rounds, plus the time to drain the queue when
    it holds more than a round's worth (queue depth x producer period).
    """
    calls = 1
    while True:
        _timed_round(fn, calls, timer, mark_step)
        elapsed = _check_duration(timer.stop(), f"calibration block of {calls} calls")
        if elapsed >= config.round_seconds or calls >= _MAX_CALIBRATION_CALLS:
            return elapsed / calls
        calls *= 2


def _timed_round(fn: Callable[[], Any], calls: int, timer: RegionTimer, mark_step: Callable[[], None]) -> Any:
    """Start the timer and run ``calls`` calls; the caller stops the timer. Returns the last output."""
    output: Any = None
    timer.start()
    for _ in range(calls):
        output = fn()
        mark_step()
    return output


class HostShareMeter(Protocol):
    """Measures what was beside the rounds between ``start`` and ``stop`` (engine/board.py's ``Beside``)."""

    def start(self) -> None:
        """Read the counters."""

    def stop(self) -> Mapping[str, float]:
        """State entries (``FOREIGN_CPU``, ``BUSY_CARDS``, ``OTHER_CARDS``); one that is unknown is left out."""


@final
class _StateProbes:
    """Times one round of each state probe on demand; calibrated on first use."""

    def __init__(
        self,
        probes: Mapping[str, Callable[[], Any]],
        timer: RegionTimer,
        mark_step: Callable[[], None],
        config: MeasureConfig,
    ) -> None:
        self._probes = probes
        self._timer = timer
        self._mark_step = mark_step
        self._config = config
        self._calls: dict[str, int] = {}
        self._samples: dict[str, list[float]] = {name: [] for name in probes}

    def sample(self) -> bool:
        """One round of each probe (the first call of a probe warms it up and sizes its rounds); whether
        any probe ran.

        Each round follows one untimed call of its probe: a probe measures the machine, so it starts
        from its own warm caches, not from what the workload's round just left there (a workload
        whose footprint grew would otherwise evict the probe's buffers and read as a machine in
        another state). Another job's traffic during the round still shows. On the 2-core VM this
        did not change the readings measurably: there the gather's time relative to the matmul
        wandered by itself (1.34-1.92x between runs), which the verdict handles by bounding, not
        vetoing (docs/measurements.md, "Operator tables"). It costs one probe call per sample.
        """
        for name, probe in self._probes.items():
            if name not in self._calls:
                # A few calls size the rounds; no settling: a probe that varies from call to call (the
                # fresh-memory one does, with the cost of page faults) would otherwise spend the whole
                # warm-up budget (3 s) in every measurement.
                times = []
                for _ in range(_STATE_WARMUP_CALLS):
                    _timed_round(probe, 1, self._timer, self._mark_step)
                    times.append(_check_duration(self._timer.stop(), f"{name} probe warm-up"))
                self._calls[name] = _calls_in_probe_share(median(times[-self._config.warmup_window :]), self._config)
            calls = self._calls[name]
            probe()
            self._mark_step()
            _timed_round(probe, calls, self._timer, self._mark_step)
            self._samples[name].append(_check_duration(self._timer.stop(), f"{name} probe round") / calls)
        return bool(self._probes)

    def medians(self, compute: list[float], last: int = 0) -> dict[str, float]:
        """Median seconds per call of each probe (over its ``last`` rounds; 0: all), ``compute`` (the
        reference kernel's rounds) included."""
        state = {name: median(values[-last:]) for name, values in self._samples.items() if values}
        return {"compute": median(compute), **state} if compute else state


# Rounds of each state probe a snapshot takes (the median is its reading): one round can meet a burst.
_SNAPSHOT_ROUNDS = 3


@final
class StateSnapshot:
    """The machine's state now, as a measurement's ``state`` holds it, on demand (``take``): each probe's
    median seconds per call over its last few rounds, the reference kernel (``compute``, one of
    ``probes``) among them. Used while waiting for quiet; its probes are warmed up and sized once."""

    def __init__(
        self,
        probes: Mapping[str, Callable[[], Any]],
        timer: RegionTimer,
        mark_step: Callable[[], None] = lambda: None,
        config: MeasureConfig | None = None,
    ) -> None:
        self._sampler = _StateProbes(probes, timer, mark_step, config or MeasureConfig())

    def take(self) -> dict[str, float]:
        """A few rounds of each probe now; their medians."""
        for _ in range(_SNAPSHOT_ROUNDS):
            self._sampler.sample()
        return self._sampler.medians([], last=_SNAPSHOT_ROUNDS)
