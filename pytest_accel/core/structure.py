"""What a workload ran, as counts: operators, compiled graphs, graph breaks, recompilations, host syncs.

A structural record is taken in a profiled call outside the timed rounds (engine/structure.py) and
holds only counts, which are the same from run to run on any machine of one kind: quiet or busy,
this VM or the next. Comparing two records needs no statistics: a difference is a change of what
ran (a fused kernel that fell back, a copy added, a graph break, a recompilation per step, a sync in
the loop), named exactly.

Pure: no torch, no pytest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, final

from pytest_accel.core.validation import Invalid, encodable, finite, show

__all__ = ["SYNC_OPERATORS", "Structure", "changes", "stable_counts"]

# Operators that make the host wait for the device (on an accelerator; on the CPU they mark the same
# places): a scalar read back (``.item()``, ``bool(tensor)``, a data-dependent shape), and the
# runtime's own waits. ``aten::item`` calls ``aten::_local_scalar_dense``: counted once, as the latter.
SYNC_OPERATORS = (
    "aten::_local_scalar_dense",
    "aten::nonzero",
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
)
_KEYS = frozenset(("key", "calls", "operators", "graphs", "compiles", "recompilations", "breaks", "unstable", "extra"))
# Views, allocations and conversions: they move with any change of code around them, so a diff lists
# them after the operators that compute.
_BOOKKEEPING = frozenset(
    f"aten::{name}"
    for name in (
        "alias", "as_strided", "detach", "empty", "empty_like", "empty_strided", "expand", "lift_fresh",
        "permute", "reshape", "_reshape_alias", "resolve_conj", "resolve_neg", "select", "slice", "squeeze", "t", "to",
        "_to_copy", "transpose", "unsqueeze", "_unsafe_view", "view", "view_as",
    )
)  # fmt: skip
# Lines a change lists at most, largest first (the rest are counted in one closing line): with the
# headline and the accept command, a structural failure is at most 8 lines.
_MAX_LINES = 6


def _count_text(value: float) -> str:
    return f"{value:g}"


@final
@dataclass(frozen=True)
class Structure:
    """One workload's structure per call, and what could not be counted reliably.

    ``operators``: calls per workload call of every operator the profiler saw on the host (nested
    ones too), compiled regions and graph-runtime names normalised (no frame ids, no hashes).
    ``graphs``: compiled regions run per call (a graph break adds one). ``compiles``: graphs compiled
    since the test began (dynamo's state is reset first, so each test compiles as in a fresh process).
    ``recompilations``: compilations of a frame beyond its first, by the end of profiling. ``breaks``: the
    graph-break reasons dynamo gave while this test compiled. ``unstable``: operators whose count per
    call differed between profiled blocks of one process (never compared).
    """

    operators: Mapping[str, float]
    graphs: float = 0.0
    compiles: int = 0
    recompilations: int = 0
    breaks: tuple[str, ...] = ()
    unstable: tuple[str, ...] = ()
    key: str = ""  # what decides the structure: device kind and capability, torch version
    calls: int = 1  # workload calls per profiled block
    extra: Mapping[str, float] = field(default_factory=dict)  # device counters (HPU graph compilations, ...)

    @property
    def syncs(self) -> dict[str, float]:
        """The host-device syncs per call, by operator."""
        return {op: n for op, n in self.operators.items() if op in SYNC_OPERATORS and op not in self.unstable}

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "calls": self.calls,
            "operators": {op: self.operators[op] for op in sorted(self.operators)},
            "graphs": self.graphs,
            "compiles": self.compiles,
            "recompilations": self.recompilations,
            "breaks": list(self.breaks),
            "unstable": sorted(self.unstable),
            "extra": {name: self.extra[name] for name in sorted(self.extra)},
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> Structure:
        """Inverse of ``to_json``; ``Invalid`` names the bad key under ``where``."""
        if not isinstance(data, dict):
            raise Invalid(where, f"expected an object, got {show(data)}")
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise Invalid(f"{where}.{unknown[0]}", "unknown key")
        key, calls = data.get("key", ""), data.get("calls", 1)
        if not isinstance(key, str):
            raise Invalid(f"{where}.key", f"expected a string, got {show(key)}")
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
            raise Invalid(f"{where}.calls", f"expected an integer >= 1, got {show(calls)}")
        compiles = _integer(data.get("compiles", 0), f"{where}.compiles")
        recompilations = _integer(data.get("recompilations", 0), f"{where}.recompilations")
        return cls(
            operators=_counts(data.get("operators"), f"{where}.operators"),
            graphs=_number(data.get("graphs", 0.0), f"{where}.graphs"),
            compiles=compiles,
            recompilations=recompilations,
            breaks=_texts(data.get("breaks", []), f"{where}.breaks"),
            unstable=_texts(data.get("unstable", []), f"{where}.unstable"),
            key=key,
            calls=calls,
            extra=_counts(data.get("extra", {}), f"{where}.extra"),
        )


def _number(value: object, where: str) -> float:
    number = None if isinstance(value, bool) else finite(value)
    if number is None or number < 0:
        raise Invalid(where, f"expected a finite number >= 0, got {show(value)}")
    return number


def _integer(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(where, f"expected an integer >= 0, got {show(value)}")
    return value


def _counts(value: object, where: str) -> dict[str, float]:
    if not isinstance(value, dict):
        raise Invalid(where, f"expected an object of name -> count, got {show(value)}")
    counts = {}
    for name, number in value.items():
        if not isinstance(name, str) or not name or not encodable(name):
            raise Invalid(where, f"bad name {show(name)}")
        counts[name] = _number(number, f"{where}[{name!r}]")
    return counts


def _texts(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and encodable(item) for item in value):
        raise Invalid(where, f"expected a list of strings, got {show(value)}")
    return tuple(value)


def _operator_lines(then: Structure, now: Structure) -> list[tuple[tuple[int, int, float], str]]:
    """(rank, line) for each operator whose calls per call changed. Operators that compute come before
    views and allocations (``_BOOKKEEPING``); within each, gone ones first (the kernel that fell back),
    then new ones (what replaced it, a copy added), then changed counts, each largest first."""
    skip = set(then.unstable) | set(now.unstable) | set(SYNC_OPERATORS)
    lines = []
    for op in sorted(set(then.operators) | set(now.operators)):
        before, after = then.operators.get(op, 0.0), now.operators.get(op, 0.0)
        if op in skip or before == after:
            continue
        kind = int(op in _BOOKKEEPING)
        if after == 0:
            lines.append(((kind, 0, -before), f"{op} gone (was {_count_text(before)} call(s) per call)"))
        elif before == 0:
            lines.append(((kind, 1, -after), f"{op} new ({_count_text(after)} call(s) per call)"))
        else:
            change = f"{op} calls per call {_count_text(before)} -> {_count_text(after)}"
            lines.append(((kind, 2, -abs(after - before)), change))
    lines.sort(key=lambda pair: pair[0])
    return lines


def _headline_lines(then: Structure, now: Structure) -> list[str]:
    """Syncs, compiled graphs, breaks, recompilations and device counters: the changes a reader looks for first."""
    lines = []
    unstable = set(then.unstable) | set(now.unstable)  # unstable on either side: not compared on either
    before = {op: n for op, n in then.syncs.items() if op not in unstable}
    after = {op: n for op, n in now.syncs.items() if op not in unstable}
    if sum(before.values()) != sum(after.values()) or before.keys() != after.keys():
        moved = [op for op in sorted(set(before) | set(after)) if before.get(op, 0) != after.get(op, 0)]
        which = ", ".join(f"{op} {_count_text(before.get(op, 0))} -> {_count_text(after.get(op, 0))}" for op in moved)
        lines.append(
            f"host syncs per call {_count_text(sum(before.values()))} -> {_count_text(sum(after.values()))} ({which})"
        )
    if then.graphs != now.graphs:
        lines.append(f"compiled graphs run per call {_count_text(then.graphs)} -> {_count_text(now.graphs)}")
    if len(then.breaks) != len(now.breaks) or set(then.breaks) != set(now.breaks):
        new = [reason for reason in now.breaks if reason not in then.breaks]
        lines.append(f"graph breaks {len(then.breaks)} -> {len(now.breaks)}" + (f": {'; '.join(new)}" if new else ""))
    if then.compiles != now.compiles:
        lines.append(f"graphs compiled {then.compiles} -> {now.compiles}")
    if then.recompilations != now.recompilations:
        lines.append(f"recompilations {then.recompilations} -> {now.recompilations}")
    for name in sorted(set(then.extra) | set(now.extra)):
        if then.extra.get(name, 0.0) != now.extra.get(name, 0.0):
            lines.append(f"{name} {_count_text(then.extra.get(name, 0.0))} -> {_count_text(now.extra.get(name, 0.0))}")
    return lines


def changes(then: Structure, now: Structure, limit: int = _MAX_LINES) -> list[str]:
    """What changed from ``then`` to ``now``, one line each, headline changes first; [] when nothing did."""
    lines = _headline_lines(then, now) + [line for _, line in _operator_lines(then, now)]
    if len(lines) > limit:
        return [*lines[: limit - 1], f"... and {len(lines) - limit + 1} more change(s)"]
    return lines


def stable_counts(blocks: Sequence[Mapping[str, float]], calls: int) -> tuple[dict[str, float], tuple[str, ...]]:
    """Per-call counts of operators over profiled blocks of ``calls`` calls each, and those that varied.

    An operator whose count differs between blocks (a DataLoader's queue, a cache refreshed every few
    calls) is kept at its largest per-call figure and listed as unstable: never compared.
    """
    names = sorted({name for block in blocks for name in block})
    counts, unstable = {}, []
    for name in names:
        seen = [block.get(name, 0.0) / calls for block in blocks]
        counts[name] = max(seen)
        if len(set(seen)) > 1:
            unstable.append(name)
    return counts, tuple(unstable)
