"""``Throughput`` alone: built from plain values and callbacks, no pytest session, no pytester."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.engine.devices.cpu import CpuDevice
from pytest_accel.engine.sampling import STATE_EVERY, MeasureConfig
from pytest_accel.judgement.gate import GateResult
from pytest_accel.judgement.verdict import VerdictRecord
from pytest_accel.plugin.fixture import OperatorPlan, Throughput

# No energy window (tests/test_energy.py reads one): what is checked here is the rounds.
FAST = MeasureConfig(measure_seconds=0.02, min_rounds=3, warmup_max_seconds=0.05, round_seconds=0.002, energy_seconds=0)


class FakeBenchmark:
    """What Throughput uses of pytest-benchmark's fixture."""

    def __init__(self, disabled: bool = False) -> None:
        self._mode: str | None = None
        self.disabled = disabled
        self.extra_info: dict[str, Any] = {}
        self.stats: Any = None
        self.rounds: list[float] = []

    def _make_stats(self, iterations: int) -> Any:
        self.stats = self
        return self

    def update(self, seconds: float) -> None:
        self.rounds.append(seconds)


def make(
    judge: Callable[..., GateResult] | None = None,
    benchmark: FakeBenchmark | None = None,
    config: MeasureConfig = FAST,
    **kwargs: Any,
) -> tuple[Throughput, list[tuple[Measurement, VerdictRecord | None]]]:
    device = CpuDevice(threads=1)
    recorded: list[tuple[Measurement, VerdictRecord | None]] = []

    def record(measurement: Measurement, verdict: VerdictRecord | None) -> Measurement:
        recorded.append((measurement, verdict))
        return measurement

    def unchanged(first: Measurement, again: Callable[[], Measurement], state: object) -> GateResult:
        return GateResult(Verdict(Outcome.UNCHANGED, "time", "same"), None, (first,))

    fixture = Throughput(
        device=device,
        config=config,
        benchmark=benchmark or FakeBenchmark(),
        timer=lambda metric: device.timer(),
        judge=judge or unchanged,
        record=record,
        **kwargs,
    )
    return fixture, recorded


def work() -> torch.Tensor:
    return torch.ones(32, 32) @ torch.ones(32, 32)


def test_a_measurement_is_judged_recorded_and_returned() -> None:
    fixture, recorded = make()
    m = fixture(work, items=4, unit="tiles", flops=2 * 32**3, shape="32x32")
    assert recorded == [(m, VerdictRecord(Verdict(Outcome.UNCHANGED, "time", "same")))]
    assert m.unit == "tiles" and m.items_per_call == 4 and m.extra == {"shape": "32x32"}
    assert len(m.samples) >= 3 and len(m.probe_samples) == len(m.samples)
    assert all(math.isfinite(s) and s > 0 for s in m.samples)
    assert m.tflops == pytest.approx(2 * 32**3 / m.seconds_per_call / 1e12)
    assert fixture.measurements == [m]


def test_state_probes_can_be_left_out_and_the_reference_kernel_stays() -> None:
    """``accel_state_probes = false`` (what ab runs with): no copy, gather or fresh-mapping rounds; the
    reference kernel's rounds, which normalise the figure, are still taken."""
    probed = replace(FAST, min_rounds=2 * STATE_EVERY)  # the state probes run after every STATE_EVERY-th round
    with_probes = make(config=probed)[0](work, items=1, unit="calls")
    without = make(config=replace(probed, state_probes=False))[0](work, items=1, unit="calls")
    assert {"compute", "memory", "latency"} <= set(with_probes.state)
    assert "compute" in without.state and not {"memory", "latency", "fresh"} & set(without.state)
    assert len(without.probe_samples) == len(without.samples)


def test_the_benchmark_fixture_receives_the_rounds() -> None:
    benchmark = FakeBenchmark()
    fixture, _ = make(benchmark=benchmark)
    m = fixture(work, items=1, unit="calls")
    assert benchmark.rounds == pytest.approx([s * m.calls_per_round for s in m.samples])
    assert benchmark.extra_info["accel"][0]["unit"] == "calls"


def test_a_regression_reports_the_last_remeasurement_and_fails_with_the_judges_message() -> None:
    taken: list[Measurement] = []

    def regressed(first: Measurement, again: Callable[[], Measurement], state: object) -> GateResult:
        second = again()
        taken.append(second)
        return GateResult(
            Verdict(Outcome.REGRESSED, "time", "slower"), None, (first, second), failure="perf regressed: the message"
        )

    fixture, recorded = make(judge=regressed)
    with pytest.raises(pytest.fail.Exception, match="perf regressed: the message"):
        fixture(work, items=1, unit="calls")
    [(reported, verdict)] = recorded
    assert reported is taken[0]  # the re-measurement that confirmed it, not the first
    assert verdict is not None and verdict.outcome is Outcome.REGRESSED and verdict.remeasurements == 1


def test_items_count_every_rank() -> None:
    fixture, _ = make(items_scale=4)
    assert fixture(work, items=2, unit="rows").items_per_call == 8


def test_one_name_per_measurement() -> None:
    fixture, _ = make()
    fixture(work, items=1, unit="calls")
    with pytest.raises(pytest.fail.Exception, match="already taken"):
        fixture(work, items=1, unit="calls")
    assert fixture(work, items=1, unit="calls", name="again").name == "again"


def test_the_judge_can_read_the_state_probes_now_and_none_when_they_are_off() -> None:
    """What a wait for quiet reads: the fixture's own probes (the reference kernel among them), with the
    test's settings; nothing when its state probes are off (the host's share then decides alone)."""
    read: list[dict[str, float]] = []

    def judge(
        first: Measurement, again: Callable[[], Measurement], state: Callable[[], dict[str, float]]
    ) -> GateResult:
        read.append(state())
        return GateResult(Verdict(Outcome.UNCHANGED, "time", "same"), None, (first,))

    fixture, _ = make(judge=judge)
    fixture(work, items=1, unit="tiles")
    assert set(read[0]) == {"compute", "memory", "latency", "fresh"} and min(read[0].values()) > 0
    fixture, _ = make(judge=judge, config=replace(FAST, state_probes=False))
    fixture(work, items=1, unit="tiles")
    assert read[1] == {}


def test_disabled_runs_once_unjudged_and_still_checks_the_output() -> None:
    calls: list[int] = []

    def never(first: Measurement, again: Callable[[], Measurement], state: object) -> GateResult:
        raise AssertionError("a disabled run is not judged")

    fixture, recorded = make(judge=never, benchmark=FakeBenchmark(disabled=True))
    m = fixture(lambda: calls.append(1), items=1, unit="calls")
    assert calls == [1] and m.disabled and recorded == [(m, None)]
    with pytest.raises(pytest.fail.Exception, match="not finite"):
        fixture(lambda: torch.tensor([1.0, math.nan]), items=1, unit="calls", name="nan")


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        ({"unit": ""}, "unit must be a non-empty string"),
        ({"unit": None}, "unit must be a non-empty string"),
        ({"name": ""}, "name must be a non-empty string"),
        ({"items": -5}, "items must be a finite number greater than 0"),
        ({"flops": -1.0}, "flops must be a finite number greater than 0"),
        ({"bytes_moved": math.nan}, "bytes_moved must be a finite number greater than 0"),
        ({"workers": {1, 2}}, "labels must be JSON values"),
        ({"ratio": math.nan}, "labels must be JSON values"),
    ],
)
def test_bad_arguments_fail_at_the_call_naming_the_argument(kwargs: dict[str, Any], problem: str) -> None:
    measured: list[int] = []
    fixture, recorded = make()
    arguments: dict[str, Any] = {"items": 1, "unit": "calls", **kwargs}
    with pytest.raises(pytest.fail.Exception, match=f"throughput\\(\\): {problem}"):
        fixture(lambda: measured.append(1), **arguments)
    assert measured == [] and recorded == []  # refused before anything ran


def test_the_state_probes_buffers_are_counted_exactly() -> None:
    """``state_probe_bytes`` is what the probes hold: every tensor their callables keep alive."""
    from pytest_accel.engine.machine import state_probe_bytes, state_probes

    device = CpuDevice(threads=1)
    probes = state_probes(device)
    held = {
        id(cell.cell_contents): cell.cell_contents.numel() * cell.cell_contents.element_size()
        for probe in probes.values()
        for cell in (probe.__closure__ or ())  # type: ignore[attr-defined]
        if isinstance(cell.cell_contents, torch.Tensor)
    }
    assert sum(held.values()) == state_probe_bytes(device)


class AllocatorCounted:
    """The CPU device with an allocator-style peak counter (as CUDA and HPU have): live tensors count."""

    def __init__(self, workload_bytes: int) -> None:
        self._cpu = CpuDevice(threads=1)
        self._workload_bytes = workload_bytes
        self.kind = "cpu"
        self.exact_peak_memory = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cpu, name)

    def peak_memory_bytes(self) -> int:
        from pytest_accel.engine.machine import state_probe_bytes

        return self._workload_bytes + state_probe_bytes(self._cpu)


def test_an_allocator_counted_peak_leaves_out_the_probes_buffers() -> None:
    device = AllocatorCounted(workload_bytes=5 * 2**20)
    recorded: list[Measurement] = []

    def unchanged(first: Measurement, again: Callable[[], Measurement], state: object) -> GateResult:
        return GateResult(Verdict(Outcome.UNCHANGED, "time", "same"), None, (first,))

    fixture = Throughput(
        device=device,  # type: ignore[arg-type]
        config=FAST,
        benchmark=FakeBenchmark(),
        timer=lambda metric: device.timer(),
        judge=unchanged,
        record=lambda m, v: recorded.append(m) or m,  # type: ignore[func-returns-value]
    )
    assert fixture(work, items=1, unit="calls").peak_memory_bytes == 5 * 2**20


def _regressed(first: Measurement, again: Callable[[], Measurement], state: object) -> GateResult:
    return GateResult(
        Verdict(Outcome.REGRESSED, "time", "slower"),
        None,
        (first,),
        failure="perf regressed: the message\n  if intended, accept it: ...",
    )


def test_a_profile_that_fails_leaves_the_regression_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("profiler unavailable")

    monkeypatch.setattr("pytest_accel.plugin.fixture.profile_operators", broken)
    fixture, recorded = make(judge=_regressed, operators=OperatorPlan())
    with pytest.raises(pytest.fail.Exception) as failed:
        fixture(work, items=1, unit="calls")
    message = str(failed.value)
    assert message.startswith("perf regressed: the message\n")
    assert message.endswith(
        "  operators: no diff (the profile failed: RuntimeError: profiler unavailable)\n  if intended, accept it: ..."
    )
    [(reported, verdict)] = recorded
    assert verdict is not None and verdict.outcome is Outcome.REGRESSED and reported.operators is None


def test_tables_are_taken_after_the_rounds_at_update_only_when_asked() -> None:
    fixture, _ = make(operators=OperatorPlan(update=True))
    m = fixture(work, items=1, unit="calls")
    assert m.operators is not None and m.operators.get("aten::mm") is not None
    quiet, _ = make(operators=OperatorPlan())  # an unchanged verdict, no update: no profile at all
    assert quiet(work, items=1, unit="calls").operators is None


def test_a_trace_that_cannot_be_written_keeps_the_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_accel.core.operator_table import OperatorProfile
    from pytest_accel.engine.profiling import TraceError

    table = OperatorProfile.from_events("cpu", 1, [("aten::mm", 1, 10.0, None)])

    def unwritable(*args: Any, **kwargs: Any) -> None:
        raise TraceError("trace not written to /ro/t.json: Read-only file system", table)

    monkeypatch.setattr("pytest_accel.plugin.fixture.profile_operators", unwritable)
    plan = OperatorPlan(trace=lambda metric: Path("/ro/t.json"))
    fixture, recorded = make(judge=_regressed, operators=plan)
    with pytest.raises(pytest.fail.Exception) as failed:
        fixture(work, items=1, unit="calls")
    message = str(failed.value)
    assert "  operators: no diff (the baseline entry has no operator table" in message
    assert "  trace not written to /ro/t.json: Read-only file system" in message
    assert recorded[0][0].operators == table
