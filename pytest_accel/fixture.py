"""The object behind the ``throughput`` fixture: measure, guard, attach the result to the test."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, final

import pytest

from pytest_accel.engine.devices.base import Device, OutOfMemoryReport
from pytest_accel.engine.machine import reference_kernel
from pytest_accel.judgement.gate import GateResult, provenance_changes
from pytest_accel.engine.measure import MeasurementError, check_finite, measure
from pytest_accel.outputs.terminal import format_bytes, format_rate
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.stats import median
from pytest_accel.judgement.verdict import Outcome

if TYPE_CHECKING:
    from pytest_accel.session import AccelSession

__all__ = ["USER_PROPERTY", "Throughput"]

USER_PROPERTY = "accel_measurement"  # key of the JSON measurement in report.user_properties / JUnit XML


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


def _xdist_workers(config: pytest.Config) -> int:
    """How many xdist workers this run has (0 when this process is not an xdist worker)."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    return int(workerinput.get("workercount", 1)) if workerinput is not None else 0


@final
class Throughput:
    """Callable fixture value: ``throughput(fn, items=..., unit=...) -> Measurement``."""

    def __init__(self, node: pytest.Item, benchmark: Any, device: Device, session: AccelSession) -> None:
        self._node = node
        self._benchmark = benchmark
        self._device = device
        self._session = session
        self._config = session.measure_config(node)
        self._probe: Callable[[], Any] | None = None
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
        **extra: Any,
    ) -> Measurement:
        """Time ``fn`` (which processes ``items`` ``unit`` per call) on the device and record the result.

        ``flops`` and ``bytes_moved`` per call give TFLOP/s and bytes/s; ``name`` tells several
        measurements of one test apart; ``extra`` is stored with the result. ``pipelined=True`` when
        ``fn`` consumes from background producers (DataLoader workers, a prefetching pipeline): rounds
        then run back to back, with the reference-kernel rounds before them instead of in between
        (pauses would let the producers catch up and inflate the figure).
        """
        workers = _xdist_workers(self._node.config)
        if workers:
            # Parallel workers contend for the device; pytest-benchmark also disables itself under
            # xdist, so a "measured" run would silently be an untimed one. Refuse, loudly.
            pytest.fail(
                f"pytest-accel does not measure under xdist: this run has {workers} worker(s), which would "
                "contend for the device and skew every figure. Run perf tests with -n 0 (or -p no:xdist).",
                pytrace=False,
            )
        if any(m.name == name for m in self.measurements):
            pytest.fail(f"measurement {name!r} was already taken in this test; pass a distinct name=", pytrace=False)
        # Mark pytest-benchmark's fixture as used (it warns about unused ones), also when disabled.
        self._benchmark._mode = self._benchmark._mode or "pytest-accel throughput(...)"
        if self._benchmark.disabled:
            return self._record(self._run_once(fn, unit, items, name, extra), None)

        def take() -> Measurement:
            return self._measure(fn, items, unit, flops, bytes_moved, name, extra, pipelined)

        first = take()
        gate = self._session.judge(self._node, first, remeasure=take)
        result = gate.measurements[-1] if gate.outcome is Outcome.REGRESSED else first
        self._feed_benchmark(result)
        result = self._record(result, gate)
        failure = self._session.failure_of(gate)
        if failure is not None:
            pytest.fail(self._failure_message(result, gate, failure), pytrace=False)
        return result

    def _peak_figures(self, result: Measurement) -> dict[str, float]:
        """Achieved rates as % of the session's measured peaks and of the datasheet's."""
        tflops, bandwidth = result.tflops, result.bytes_per_second
        if tflops is None and bandwidth is None:
            return {}
        measured, sheet = self._session.peaks()
        figures: dict[str, float] = {}
        if tflops is not None:
            figures["percent_of_measured_tflops"] = 100 * tflops / measured.tflops
            if sheet is not None:
                figures["percent_of_datasheet_tflops"] = 100 * tflops / sheet.tflops_bf16
        if bandwidth is not None:
            figures["percent_of_measured_bandwidth"] = 100 * bandwidth / measured.bytes_per_second
            if sheet is not None:
                figures["percent_of_datasheet_bandwidth"] = 100 * bandwidth / (sheet.memory_gbps * 1e9)
        return figures

    def _record(self, result: Measurement, gate: GateResult | None) -> Measurement:
        """Add the %-of-peak figures, attach the result and its verdict to the test report."""
        if not result.disabled:
            figures = self._peak_figures(result)
            efficiency = self._session.scaling_efficiency(self._node.nodeid, result)
            if efficiency is not None:
                figures["scaling_efficiency"] = efficiency
            result = replace(result, extra={**result.extra, **figures})
        self.measurements.append(result)
        data = result.to_dict()
        data["verdict"] = None if gate is None else gate.to_dict()
        self._node.user_properties.append((USER_PROPERTY, json.dumps(data)))
        return result

    def _failure_message(self, result: Measurement, gate: GateResult, failure: str) -> str:
        entry = self._session.baselines().get((self._node.nodeid, result.name))
        lines = [f"perf {failure}: {self._node.nodeid} [{result.name}] on {result.device_key}"]
        if entry is not None:
            then = entry.items_per_call / median(entry.samples)
            lines.append(
                f"  throughput: baseline {format_rate(then)} {result.unit}/s, now "
                f"{format_rate(result.items_per_second)} {result.unit}/s ({result.items_per_second / then:.3f}x)"
            )
        lines.append(f"  time: {gate.time.reason}")
        if gate.memory is not None:
            lines.append(f"  memory: {gate.memory.reason}")
        if entry is not None:
            provenance = entry.provenance
            lines.append(
                f"  baseline: commit {provenance.get('commit', '?')}, {provenance.get('date', '?')}, "
                f"torch {provenance.get('torch', '?')}"
            )
            changes = provenance_changes(entry, self._device.provenance())
            if changes:
                lines.append(f"  changed since the baseline: {changes}")
        lines.append("  if the change is intended, record it: pytest ... --accel-reset-history -k <this test>")
        return "\n".join(lines)

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
    ) -> Measurement:
        device = self._device
        failure: str | None = None
        if self._probe is None:
            self._probe = reference_kernel(device)
        try:
            result = measure(
                fn,
                # Under torchrun: rounds start together, last as the slowest rank's, and count every rank's items.
                timer=self._session.timer_for(self._node, name),
                items_per_call=items * self._session.world_size,
                unit=unit,
                flops_per_call=flops,
                bytes_per_call=bytes_moved,
                mark_step=device.mark_step,
                reset_peak_memory=device.reset_peak_memory,
                peak_memory_bytes=device.peak_memory_bytes,
                device_key=device.key(),
                config=self._config,
                probe=self._probe,
                pipelined=pipelined,
            )
        except MeasurementError as error:
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
        return replace(result, name=name, extra=extra)

    def _feed_benchmark(self, result: Measurement) -> None:
        """Hand the raw rounds to pytest-benchmark so ``--benchmark-json`` and its table carry them."""
        benchmark = self._benchmark
        benchmark.extra_info.setdefault("accel", []).append(result.to_dict())
        if benchmark.stats is not None:
            return  # pytest-benchmark keeps one series per test: the first measurement's
        # pytest-benchmark has no public API for externally timed rounds; _make_stats is how its own
        # pedantic mode records them (stable since 3.x, checked by tests/test_benchmark_integration.py).
        stats = benchmark._make_stats(result.calls_per_round)
        for seconds_per_call in result.samples:
            stats.update(seconds_per_call * result.calls_per_round)
