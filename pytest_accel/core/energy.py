"""What a figure cost in energy: a device's cumulative counters read around a window of the workload's calls,
and what they give (joules per item, mean watts, items per second per watt), or why there is no figure.

A counter (NVML's and HLML's total energy in mJ since the driver loaded, RAPL's package energy in uJ) is read
before and after the window; the difference over the window's items is the figure. A counter that went back
(a driver reload, a reset) or did not move, or that could not be read, gives no figure, only its reason: never a
partial one. Pure: no torch, no vendor library (engine/energy.py reads the counters).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, final

__all__ = ["Energy", "of_result", "spent"]


@final
@dataclass(frozen=True)
class Energy:
    """The energy one window of the workload's calls drew, by ``meter``; or ``not_measured``, why not."""

    meter: str  # which counter: "nvml", "hlml", "rapl" ("" where there is none)
    joules: float | None = None  # drawn over the window, by the meter's device (a RAPL package: the whole socket)
    seconds: float | None = None  # the window's wall time
    items: float | None = None  # items the window's calls processed
    not_measured: str | None = None  # why there is no figure

    def __post_init__(self) -> None:
        numbers = (self.joules, self.seconds, self.items)
        if self.not_measured is None and not all(v is not None and math.isfinite(v) and v > 0 for v in numbers):
            raise ValueError(f"an energy figure needs positive joules, seconds and items, got {numbers}")

    @classmethod
    def unmeasured(cls, meter: str, why: str) -> Energy:
        return cls(meter, not_measured=why)

    @property
    def measured(self) -> bool:
        return self.not_measured is None

    @property
    def joules_per_item(self) -> float | None:
        return None if self.joules is None or self.items is None else self.joules / self.items

    @property
    def watts(self) -> float | None:
        """Mean power over the window."""
        return None if self.joules is None or self.seconds is None else self.joules / self.seconds

    @property
    def items_per_second_per_watt(self) -> float | None:
        """Items per joule: the throughput each watt buys."""
        per_item = self.joules_per_item
        return None if per_item is None else 1 / per_item

    def to_json(self) -> dict[str, Any]:
        return {
            "meter": self.meter, "joules": self.joules, "seconds": self.seconds, "items": self.items,
            "not_measured": self.not_measured, "joules_per_item": self.joules_per_item, "watts": self.watts,
            "items_per_second_per_watt": self.items_per_second_per_watt,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Energy:
        """Inverse of ``to_json``; the derived figures are recomputed, not trusted."""
        return cls(str(data.get("meter", "")), data.get("joules"), data.get("seconds"), data.get("items"),
                   data.get("not_measured"))  # fmt: skip


def spent(before: Sequence[float], after: Sequence[float], wraps: Sequence[float | None]) -> float | str:
    """Joules drawn between two readings of each counter (summed over counters: a RAPL package each), or why
    there is no figure. A counter with a range (``wraps``: RAPL's ``max_energy_range_uj``) that reads lower
    after wrapped once; one without (a 64-bit NVML or HLML counter) went back: the driver reloaded or it reset."""
    total = 0.0
    for first, last, wrap in zip(before, after, wraps, strict=True):
        if last >= first:
            total += last - first
        elif wrap is not None:
            total += last + wrap - first
        else:
            return f"the counter went back ({first:.6g} J -> {last:.6g} J): the driver reloaded or it was reset"
    if total <= 0:
        return "the counter did not move over the window: it updates less often than the window is long"
    return total


def of_result(extra: Mapping[str, Any]) -> Energy | None:
    """The energy window a result carries (its ``extra["energy"]``, engine/energy.py); None where none was read."""
    data = extra.get("energy")
    return Energy.from_json(data) if isinstance(data, Mapping) else None
