"""The machine's state: probes in the measuring loop, states in the baseline, the verdict's honest width."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_sampling import FakeClock, constant, workload

from pytest_accel.core import wording
from pytest_accel.core.measurement import FAULT_SHARE, Measurement
from pytest_accel.core.outcomes import Cause, Outcome, Rule, Sight, Verdict
from pytest_accel.engine import sampling as measure_module
from pytest_accel.engine.devices.cpu import HostTimer, cpu_identity
from pytest_accel.engine.sampling import STATE_EVERY, MeasureConfig, measure
from pytest_accel.judgement.baselines import BaselineEntry, BaselineStore, state_history
from pytest_accel.judgement.confirm import ChildSettings, FreshVerdict
from pytest_accel.judgement.gate import NO_LAUNCHERS, REFUTED_LIMIT, Gate, GateMode
from pytest_accel.judgement.results import Recorded
from pytest_accel.judgement.rules.case import StateShift
from pytest_accel.judgement.rules.state import state_shift
from pytest_accel.judgement.verdict import Observation, VerdictPolicy, detectable_slowdown, judge_time
from pytest_accel.outputs.terminal import verdict_cell, verdict_summary
from pytest_accel.storage.files import StoreError

POLICY = VerdictPolicy()
QUIET = {"compute": 1e-3, "memory": 3e-3, "latency": 1e-3}
RECORDED = ({"compute": 1.00e-3, "memory": 3.00e-3, "latency": 1.00e-3},
            {"compute": 1.02e-3, "memory": 3.03e-3, "latency": 1.01e-3},
            {"compute": 0.99e-3, "memory": 3.01e-3, "latency": 0.99e-3})  # fmt: skip
# The copy's time relative to the reference kernel in RECORDED: centred on 3.00, spanning 0.99-1.01x of it.
COPY_SPAN = (3.03 / 1.02 / 3.0, 3.01 / 0.99 / 3.0)


def test_every_probe_is_timed_and_its_median_kept() -> None:
    clock = FakeClock()
    _, fn = workload(clock, constant(0.001))
    probes: dict[str, Callable[[], object]] = {}
    for name, seconds in (("memory", 0.003), ("latency", 0.0005)):
        _, probes[name] = workload(clock, constant(seconds))
    _, compute = workload(clock, constant(0.002))
    config = MeasureConfig(measure_seconds=0.2, round_seconds=0.01, min_rounds=20, max_rounds=20)
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=config,
                     probe=compute, state_probes=probes)  # fmt: skip
    assert result.state == pytest.approx({"compute": 0.002, "memory": 0.003, "latency": 0.0005})
    assert result.samples == pytest.approx((0.001,) * 20)  # the probes stay out of the figure
    assert 20 // STATE_EVERY >= 5  # enough samples of each at the minimum round count


def test_a_probe_is_timed_from_its_own_warm_caches_not_the_workloads_leftovers() -> None:
    """A workload that evicts the probe's buffer makes the probe's next call slow (3x here): that is
    the workload's footprint, not the machine's state, and must not reach the state."""
    clock = FakeClock()
    evicted = [False]

    def fn() -> object:
        clock.now += 0.001
        evicted[0] = True
        return 1.0

    def gather() -> object:
        clock.now += 0.003 if evicted[0] else 0.001
        evicted[0] = False
        return 1.0

    _, compute = workload(clock, constant(0.002))
    config = MeasureConfig(measure_seconds=0.2, round_seconds=0.002, min_rounds=20, max_rounds=20)
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=config,
                     probe=compute, state_probes={"latency": gather})  # fmt: skip
    assert result.state["latency"] == pytest.approx(0.001)


def test_the_round_after_the_state_probes_is_run_but_not_kept() -> None:
    """The large copy leaves the workload's caches cold: the round after it is slow (3x here) for the
    probe's reason, not the workload's nor the machine's, and must not reach the figure."""
    clock = FakeClock()
    cold = [0]  # calls of the workload left to run cold

    def fn() -> object:
        clock.now += 0.003 if cold[0] else 0.001
        cold[0] = max(0, cold[0] - 1)
        return 1.0

    def copy() -> object:
        clock.now += 0.002
        cold[0] = 4  # one round: 4 calls of 1 ms fill the 4 ms round
        return 1.0

    _, compute = workload(clock, constant(0.002))
    config = MeasureConfig(measure_seconds=0.2, round_seconds=0.004, min_rounds=20, max_rounds=20)
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=config,
                     probe=compute, state_probes={"memory": copy})  # fmt: skip
    assert result.calls_per_round == 4
    assert result.samples == pytest.approx((0.001,) * 20)
    assert result.state["memory"] == pytest.approx(0.002)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="minor page-fault counts are read from getrusage")
def test_the_fresh_memory_probe_pays_a_fault_per_page_every_call_and_keeps_nothing() -> None:
    """The allocator's state must not decide what it measures: every call maps, touches and unmaps."""
    import resource

    from pytest_accel.engine.devices.cpu import CpuDevice
    from pytest_accel.engine.machine import _FRESH_BYTES, state_probes

    fresh = state_probes(CpuDevice(threads=1))["fresh"]
    fresh()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        fresh()
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
    pages = _FRESH_BYTES // resource.getpagesize()
    # Transparent huge pages can serve the mapping in 2 MiB steps: at least one fault per huge page.
    assert pages // 512 <= faults <= pages * 1.2
    assert "fresh" not in state_probes(AcceleratorLike())  # a caching allocator maps nothing per call


class AcceleratorLike:
    """Just enough of a non-CPU device for ``state_probes`` to build its tensors on the CPU."""

    kind = "cuda"

    def torch_device(self) -> object:
        import torch

        return torch.device("cpu")

    def autocast_dtype(self) -> object:
        import torch

        return torch.bfloat16


def test_a_state_probe_that_never_settles_costs_a_few_calls_not_the_warm_up_budget() -> None:
    clock = FakeClock()
    _, fn = workload(clock, constant(0.001))
    _, compute = workload(clock, constant(0.002))
    jumpy = iter([0.001, 0.002] * 100_000)  # +-50% from call to call: never within a 10% window
    calls, fresh = workload(clock, jumpy)
    config = MeasureConfig(measure_seconds=0.2, round_seconds=0.01, min_rounds=20, max_rounds=20)
    measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", config=config,
            probe=compute, state_probes={"fresh": fresh})  # fmt: skip
    samples = 20 // STATE_EVERY
    # 5 sizing calls (the last three's median: 1 ms), then per sample one warm call and a round of
    # ceil(0.005 s / 1 ms) = 5 calls. Settling would have called it for the whole 3 s budget (2,000 calls).
    assert calls[0] == 5 + samples * (1 + 5)


def test_without_state_probes_the_state_is_the_reference_kernel_alone() -> None:
    clock = FakeClock()
    _, fn = workload(clock, constant(0.001))
    _, compute = workload(clock, constant(0.002))
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", probe=compute,
                     config=MeasureConfig(measure_seconds=0.05, round_seconds=0.01, min_rounds=5))  # fmt: skip
    assert result.state == pytest.approx({"compute": 0.002})


def test_a_state_inside_the_recorded_range_shifts_nothing() -> None:
    assert state_shift(QUIET, RECORDED) == StateShift()
    assert state_shift(QUIET, ()) == StateShift()  # an old baseline without states
    assert state_shift({"memory": 1.0}, RECORDED) == StateShift()  # no compute probe now


def test_a_memory_bound_neighbour_is_named_with_its_size() -> None:
    busy = {"compute": 1.05e-3, "memory": 4.6e-3, "latency": 1.1e-3}  # copies 1.46x slower relative to the matmul
    shift = state_shift(busy, RECORDED)
    # beyond the highest recording (3.01 / 0.99), less the 10% noise floor
    assert shift.slower == pytest.approx(math.log(4.6 / 1.05) - math.log(3.01 / 0.99) - 0.10, abs=1e-9)
    assert shift.why_slower == wording.state_moved("memory", 4.6 / 1.05 / 3.0, *COPY_SPAN)  # the copy, at 1.46x
    assert shift.faster == 0.0


def test_a_faster_memory_system_cannot_fake_a_slowdown() -> None:
    """A copy now 30% quicker (the host's bandwidth moves with its tenants) widens only the upper bound."""
    fast = {"compute": 1e-3, "memory": 2.1e-3, "latency": 1e-3}
    shift = state_shift(fast, RECORDED)
    assert shift.slower == 0.0 and shift.faster > 0.2
    slower = judge_time(observation(0.0125, fast), observation(0.01, runs=RECORDED), POLICY)
    assert slower.outcome is Outcome.REGRESSED  # a 25% slowdown is still called
    faster = judge_time(observation(0.0085, fast), observation(0.01, runs=RECORDED), POLICY)
    assert faster.outcome is Outcome.UNCHANGED  # -15%, but the machine's state could explain it
    claimed = judge_time(observation(0.0085, QUIET), observation(0.01, runs=RECORDED), POLICY)
    assert claimed.outcome is Outcome.IMPROVED  # on a machine in its recorded state the speedup is claimed
    # the speedup not claimed: the state's 2x% widens the fast side of the interval
    assert 0.2 <= math.expm1(shift.faster) < 0.3 and faster.sight is Sight.STATE
    assert faster.high is not None and claimed.high is not None
    assert faster.high == pytest.approx(claimed.high * math.exp(shift.faster)) and faster.high > 1


def test_a_faster_memory_system_widens_what_an_unchanged_verdict_could_see() -> None:
    """A slowdown the size of the state's speedup could read as none: an exact +10% read +1.5% .. +3.7%
    with the large copy at 0.82x, and was called "unchanged, could see 5-6%" (docs/studies/spaced-recordings)."""
    fast = {"compute": 1e-3, "memory": 2.1e-3, "latency": 1e-3}
    shift = state_shift(fast, RECORDED)
    plain = judge_time(observation(0.0102, QUIET), observation(0.01, runs=RECORDED), POLICY)
    masked = judge_time(observation(0.0102, fast), observation(0.01, runs=RECORDED), POLICY)
    assert plain.outcome is masked.outcome is Outcome.UNCHANGED
    assert plain.detectable is not None and masked.detectable is not None
    assert 1 + masked.detectable == pytest.approx((1 + plain.detectable) * math.exp(shift.faster))
    assert masked.sight is Sight.STATE
    assert shift.why_faster == wording.state_moved("memory", 2.1 / 3.0, *COPY_SPAN)  # the copy, at 0.70x


@given(st.floats(min_value=0.2, max_value=5.0), st.floats(min_value=0.2, max_value=5.0))
def test_a_shift_never_depends_on_the_machine_being_uniformly_faster(speed: float, memory: float) -> None:
    """Scaling every probe alike (a faster or slower clock) changes no relative time: the shift stays."""
    now = {"compute": 1e-3, "memory": 3e-3 * memory}
    scaled = {name: seconds * speed for name, seconds in now.items()}
    one, other = state_shift(scaled, RECORDED), state_shift(now, RECORDED)
    assert (one.slower, one.faster) == pytest.approx((other.slower, other.faster), abs=1e-9)


def observation(
    centre: float, state: dict[str, float] | None = None, runs: tuple[dict[str, float], ...] = ()
) -> Observation:
    samples = [centre * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(30)]
    return Observation(samples, [1e-3] * 30, None, (), state or {}, runs)


def test_a_state_beyond_the_tolerance_is_noisy_and_says_what_changed() -> None:
    busy = {"compute": 1e-3, "memory": 4.2e-3, "latency": 1e-3}
    verdict = judge_time(observation(0.013, busy), observation(0.01, runs=RECORDED), POLICY)
    assert verdict.outcome is Outcome.NOISY  # +30% "slower", but the copy probe moved +39%: not judged
    assert verdict.rule is Rule.STATE and verdict.abstention is not None
    assert verdict.abstention.cause is Cause.STATE and verdict.abstention.waits
    shift = state_shift(busy, RECORDED, POLICY.state_noise_floor)
    assert shift.why_slower == wording.state_moved("memory", 1.4, *COPY_SPAN)  # the copy, at 1.40x
    assert math.expm1(shift.slower) == pytest.approx(0.25, abs=0.005)  # could explain 25%
    assert verdict.detectable == pytest.approx(detectable_slowdown(shift.slower, POLICY.tolerance))


def test_a_slowdown_far_beyond_what_the_state_could_explain_is_regressed() -> None:
    """The copy moved enough to fake +25% in a workload bound by it; a 3x slowdown is not that."""
    busy = {"compute": 1e-3, "memory": 4.2e-3, "latency": 1e-3}
    verdict = judge_time(observation(0.03, busy), observation(0.01, runs=RECORDED), POLICY)
    assert verdict.outcome is Outcome.REGRESSED and verdict.rule is Rule.INTERVAL, verdict.reason
    shift = state_shift(busy, RECORDED, POLICY.state_noise_floor)
    assert math.expm1(shift.slower) == pytest.approx(0.25, abs=0.005)  # the state could explain 25%...
    assert verdict.ruled_out == (wording.state_ruled_out(shift.slower),)  # ... and was ruled out
    assert verdict.low is not None and verdict.low > 1.05 * math.exp(0.2)  # the shift is off the lower bound


@given(st.floats(min_value=1.0, max_value=3.0), st.floats(min_value=1.0, max_value=10.0))
def test_a_state_shift_never_lets_through_a_slowdown_it_could_explain(memory: float, slowdown: float) -> None:
    """Whatever the copy did and however slow the figure, a regression called beside a large shift
    has a ratio beyond the tolerance times everything the shift could explain."""
    state = {"compute": 1e-3, "memory": 3e-3 * memory, "latency": 1e-3}
    verdict = judge_time(observation(0.01 * slowdown, state), observation(0.01, runs=RECORDED), POLICY)
    shift = state_shift(state, RECORDED, POLICY.state_noise_floor).slower
    if verdict.outcome is Outcome.REGRESSED and shift > math.log1p(POLICY.tolerance):
        assert verdict.ratio is not None and verdict.ratio > (1 + POLICY.tolerance) * math.exp(shift)


def test_a_small_state_shift_widens_the_interval_and_the_detectable_slowdown() -> None:
    slight = {"compute": 1e-3, "memory": 3.5e-3, "latency": 1e-3}  # +4% beyond the range and the 10% floor
    steady = judge_time(observation(0.0101, QUIET), observation(0.01, runs=RECORDED), POLICY)
    shifted = judge_time(observation(0.0101, slight), observation(0.01, runs=RECORDED), POLICY)
    assert steady.outcome is shifted.outcome is Outcome.UNCHANGED
    assert steady.detectable is not None and shifted.detectable is not None
    assert shifted.detectable > steady.detectable
    shift = state_shift(slight, RECORDED, POLICY.state_noise_floor).slower
    assert shift == pytest.approx(0.04, abs=0.005)
    assert steady.low is not None and shifted.low == pytest.approx(steady.low * math.exp(-shift))  # widened by it
    assert shifted.high == steady.high


def test_detectable_slowdown_is_the_tolerance_or_the_interval_whichever_is_larger() -> None:
    assert detectable_slowdown(0.01, 0.05) == pytest.approx(0.05)
    assert detectable_slowdown(math.log(1.3), 0.05) == pytest.approx(0.3)


def test_run_states_round_trip_and_are_validated(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    entry = BaselineEntry("t::a", "throughput", "x", 1.0, (0.1,), run_states=RECORDED)
    store.update("cpu-k", "smoke", 1, [entry])
    assert store.load("cpu-k", "smoke")[("t::a", "throughput")].run_states == RECORDED
    path = store.path_for("cpu-k", "smoke")
    document = json.loads(path.read_text())
    document["entries"]["t::a"]["throughput"]["run_states"][0]["memory"] = -1
    path.write_text(json.dumps(document))
    with pytest.raises(StoreError, match=r"run_states'\]\[0\]\['memory'\]: expected a finite number >= 0"):
        store.load("cpu-k", "smoke")


def test_state_history_keeps_the_recordings_states_until_reset() -> None:
    m = Measurement("x", 1.0, (0.1,), probe_samples=(1e-3,), state=QUIET)
    first = BaselineEntry("t::a", "throughput", "x", 1.0, (0.1,), (1e-3,), run_states=RECORDED)
    assert state_history(first, m, {}, reset=False) == (*RECORDED, QUIET)
    assert state_history(first, m, {}, reset=True) == (QUIET,)
    assert state_history(None, Measurement("x", 1.0, (0.1,)), {}, reset=False) == ()


CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu sse avx2 fma

processor\t: 1
cpu family\t: 99
"""


def test_cpu_identity_names_the_host_generation(tmp_path: Path) -> None:
    for index, (level, kind, size) in enumerate(
        [("1", "Data", "32K"), ("1", "Instruction", "32K"), ("2", "Unified", "512K"), ("3", "Unified", "32768K")]
    ):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (folder / name).write_text(value + "\n")
    identity = cpu_identity(CPUINFO, tmp_path)
    assert identity == {
        "cpu_family": "25",
        "cpu_model_number": "1",
        "cpu_stepping": "1",
        "vector_isa": "avx2",
        "cache_l1": "32K",
        "cache_l2": "512K",
        "cache_l3": "32768K",
    }
    assert cpu_identity("", tmp_path / "missing") == {"vector_isa": "none"}


def test_a_baseline_from_another_cache_size_is_not_compared() -> None:
    entry = BaselineEntry("t::a", "throughput", "x", 1.0, (0.1,), provenance={"cache_l3": "32768K"})
    measurement = Measurement("x", 1.0, (0.1,))
    assert entry.incomparable(measurement, {"cache_l3": "266240K"}) == (
        "cache_l3 32768K -> 266240K",
        "the baseline was taken with cache_l3=32768K, this run has cache_l3=266240K",
    )


def _four_suspects_through(fresh: FreshVerdict, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Outcome], int, Gate]:
    """Four suspects (+50%) in one run, each fresh process answering ``fresh``: their outcomes, the fresh
    processes spawned, and the gate."""
    spawned: list[str] = []

    def answering(
        test: str, metric: str, rootdir: Path, settings: ChildSettings, before: str | None, environment: str | None
    ) -> FreshVerdict:
        spawned.append(test)
        return fresh

    launchers = replace(NO_LAUNCHERS, fresh=answering)
    base = Measurement("x", 1.0, tuple(0.01 * (1 + 0.01 * (i % 3)) for i in range(30)), probe_samples=(1e-3,) * 30)
    slow = Measurement("x", 1.0, tuple(s * 1.5 for s in base.samples), probe_samples=(1e-3,) * 30)
    entries = {
        (f"t::{i}", "throughput"): BaselineEntry(f"t::{i}", "throughput", "x", 1.0, base.samples, base.probe_samples)
        for i in range(4)
    }
    settings = ChildSettings("cpu", "smoke", Path("."), (("accel_measure_seconds", "1.0"),), 1)
    mode = GateMode(confirmations=0, fresh_process=settings)
    gate = Gate(lambda: entries, {}, mode, Path("."), gate_memory=False, launchers=launchers)
    outcomes = [gate.judge(f"t::{i}", slow, POLICY, lambda: slow).outcome for i in range(4)]
    return outcomes, len(spawned), gate


def test_after_refuted_suspects_later_ones_are_noisy_without_a_process_each(monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes, spawned, _ = _four_suspects_through(FreshVerdict(Outcome.UNCHANGED, "time +1.0%"), monkeypatch)
    assert outcomes == [Outcome.UNCHANGED] * REFUTED_LIMIT + [Outcome.NOISY] * (4 - REFUTED_LIMIT)
    assert spawned == REFUTED_LIMIT


def test_a_fresh_process_that_abstains_refutes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a fresh process that measured and disagreed counts toward the storm rule: one that was
    noisy itself (its machine state not covered) leaves later suspects to their own fresh processes."""
    abstained = FreshVerdict(Outcome.NOISY, "the machine is in a state its baseline did not cover: ...")
    outcomes, spawned, gate = _four_suspects_through(abstained, monkeypatch)
    assert outcomes == [Outcome.NOISY] * 4 and spawned == 4 and gate.refuted == 0
    # One that measured "unchanged" but could not tell (its interval reaches +0% and this process's +50%)
    could_not_tell = Verdict(Outcome.UNCHANGED, "time", "time +9%", 1.09, 0.95, 1.6)
    fresh = FreshVerdict(Outcome.UNCHANGED, "+9%", could_not_tell)
    outcomes, spawned, gate = _four_suspects_through(fresh, monkeypatch)
    assert outcomes == [Outcome.NOISY] * 4 and spawned == 4 and gate.refuted == 0


def test_the_summary_says_how_many_figures_could_see_ten_percent() -> None:
    def recorded(detectable: float) -> Recorded:
        verdict = judge_time(observation(0.01), observation(0.01, runs=()), POLICY)
        from dataclasses import replace

        from pytest_accel.judgement.verdict import VerdictRecord

        return Recorded(
            "t::a", "passed", Measurement("x", 1.0, (0.1,)), VerdictRecord(replace(verdict, detectable=detectable))
        )

    records = [recorded(0.06), recorded(0.08), recorded(0.25)]
    assert "(sees 6%)" in verdict_cell(records[0].verdict)
    lines = verdict_summary(records, "cpu-k/smoke", updating=False)
    assert "accel: 2 of 3 judged figures could see a 10% slowdown; 1 only 25% or more" in lines[-1]
    lines = verdict_summary([*records, recorded(0.4)], "cpu-k/smoke", updating=False)
    assert "accel: 2 of 4 judged figures could see a 10% slowdown; 2 only 25%-40% or more" in lines[-1]


def fake_proc(root: Path, busy: int, idle: int, own: tuple[int, int], child: tuple[int, int]) -> None:
    """A /proc with the host's counters, this process (pid 10) and a child (pid 11, a DataLoader worker)."""
    root.mkdir(exist_ok=True)
    (root / "stat").write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 2 3 4\n")
    for pid, ppid, (utime, stime) in ((10, 1, own), (11, 10, child), (12, 1, (500, 500))):
        (root / str(pid)).mkdir(exist_ok=True)
        fields = ["S", str(ppid), *["0"] * 9, str(utime), str(stime)]
        (root / str(pid) / "stat").write_text(f"{pid} (a name) {' '.join(fields)}\n")


def test_host_share_is_the_cpu_time_of_processes_outside_this_job(tmp_path: Path) -> None:
    from pytest_accel.engine.machine import HostShare

    fake_proc(tmp_path, busy=1000, idle=1000, own=(100, 0), child=(50, 0))
    meter = HostShare(tmp_path, pid=10)
    meter.start()
    # 200 ticks pass on the host: 100 busy, of which this process 40 and its worker 20: others 40 of 200.
    fake_proc(tmp_path, busy=1100, idle=1100, own=(130, 10), child=(70, 0))
    assert meter.stop() == pytest.approx(0.2)
    assert HostShare(tmp_path / "none", pid=10).stop() is None  # not Linux: unknown, not zero


def test_a_slower_figure_on_a_shared_host_is_noisy_and_says_so() -> None:
    recorded = tuple({**state, "foreign_cpu": 0.02} for state in RECORDED)
    shared = {**QUIET, "foreign_cpu": 0.48}
    verdict = judge_time(observation(0.012, shared), observation(0.01, runs=recorded), POLICY)
    assert verdict.outcome is Outcome.NOISY and verdict.rule is Rule.NEIGHBOUR
    assert verdict.abstention is not None and verdict.abstention.cause is Cause.UNCALIBRATED
    assert verdict.ratio == pytest.approx(1.2)
    # others used 48% of the host, its recordings at most 2%
    assert verdict.reason == wording.uncalibrated(verdict.ratio, wording.host_shared(0.48, 0.02))
    # the same figure on a host as quiet as the recordings is a regression
    alone = judge_time(observation(0.012, {**QUIET, "foreign_cpu": 0.03}), observation(0.01, runs=recorded), POLICY)
    assert alone.outcome is Outcome.REGRESSED
    # and an unchanged figure on the shared host, uncalibrated, is not judged either: the neighbour
    # slows the reference kernel too, so it could hide a slowdown
    calm = judge_time(observation(0.01, shared), observation(0.01, runs=recorded), POLICY)
    assert calm.outcome is Outcome.NOISY and calm.rule is Rule.NEIGHBOUR and calm.ratio == pytest.approx(1.0)
    assert calm.abstention is not None and calm.abstention.cause is Cause.UNCALIBRATED


FRESH_RECORDED = tuple({**state, "fresh": 2.6e-3} for state in RECORDED)


def test_dearer_page_faults_move_a_workload_only_by_the_share_its_own_faults_take() -> None:
    dear = {**QUIET, "fresh": 2.6e-3 * 1.5}  # each page fault 1.5x as long as in every recording
    whole = state_shift(dear, FRESH_RECORDED)  # unknown share (an older result): the whole excess counts
    # beyond the highest recording (2.6 / 0.99 relative to 2.6 / 1.00), less the 10% noise floor
    assert whole.slower == pytest.approx(math.log(1.5) - math.log(1 / 0.99) - 0.10, abs=1e-9)
    assert state_shift({**dear, FAULT_SHARE: 0.0}, FRESH_RECORDED) == StateShift()  # faults nothing: no shift
    half = state_shift({**dear, FAULT_SHARE: 0.5}, FRESH_RECORDED)
    assert half.slower == pytest.approx(math.log1p(0.5 * math.expm1(whole.slower)), abs=1e-9)
    assert half.why_slower == wording.state_moved("fresh", 1.5, 1 / 1.02, 1 / 0.99) + wording.state_fault_share(0.5)


def test_a_slowdown_of_a_workload_that_faults_nothing_is_judged_when_page_faults_got_dearer() -> None:
    dear = {**QUIET, "fresh": 2.6e-3 * 1.4, FAULT_SHARE: 0.001}
    verdict = judge_time(observation(0.0125, dear), observation(0.01, runs=FRESH_RECORDED), POLICY)
    assert verdict.outcome is Outcome.REGRESSED
    unknown = {k: v for k, v in dear.items() if k != FAULT_SHARE}
    assert judge_time(observation(0.0112, unknown), observation(0.01, runs=FRESH_RECORDED), POLICY).outcome is (
        Outcome.NOISY
    )


def test_a_workloads_fault_share_is_its_faults_at_the_fresh_probes_cost_per_fault(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    faults = [0]

    def fn() -> float:
        clock.now += 0.001
        faults[0] += 100  # 100 faults per call
        return 1.0

    def fresh() -> None:
        clock.now += 0.0025  # 1000 faults at 2.5 us: 2.5 ms
        faults[0] += 1000

    _, compute = workload(clock, constant(0.001))
    monkeypatch.setattr(measure_module, "_minor_faults", lambda: faults[0])
    result = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", probe=compute,
                     state_probes={"fresh": fresh}, fault_probe=("fresh", 1000),
                     config=MeasureConfig(measure_seconds=0.05, round_seconds=0.01, min_rounds=5))  # fmt: skip
    # 100 faults x 2.5 us = 0.25 ms of a 1 ms call; the probe's own faults are not the workload's.
    assert result.state[FAULT_SHARE] == pytest.approx(0.25)
    piped = measure(fn, timer=HostTimer(clock, clock.sync), items_per_call=1, unit="x", probe=compute,
                    state_probes={"fresh": fresh}, fault_probe=("fresh", 1000), pipelined=True,
                    config=MeasureConfig(measure_seconds=0.05, round_seconds=0.01, min_rounds=5))  # fmt: skip
    assert FAULT_SHARE not in piped.state  # its producers fault in processes of their own


def test_a_state_snapshot_reads_every_probe_as_a_measurement_records_it() -> None:
    """What a wait for quiet compares with the recordings: the same probes, seconds per call, with the
    reference kernel under ``compute`` (state_shift's denominator)."""
    from pytest_accel.engine.devices.cpu import CpuDevice
    from pytest_accel.engine.machine import state_probes
    from pytest_accel.engine.sampling import StateSnapshot

    device = CpuDevice(threads=1)
    snapshot = StateSnapshot(state_probes(device), device.timer())
    for _ in range(2):  # warmed up once, read again on its last rounds
        state = snapshot.take()
        assert set(state) == {"compute", "memory", "latency", "fresh"}
        assert all(0 < seconds < 1 for seconds in state.values())
