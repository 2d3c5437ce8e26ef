"""The work one measurement's calls did, counted under callgrind: instructions and simulated cache misses.

A ``Count`` holds callgrind's totals of ``calls`` counted calls of a workload (its events: ``Ir``
instructions, and with the cache simulation the misses of each level), and callgrind's own
per-function instruction totals of the functions that did most of the work. Counts do not depend on
the host's load: another job beside them changes how long the calls take, not what they execute
(docs/studies/counted-work). Pure: no torch, no pytest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, final

from pytest_accel.core.validation import Invalid

__all__ = ["INSTRUCTIONS", "LL_MISSES", "Count", "moved_functions", "read_annotated", "read_totals"]

INSTRUCTIONS = "Ir"
# The last-level misses callgrind's cache simulation counts: instruction fetches, data reads, data writes.
LL_MISSES = ("ILmr", "DLmr", "DLmw")
# Functions kept per count, by instructions: enough to name what moved, small enough for a baseline file.
KEPT_FUNCTIONS = 30


@final
@dataclass(frozen=True)
class Count:
    """callgrind's totals over ``calls`` calls, and the functions that executed most of them."""

    calls: int
    events: Mapping[str, int]  # event name (Ir, DLmr, ...) -> total over the counted calls
    functions: tuple[tuple[str, int], ...] = ()  # (function, instructions over the counted calls), most first
    context: Mapping[str, str] = field(default_factory=dict)  # torch and Python versions, the ISA valgrind showed

    @property
    def instructions(self) -> float:
        """Instructions per call."""
        return self.events.get(INSTRUCTIONS, 0) / self.calls

    @property
    def ll_misses(self) -> float | None:
        """Simulated last-level cache misses per call; None when the cache was not simulated."""
        if not all(name in self.events for name in LL_MISSES):
            return None
        return sum(self.events[name] for name in LL_MISSES) / self.calls

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "events": dict(self.events),
            "functions": [[name, total] for name, total in self.functions],
            "context": dict(self.context),
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> Count:
        """Inverse of ``to_json``; ``Invalid`` naming the key path of what is wrong."""
        if not isinstance(data, Mapping):
            raise Invalid(where, f"expected an object, got {type(data).__name__}")
        calls, events, functions, context = (data.get(k) for k in ("calls", "events", "functions", "context"))
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
            raise Invalid(f"{where}.calls", f"expected an integer >= 1, got {calls!r}")
        if not isinstance(events, Mapping) or INSTRUCTIONS not in events or not all(map(_count, events.values())):
            raise Invalid(f"{where}.events", f"expected event totals (integers >= 0) with {INSTRUCTIONS!r}")
        if not isinstance(functions, list) or not all(
            isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) and _count(f[1]) for f in functions
        ):
            raise Invalid(f"{where}.functions", "expected a list of [name, instructions >= 0]")
        if context is None:
            context = {}
        if not isinstance(context, Mapping) or not all(isinstance(v, str) for v in context.values()):
            raise Invalid(f"{where}.context", "expected an object of strings")
        kept = tuple((str(name), int(total)) for name, total in functions)
        return cls(calls, {str(k): int(v) for k, v in events.items()}, kept, {str(k): v for k, v in context.items()})


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def moved_functions(then: Count, now: Count, most: int = 3) -> list[tuple[str, float, float]]:
    """The functions whose instructions per call moved most, as (function, then, now) per call: callgrind's
    own totals, so the why of a changed count carries no noise. A function kept on one side only counts as
    0 on the other (below the kept few: small, or new)."""
    before = {name: total / then.calls for name, total in then.functions}
    after = {name: total / now.calls for name, total in now.functions}
    names = set(before) | set(after)
    moves = sorted(names, key=lambda n: (-abs(after.get(n, 0.0) - before.get(n, 0.0)), n))
    return [(n, before.get(n, 0.0), after.get(n, 0.0)) for n in moves[:most] if after.get(n, 0.0) != before.get(n, 0.0)]


_TOTALS = re.compile(r"^(?:totals|summary):((?:\s+\d+)+)\s*$")


def read_totals(text: str) -> dict[str, int]:
    """A callgrind output file's event totals by name (its ``events:`` line and its ``totals:`` line, or
    ``summary:`` where no totals were written); ``ValueError`` when the file has neither."""
    names: list[str] = []
    totals: list[int] | None = None
    for line in text.splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif (found := _TOTALS.match(line)) is not None and (totals is None or line.startswith("totals")):
            totals = [int(value) for value in found.group(1).split()]
    if not names or totals is None:
        raise ValueError("not a callgrind output file: no 'events:' and 'totals:' lines")
    return {name: totals[index] if index < len(totals) else 0 for index, name in enumerate(names)}


_FUNCTION = re.compile(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(\S.*?)\s*$")


def read_annotated(text: str, most: int = KEPT_FUNCTIONS) -> tuple[tuple[str, int], ...]:
    """The per-function instruction totals ``callgrind_annotate --inclusive=no --show=Ir`` printed, most first:
    each function by name, without its file (``???:``) and library (``[/path/lib.so]``)."""
    found: dict[str, int] = {}  # a name two libraries share (an ``_init``) sums
    listing = False
    for line in text.splitlines():
        if "file:function" in line:
            listing = True
            continue
        if not listing or line.startswith("---"):
            continue
        if not line.strip():
            if found:
                break
            continue
        if (match := _FUNCTION.match(line)) is None:
            continue
        name = re.sub(r"\s+\[[^\]]*\]$", "", match.group(2))
        name = name.split(":", 1)[1] if name.startswith("???:") else name
        if name not in found and len(found) >= most:
            break
        found[name] = found.get(name, 0) + int(match.group(1).replace(",", ""))
    return tuple(found.items())
