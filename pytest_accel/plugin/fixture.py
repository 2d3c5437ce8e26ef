"""The object behind the ``throughput`` fixture: measure, guard, hand the result to be judged and recorded.

Like pytest-benchmark's fixture, ``Throughput`` is built from plain values and callbacks (its settings,
the device, a timer factory, ``judge`` and ``record``), so this module imports nothing of the session
and is tested without pytester (tests/test_fixture.py).
"""

from __future__ import annotations

import gc
import json
import math
import numbers
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, final

import pytest

from pytest_accel.core.advice import AccelAdvice
from pytest_accel.core.measurement import EAGER, GRAPH, RESERVED_EXTRA, TIMINGS, UNPROBED, Measurement
from pytest_accel.core.operator_table import absent_line, explain, in_one_line
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.core.structure import Structure
from pytest_accel.core.units import format_bytes, format_percent_change, format_seconds, joined_to_fit
from pytest_accel.core.wording import bound_moved, environment_moved
from pytest_accel.engine.board import Beside, CardBoard
from pytest_accel.engine.devices.base import (
    CacheFlush,
    ClockWatch,
    Device,
    ModeUnavailable,
    OutOfMemoryReport,
    RegionTimer,
)
from pytest_accel.engine.energy import device_energy
from pytest_accel.engine.machine import FRESH_FAULT_PROBE, state_probe_bytes, state_probes
from pytest_accel.engine.profiling import TraceError, profile_operators
from pytest_accel.engine.sampling import (
    MeasureConfig,
    MeasurementError,
    StateSnapshot,
    TimingMode,
    check_finite,
    measure,
)
from pytest_accel.engine.structure import CompileWatch, take_structure
from pytest_accel.judgement.counts import CountPlan, counted
from pytest_accel.judgement.gate import GateResult
from pytest_accel.judgement.structures import RECORD_HINT, StructureVerdict
from pytest_accel.judgement.verdict import VerdictRecord

# A first measurement taking this many times its budget (measure + warm-up seconds, and over 10 s)
# is warned about: its calls are too long for the minimum number of rounds.
SLOW_MEASUREMENT_FACTOR = 20
SLOW_MEASUREMENT_FLOOR_SECONDS = 10.0

# Calls before an untimed structural record (--accel-structure-only): the first compiles, the next
# ones let lazy state (allocator pools, autotuning, lazy modules) settle.
STRUCTURE_WARMUP_CALLS = 3

__all__ = ["STRUCTURE_WARMUP_CALLS", "Judge", "OperatorPlan", "Record", "StructurePlan", "Throughput"]

# judge(measurement, remeasure) -> the gate's judgement; remeasure() takes the same measurement again.
# (the first measurement, a re-measurement, the state probes now) -> the verdicts
Judge = Callable[[Measurement, Callable[[], Measurement], Callable[[], dict[str, float]]], GateResult]
# record(measurement, verdict) -> the measurement as reported (with added figures), attached to the test.
Record = Callable[[Measurement, VerdictRecord | None], Measurement]


@final
@dataclass(frozen=True)
class OperatorPlan:
    """When a test's operator tables are taken (engine/profiling.py), beyond a confirmed regression's."""

    update: bool = False  # --accel-update: the table goes into the baseline entry
    always: bool = False  # --accel-operators=always: every measurement's table goes into the results
    trace: Callable[[str], Path] | None = None  # --accel-trace: metric name -> its trace file (regressions, always)
    on_trace: Callable[[Path], None] = field(default=lambda path: None)  # told of every trace written
    off: str = ""  # why no table is taken in this run (said on a regression); "" when they are
    verbose: bool = False  # -v: a regression's failure lists every operator that moved, not one line of them


@final
@dataclass(frozen=True)
class StructurePlan:
    """Whether a test's structural record is taken (engine/structure.py), and who judges it."""

    # (metric, record) -> the structural verdict and its failure message (None: it does not fail)
    judge: Callable[[str, Structure], tuple[StructureVerdict, str | None]] | None = None
    # metric -> the record to compare with (None: none, or one is being recorded): one block when equal
    expected: Callable[[str], Structure | None] = field(default=lambda metric: None)
    key: str = ""  # the structure key of this device (engine/structure.py's structure_key)
    only: bool = False  # --accel-structure-only: a short warm-up and the record, no timed rounds
    kept: bool = False  # --accel-update: the record is stored, and later runs are judged against it
    off: str = ""  # why no record is taken in this run ("" when one is)
    watch: CompileWatch = field(default_factory=CompileWatch)  # dynamo's state, reset when the test measures


def _with_lines(failure: str, lines: Sequence[str]) -> str:
    """The failure message with the operator lines indented under it, before its closing hint."""
    body, _, last = failure.rpartition("\n")
    if not body or RECORD_HINT not in last:
        body, last = failure, ""
    return "\n".join([body, *(f"  {line}" for line in lines), *([last] if last else [])])


def _what_ran_changed(lines: Sequence[str], operators: Sequence[str], verbose: bool = False) -> list[str]:
    """What ran, under a timed regression, in one line (listed under ``-v``). The operators' call counts
    are left out when the operator diff above names the operators that moved: the same change is not
    said twice; what it cannot say (graph breaks, recompilations, syncs) stays."""
    diffed = bool(operators) and not operators[0].startswith(absent_line("").partition("(")[0])
    shown = [line for line in lines if not (diffed and ("::" in line.split(" ")[0] or line.startswith("... ")))]
    if verbose:
        return [f"what ran changed{' too' if diffed else ''}:", *(f"  {line}" for line in lines)]
    if not shown:
        return []
    return [joined_to_fit(f"what ran changed{' too' if diffed else ''}:", shown, 118)]


# The time half of a verdict whose workload was not timed (--accel-structure-only).
_UNTIMED = Verdict(Outcome.NEW, "time", "not timed (--accel-structure-only): only what ran was compared")
_COUNT_ONLY = Verdict(Outcome.NEW, "time", "not timed (--benchmark-disable): only the work counted was compared")


def _finite_problem(value: Any, where: str) -> str | None:
    try:
        check_finite(value, where)
    except MeasurementError as error:
        return str(error)
    return None


def _clear_frames_of_chain(error: BaseException) -> None:
    """Clear the frames of ``error`` and of every error it was raised from or during."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        current = current.__cause__ or current.__context__


def _oom_message(report: OutOfMemoryReport, device_key: str) -> str:
    return (
        f"out of device memory on {device_key}: requested {format_bytes(report.requested_bytes)}, "
        f"peak {format_bytes(report.peak_bytes)}, limit {format_bytes(report.limit_bytes)}. "
        "Caches were freed; lower the batch or use the smoke profile."
    )


def _mode_problem(timing: object, cold: object, pipelined: bool) -> str | None:
    """What is wrong with the timing mode asked of one ``throughput()`` call, or None."""
    if timing not in TIMINGS:
        return f"timing must be one of {', '.join(map(repr, TIMINGS))}, got {timing!r}"
    if not isinstance(cold, bool):
        return f"cold must be True or False, got {cold!r}"
    if cold and timing == GRAPH:
        return "cold=True needs timing='eager': a graph replays its calls back to back, with no flush between them"
    if pipelined and (cold or timing != EAGER):
        return "a pipelined workload is timed eager and warm (its producers run beside it): drop timing= and cold="
    return None


def _argument_problem(
    items: float, unit: str, flops: float | None, bytes_moved: float | None, name: str, extra: dict[str, Any]
) -> str | None:
    """What is wrong with the arguments of one ``throughput()`` call, or None."""
    for label, value in (("unit", unit), ("name", name)):
        if not isinstance(value, str) or not value.strip():
            return f"{label} must be a non-empty string, got {value!r}"
    for label, number in (("items", items), ("flops", flops), ("bytes_moved", bytes_moved)):
        if number is None and label != "items":
            continue
        if isinstance(number, bool) or not isinstance(number, numbers.Real) or not math.isfinite(number) or number <= 0:
            return f"{label} must be a finite number greater than 0, got {number!r}"
    if taken := sorted(set(extra) & RESERVED_EXTRA):
        return f"{taken[0]}= is a figure pytest-accel adds to each result; give the label another name"
    try:
        json.dumps(extra, allow_nan=False)
    except (TypeError, ValueError) as error:
        return f"labels must be JSON values (strings, finite numbers, booleans, lists, objects): {error}"
    return None


@final
class Throughput:
    """Callable fixture value: ``throughput(fn, items=..., unit=...) -> Measurement``."""

    def __init__(
        self,
        *,
        device: Device,
        config: MeasureConfig,
        benchmark: Any,
        timer: Callable[[str], RegionTimer],
        judge: Judge,
        record: Record,
        items_scale: int = 1,
        operators: OperatorPlan | None = None,
        structure: StructurePlan | None = None,
        progress: Callable[[str, str], None] = lambda phase, detail: None,
        disabled_fails: str | None = None,
        allow_setup_mismatch: bool = False,
        count: CountPlan | None = None,
    ) -> None:
        self._device = device
        # Why a figure --benchmark-disable kept from being measured fails its test (--accel-strict,
        # --accel-require-baseline); None: it passes, counted as not judged in the summary.
        self._disabled_fails = disabled_fails
        self._allow_setup_mismatch = allow_setup_mismatch  # a setup changed under the run is measured, not failed
        self._config = config
        self._benchmark = benchmark  # pytest-benchmark's fixture: receives the rounds, owns --benchmark-disable
        self._timer = timer  # metric name -> the timer for its rounds (under torchrun: ranks start together)
        self._judge = judge
        self._record = record
        self._items_scale = items_scale  # under torchrun: every rank's items count (the world size)
        self._probes: dict[str, Callable[[], Any]] | None = None  # the machine-state probes, made once
        self._snapshot: StateSnapshot | None = None  # the probes read while waiting for quiet
        self._operators = operators
        self._structure = structure if structure is not None and not structure.off else None
        self._flush: CacheFlush | None = None  # the cold mode's buffer, made by the first cold measurement
        self._clock: ClockWatch | None = None  # the device's clock, read around every measurement's rounds
        self._progress = progress  # (phase, detail): the live status of a long test (plugin/status.py)
        self._count = count  # the work counted: in the counting process, or judged here (judgement/counts.py)
        self.measurements: list[Measurement] = []

    def __call__(
        self,
        fn: Callable[[], Any],
        *,
        items: float,
        unit: str,
        flops: float | None = None,
        bytes_moved: float | None = None,
        name: str = "throughput",
        pipelined: bool = False,
        timing: str = EAGER,
        cold: bool = False,
        **extra: Any,
    ) -> Measurement:
        """Time ``fn`` (which processes ``items`` ``unit`` per call) on the device and record the result.

        ``flops`` and ``bytes_moved`` per call give TFLOP/s and bytes/s; ``name`` tells several
        measurements of one test apart; ``extra`` is stored with the result. ``pipelined=True`` when
        ``fn`` consumes from background producers (DataLoader workers, a prefetching pipeline): rounds
        then run back to back, with the reference-kernel rounds before them instead of in between
        (pauses would let the producers catch up and inflate the figure).

        ``timing="graph"`` times a launch-bound kernel as a kernel: each round replays one device graph
        of its calls (CUDA graphs; refused where the device has none). ``cold=True`` flushes the
        last-level cache before every timed call, outside the timed region. Both are recorded with
        the figure (engine/modes.py).
        """
        problem = _argument_problem(items, unit, flops, bytes_moved, name, extra) or _mode_problem(
            timing, cold, pipelined
        )
        if problem is not None:  # before an hour of measuring, not when the baselines are written
            pytest.fail(f"throughput(): {problem}", pytrace=False)
        if any(m.name == name for m in self.measurements):
            pytest.fail(f"measurement {name!r} was already taken in this test; pass a distinct name=", pytrace=False)
        # Mark pytest-benchmark's fixture as used (it warns about unused ones), also when disabled.
        self._benchmark._mode = self._benchmark._mode or "pytest-accel throughput(...)"
        if self._benchmark.disabled:
            return self._not_timed(fn, unit, items, name, extra)
        plan = self._structure
        if plan is not None and not plan.watch.started:
            plan.watch.start()  # before the test's first call of a compiled workload: it compiles afresh
        if plan is not None and plan.only:
            untimed, seconds = self._untimed(fn, unit, items, name, extra)
            record, failure = self._structural(fn, seconds, name, VerdictRecord(_UNTIMED), None)
            result = self._keep(untimed, record)
            if failure is not None:
                pytest.fail(failure, pytrace=False)
            return result

        taken = 0

        def take() -> Measurement:
            nonlocal taken
            taken += 1
            again = f"re-measuring a suspect ({taken - 1}): " if taken > 1 else ""
            progress = self._progress if not again else lambda phase, detail: self._progress(again + phase, detail)
            return self._measure(fn, items, unit, flops, bytes_moved, name, extra, pipelined, (timing, cold), progress)

        started = time.perf_counter()
        first = take()
        self._warn_if_slow(first, time.perf_counter() - started, name)
        judgement = self._judge(first, take, self._state_now)
        result, record, failure = self._explain(fn, judgement)
        record, failure = self._structural(fn, result.seconds_per_call, name, record, failure)
        record, failure = counted(self._count, name, record, failure)
        self._feed_benchmark(result)
        result = self._keep(result, record)
        if failure is not None:
            roof = result.extra.get("roofline") or {}  # plugin/finish.py: the baseline's bound, where it differs
            pytest.fail(_with_lines(failure, [bound_moved(roof["was"], roof["bound"])] if "was" in roof else []),
                        pytrace=False)  # fmt: skip
        return result

    def _explain(self, fn: Callable[[], Any], judgement: GateResult) -> tuple[Measurement, VerdictRecord, str | None]:
        """The measurement, verdict and failure, with an operator table where the plan or a regression asks.

        After every timed round and confirmation: the profiler's overhead never reaches a figure. A
        profile that cannot be taken leaves the verdict as it is, with one line saying why.
        """
        result, record, failure = judgement.reported, judgement.record, judgement.failure
        plan = self._operators or OperatorPlan(off="no operator plan was given")
        regressed = failure is not None and judgement.outcome is Outcome.REGRESSED
        if plan.off or not (plan.update or plan.always or regressed):
            if regressed:
                record = replace(record, operators=(absent_line(plan.off),))
                failure = _with_lines(str(failure), record.operators)
            return result, record, failure
        # A trace per regression (and per measurement with always); not at update: a nightly
        # recording would write one for every test, tens of MB each on a GPU.
        trace = plan.trace(result.name) if plan.trace is not None and (regressed or plan.always) else None
        try:
            table = profile_operators(fn, self._device, result.seconds_per_call, trace)
            note = "" if trace is None else f"trace: {trace}"
        except TraceError as error:  # the table was taken: only its trace is missing
            table, note, trace = error.profile, str(error), None
        except Exception as error:  # the verdict stands; the line says why it is unexplained
            table, note = None, absent_line(f"the profile failed: {type(error).__name__}: {error}")
        if table is None:
            lines = [note]
        else:
            baseline = judgement.baseline
            then = None if baseline is None else baseline.operators
            judged = judgement.time.outcome in (Outcome.REGRESSED, Outcome.IMPROVED)
            measured = judgement.time.ratio if judged else None
            lines = [*explain(then, table, measured), *([note] if note else [])]
            result = replace(result, operators=table.top())
            if trace is not None:
                plan.on_trace(trace)
        if regressed:
            record = replace(record, operators=tuple(lines))
            shown = lines if plan.verbose or table is None else [in_one_line(lines[: len(lines) - bool(note)])]
            failure = _with_lines(str(failure), [*shown, *([note] if note and table is not None else [])])
        return result, record, failure

    def _structural(
        self, fn: Callable[[], Any], seconds_per_call: float, name: str, record: VerdictRecord, failure: str | None
    ) -> tuple[VerdictRecord, str | None]:
        """The verdict with its structural half, and the failure with what changed in what ran.

        After every timed round and the operator table, in profiled calls of their own. A record that
        cannot be taken leaves the time verdict as it is; the failure (if any) says why.
        """
        plan = self._structure
        if plan is None or plan.judge is None:
            return record, failure
        try:
            expected = plan.expected(name)
            now = take_structure(fn, self._device, seconds_per_call, plan.watch, plan.key, expected, kept=plan.kept)
        except Exception as error:  # the time verdict stands; say why there is no structural one
            note = f"structure: not taken: {type(error).__name__}: {error}"
            warnings.warn(AccelAdvice(f"{name}: {note}"), stacklevel=4)
            return record, None if failure is None else _with_lines(failure, [note])
        verdict, structural_failure = plan.judge(name, now)
        record = replace(record, structure=verdict)
        if failure is not None and verdict.outcome is Outcome.CHANGED:
            verbose = self._operators is not None and self._operators.verbose
            failure = _with_lines(failure, _what_ran_changed(verdict.lines, record.operators, verbose))
        elif failure is not None and verdict.outcome is Outcome.UNCHANGED:
            failure = _with_lines(failure, ["what ran is unchanged: the same operators, as often, as at the baseline"])
        elif failure is None and record.environment_moved:  # the structure only warns: the slowdown still fails
            said = environment_moved(
                name, "slower" if record.time.ratio is None else format_percent_change(record.time.ratio)
            )
            failure = _with_lines(said, _what_ran_changed(verdict.lines, (), False))
        elif failure is None:
            failure = structural_failure
        return record, failure

    def _untimed(
        self, fn: Callable[[], Any], unit: str, items: float, name: str, extra: dict[str, Any]
    ) -> tuple[Measurement, float]:
        """--accel-structure-only: STRUCTURE_WARMUP_CALLS calls, checked finite; the last one's seconds."""
        device, seconds, output = self._device, math.nan, None
        for _ in range(STRUCTURE_WARMUP_CALLS):
            started = time.perf_counter()
            output = fn()
            device.mark_step()
            device.synchronize()
            seconds = time.perf_counter() - started
        problem = _finite_problem(output, "the workload's output")
        if problem:
            pytest.fail(problem, pytrace=False)
        return Measurement(unit, float(items), (), name=name, extra=extra, device_key=device.key()), seconds

    def _warn_if_slow(self, result: Measurement, seconds: float, name: str) -> None:
        """A call far longer than the budget makes the minimum rounds take minutes: say why, once."""
        budget = self._config.measure_seconds + self._config.warmup_max_seconds
        if seconds > max(SLOW_MEASUREMENT_FACTOR * budget, SLOW_MEASUREMENT_FLOOR_SECONDS):
            warnings.warn(
                AccelAdvice(
                    f"measurement {name!r} took {seconds:.0f} s for a budget of {budget:.1f} s: one call takes"
                    f" {format_seconds(result.seconds_per_call)}, and at least {self._config.min_rounds} rounds"
                    f" after {result.warmup_calls} warm-up calls are timed. Give each call less work, or lower"
                    " min_rounds / warmup_max_seconds in @pytest.mark.perf(...)"
                ),
                stacklevel=3,
            )

    def _keep(self, result: Measurement, verdict: VerdictRecord | None) -> Measurement:
        recorded = self._record(result, verdict)
        self.measurements.append(recorded)
        return recorded

    def _not_timed(self, fn: Callable[[], Any], unit: str, items: float, name: str, extra: Any) -> Measurement:
        """``--benchmark-disable``: the workload run once, not timed; it fails its test where the run fails what
        it did not judge (``--accel-strict``, ``--accel-require-baseline``). In the counting process its calls
        are counted instead; where counts are judged, a count-only run judges them."""
        if self._count is not None and self._count.count is not None:  # the counting process: the CPU only
            self._count.count(fn, self._device.synchronize, name)
            return self._keep(Measurement(unit, float(items), (), name=name, extra=extra), None)
        untimed = self._run_once(fn, unit, items, name, extra)
        if self._count is not None and self._count.judge is not None:
            record, failure = counted(self._count, name, VerdictRecord(_COUNT_ONLY), None)
            result = self._keep(untimed, record)
            if failure is not None:
                pytest.fail(failure, pytrace=False)
            return result
        result = self._keep(untimed, None)
        if self._disabled_fails is not None:
            why = f"timing is disabled (--benchmark-disable), and {self._disabled_fails}"
            pytest.fail(f"perf not judged: {name}: {why}", pytrace=False)
        return result

    def _run_once(self, fn: Callable[[], Any], unit: str, items: float, name: str, extra: Any) -> Measurement:
        # --benchmark-disable: run the workload once for correctness, as pytest-benchmark does.
        output = fn()
        self._device.mark_step()
        problem = _finite_problem(output, "the workload's output")
        if problem:
            pytest.fail(problem, pytrace=False)
        return Measurement(
            unit=unit,
            items_per_call=float(items),
            samples=(),
            name=name,
            extra=extra,
            device_key=self._device.key(),
        )

    def _measure(
        self,
        fn: Callable[[], Any],
        items: float,
        unit: str,
        flops: float | None,
        bytes_moved: float | None,
        name: str,
        extra: dict[str, Any],
        pipelined: bool = False,
        mode: tuple[str, bool] = (EAGER, False),
        progress: Callable[[str, str], None] = lambda phase, detail: None,
    ) -> Measurement:
        device = self._device
        failure: str | None = None
        if (changed := getattr(device, "setup_changed", lambda: None)()) and not self._allow_setup_mismatch:
            pytest.fail(f"perf not judged: {name}: the setup changed under the run: {changed}; restore it, or "
                        "--accel-allow-setup-mismatch measures it as it is", pytrace=False)  # fmt: skip
        if self._probes is None:
            self._probes = self._make_probes()
        try:
            timing_mode = self._timing_mode(*mode)
        except ModeUnavailable as error:
            pytest.fail(f"{name}: {error}", pytrace=False)
        compute, others = self._probes.get("compute"), {k: v for k, v in self._probes.items() if k != "compute"}
        try:
            result = measure(
                fn,
                # Under torchrun: rounds start together, last as the slowest rank's, and count every rank's items.
                timer=self._timer(name),
                items_per_call=items * self._items_scale,
                unit=unit,
                flops_per_call=flops,
                bytes_per_call=bytes_moved,
                mark_step=device.mark_step,
                reset_peak_memory=device.reset_peak_memory,
                peak_memory_bytes=self._peak_of_workload,
                device_key=device.key(),
                config=self._config,
                probe=compute,
                state_probes=others,
                host_share=Beside(board=CardBoard.of_worker()),
                pipelined=pipelined,
                fault_probe=FRESH_FAULT_PROBE if FRESH_FAULT_PROBE[0] in others else None,
                mode=timing_mode,
                progress=progress,
            )
        except (MeasurementError, ModeUnavailable) as error:  # ModeUnavailable: a graph capture refused
            failure = f"{name}: {error}"
        except (MemoryError, RuntimeError) as error:  # torch.OutOfMemoryError is a RuntimeError
            report = device.out_of_memory(error)
            if report is None:
                raise
            # Drop the workload's frames (and the tensors they hold) before freeing the caches,
            # so the rest of the suite gets its memory back: also those of the errors it wraps.
            _clear_frames_of_chain(error)
            device.empty_cache()
            failure = _oom_message(report, device.key())
        if failure is not None:  # failed outside the except blocks: no "during handling" chain
            pytest.fail(failure, pytrace=False)
        if not self._probes:  # the probes could not be made: the verdict says so, noisy (verdict.UNPROBED)
            result = replace(result, state={**result.state, UNPROBED: 1.0})
        energy = device_energy(fn, device, self._config.energy_seconds, result, items)
        return replace(result, name=name, extra=extra if energy is None else {**extra, "energy": energy.to_json()})

    def _timing_mode(self, timing: str, cold: bool) -> TimingMode:
        """The mode of one measurement: the device's graph replay and cache flush where asked, and its
        clock where it can be read. A device without a cache size raises ``ModeUnavailable`` here; one
        without graphs when ``measure`` asks it to capture (after warm-up): the message names the cause."""
        device = self._device
        if self._clock is None:
            self._clock = device.clock_watch()
        if cold and self._flush is None:
            self._flush = device.cache_flusher()
        # Under torchrun every rank's rounds start together (the timer waits for all of them): a rank
        # that retook a round alone would pair its rounds wrongly and wait for a start no one posts.
        # Each rank's own clock there is not watched (its provenance still says whether it could be).
        watched = self._items_scale == 1
        return TimingMode(
            graph=device.graph_replay if timing == GRAPH else None,
            flush=self._flush.flush if cold and self._flush is not None else None,
            clock=self._clock.read if watched else None,
            clock_reference=self._clock.reference if watched else None,
        )

    def _state_now(self) -> dict[str, float]:
        """The state probes now, for a wait for quiet: empty when they are off or cannot run (the host's
        share of other processes then decides alone)."""
        if not self._config.state_probes or not self._probes:
            return {}
        if self._snapshot is None:
            self._snapshot = StateSnapshot(self._probes, self._device.timer(), self._device.mark_step, self._config)
        try:
            return self._snapshot.take()
        except MeasurementError:
            return {}
        except (MemoryError, RuntimeError) as error:
            if self._device.out_of_memory(error) is None:
                raise
            self._device.empty_cache()
            return {}

    def _make_probes(self) -> dict[str, Callable[[], Any]]:
        """The machine-state probes; none when their buffers cannot be had (the measurement is then unprobed).

        A test that ran out of memory before may still hold its tensors through a traceback cycle:
        collect it first, so the next test does not fail in the plugin's own allocation.
        """
        gc.collect()
        try:
            return state_probes(self._device)
        except (MemoryError, RuntimeError) as error:
            if self._device.out_of_memory(error) is None:
                raise
            self._device.empty_cache()
            return {}

    def _peak_of_workload(self) -> int | None:
        """The device's peak, less the state probes' buffers where the counter includes them.

        An allocator's counter (CUDA, HPU) counts every live tensor, the probes' too; the CPU's figure
        is growth since the round began, which the probes (allocated before) are already out of.
        """
        peak = self._device.peak_memory_bytes()
        if peak is None or not self._device.exact_peak_memory:
            return peak
        flush = self._flush.bytes if self._flush is not None else 0  # the cold mode's buffer, live since made
        return max(0, peak - state_probe_bytes(self._device) - flush)

    def _feed_benchmark(self, result: Measurement) -> None:
        """Hand the raw rounds to pytest-benchmark so ``--benchmark-json`` and its table carry them."""
        benchmark = self._benchmark
        benchmark.extra_info.setdefault("accel", []).append(result.to_dict())
        if benchmark.stats is not None:
            return  # pytest-benchmark keeps one series per test: the first measurement's
        # pytest-benchmark has no public API for externally timed rounds; _make_stats is how its own
        # pedantic mode records them (stable since 3.x; tests/test_plugin.py checks the rounds reach --benchmark-json).
        stats = benchmark._make_stats(result.calls_per_round)
        for seconds_per_call in result.samples:
            stats.update(seconds_per_call * result.calls_per_round)
