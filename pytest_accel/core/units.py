"""How figures are written for people: sizes, rates, latencies, percentages of peak. Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "format_bytes",
    "format_change",
    "format_joules",
    "format_percent_change",
    "format_rate",
    "format_seconds",
    "joined_to_fit",
    "percent_of_peak",
]


def format_bytes(count: int | float | None) -> str:
    """Human-readable binary size: ``1.50 GiB``; ``?`` when unknown."""
    if count is None:
        return "?"
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} TiB"


def format_rate(value: float) -> str:
    """Three significant figures with a k/M/G suffix: ``1.23k``."""
    if not math.isfinite(value):
        return "-"
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def format_joules(value: float) -> str:
    """An energy with a fitting unit: ``2.4 mJ``, ``310 J``, ``1.2 kJ``."""
    if not math.isfinite(value):
        return "-"
    for unit, scale in (("kJ", 1e3), ("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} nJ"


def format_seconds(value: float) -> str:
    """A latency with a fitting unit: ``812 us``, ``3.2 ms``, ``1.05 s``."""
    if not math.isfinite(value):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def percent_of_peak(extra: Mapping[str, Any]) -> str:
    """``41% [ds 35%]`` of compute and/or ``bw 63%`` of memory bandwidth; measured first, datasheet in brackets."""
    cells = []
    for kind, prefix in (("tflops", ""), ("bandwidth", "bw ")):
        measured = extra.get(f"percent_of_measured_{kind}")
        if measured is None:
            continue
        sheet = extra.get(f"percent_of_datasheet_{kind}")
        cells.append(f"{prefix}{measured:.0f}%" + ("" if sheet is None else f" [ds {sheet:.0f}%]"))
    return " ".join(cells) or "-"


def format_percent_change(ratio: float) -> str:
    """A ratio as a signed percentage change: 1.053 -> ``+5.3%``."""
    return f"{(ratio - 1) * 100:+.1f}%"


def format_change(ratio: float, low: float, high: float) -> str:
    """A change and its interval, as every verdict writes it: ``+26.9% [+16.4% .. +32.9%]``."""
    return f"{format_percent_change(ratio)} [{format_percent_change(low)} .. {format_percent_change(high)}]"


def joined_to_fit(head: str, items: Sequence[str], width: int, unlisted: int = 0, more: str = "more (-v)") -> str:
    """``head`` and then ``items`` joined by "; ", in order, while the line stays within ``width``
    characters; the ones left out, and ``unlisted`` others, are counted (``head a; b; 3 more (-v)``).
    The first item is always shown, past ``width`` if it must: a line that named none would say
    only how many there are."""
    text, shown = head, 0
    for item in items:
        rest = len(items) - shown - 1 + unlisted
        candidate = f"{text}{' ' if shown == 0 else '; '}{item}"
        if shown and len(candidate) + (len(f"; {rest} {more}") if rest else 0) > width:
            break
        text, shown = candidate, shown + 1
    hidden = len(items) - shown + unlisted
    return text + ("" if not hidden else f" {hidden} {more}" if shown == 0 else f"; {hidden} {more}")
