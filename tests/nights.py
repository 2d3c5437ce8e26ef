"""Synthetic nightly result files for the history and export tests (importable as ``nights``)."""

from __future__ import annotations

import datetime
import hashlib
import json
import random
from pathlib import Path
from typing import Any

from pytest_accel.core.measurement import Measurement
from pytest_accel.judgement.results import Recorded, results_document

__all__ = ["FIRST_NIGHT", "commit_of", "date_of", "night_document", "write_night"]

FIRST_NIGHT = datetime.date(2026, 1, 1)
ROUNDS = 12  # timed rounds per measurement, as a short profile takes
NIGHT_CV = 0.02  # night-to-night noise of a figure's level (the study draws 2-4%)


def date_of(night: int) -> str:
    """The ISO date of night ``night`` (0: FIRST_NIGHT)."""
    return (FIRST_NIGHT + datetime.timedelta(days=night)).isoformat()


def commit_of(night: int) -> str:
    """A 40-hex commit id per night."""
    return hashlib.sha1(f"night {night}".encode()).hexdigest()


def night_document(
    night: int, *, shift_from: int | None = None, shift: float = 0.25, device_key: str = "cpu-synthetic-2c"
) -> dict[str, Any]:
    """One night's ``--accel-json`` document: ``test_slow`` is ``shift`` slower from night ``shift_from`` on;
    ``test_steady`` never changes; ``test_off`` ran with timing disabled. Seeded by the night: reproducible."""
    rng = random.Random(night)
    recorded = []
    for test, base in (("t.py::test_slow", 0.010), ("t.py::test_steady", 0.002)):
        slower = shift if test == "t.py::test_slow" and shift_from is not None and night >= shift_from else 0.0
        level = base * (1 + slower) * rng.gauss(1.0, NIGHT_CV)
        samples = tuple(level * rng.gauss(1.0, 0.01) for _ in range(ROUNDS))
        recorded.append(Recorded(test, "passed", Measurement("images", 8.0, samples, peak_memory_bytes=1 << 20), None))
    recorded.append(Recorded("t.py::test_off", "passed", Measurement("images", 1.0, ()), None))
    document = results_document(
        recorded, device_kind="cpu", device_key=device_key, provenance={"torch": "2.13"}, profile="full",
        world_size=1,
    )  # fmt: skip
    document["date"] = f"{date_of(night)}T02:17:00+00:00"
    return document


def write_night(path: Path, night: int, **options: Any) -> Path:
    """``night_document`` written to ``path`` as the plugin writes it."""
    path.write_text(json.dumps(night_document(night, **options), indent=2, sort_keys=True) + "\n")
    return path
