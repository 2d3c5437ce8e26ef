"""``--accel-json`` result files: written once per run, read validated and never modified. Pure: no torch, no pytest."""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from pytest_accel.core.measurement import Measurement
from pytest_accel.judgement.verdict import VerdictRecord

__all__ = [
    "RESULTS_SCHEMA",
    "USER_PROPERTY",
    "Recorded",
    "ResultFile",
    "ResultsError",
    "load_results",
    "results_document",
]

RESULTS_SCHEMA = 1  # version of the --accel-json layout this code writes and reads
USER_PROPERTY = "accel_measurement"  # key of a result's JSON in report.user_properties / JUnit XML


class ResultsError(Exception):
    """A result file that cannot be used; the message names the file and why."""


@final
@dataclass(frozen=True)
class Recorded:
    """One measurement of a run, as it came back on its test report: what is written per result."""

    test: str  # pytest node id
    outcome: str  # the test's pytest outcome: passed, failed, skipped
    measurement: Measurement
    verdict: VerdictRecord | None  # None when not judged (--benchmark-disable)

    @classmethod
    def from_property(cls, test: str, outcome: str, value: str) -> Recorded:
        """A result from the JSON a test report carries under ``USER_PROPERTY`` (see ``property_value``)."""
        data = json.loads(value)
        verdict = data.pop("verdict", None)
        return cls(
            test, outcome, Measurement.from_dict(data), None if verdict is None else VerdictRecord.from_dict(verdict)
        )

    @staticmethod
    def property_value(measurement: Measurement, verdict: VerdictRecord | None) -> str:
        """The JSON a test report carries for one measurement and its verdict."""
        return json.dumps({**measurement.to_dict(), "verdict": None if verdict is None else verdict.to_dict()})

    def to_dict(self) -> dict[str, Any]:
        """The result entry: the measurement's fields with the test, its outcome and the verdict."""
        verdict = None if self.verdict is None else self.verdict.to_dict()
        return {"test": self.test, "outcome": self.outcome, "verdict": verdict, **self.measurement.to_dict()}


def results_document(
    recorded: Sequence[Recorded],
    *,
    device_kind: str,
    device_key: str | None,
    provenance: Mapping[str, str],
    profile: str,
    world_size: int,
) -> dict[str, Any]:
    """The ``--accel-json`` document of one run (``load_results`` reads it back)."""
    return {
        "schema": RESULTS_SCHEMA,
        "device": {"kind": device_kind, "key": device_key},
        "provenance": dict(provenance),
        "profile": profile,
        "world_size": world_size,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "results": [r.to_dict() for r in recorded],
    }


@final
@dataclass(frozen=True)
class ResultFile:
    """One run's results: the device, its provenance, and each measurement with its verdict."""

    path: Path
    device_key: str
    profile: str
    date: str  # ISO 8601, UTC; "" for files written before dates were recorded
    provenance: Mapping[str, str]
    measurements: Mapping[tuple[str, str], Measurement]  # (test id, metric) -> measurement
    verdicts: Mapping[tuple[str, str], VerdictRecord | None]


def load_results(path: Path) -> ResultFile:
    """Load and validate one result file; raises ``ResultsError`` naming the file and the problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ResultsError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ResultsError(f"{path}: invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    if not isinstance(document, dict):
        raise ResultsError(f"{path}: not a pytest-accel result file (top level is not an object)")
    schema = document.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ResultsError(f"{path}: not a pytest-accel result file (no integer 'schema')")
    if schema > RESULTS_SCHEMA:
        raise ResultsError(
            f"{path}: written by a newer pytest-accel (schema {schema}; this one reads {RESULTS_SCHEMA})"
        )
    device = document.get("device")
    if not isinstance(device, dict) or not isinstance(device.get("key"), str):
        raise ResultsError(f"{path}: 'device' must be an object with a string 'key'")
    measurements: dict[tuple[str, str], Measurement] = {}
    verdicts: dict[tuple[str, str], VerdictRecord | None] = {}
    results = document.get("results")
    if not isinstance(results, list):
        raise ResultsError(f"{path}: 'results' must be a list")
    for index, entry in enumerate(results):
        key, measurement, verdict = _entry(path, index, entry)
        measurements[key] = measurement
        verdicts[key] = verdict
    provenance = document.get("provenance", {})
    return ResultFile(
        path=path,
        device_key=device["key"],
        profile=str(document.get("profile", "")),
        date=str(document.get("date", "")),
        provenance={str(k): str(v) for k, v in provenance.items()} if isinstance(provenance, dict) else {},
        measurements=measurements,
        verdicts=verdicts,
    )


def _entry(path: Path, index: int, entry: object) -> tuple[tuple[str, str], Measurement, VerdictRecord | None]:
    where = f"{path}: results[{index}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("test"), str):
        raise ResultsError(f"{where}: expected an object with a string 'test'")
    fields = {k: v for k, v in entry.items() if k not in ("test", "outcome", "verdict")}
    try:
        measurement = Measurement.from_dict(fields)
    except (TypeError, ValueError) as error:
        raise ResultsError(f"{where} ({entry['test']}): not a measurement: {error}") from None
    if any(not (math.isfinite(s) and s > 0) for s in measurement.samples):
        raise ResultsError(f"{where} ({entry['test']}): samples must be finite and positive")
    raw_verdict = entry.get("verdict")
    try:
        verdict = None if raw_verdict is None else VerdictRecord.from_dict(raw_verdict)
    except ValueError as error:
        raise ResultsError(f"{where} ({entry['test']}): {error}") from None
    return (entry["test"], measurement.name), measurement, verdict
