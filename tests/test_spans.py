"""When recordings were taken: kept with each entry, and what a failure and ``--accel-update`` say of it."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pytest_accel.core.measurement import Measurement
from pytest_accel.core.validation import Invalid
from pytest_accel.judgement.baselines import BaselineEntry, BaselineStore
from pytest_accel.judgement.recording import recorded_entries
from pytest_accel.judgement.spans import record_again, times, unseen_drift
from pytest_accel.storage.files import StoreError

T0 = datetime(2026, 12, 4, 20, 51, 10, tzinfo=timezone.utc)


def _at(*minutes: float) -> tuple[str, ...]:
    return tuple((T0 + timedelta(minutes=m)).isoformat(timespec="seconds") for m in minutes)


@pytest.mark.parametrize(
    ("recorded", "count", "later", "said"),
    [
        (_at(0, 5, 11), 3, 113, "3 within 11 minutes, the newest 1.7 hours before this run"),
        (_at(0), 1, 75, "1, the newest 75 minutes before this run"),
        (_at(0, 5, 11), 3, 50, None),  # 39 minutes after the newest: no drift to miss yet
        (_at(0, 40, 80), 3, 200, None),  # recordings over 80 minutes hold some drift
        (_at(5, 11), 3, 200, None),  # one recording has no time (written before times were kept)
        ((), 3, 200, None),
    ],
    ids=["minutes-apart", "one", "soon", "spread", "untimed", "none"],
)
def test_a_failure_says_recordings_minutes_apart_hold_no_drift_hours_later(
    recorded: tuple[str, ...], count: int, later: float, said: str | None
) -> None:
    line = unseen_drift(recorded, count, T0 + timedelta(minutes=later))
    assert line == (None if said is None else f"{said}: their spread holds no drift over hours")


def test_update_says_when_to_record_again_until_some_entry_spans_an_hour() -> None:
    assert record_again([(_at(0, 5, 11), 3), (_at(1, 6, 12), 3)]) == (
        "recordings within 11 minutes: record again an hour or more from now, so the spread they hold "
        "includes the host's drift over hours, not only the next process's"
    )
    assert record_again([(_at(0), 1)]).startswith("one recording each: record again")  # type: ignore[union-attr]
    assert record_again([(_at(0, 5, 11), 3), (_at(0, 70), 2)]) is None
    assert record_again([(_at(11), 3)]) is None  # older recordings of unknown time may be hours apart
    assert record_again([]) is None


@pytest.mark.parametrize("bad", ["yesterday", "2026-12-04T20:51:10", 1733345470, None])
def test_a_recording_time_must_be_an_iso_moment_with_its_offset(bad: object) -> None:
    with pytest.raises(Invalid, match=r"run_times\[1\]: expected an ISO 8601 time with its UTC offset"):
        times(["2026-12-04T20:51:10+00:00", bad], "run_times")


def _measurement(seconds: float) -> Measurement:
    return Measurement("calls", 1.0, (seconds,) * 5, probe_samples=(1e-3,) * 5)


def test_each_recording_keeps_its_time_with_its_figure_and_a_reset_starts_anew() -> None:
    first = recorded_entries([("t.py::a", _measurement(0.010))], {}, {}, {}, reset=False, now=_at(0)[0])
    previous = {("t.py::a", "throughput"): first[0]}
    second = recorded_entries([("t.py::a", _measurement(0.011))], previous, {}, {}, reset=False, now=_at(5)[0])
    assert second[0].run_times == _at(0, 5) and len(second[0].run_medians) == 2
    reset = recorded_entries([("t.py::a", _measurement(0.011))], previous, {}, {}, reset=True, now=_at(9)[0])
    assert reset[0].run_times == _at(9)


def test_recording_times_survive_the_file_and_a_corrupt_one_is_named(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    entry = BaselineEntry("t.py::a", "throughput", "calls", 1.0, (0.01,), run_medians=(10.0, 11.0), run_times=_at(0, 5))
    path = store.update("cpu-k-2c", "smoke", 1, [entry])
    assert store.load("cpu-k-2c", "smoke", 1)[("t.py::a", "throughput")].run_times == _at(0, 5)
    document = json.loads(path.read_text())
    document["entries"]["t.py::a"]["throughput"]["run_times"] = ["2026-12-04T20:51:10+00:00", "soon"]
    path.write_text(json.dumps(document))
    with pytest.raises(StoreError, match=r"\['run_times'\]\[1\]: expected an ISO 8601 time"):
        store.load("cpu-k-2c", "smoke", 1)
