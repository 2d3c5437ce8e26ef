"""What a figure costs: the energy counters read around a window of the workload's calls (fakes of NVML, HLML
and a RAPL sysfs tree: tests/fakes/energy.py), the roofline's bound, and the price per item."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from fakes.energy import FakeCounter, install_fake_hlml, install_fake_nvml, rapl_tree
from hypothesis import given
from hypothesis import strategies as st
from support import FAST_OPTIONS, PERF_TEST

from pytest_accel.core.cost import cost_of, parse_prices, price_for
from pytest_accel.core.energy import Energy, spent
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.core.roofline import bound_then, roofline
from pytest_accel.core.wording import bound_moved
from pytest_accel.engine.energy import energy_window, hlml_meter, nvml_meter, rapl_meter
from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.conclusion import GateResult
from pytest_accel.judgement.energy import judge_energy, with_energy


class Clock:
    """A clock that moves one second per workload call: the window's seconds are its calls."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _window(meter: object, calls_then: list[int] | None = None, on_call: object = None) -> Energy:
    clock = Clock()

    def call() -> None:
        clock.now += 0.25
        if callable(on_call):
            on_call()

    return energy_window(call, meter, 1.0, 0.25, 8.0, lambda: None, clock)  # type: ignore[arg-type]


# -- the counters' arithmetic ------------------------------------------------------------------------------


def test_a_counter_that_moved_gives_the_joules_between_its_readings() -> None:
    assert spent((10.0, 5.0), (12.5, 6.0), (None, None)) == pytest.approx(3.5)


def test_a_ranged_counter_that_reads_lower_wrapped_once_and_a_64_bit_one_went_back() -> None:
    assert spent((262_140.0,), (2.0,), (262_143.0,)) == pytest.approx(5.0)
    went_back = spent((5000.0,), (3.0,), (None,))
    assert isinstance(went_back, str) and "went back" in went_back and "driver reloaded" in went_back
    still = spent((7.0,), (7.0,), (None,))
    assert isinstance(still, str) and "did not move" in still


@given(st.integers(0, 10**9 - 1), st.integers(1, 10**9 - 1))
def test_a_wrapping_counter_gives_what_was_drawn_wherever_it_started(start: int, drawn: int) -> None:
    wrap = 10**9
    assert spent((start * 1e-6,), (((start + drawn) % wrap) * 1e-6,), (wrap * 1e-6,)) == pytest.approx(drawn * 1e-6)


def test_an_energy_figure_is_joules_per_item_mean_watts_and_items_per_second_per_watt() -> None:
    energy = Energy("nvml", joules=300.0, seconds=1.5, items=600.0)
    assert (energy.joules_per_item, energy.watts, energy.items_per_second_per_watt) == (0.5, 200.0, 2.0)
    assert Energy.from_json(energy.to_json()) == energy
    with pytest.raises(ValueError, match="positive joules"):
        Energy("nvml", joules=0.0, seconds=1.0, items=1.0)


# -- RAPL, through a powercap tree -------------------------------------------------------------------------


def test_no_powercap_says_so(tmp_path: Path) -> None:
    assert rapl_meter(tmp_path / "powercap") == (
        f"no powercap: {tmp_path / 'powercap'} is absent (no RAPL driver, or a virtual machine that does not expose it)"
    )


def test_the_packages_are_summed_not_their_subzones_nor_psys(tmp_path: Path) -> None:
    counters = rapl_tree(tmp_path, [1_000_000, 2_000_000])
    meter = rapl_meter(tmp_path)
    assert not isinstance(meter, str) and meter.read() == (1.0, 2.0)

    def draw() -> None:  # each call draws 1.5 J on package 0, 0.5 J on package 1
        for path, joules in zip(counters, (1.5, 0.5), strict=True):
            path.write_text(f"{int(path.read_text()) + int(joules * 1e6)}\n")

    energy = _window(meter, on_call=draw)  # 4 calls of 0.25 s, 8 items each
    assert energy.meter == "rapl" and energy.joules == pytest.approx(8.0) and energy.seconds == pytest.approx(1.0)
    assert energy.joules_per_item == pytest.approx(0.25) and energy.watts == pytest.approx(8.0)


def test_a_package_counter_that_wraps_in_the_window_is_counted_across_the_wrap(tmp_path: Path) -> None:
    (counter,) = rapl_tree(tmp_path, [9_500_000], max_range_uj=10_000_000)  # 10 J of range, 0.5 J left
    meter = rapl_meter(tmp_path)

    def draw() -> None:
        counter.write_text(f"{(int(counter.read_text()) + 500_000) % 10_000_000}\n")

    assert _window(meter, on_call=draw).joules == pytest.approx(2.0)  # 4 x 0.5 J, through 0


def test_a_counter_readable_by_root_only_is_not_measured_naming_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rapl_tree(tmp_path, [1])
    real = Path.read_text

    def guarded(path: Path, *args: object, **kwargs: object) -> str:
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", guarded)
    assert rapl_meter(tmp_path) == "RAPL's energy_uj is readable by root only (Linux 5.10 and later: CVE-2020-8694)"


def test_a_tree_without_a_package_zone_says_so(tmp_path: Path) -> None:
    (tmp_path / "intel-rapl:0").mkdir()
    (tmp_path / "intel-rapl:0" / "name").write_text("psys\n")
    assert rapl_meter(tmp_path) == f"no RAPL package zone under {tmp_path}"


# -- NVML and HLML, through their libraries ----------------------------------------------------------------


def test_nvml_reads_millijoules_of_torchs_card(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_nvml(monkeypatch, FakeCounter([5_000_000, 5_000_000, 5_012_000]))  # the meter's read, the window's
    energy = _window(nvml_meter(0))
    assert energy.meter == "nvml" and energy.joules == pytest.approx(12.0) and energy.joules_per_item == 0.375


@pytest.mark.parametrize(
    ("counter", "said"),
    [
        (FakeCounter(supported=False), "NVML cannot read this GPU's energy (NVMLError_NotSupported: Not Supported)"),
        (
            FakeCounter([9_000_000, 9_000_000, 1_000]),
            "the counter went back (9000 J -> 1 J): the driver reloaded or it was reset",
        ),
        (FakeCounter([4_000, 4_000]), "the counter did not move over the window"),
    ],
)
def test_nvml_that_cannot_count_or_reset_gives_no_figure_but_its_reason(
    monkeypatch: pytest.MonkeyPatch, counter: FakeCounter, said: str
) -> None:
    install_fake_nvml(monkeypatch, counter)
    meter = nvml_meter(0)
    reason = meter if isinstance(meter, str) else _window(meter).not_measured
    assert reason is not None and reason.startswith(said)


def test_no_nvidia_ml_py_is_no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)
    assert nvml_meter(0) == "no NVML: pynvml is not installed (pip install nvidia-ml-py)"


def test_hlml_reads_the_module_this_process_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_hlml(
        monkeypatch, {0: FakeCounter([1, 1]), 3: FakeCounter([2_000_000, 2_000_000, 2_004_000]), 5: FakeCounter()}
    )
    energy = _window(hlml_meter({"HABANA_VISIBLE_MODULES": "3"}))
    assert energy.meter == "hlml" and energy.joules == pytest.approx(4.0)
    assert hlml_meter({"HABANA_VISIBLE_MODULES": "6"}) == "HLML sees no module 6 (HABANA_VISIBLE_MODULES)"
    unknown = hlml_meter({})
    assert isinstance(unknown, str) and unknown.startswith("which of the 3 Gaudi modules this process holds")
    install_fake_hlml(monkeypatch, {2: FakeCounter(supported=False)})
    assert hlml_meter({}) == "HLML cannot read this module's energy (HLMLError: HLML_ERROR_NOT_SUPPORTED)"
    monkeypatch.setitem(__import__("sys").modules, "pyhlml", None)
    assert hlml_meter({}) == "no HLML: pyhlml is not installed (pip install habana-pyhlml)"


def test_a_counter_that_fails_mid_window_gives_no_figure_and_fails_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    module = install_fake_nvml(monkeypatch, FakeCounter())
    meter = nvml_meter(0)

    def lost() -> int:
        raise module.NVMLError_NoPermission("Insufficient Permissions")  # type: ignore[attr-defined]

    monkeypatch.setattr(module, "nvmlDeviceGetTotalEnergyConsumption", lambda handle: lost())
    assert _window(meter).not_measured == (
        "the counter could not be read (NVMLError_NoPermission: Insufficient Permissions)"
    )


# -- the roofline and the price ----------------------------------------------------------------------------

# A device of 100 TFLOP/s and 2 TB/s: the ridge at 50 FLOP per byte.
PEAKS = {"peak_tflops": 100.0, "peak_bytes_per_second": 2e12}


def test_the_bound_is_the_side_of_the_ridge_or_the_launch() -> None:
    matmul = roofline(2 * 4096**3, 3 * 4096**2 * 2, 2 * 4096**3 / 60e12, **PEAKS)  # 1365 FLOP/B, 60 TFLOP/s
    assert matmul is not None and matmul.bound == "compute-bound"
    assert matmul.roof_tflops == 100.0 and matmul.percent_of_roof == pytest.approx(60.0)
    copy = roofline(1e8, 1e9, 1e9 / 1.5e12, **PEAKS)  # 0.1 FLOP/B, 1.5 TB/s
    assert copy is not None and copy.bound == "memory-bound"
    assert copy.roof_tflops == pytest.approx(0.2) and copy.percent_of_roof == pytest.approx(75.0)
    tiny = roofline(2 * 64**3, 3 * 64**2 * 4, 8e-6, **PEAKS)  # the roof: 0.1 us; it took 8 us
    assert tiny is not None and tiny.bound == "launch-bound" and tiny.percent_of_roof < 10
    assert roofline(None, 1e9, 1.0, **PEAKS) is None and roofline(1e9, None, 1.0, **PEAKS) is None


def test_prices_are_read_per_class_and_the_longest_class_prices_a_device() -> None:
    prices = parse_prices("cuda=4.10, cuda-h100=6.98,\ncpu=0.40")
    assert price_for(prices, "cuda-h100-sxm5-80gb") == 6.98 and price_for(prices, "cuda-a100-40gb") == 4.10
    assert price_for(prices, "hpu-gaudi2") is None and price_for(prices, "cudax-1") is None
    for bad in ("cuda", "cuda=", "cuda=-1", "=3", "cuda=nan", "cuda=inf"):
        with pytest.raises(ValueError, match="expected class=price per hour"):
            parse_prices(bad)


def test_a_price_per_hour_gives_items_per_dollar_and_with_energy_the_energys_cost() -> None:
    cost = cost_of(1000.0, 3.6, Energy("nvml", joules=360.0, seconds=1.0, items=1000.0), price_per_kwh=0.20)
    assert cost.items_per_dollar == pytest.approx(1e6) and cost.dollars_per_million_items == pytest.approx(1.0)
    assert cost.energy_dollars_per_million_items == pytest.approx(0.02)  # 0.36 J/item: 0.1 kWh per million
    assert cost_of(1000.0, 3.6, None, 0.20).energy_dollars_per_million_items is None


# -- through the plugin ------------------------------------------------------------------------------------

# A workload that draws 2 mJ a call from a RAPL package counter the test's powercap tree holds.
DRAWING_TEST = """
import os
from pathlib import Path
import torch

COUNTER = Path(os.environ["DRAW_FROM"]) / "intel-rapl:0" / "energy_uj"  # the tree the plugin reads, or was given

def test_matmul(throughput, accel_device):
    a = torch.randn(64, 64)

    def call():
        COUNTER.write_text(str(int(COUNTER.read_text()) + int(os.environ.get("DRAW_UJ", "2000"))))
        return a @ a

    throughput(call, items=64, unit="rows", flops=2 * 64**3, bytes_moved=3 * 64 * 64 * 4)
"""


def _drawing(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A powercap tree the plugin reads and DRAWING_TEST's workload draws from."""
    root = pytester.path / "powercap"
    rapl_tree(root, [1_000_000])
    monkeypatch.setenv("PYTEST_ACCEL_POWERCAP", str(root))
    monkeypatch.setenv("DRAW_FROM", str(root))


def test_a_host_without_powercap_says_so_once_and_prices_come_from_the_ini_alone(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_ACCEL_POWERCAP", str(perf_pytester.path / "no-powercap"))
    perf_pytester.makepyfile(PERF_TEST)
    result = perf_pytester.runpytest_subprocess(
        "--device", "cpu", *FAST_OPTIONS, "--accel-json", "out.json", "-o", "accel_price_per_hour=cpu=0.40, cuda=4"
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["test*peak mem*items/$*verdict", "accel: energy not measured: no powercap: *"])
    assert "J/item" not in result.stdout.str()
    (entry,) = json.loads((perf_pytester.path / "out.json").read_text())["results"]
    assert entry["extra"]["energy"]["not_measured"].startswith("no powercap: ")
    cost = entry["extra"]["cost"]
    assert cost["price_per_hour"] == 0.40
    assert cost["items_per_dollar"] == pytest.approx(entry["figures"]["items_per_second"] * 3600 / 0.40)


def test_a_counter_read_around_the_workload_gives_its_joules_per_item_and_its_roofline(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _drawing(perf_pytester, monkeypatch)
    perf_pytester.makepyfile(DRAWING_TEST)
    result = perf_pytester.runpytest_subprocess("--device", "cpu", *FAST_OPTIONS, "--accel-json", "out.json")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["test*peak mem*J/item*W*items/s/W*% roof*bound*verdict"])
    (entry,) = json.loads((perf_pytester.path / "out.json").read_text())["results"]
    energy = Energy.from_json(entry["extra"]["energy"])
    assert energy.meter == "rapl" and energy.joules_per_item == pytest.approx(2e-3 / 64)  # 2 mJ a call of 64 rows
    assert entry["extra"]["roofline"]["bound"] in ("compute-bound", "memory-bound", "launch-bound")


def test_the_fixture_reads_the_window_after_the_rounds_and_a_label_may_not_take_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_fixture import FAST, make, work

    (counter,) = rapl_tree(tmp_path, [0])
    monkeypatch.setenv("PYTEST_ACCEL_POWERCAP", str(tmp_path))
    calls = [0]

    def drawing() -> object:
        calls[0] += 1
        counter.write_text(str(calls[0] * 500))  # 0.5 mJ a call, from the first
        return work()

    fixture, _ = make(config=replace(FAST, energy_seconds=0.05))
    m = fixture(drawing, items=4, unit="tiles", shape="32x32")
    energy = Energy.from_json(m.extra["energy"])
    assert m.extra["shape"] == "32x32" and energy.meter == "rapl"
    assert energy.joules_per_item == pytest.approx(0.5e-3 / 4) and energy.items is not None and energy.items >= 4
    with pytest.raises(pytest.fail.Exception, match="energy= is a figure pytest-accel adds"):
        make()[0](work, items=1, unit="calls", energy="green")


# -- energy gated like memory ------------------------------------------------------------------------------


def _with_window(joules_per_item: float) -> Measurement:
    energy = Energy("rapl", joules_per_item * 100, 1.0, 100.0)
    return Measurement(unit="rows", items_per_call=1.0, samples=(1e-3,) * 5, extra={"energy": energy.to_json()})


def test_energy_per_item_regressed_only_where_every_window_read_beyond_the_tolerance() -> None:
    regressed = judge_energy([0.0125, 0.013, 0.0128], 0.01, 0.10, needed=3)
    assert regressed is not None and regressed.outcome is Outcome.REGRESSED and regressed.ratio == pytest.approx(1.28)
    assert regressed.reason == "energy per item 10 mJ -> 12.8 mJ (+28.0%, 3 windows), beyond the 10% tolerance in each"
    assert judge_energy([5e-7], 4e-7, 0.10, needed=1).reason.startswith("energy per item 400 nJ -> 500 nJ")  # type: ignore[union-attr]
    one_within = judge_energy([0.0125, 0.0105, 0.013], 0.01, 0.10, needed=3)
    assert one_within is not None and one_within.outcome is Outcome.UNCHANGED
    too_few = judge_energy([0.0125], 0.01, 0.10, needed=3)
    assert too_few is not None and too_few.outcome is Outcome.UNCHANGED
    assert judge_energy([0.0125], None, 0.10, needed=1) is None and judge_energy([], 0.01, 0.10, needed=1) is None


def test_a_suspect_window_is_remeasured_and_a_window_within_the_tolerance_clears_it() -> None:
    entry = BaselineEntry(test="t", metric="throughput", unit="rows", items_per_call=1.0, samples=(1e-3,),
                          energy_per_item=0.01)  # fmt: skip
    assert BaselineEntry.from_json("t", "throughput", entry.to_json(), "file").energy_per_item == 0.01
    first = _with_window(0.013)
    gate = GateResult(Verdict(Outcome.UNCHANGED, "time", "same"), None, (first,))
    again = iter([_with_window(0.0131), _with_window(0.0129)])
    confirmed = with_energy(gate, entry, 0.10, lambda: next(again), confirmations=2)
    assert confirmed.energy is not None and confirmed.energy.outcome is Outcome.REGRESSED
    assert len(confirmed.measurements) == 3 and confirmed.record.outcome is Outcome.REGRESSED
    cleared = iter([_with_window(0.0102)])
    refuted = with_energy(gate, entry, 0.10, lambda: next(cleared), confirmations=2)
    assert refuted.energy is not None and refuted.energy.outcome is Outcome.UNCHANGED and len(refuted.measurements) == 2
    unread = replace(first, extra={"energy": Energy.unmeasured("rapl", "the counter went back").to_json()})
    assert with_energy(replace(gate, measurements=(unread,)), entry, 0.10, _never, 2).energy is None


def _never() -> Measurement:
    raise AssertionError("nothing to re-measure")


@pytest.mark.slow  # four measuring runs
def test_a_workload_that_draws_more_energy_per_item_fails_and_one_that_cannot_be_read_never_does(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _drawing(perf_pytester, monkeypatch)
    perf_pytester.makepyfile(DRAWING_TEST)
    run = ("--device", "cpu", *FAST_OPTIONS, "--accel-baselines", "bl", "-o", "accel_tolerance=10")  # time aside
    assert perf_pytester.runpytest_subprocess(*run, "--accel-update").ret == 0
    assert perf_pytester.runpytest_subprocess(*run).ret == 0  # the same energy per item
    monkeypatch.setenv("DRAW_UJ", "3000")  # +50% a call, the time the same
    more = perf_pytester.runpytest_subprocess(*run)
    assert more.ret == 1, more.stdout.str()
    more.stdout.fnmatch_lines(["perf regressed: test_matmul: energy per item +50.0%",
                               "  energy: energy per item 31.* uJ -> 46.9 uJ (+50.0%, 3 windows), beyond the 10%*",
                               "*regressed * (energy)"])  # fmt: skip
    monkeypatch.setenv("PYTEST_ACCEL_POWERCAP", str(perf_pytester.path / "absent"))
    unread = perf_pytester.runpytest_subprocess(*run)
    assert unread.ret == 0, unread.stdout.str()
    unread.stdout.fnmatch_lines(["accel: energy not measured: no powercap: *"])


def test_a_call_that_slowed_out_of_its_bound_says_which_it_had() -> None:
    # 1 MFLOP over 1 MB under 100 TFLOP/s and 2 TB/s: the roof finishes it in 0.5 us
    now = roofline(1e6, 1e6, 10e-6, **PEAKS)  # 10 us: 5% of the roof
    assert now is not None and now.bound == "launch-bound"
    assert bound_then(now, 1e6, 1e6, 0.6e-6, **PEAKS) == "memory-bound"  # its baseline reached 83% of it
    assert bound_then(now, 1e6, 1e6, 9e-6, **PEAKS) is None  # launch-bound then too
    assert bound_moved("memory-bound", "launch-bound") == (
        "bound: memory-bound -> launch-bound (under the roofline of this run's measured peaks)"
    )
