"""Reading ``--accel-json`` result files: validated, never modified. Pure: no torch, no pytest."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from pytest_accel.core.measurement import Measurement

__all__ = ["RESULTS_SCHEMA", "ResultFile", "ResultsError", "load_results"]

RESULTS_SCHEMA = 1  # version of the --accel-json layout this code writes and reads


class ResultsError(Exception):
    """A result file that cannot be used; the message names the file and why."""


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
    verdicts: Mapping[tuple[str, str], Mapping[str, Any] | None]

    @property
    def label(self) -> str:
        """How a column or a point is named: the device key, or the date for history."""
        return self.device_key


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
    verdicts: dict[tuple[str, str], Mapping[str, Any] | None] = {}
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


def _entry(path: Path, index: int, entry: object) -> tuple[tuple[str, str], Measurement, Mapping[str, Any] | None]:
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
    verdict = entry.get("verdict")
    return (entry["test"], measurement.name), measurement, verdict if isinstance(verdict, dict) else None
