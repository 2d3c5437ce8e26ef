"""When a baseline's recordings were taken, and what drift of the host their spread can hold.

Recordings minutes apart show how far one process's figure differs from the next, not how far the
host drifts over hours. Measured on the 2-core Intel VM (docs/studies/huge-pages, the 8 forward
SDPA tests recorded three times within 11 minutes): unchanged code read within the tolerance minutes
later and no figure regressed; one to two hours later the figures read slower on average per run and
a few regressed. So a baseline says when its recordings were taken
(``run_times``), the failure of a test whose recordings all lie within ``DRIFT_SPAN`` and were taken
longer than that before the run says so, and ``--accel-update`` says when to record again.
Pure: no torch, no pytest.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence

from pytest_accel.core.validation import Invalid

__all__ = ["DRIFT_SPAN", "record_again", "times", "unseen_drift"]

# Recordings that span less than this, judged longer than this after the newest, hold no drift over
# hours: one hour, the shortest lag at which the study above saw unchanged figures regress.
DRIFT_SPAN = datetime.timedelta(hours=1)


def times(value: object, path: str) -> tuple[str, ...]:
    """A stored list of recording times, each an ISO 8601 moment with its UTC offset."""
    if not isinstance(value, (list, tuple)):
        raise Invalid(path, f"expected a list of ISO 8601 times, got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, str) or _moment(item) is None:
            raise Invalid(f"{path}[{index}]", f"expected an ISO 8601 time with its UTC offset, got {item!r}")
    return tuple(value)


def _moment(text: str) -> datetime.datetime | None:
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _span(recorded: Sequence[str]) -> tuple[datetime.datetime, datetime.datetime] | None:
    moments = [moment for text in recorded if (moment := _moment(text)) is not None]
    return (min(moments), max(moments)) if moments else None


def _duration(delta: datetime.timedelta) -> str:
    minutes = delta.total_seconds() / 60
    if minutes < 1:
        return f"{delta.total_seconds():.0f} s"
    return f"{minutes:.0f} minutes" if minutes < 90 else f"{minutes / 60:.1f} hours"


def unseen_drift(recorded: Sequence[str], count: int, now: datetime.datetime) -> str | None:
    """What a failure says of recordings that cannot hold the host's drift since: all ``count`` of them
    within ``DRIFT_SPAN`` of each other, the newest longer than that before ``now``; None otherwise
    (also when some recordings have no time: entries written before times were kept)."""
    span = _span(recorded)
    if span is None or len(recorded) < count or span[1] - span[0] >= DRIFT_SPAN or now - span[1] < DRIFT_SPAN:
        return None
    within = f"{len(recorded)} within {_duration(span[1] - span[0])}" if len(recorded) > 1 else "1"
    return f"{within}, the newest {_duration(now - span[1])} before this run: their spread holds no drift over hours"


def record_again(recorded: Iterable[tuple[Sequence[str], int]]) -> str | None:
    """What ``--accel-update`` says when every entry it wrote (its recording times, and how many
    recordings it keeps) has all its recordings within ``DRIFT_SPAN``: when to record again, and why;
    None when some entry's recordings span more, or some have no time."""
    recorded = list(recorded)
    if any(len(times_of_entry) < count for times_of_entry, count in recorded):
        return None
    spans = [span for times_of_entry, _ in recorded if (span := _span(times_of_entry)) is not None]
    if not spans or any(newest - oldest >= DRIFT_SPAN for oldest, newest in spans):
        return None
    widest = max(newest - oldest for oldest, newest in spans)
    taken = "one recording each" if widest == datetime.timedelta(0) else f"recordings within {_duration(widest)}"
    return (
        f"{taken}: record again an hour or more from now, so the spread they hold includes the host's "
        "drift over hours, not only the next process's"
    )
