"""How a round is timed beyond the default: graph replay, a cold cache, the compute clock watched.

The default (eager, warm) round is ``timer.start(); fn() x N; timer.stop()``: calls back to back,
each finding what the one before left in the caches, launched by the host one at a time. Two
modes change that, chosen per measurement, and one watch runs wherever the clock can be read::

    graph:  after warm-up, the round's N calls are captured once as a device graph; a round is one
            replay between the timer's events (triton's do_bench_cudagraph, Inductor): a kernel of a
            few microseconds reads as the kernel, not as the host's launch rate
    cold:   before every timed call, a write of a buffer the size of the last-level cache (Inductor
            flushes exactly the L2; do_bench zeroes 256 MB), outside the timed region: a round is N
            single-call regions, summed, with N at most COLD_CALLS_PER_ROUND
    clock:  the compute clock is read when the timed rounds start and after every round; a round
            that ended below THROTTLE_FRACTION of the start clock is discarded, and the loop waits
            (polling every RECOVERY_POLL_SECONDS, at most RECOVERY_WAIT_SECONDS) for the clock to
            come back before retaking it. At most as many rounds are retaken as were planned; beyond
            that, throttled rounds are kept, and those are counted in the result
            (``throttled_rounds``): too many make the verdict noisy (core/measurement.py)

A graph replays N calls back to back, so it cannot be cold: asking for both is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, final

from pytest_accel.core.measurement import COLD, EAGER, GRAPH, THROTTLE_FRACTION, WARM
from pytest_accel.engine.devices.base import RegionTimer

__all__ = [
    "COLD_CALLS_PER_ROUND",
    "RECOVERY_POLL_SECONDS",
    "RECOVERY_WAIT_SECONDS",
    "ThrottleWatch",
    "TimingMode",
    "timed_calls",
]

# Cold rounds time every call alone (a flush before each, a host wait after each): 100 calls a round
# keep a round of a 6 us kernel near 5 ms of wall time on a GPU, and do_bench takes about 100 too.
COLD_CALLS_PER_ROUND = 100
# nvbench sleeps 50 ms after a throttled sample; the clock is read that often while waiting.
RECOVERY_POLL_SECONDS = 0.05
# A clock that has not come back within a second will not within the measurement: retake anyway.
RECOVERY_WAIT_SECONDS = 1.0


@final
@dataclass(frozen=True)
class TimingMode:
    """What a measurement does beyond eager, warm rounds; the default does nothing more."""

    # (fn, calls) -> a replay of one captured graph of ``calls`` calls (Device.graph_replay)
    graph: Callable[[Callable[[], Any], int], Callable[[], Any]] | None = None
    flush: Callable[[], None] | None = None  # cold: run before every timed call, outside the timer
    clock: Callable[[], float] | None = None  # the compute clock (MHz), read around rounds
    clock_reference: float | None = None  # what a round's clock is held to (ClockWatch.reference); None: the first
    sleep: Callable[[float], None] = time.sleep  # the wait for a throttled clock to recover

    def __post_init__(self) -> None:
        if self.graph is not None and self.flush is not None:
            raise ValueError(
                "a graph replays its calls back to back, so no flush can run between them: cold=True needs "
                "timing='eager'"
            )

    @property
    def timing(self) -> str:
        """``graph`` or ``eager``: what the result records."""
        return GRAPH if self.graph is not None else EAGER

    @property
    def cache(self) -> str:
        """``cold`` or ``warm``: what the result records."""
        return COLD if self.flush is not None else WARM


def timed_calls(
    fn: Callable[[], Any], calls: int, timer: RegionTimer, mark_step: Callable[[], None], flush: Callable[[], None]
) -> tuple[Any, list[float]]:
    """``calls`` calls of ``fn``, each after ``flush`` and timed alone; (the last output, each call's seconds)."""
    output: Any = None
    seconds = []
    for _ in range(calls):
        flush()
        mark_step()
        timer.start()
        output = fn()
        mark_step()
        seconds.append(timer.stop())
    return output, seconds


@final
class ThrottleWatch:
    """The compute clock around timed rounds: which rounds ran throttled, and the wait for recovery."""

    __slots__ = ("_clock", "_reference", "_sleep", "retakes_left", "throttled_rounds")

    def __init__(self, mode: TimingMode, planned_rounds: int) -> None:
        self._clock = mode.clock
        self._sleep = mode.sleep
        # The device's default clock where known (nvbench's reference), else the clock as the rounds start.
        self._reference = mode.clock_reference if mode.clock is not None and mode.clock_reference else self._read()
        self.retakes_left = planned_rounds  # throttled rounds that may still be discarded and retaken
        self.throttled_rounds = 0

    def _read(self) -> float | None:
        """The clock now; None where it cannot be read (NVML may refuse a query mid-run: not a throttle)."""
        if self._clock is None:
            return None
        try:
            return float(self._clock())
        except Exception:
            return None

    def _low(self) -> bool:
        if self._reference is None or self._reference <= 0:
            return False
        now = self._read()
        return now is not None and now < THROTTLE_FRACTION * self._reference

    def discard(self) -> bool:
        """After a round: whether it ran throttled and is to be retaken (then after the clock recovered)."""
        if not self._low():
            return False
        if self.retakes_left <= 0:
            self.throttled_rounds += 1  # kept in the figure, and counted: too many and the verdict says noisy
            return False
        self.retakes_left -= 1
        waited = 0.0
        while waited < RECOVERY_WAIT_SECONDS:
            self._sleep(RECOVERY_POLL_SECONDS)
            waited += RECOVERY_POLL_SECONDS
            if not self._low():
                break
        return True
