"""The result of one measurement: raw per-round samples and the figures derived from them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, final

from pytest_accel.core.operator_table import OperatorProfile
from pytest_accel.core.stats import median, relative_spread

__all__ = [
    "BUSY_CARDS",
    "CALIBRATED",
    "COLD",
    "DEFAULT_METRIC",
    "EAGER",
    "FAULT_SHARE",
    "FOREIGN_CPU",
    "GRAPH",
    "NOT_PROBE_TIMES",
    "OTHER_CARDS",
    "THROTTLED_ROUNDS_LIMIT",
    "THROTTLE_FRACTION",
    "TIMINGS",
    "UNPROBED",
    "WARM",
    "Measurement",
    "compared_samples",
    "display_name",
    "mode_note",
    "pooled",
    "probe_normalized",
    "throttle_problem",
]

DEFAULT_METRIC = "throughput"  # the metric name of a test that takes one measurement
# The entry of ``Measurement.state`` that is not a probe's time: the share of the host's CPU time other
# processes used during the measurement (engine/machine.py's HostShare; judged in judgement/verdict.py).
FOREIGN_CPU = "foreign_cpu"
# The key of a calibration run's compared figure in a baseline entry (its other keys: FOREIGN_CPU, the probes).
CALIBRATED = "median"
# An entry of ``Measurement.state`` set (to 1) when the state probes could not run (their buffers could not
# be allocated, say after a test that ran out of memory): nothing is known of the machine's state.
UNPROBED = "unprobed"
# An entry of ``Measurement.state`` that is not a probe's time: the share (0..1) of the workload's call
# time its own page faults took in the timed rounds (its minor faults per call, at what one fault cost
# the fresh-pages probe). How far a change in what a page fault costs could move this workload: a
# workload that faults nothing is not slowed by it (judgement/rules/state.py). Absent where not counted.
FAULT_SHARE = "fault_share"
# An entry of ``Measurement.state`` that is not a probe's time: how many of the run's other cards (xdist workers,
# one card or one slice of cores each) were measuring, on average, over this figure's rounds (engine/board.py; 0
# in a run without workers). The regime a figure was measured in, judged by judgement/rules/cards_busy.py.
BUSY_CARDS = "busy_cards"
# ...and how many other cards its run had (xdist's workers less one; 0 in a run without workers).
OTHER_CARDS = "other_cards"
# The entries of ``Measurement.state`` that are not a state probe's time.
NOT_PROBE_TIMES = frozenset({FOREIGN_CPU, UNPROBED, FAULT_SHARE, BUSY_CARDS, OTHER_CARDS})


# How a figure's rounds were timed (engine/modes.py): calls launched one by one by the host, or one
# captured device graph replayed per round; and the cache state each call started from.
EAGER, GRAPH = "eager", "graph"
TIMINGS = (EAGER, GRAPH)
WARM, COLD = "warm", "cold"
# A round whose compute clock ended below this fraction of the clock as the rounds started ran throttled
# (nvbench's --throttle-threshold default): it is discarded and retaken (engine/modes.py).
THROTTLE_FRACTION = 0.75
# More throttled rounds than a quarter of the rounds kept: the clock moved under the figure often
# enough that its spread no longer describes the workload (5 of 20 rounds at the minimum).
THROTTLED_ROUNDS_LIMIT = 0.25


# What pytest-accel adds to a result's ``extra`` beside a test's own labels (engine/energy.py, plugin/finish.py).
RESERVED_EXTRA = frozenset({"energy", "roofline", "cost"})


def display_name(test: str, metric: str) -> str:
    """How a measurement is named in tables and messages: the test id, with ``[metric]`` when it has several."""
    return test if metric == DEFAULT_METRIC else f"{test} [{metric}]"


def short_names(names: Sequence[str]) -> list[str]:
    """``names`` without their files (``test_x[p]``, as ``-k`` selects them) when that keeps them apart, else as
    they are: for rows of a summary that must fit a line."""
    short = [name.rpartition("::")[2] for name in names]
    return short if len(set(short)) == len(short) else list(names)


def probe_normalized(samples: Sequence[float], probe_samples: Sequence[float]) -> tuple[float, ...]:
    """Each round's time over its probe figure; empty without a probe figure for every round."""
    if not probe_samples or len(probe_samples) != len(samples):
        return ()
    return tuple(s / p for s, p in zip(samples, probe_samples, strict=True))


def compared_samples(samples: Sequence[float], probe_samples: Sequence[float]) -> tuple[float, ...]:
    """What a verdict compares: probe-normalised samples where there is a probe figure, else seconds."""
    return probe_normalized(samples, probe_samples) or tuple(samples)


@final
@dataclass(frozen=True)
class Measurement:
    """Raw samples (seconds per call, one per round) plus what one call does; figures are derived."""

    unit: str  # what one item is: "images", "tokens", "samples"
    items_per_call: float  # items one call of the workload processes
    samples: tuple[float, ...]  # seconds per call, one entry per timed round; empty when disabled
    calls_per_round: int = 1  # calls timed together in one round
    warmup_calls: int = 0  # calls made before timing started
    warmup_seconds: float = 0.0  # wall time the warm-up took
    warmup_settled: bool = True  # False when the warm-up budget ran out before timings agreed
    flops_per_call: float | None = None  # floating-point operations in one call, when known
    bytes_per_call: float | None = None  # bytes moved to/from device memory in one call, when known
    peak_memory_bytes: int | None = None  # peak device memory during the timed rounds
    device_key: str = "unknown"  # hardware class the figure was taken on
    # seconds per reference-kernel call, one per round: the adjacent probe round's, or (pipelined)
    # the median of the probe block that ran before the rounds
    probe_samples: tuple[float, ...] = ()
    # The machine's state during the measurement: median seconds per call of each state probe
    # ("compute": the reference kernel; "memory": a large copy; "latency": a random gather)
    state: Mapping[str, float] = field(default_factory=dict)
    name: str = DEFAULT_METRIC  # metric name, for tests that take several measurements
    extra: Mapping[str, Any] = field(default_factory=dict)  # free-form context from the test
    # The workload's top operators per call (core/operator_table.py), when a profile was taken: at
    # --accel-update, on a confirmed regression, or with --accel-operators=always
    operators: OperatorProfile | None = None
    timing: str = EAGER  # EAGER or GRAPH: how the rounds were timed
    cache: str = WARM  # WARM or COLD: whether every timed call followed a last-level-cache flush
    # Rounds in the figure that ran below THROTTLE_FRACTION of the start clock: kept once the retakes
    # ran out (retaken ones are not in it); 0 also where the clock is not watched (provenance: sm_clock)
    throttled_rounds: int = 0

    @property
    def disabled(self) -> bool:
        """True when timing was disabled (``--benchmark-disable``): the workload ran once, untimed."""
        return not self.samples

    @property
    def compared_samples(self) -> tuple[float, ...]:
        """What a verdict compares (see ``compared_samples``)."""
        return compared_samples(self.samples, self.probe_samples)

    @property
    def seconds_per_call(self) -> float:
        """Median seconds per call over the rounds (the latency of one call)."""
        return median(self.samples) if self.samples else math.nan

    @property
    def items_per_second(self) -> float:
        """Throughput: items per call over the median seconds per call."""
        return self.items_per_call / self.seconds_per_call if self.samples else math.nan

    @property
    def spread(self) -> float:
        """IQR over median: the relative noise of this measurement."""
        return relative_spread(self.samples) if self.samples else math.nan

    @property
    def tflops(self) -> float | None:
        """Achieved TFLOP/s, when FLOPs per call are known."""
        if self.flops_per_call is None or not self.samples:
            return None
        return self.flops_per_call / self.seconds_per_call / 1e12

    @property
    def bytes_per_second(self) -> float | None:
        """Achieved memory bandwidth, when bytes per call are known."""
        if self.bytes_per_call is None or not self.samples:
            return None
        return self.bytes_per_call / self.seconds_per_call

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the raw fields plus the derived figures (for readers, ignored on load)."""
        data = asdict(self)
        data["samples"] = list(self.samples)
        data["probe_samples"] = list(self.probe_samples)
        data["extra"] = dict(self.extra)
        data["state"] = dict(self.state)
        data["operators"] = None if self.operators is None else self.operators.to_json()
        figures = {
            "items_per_second": self.items_per_second,
            "seconds_per_call": self.seconds_per_call,
            "spread": self.spread,
            "tflops": self.tflops,
            "bytes_per_second": self.bytes_per_second,
        }
        # null, not NaN, for a figure that does not exist (timing disabled): strict JSON has no NaN
        data["figures"] = {k: v if v is None or math.isfinite(v) else None for k, v in figures.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measurement:
        """Inverse of ``to_dict``; derived figures are recomputed, not trusted."""
        fields = {key: value for key, value in data.items() if key != "figures"}
        fields["samples"] = tuple(float(sample) for sample in fields.get("samples", ()))
        fields["probe_samples"] = tuple(float(sample) for sample in fields.get("probe_samples", ()))
        operators = fields.get("operators")
        fields["operators"] = None if operators is None else OperatorProfile.from_json(operators, "operators")
        return cls(**fields)


def throttle_problem(measurement: Measurement) -> str | None:
    """Why a measurement's figure is not to be judged because its device throttled, or None."""
    kept = len(measurement.samples)
    throttled = measurement.throttled_rounds
    if not kept or throttled <= THROTTLED_ROUNDS_LIMIT * kept:
        return None
    return (
        f"the device's clock fell below {THROTTLE_FRACTION:.0%} of its clock at the start of the measurement in "
        f"{throttled} rounds ({kept} kept): it throttled (thermal or power cap), so the figure is not the "
        "workload's: not judged; cool the device or lower its load, and run again"
    )


def mode_note(measurement: Measurement) -> str:
    """``graph``, ``cold``, ``3 throttled``: what is not default about how a figure was timed ("" when nothing)."""
    notes = [note for note in (measurement.timing, measurement.cache) if note not in (EAGER, WARM)]
    if measurement.throttled_rounds:
        notes.append(f"{measurement.throttled_rounds} throttled")
    return ", ".join(notes)


def pooled(measurements: Sequence[Measurement]) -> Measurement:
    """Measurements of one workload in one process as one: their rounds (and probe rounds) in order, the
    median of each state figure, the latest's everything else. More rounds, a narrower interval."""
    first, *rest = measurements
    if not rest:
        return first
    states = [m.state for m in measurements]
    state = {name: median([s[name] for s in states if name in s]) for name in sorted({n for s in states for n in s})}
    return replace(
        measurements[-1],
        samples=tuple(sample for m in measurements for sample in m.samples),
        probe_samples=tuple(sample for m in measurements for sample in m.probe_samples),
        state=state,
        throttled_rounds=sum(m.throttled_rounds for m in measurements),
    )
