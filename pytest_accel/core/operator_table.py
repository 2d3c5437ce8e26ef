"""Operator tables of a workload and the diff of two of them: why a confirmed regression got slower.

A table lists, per call of the workload, each operator's calls and self time on the host and (where
the profiler sees the device) on the device, from ``torch.profiler`` (engine/profiling.py takes it).
Stored in a baseline entry it is cut to the top operators; the table taken on a regression is
complete, so the diff can say "gone" with certainty, and "new" wherever the baseline's table was.

Pure: no torch, no pytest.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, final

from pytest_accel.core.units import format_percent_change, format_seconds, joined_to_fit
from pytest_accel.core.validation import Invalid, at_least_zero, show, text
from pytest_accel.core.validation import count as _count

__all__ = [
    "ACTIVITIES",
    "NOTHING_MOVED",
    "STORED_OPERATORS",
    "OperatorProfile",
    "OperatorRow",
    "absent_line",
    "explain",
    "in_one_line",
]

# Operators a baseline entry keeps, by self time: enough for the stories a regression tells (a
# kernel that fell back, a new copy, launches that multiplied), small enough to review in a diff.
STORED_OPERATORS = 20
# Which clock a table's device times come from; "cpu" tables have host times only.
ACTIVITIES = ("cpu", "cuda", "hpu")
# A change is listed when it moves at least this share of the total time per call ...
_LISTED_SHARE = 0.01
# ... and, for an operator in both tables, at least this share of its own time (noise, else).
_OWN_CHANGE = 0.10
# Lines of a diff, at most: the largest changes first.
_MAX_LINES = 8


def _round(value: float) -> float:
    """Microseconds kept to 4 significant digits (and 0.001 µs): a reviewable file, no false precision."""
    if value == 0:
        return 0.0
    digits = max(3 - math.floor(math.log10(abs(value))), 0)
    return round(value, min(digits, 3))


@final
@dataclass(frozen=True)
class OperatorRow:
    """One operator, per call of the workload: how often it ran and its self time (µs) on each side."""

    op: str
    calls: float
    host_us: float
    device_us: float | None = None

    def time_us(self, on_device: bool) -> float:
        """The time a diff compares: the device's where both tables have it, else the host's."""
        return (self.device_us or 0.0) if on_device else self.host_us

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "calls": _round(self.calls),
            "host_us": _round(self.host_us),
            "device_us": None if self.device_us is None else _round(self.device_us),
        }


@final
@dataclass(frozen=True)
class OperatorProfile:
    """A workload's operators per call, largest self time first, and the totals over all of them.

    ``others`` counts the operators cut from ``rows`` (``top``) and their time, so the totals stay
    the whole profile's; ``others == 0`` means the table is complete.
    """

    activity: str  # "cpu", "cuda" or "hpu": where device times come from ("cpu": none)
    calls: int  # workload calls profiled
    rows: tuple[OperatorRow, ...]
    total_host_us: float
    total_device_us: float | None = None
    others: int = 0

    @property
    def on_device(self) -> bool:
        return self.activity != "cpu" and self.total_device_us is not None

    @property
    def complete(self) -> bool:
        return self.others == 0

    @classmethod
    def from_events(
        cls, activity: str, calls: int, events: Iterable[tuple[str, int, float, float | None]]
    ) -> OperatorProfile:
        """A complete table from (operator, calls, self host µs, self device µs) totals over ``calls`` calls."""
        if activity not in ACTIVITIES:
            raise ValueError(f"activity must be one of {ACTIVITIES}, got {activity!r}")
        if calls < 1:
            raise ValueError(f"calls must be >= 1, got {calls}")
        merged: dict[str, list[float]] = {}
        events = list(events)
        # A device activity whose profiler gave no device time (None) has its device times unknown.
        has_device = activity != "cpu" and any(device is not None for *_, device in events)
        for op, count, host, device in events:
            row = merged.setdefault(op, [0.0, 0.0, 0.0])
            row[0] += count
            row[1] += host
            row[2] += device or 0.0
        rows = [
            OperatorRow(op, count / calls, host / calls, device / calls if has_device else None)
            for op, (count, host, device) in merged.items()
        ]
        rows.sort(key=lambda r: (-r.time_us(has_device), -r.host_us, r.op))
        return cls(
            activity=activity,
            calls=calls,
            rows=tuple(rows),
            total_host_us=sum(r.host_us for r in rows),
            total_device_us=sum(r.device_us or 0.0 for r in rows) if has_device else None,
        )

    def top(self, count: int = STORED_OPERATORS) -> OperatorProfile:
        """The table cut to its ``count`` largest operators; the totals still cover all of them."""
        if len(self.rows) <= count:
            return self
        return replace(self, rows=self.rows[:count], others=self.others + len(self.rows) - count)

    def get(self, op: str) -> OperatorRow | None:
        return next((row for row in self.rows if row.op == op), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "activity": self.activity,
            "calls": self.calls,
            "total_host_us": _round(self.total_host_us),
            "total_device_us": None if self.total_device_us is None else _round(self.total_device_us),
            "others": self.others,
            "ops": [row.to_json() for row in self.rows],
        }

    @classmethod
    def from_json(cls, data: object, path: str) -> OperatorProfile:
        """Validate a stored table; raises ``Invalid`` naming the key path of the first problem."""
        if not isinstance(data, Mapping):
            raise Invalid(path, f"expected an object, got {show(data)}")
        unknown = sorted(set(data) - {"activity", "calls", "total_host_us", "total_device_us", "others", "ops"})
        if unknown:
            raise Invalid(path, f"unknown key(s) {unknown}")
        activity = data.get("activity")
        if activity not in ACTIVITIES:
            raise Invalid(f"{path}['activity']", f"expected one of {list(ACTIVITIES)}, got {show(activity)}")
        calls = _count(data.get("calls"), f"{path}['calls']", minimum=1)
        others = _count(data.get("others", 0), f"{path}['others']", minimum=0)
        ops = data.get("ops")
        if not isinstance(ops, list):
            raise Invalid(f"{path}['ops']", f"expected a list, got {show(ops)}")
        rows = tuple(_row(item, f"{path}['ops'][{index}]") for index, item in enumerate(ops))
        if len({row.op for row in rows}) != len(rows):
            raise Invalid(f"{path}['ops']", "an operator is listed twice")
        return cls(
            activity=str(activity),
            calls=calls,
            rows=rows,
            total_host_us=_micros(data.get("total_host_us"), f"{path}['total_host_us']"),
            total_device_us=at_least_zero(data.get("total_device_us"), f"{path}['total_device_us']", optional=True),
            others=others,
        )


def _micros(value: object, path: str) -> float:
    return float(at_least_zero(value, path, optional=False) or 0.0)


def _row(item: object, path: str) -> OperatorRow:
    if not isinstance(item, Mapping):
        raise Invalid(path, f"expected an object, got {show(item)}")
    unknown = sorted(set(item) - {"op", "calls", "host_us", "device_us"})
    if unknown:
        raise Invalid(path, f"unknown key(s) {unknown}")
    return OperatorRow(
        op=text(item.get("op"), f"{path}['op']"),
        calls=_micros(item.get("calls"), f"{path}['calls']"),
        host_us=_micros(item.get("host_us"), f"{path}['host_us']"),
        device_us=at_least_zero(item.get("device_us"), f"{path}['device_us']", optional=True),
    )


def _time(micros: float) -> str:
    return format_seconds(micros * 1e-6)


def _calls(count: float) -> str:
    return f"{count:.3g} call{'' if count == 1 else 's'}"


def absent_line(reason: str) -> str:
    """The one line said instead of a diff."""
    return f"operators: no diff ({reason})"


# The line of a diff in which no operator moved enough to be named.
NOTHING_MOVED = (
    "no operator moved by 1% of the total and 10% of its own time: outside them (Python, data, syncs) or spread thin"
)


def explain(then: OperatorProfile | None, now: OperatorProfile, measured: float | None = None) -> list[str]:
    """Lines that say which operators changed from ``then`` (a baseline's table) to ``now``.

    ``measured`` (the judged figure's ratio): a profile whose total moved ``_AGAINST`` the other way names no
    operator. ``now`` is complete when the fixture took it; when it was read from a file it is cut like
    ``then``, and an operator missing from it is "gone or under" its floor rather than "gone".

    The largest changes of time per call first: operators gone, new, grown or shrunk (with their call
    counts when those changed), each only when it moves ``_LISTED_SHARE`` of the total, and an operator
    in both tables only when it moved ``_OWN_CHANGE`` of its own time (less is run-to-run noise).
    """
    if then is None:
        return [absent_line("the baseline entry has no operator table: record it again with --accel-update")]
    on_device = then.on_device and now.on_device and then.activity == now.activity
    clock = f"{now.activity} device" if on_device else "host"
    total_then = (then.total_device_us or 0.0) if on_device else then.total_host_us
    total_now = (now.total_device_us or 0.0) if on_device else now.total_host_us
    head = (
        f"operators ({clock} self time per call, {then.calls} and {now.calls} calls profiled): "
        f"total {_time(total_then)} -> {_time(total_now)} ({_signed(total_now - total_then)})"
    )
    if measured is not None and total_then > 0 and _against(total_now / total_then, measured):
        return [head, f"  {_disagrees(total_now / total_then, measured)}"]
    floor = min((row.time_us(on_device) for row in then.rows), default=0.0)
    now_floor = min((row.time_us(on_device) for row in now.rows), default=0.0)
    least = _LISTED_SHARE * max(total_then, total_now)
    host_least = _LISTED_SHARE * max(then.total_host_us, now.total_host_us)
    changes: list[tuple[float, str]] = []
    for row in then.rows:
        current = now.get(row.op)
        before = row.time_us(on_device)
        if current is None:
            if before < least:
                continue
            if now.complete:
                changes.append((before, f"{row.op}: {_time(before)} ({_calls(row.calls)}) -> gone"))
            elif before > now_floor:  # absent from a cut table: gone, or shrunk under its floor
                changes.append(
                    (before - now_floor, f"{row.op}: {_time(before)} -> gone or under {_time(now_floor)} (not in "
                     f"the top {len(now.rows)} now)")
                )  # fmt: skip
            continue
        after = current.time_us(on_device)
        moved = after - before
        calls_changed = abs(current.calls - row.calls) >= max(0.5, 0.1 * row.calls)
        calls = f", calls {row.calls:.3g} -> {current.calls:.3g}" if calls_changed else ""
        if abs(moved) >= least and (abs(moved) >= _OWN_CHANGE * before or calls_changed):
            changes.append((abs(moved), f"{row.op}: {_time(before)} -> {_time(after)} ({_signed(moved)}{calls})"))
        elif on_device and calls_changed and abs(current.host_us - row.host_us) >= host_least:
            # Launches that multiplied (a graph break): host time on the device's clock is zero.
            host_moved = current.host_us - row.host_us
            changes.append(
                (
                    abs(host_moved) * total_now / max(now.total_host_us, 1e-9),  # ranked on the device's scale
                    f"{row.op}: host {_time(row.host_us)} -> {_time(current.host_us)} ({_signed(host_moved)}{calls})",
                )
            )
    for current in now.rows:
        if then.get(current.op) is not None:
            continue
        after = current.time_us(on_device)
        if after < least:
            continue
        if then.complete:
            changes.append((after, f"{current.op}: new {_time(after)} ({_calls(current.calls)})"))
        elif after > floor:
            changes.append(
                (
                    after,
                    f"{current.op}: new {_time(after)} ({_calls(current.calls)}; the baseline's top "
                    f"{len(then.rows)} end at {_time(floor)})",
                )
            )
    changes.sort(key=lambda change: -change[0])
    lines = [head, *(f"  {line}" for _, line in changes[:_MAX_LINES])]
    if len(changes) > _MAX_LINES:
        lines.append(f"  ... {len(changes) - _MAX_LINES} smaller change(s)")
    if not changes:
        lines.append(f"  {NOTHING_MOVED}")
    return lines


# A profile's total that moved this much the other way to the judged figure names no operator: its rows
# are noise (beside a perf job a short profile moved against a planted slowdown: docs/studies/bisect).
_AGAINST = 0.01


def _against(profiled: float, measured: float) -> bool:
    """Whether a profile's total ratio moved the other way to the judged figure's ratio."""
    return (measured > 1 and profiled <= 1 - _AGAINST) or (measured < 1 and profiled >= 1 + _AGAINST)


_OTHER_WAY = "the profile moved the other way"


def _disagrees(profiled: float, measured: float) -> str:
    """The row said instead of operator rows when the profile moved the other way to the judged figure."""
    return (
        f"{_OTHER_WAY} ({format_percent_change(profiled)} in all, the figure {format_percent_change(measured)}): "
        "too few profiled calls, or too busy a machine, to name operators"
    )


# A diff's rows that name no operator, in the few words of a one-line failure (the whole row: -v).
_IN_FEW_WORDS = {NOTHING_MOVED: "no operator moved enough to name", _OTHER_WAY: "the profile moved the other way"}


def in_one_line(lines: Sequence[str], width: int = 118) -> str:
    """``explain``'s lines as one line of at most ``width`` characters, for a failure read without ``-v``:
    the change of the total, then the largest changes while they fit, the rest counted (all of them:
    ``-v``, the result file)."""
    head, *rows = lines
    if not rows:
        return head
    delta = head.rpartition("(")[2].rstrip(")") if head.endswith(")") else ""  # the total's change: "+3.55 ms"
    head = f"operators ({delta} per call):" if delta else "operators:"
    notes = [few for row in rows for start, few in _IN_FEW_WORDS.items() if row.strip().startswith(start)]
    if notes:
        return f"{head} {notes[0]} (-v)"
    changes = [row.strip() for row in rows if not row.strip().startswith("... ")]
    unlisted = sum(_smaller(row) for row in rows)
    others = len(changes) - 1 + unlisted
    counted = f"; {others} more (-v)" if others else ""
    if changes and len(f"{head} {changes[0]}{counted}") > width:  # the largest change's full name, where it fits
        changes[0] = _short_operator(changes[0])
    changes[1:] = [_short_operator(row) for row in changes[1:]]
    return joined_to_fit(head, changes, width, unlisted=unlisted)


# An operator's name in the one-line diff, at most this long once shortened.
_SHORT_NAME = 40


def _short_operator(row: str) -> str:
    """A diff row with a long operator name shortened to its namespace and its last whole words.

    A family of kernels shares the start of its names and differs at the end
    (``aten::_scaled_dot_product_flash_attention_for_cpu``, ``..._efficient_attention``), so the start
    is what is dropped: ``aten::…product_flash_attention_for_cpu``. A name whose last words keep less
    than half of the room (one long word) is cut in its middle instead.
    """
    name, sep, rest = row.partition(": ")
    if not sep or len(name) <= _SHORT_NAME:
        return row
    space, colons, body = name.rpartition("::")
    start = f"{space}{colons}…"
    words = body.split("_")
    tail = ""
    for first in range(len(words) - 1, 0, -1):  # never all of them: something is dropped
        candidate = "_".join(words[first:])
        if len(start) + len(candidate) > _SHORT_NAME:
            break
        tail = candidate
    if len(tail) < _SHORT_NAME // 2:
        keep = (_SHORT_NAME - 1) // 2
        return f"{name[:keep]}…{name[-keep:]}{sep}{rest}"
    return f"{start}{tail}{sep}{rest}"


def _smaller(row: str) -> int:
    """How many changes a closing ``... N smaller change(s)`` row counts (0 for any other row)."""
    words = row.split()
    return int(words[1]) if len(words) > 1 and words[0] == "..." and words[1].isdigit() else 0


def _signed(micros: float) -> str:
    return ("+" if micros >= 0 else "-") + _time(abs(micros))
