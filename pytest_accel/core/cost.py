"""What a figure costs in money: a price per device-hour (what a team pays for one card, or one CPU host, an
hour) turns items per second into items per dollar and dollars per million items; with an energy figure and a
price per kWh, the energy's own cost per million items. Pure.

Prices are given per device class as ``class=price`` pairs, comma-separated: ``cuda=4.10, hpu=3.25,
cpu=0.40``; a class is a device kind or the start of a device key (``cuda-h100=4.10, cuda-a100=2.20``), and the
longest one that matches a figure's device key prices it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, final

from pytest_accel.core.energy import Energy

__all__ = ["Cost", "cost_of", "parse_prices", "price_for"]

_JOULES_PER_KWH = 3.6e6


def parse_prices(text: str) -> dict[str, float]:
    """``cuda=4.10, cpu-amd=0.40`` -> {"cuda": 4.10, "cpu-amd": 0.40}; ValueError naming a bad pair."""
    prices: dict[str, float] = {}
    for pair in (part.strip() for part in text.replace("\n", ",").split(",")):
        if not pair:
            continue
        name, sep, value = pair.partition("=")
        try:
            price = float(value)
        except ValueError:
            price = -1.0
        if not sep or not name.strip() or not price > 0 or price == float("inf"):
            raise ValueError(f"{pair!r}: expected class=price per hour, a positive number (cuda=4.10)")
        prices[name.strip()] = price
    return prices


def price_for(prices: Mapping[str, float], device_key: str) -> float | None:
    """The price of the longest class that ``device_key`` starts with (a kind is such a start); None: unpriced."""
    matching = [name for name in prices if device_key == name or device_key.startswith(name + "-")]
    return prices[max(matching, key=len)] if matching else None


@final
@dataclass(frozen=True)
class Cost:
    """Money per item at ``price_per_hour`` (and the energy's at ``price_per_kwh``)."""

    price_per_hour: float
    items_per_dollar: float
    dollars_per_million_items: float
    energy_dollars_per_million_items: float | None = None  # with an energy figure and a price per kWh

    def to_json(self) -> dict[str, Any]:
        return {"price_per_hour": self.price_per_hour, "items_per_dollar": self.items_per_dollar,
                "dollars_per_million_items": self.dollars_per_million_items,
                "energy_dollars_per_million_items": self.energy_dollars_per_million_items}  # fmt: skip


def cost_of(items_per_second: float, price_per_hour: float, energy: Energy | None, price_per_kwh: float) -> Cost:
    """The cost of a figure of ``items_per_second`` on a device priced ``price_per_hour``."""
    items_per_dollar = items_per_second * 3600 / price_per_hour
    per_item = None if energy is None else energy.joules_per_item
    energy_cost = None if per_item is None or price_per_kwh <= 0 else per_item * 1e6 / _JOULES_PER_KWH * price_per_kwh
    return Cost(price_per_hour, items_per_dollar, 1e6 / items_per_dollar, energy_cost)
