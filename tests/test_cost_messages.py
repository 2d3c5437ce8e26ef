"""Golden output of what a figure costs, as a person reads it: the table's energy, price and roofline columns and the
lines that say why a figure has none (the other messages: tests/test_messages.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_accel.core.cost import cost_of
from pytest_accel.core.energy import Energy
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.roofline import roofline
from pytest_accel.engine.energy import rapl_meter
from pytest_accel.judgement.results import Recorded
from pytest_accel.outputs.terminal import measurement_table

KEY = "cpu-intel-xeon-f6m207-2c"


# -- what a figure costs: energy, price, the roofline ------------------------------------------------------


def test_the_table_adds_energy_price_and_roofline_columns_where_a_figure_has_them() -> None:
    # An H100-shaped figure (1000 images/s, 2.2 TFLOP/s at 1.5 TB/s) with an NVML window of 300 J over 1.5 s and 600
    # images, priced at $6.98 an hour, under the roof of 989 TFLOP/s and 3.35 TB/s; beside it a CPU figure whose
    # energy could not be read and whose class has no price, and one with none of them.
    window = Energy("nvml", 300.0, 1.5, 600.0)
    roof = roofline(2.2e12 * 2e-3, 1.5e12 * 2e-3, 2e-3, 989.0, 3.35e12)
    assert roof is not None
    sdpa = Measurement(
        unit="images", items_per_call=2.0, samples=(2e-3,) * 20, flops_per_call=2.2e12 * 2e-3,
        bytes_per_call=1.5e12 * 2e-3, device_key="cuda-h100-80gb-hbm3",
        extra={"energy": window.to_json(), "cost": cost_of(1000.0, 6.98, window, 0.15).to_json(),
               "roofline": roof.to_json()},
    )  # fmt: skip
    no_powercap = rapl_meter(Path("/sys/class/powercap-absent"))
    assert isinstance(no_powercap, str)
    cpu = Measurement(unit="images", items_per_call=2.0, samples=(0.25,) * 20, device_key=KEY,
                      extra={"energy": Energy.unmeasured("", no_powercap).to_json(),
                             "cost": {"not_priced": f"no class of accel_price_per_hour prices {KEY}"}})  # fmt: skip
    plain = replace(cpu, extra={})
    rows = [Recorded("t::sdpa", "passed", sdpa, None), Recorded("t::cpu", "passed", cpu, None),
            Recorded("t::plain", "passed", plain, None)]  # fmt: skip
    assert measurement_table(rows) == [
        "test      device                    throughput   spread  latency  TFLOP/s  % peak  peak mem  J/item  W    items/s/W  items/$  % roof  bound         verdict",  # noqa: E501
        "t::sdpa   cuda-h100-80gb-hbm3       1k images/s  ±0.0%   2 ms     2.2      -       ?         500 mJ  200  2          516k     45%     memory-bound  -",  # noqa: E501
        "t::cpu    cpu-intel-xeon-f6m207-2c  8 images/s   ±0.0%   250 ms   -        -       ?         -       -    -          -        -       -             -",  # noqa: E501
        "t::plain  cpu-intel-xeon-f6m207-2c  8 images/s   ±0.0%   250 ms   -        -       ?         -       -    -          -        -       -             -",  # noqa: E501
        "accel: energy not measured: no powercap: /sys/class/powercap-absent is absent (no RAPL driver, or a virtual"
        " machine that does not expose it) (1 figure)",
        f"accel: not priced: no class of accel_price_per_hour prices {KEY} (1 figure)",
    ]
    assert measurement_table(rows[2:]) == [  # none of them: the table as before
        "test      device                    throughput  spread  latency  TFLOP/s  % peak  peak mem  verdict",
        "t::plain  cpu-intel-xeon-f6m207-2c  8 images/s  ±0.0%   250 ms   -        -       ?         -",
    ]
