"""``--accel-json`` result files, their one codec: written once per run, read validated, never modified in place.

Every reader and writer of the format goes through here: the run's file (``save_results``), the
fresh-process confirmation and ``ab`` reading a child's (``load_results``), ``ab`` merging a side's
runs into one file (``merged_document``), the history filing a night with its stamp
(``stamped_bytes``), report, compare and export. Pure: no torch, no pytest.
"""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, final

from pytest_accel.core.measurement import COLD, DEFAULT_METRIC, EAGER, TIMINGS, WARM, Measurement, display_name
from pytest_accel.core.operator_table import OperatorProfile
from pytest_accel.core.validation import (
    Invalid,
    at_least_zero,
    byte_count,
    check_plain_json,
    count,
    decode_json,
    encodable,
    finite,
    line_at,
    positive,
    samples,
    show,
)
from pytest_accel.core.validation import text as text_of
from pytest_accel.judgement.verdict import VerdictRecord
from pytest_accel.storage.files import decode, encode, write_atomically

__all__ = [
    "RESULTS_SCHEMA",
    "USER_PROPERTY",
    "Recorded",
    "ResultFile",
    "ResultsError",
    "load_results",
    "merged_document",
    "read_results",
    "results_document",
    "save_results",
    "stamped_bytes",
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
    waited: float = 0.0,
) -> dict[str, Any]:
    """The ``--accel-json`` document of one run (``load_results`` reads it back); ``waited``: the seconds
    the run waited for quiet (kept when there were any)."""
    document: dict[str, Any] = {
        "schema": RESULTS_SCHEMA,
        "device": {"kind": device_kind, "key": device_key},
        "provenance": dict(provenance),
        "profile": profile,
        "world_size": world_size,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "results": [r.to_dict() for r in recorded],
    }
    return {**document, "quiet_waited_seconds": round(waited, 1)} if waited else document


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
    device_kind: str = "unknown"  # "cpu", "cuda", "hpu"; "unknown" in files that do not say
    waited: float = 0.0  # seconds the run waited for quiet


# Seconds per call a result may hold: a picosecond to eleven days. Beyond, a file is corrupt (and
# ratios of such figures overflow).
SECONDS_RANGE = (1e-12, 1e6)
_ENTRY_KEYS = frozenset(f.name for f in fields(Measurement)) | {"test", "outcome", "verdict", "figures"}


def read_results(path: Path) -> bytes:
    """A result file's bytes (``ResultsError`` naming the file when it cannot be read)."""
    try:
        return path.read_bytes()
    except OSError as error:
        raise ResultsError(f"{path}: cannot read: {error.strerror or error}") from None


def load_results(path: Path, raw: bytes | None = None) -> ResultFile:
    """Load and validate one result file (from ``raw``, its bytes, when already read); raises
    ``ResultsError`` naming the file, the line and the key."""
    if raw is None:
        raw = read_results(path)
    try:
        document = decode_json(raw, str(path))
    except Invalid as invalid:
        raise ResultsError(str(invalid)) from None
    if not isinstance(document, dict):
        raise ResultsError(f"{path}: not a pytest-accel result file (top level is not an object)")
    schema = document.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ResultsError(f"{path}: not a pytest-accel result file (no integer 'schema')")
    if schema < 1:  # as the baseline and structure stores refuse it
        raise ResultsError(f"{path}: 'schema' must be an integer >= 1 (got {schema})")
    if schema > RESULTS_SCHEMA:
        raise ResultsError(
            f"{path}: written by a newer pytest-accel (schema {schema}; this one reads {RESULTS_SCHEMA})"
        )
    device = document.get("device")
    # A run that measured nothing never made a device: its key is null, and so is nothing to read.
    nothing = isinstance(device, dict) and device.get("key") is None and document.get("results") == []
    if not isinstance(device, dict) or not (isinstance(device.get("key"), str) or nothing):
        raise ResultsError(f"{path}: 'device' must be an object with a string 'key'")
    measurements: dict[tuple[str, str], Measurement] = {}
    verdicts: dict[tuple[str, str], VerdictRecord | None] = {}
    results = document.get("results")
    if not isinstance(results, list):
        raise ResultsError(f"{path}: 'results' must be a list")
    text = raw.decode("utf-8")
    try:
        provenance = _strings(document.get("provenance", {}), "provenance")
        for name in ("profile", "date"):
            if not isinstance(document.get(name, ""), str):
                raise Invalid(name, f"expected a string, got {show(document[name])}")
        waited = document.get("quiet_waited_seconds", 0.0)
        if isinstance(waited, bool) or not isinstance(waited, (int, float)) or not 0 <= waited < math.inf:
            raise Invalid("quiet_waited_seconds", f"expected seconds (a number >= 0), got {show(waited)}")
        if not nothing:
            text_of(device["key"], "device['key']")
    except Invalid as invalid:
        raise ResultsError(f"{path}: {invalid}") from None
    seen: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(results):
        try:
            key, measurement, verdict = _entry(entry)
        except Invalid as invalid:
            test = entry.get("test") if isinstance(entry, dict) else None
            named = f" ({test})" if isinstance(test, str) and test and encodable(test) else ""
            line = _line_of(text, index, invalid.key)
            raise ResultsError(f"{path}{line}: results[{index}]{named}: {invalid}") from None
        if key in measurements:
            first = seen[key]
            raise ResultsError(
                f"{path}{_line_of(text, index)}: results[{index}]: {display_name(*key)} appears twice (first as "
                f"results[{first}]{_line_of(text, first)})"
            )
        seen[key] = index
        measurements[key] = measurement
        verdicts[key] = verdict
    return ResultFile(
        path=path,
        device_key=device["key"] or "",
        device_kind=str(device.get("kind") or "unknown"),
        profile=str(document.get("profile", "")),
        date=str(document.get("date", "")),
        provenance=provenance,
        measurements=measurements,
        verdicts=verdicts,
        waited=float(waited),
    )


def _strings(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise Invalid(where, f"expected an object of strings, got {show(value)}")
    for key, item in value.items():
        if not isinstance(item, str) or not encodable(item) or not encodable(key):
            raise Invalid(f"{where}[{key!r}]", f"expected a string, got {show(item)}")
    return dict(value)


def _line_of(text: str, index: int, key: str | None = None) -> str:
    """ ", line N" where results[index] writes ``key`` (else where the entry begins); "" when it cannot be found.
    Called only for an entry in error: it walks the file's text (see ``line_at``)."""
    line = line_at(text, ("results", index, key)) if key is not None else None
    line = line or line_at(text, ("results", index))
    return "" if line is None else f", line {line}"


def _seconds(value: object, where: str) -> tuple[float, ...]:
    values = samples(value, where, allow_empty=True)
    low, high = SECONDS_RANGE
    if not values or (low <= min(values) and max(values) <= high):  # the common case; else find the item
        return values
    for index, item in enumerate(values):
        if not low <= item <= high:
            raise Invalid(where, f"item {index} is {item!r} seconds, outside [{low:g}, {high:g}]")
    return values


def _state(value: object) -> dict[str, float]:
    if not isinstance(value, dict):
        raise Invalid("state", f"expected an object of probe name -> number, got {show(value)}")
    state = {}
    for name, number in value.items():
        checked = finite(number)
        if not encodable(name) or checked is None or checked < 0:
            raise Invalid(f"state[{name!r}]", f"expected a finite number >= 0, got {show(number)}")
        state[name] = checked
    return state


def _measurement(entry: dict[str, Any]) -> Measurement:
    """Every field checked for type, sign and finiteness, named by key path; unknown keys refused."""
    if unknown := sorted(set(entry) - _ENTRY_KEYS):
        raise Invalid(repr(unknown[0]), "unknown key (a newer writer would have raised the schema)")
    sampled = _seconds(entry.get("samples"), "samples")
    probes = _seconds(entry.get("probe_samples", []), "probe_samples")
    if probes and len(probes) != len(sampled):
        raise Invalid("probe_samples", f"{len(probes)} probe samples for {len(sampled)} samples (one per round)")
    warmup_settled = entry.get("warmup_settled", True)
    if not isinstance(warmup_settled, bool):
        raise Invalid("warmup_settled", f"expected true or false, got {show(warmup_settled)}")
    extra = entry.get("extra", {})
    if not isinstance(extra, dict):
        raise Invalid("extra", f"expected an object, got {show(extra)}")
    check_plain_json(extra, "extra")
    state = entry.get("state", {})
    operators = entry.get("operators")
    timing, cache = entry.get("timing", EAGER), entry.get("cache", WARM)
    if timing not in TIMINGS:
        raise Invalid("timing", f"expected one of {', '.join(TIMINGS)}, got {show(timing)}")
    if cache not in (WARM, COLD):
        raise Invalid("cache", f"expected {WARM} or {COLD}, got {show(cache)}")
    return Measurement(
        unit=text_of(entry.get("unit"), "unit"),
        items_per_call=positive(entry.get("items_per_call"), "items_per_call"),
        samples=sampled,
        calls_per_round=count(entry.get("calls_per_round", 1), "calls_per_round", 1),
        warmup_calls=count(entry.get("warmup_calls", 0), "warmup_calls", 0),
        warmup_seconds=float(at_least_zero(entry.get("warmup_seconds", 0.0), "warmup_seconds", optional=False) or 0),
        warmup_settled=warmup_settled,
        flops_per_call=at_least_zero(entry.get("flops_per_call"), "flops_per_call", optional=True),
        bytes_per_call=at_least_zero(entry.get("bytes_per_call"), "bytes_per_call", optional=True),
        peak_memory_bytes=byte_count(entry.get("peak_memory_bytes"), "peak_memory_bytes"),
        device_key=text_of(entry.get("device_key", "unknown"), "device_key"),
        probe_samples=probes,
        state=_state(state),
        name=text_of(entry.get("name", DEFAULT_METRIC), "name"),
        extra=extra,
        operators=None if operators is None else OperatorProfile.from_json(operators, "operators"),
        timing=timing,
        cache=cache,
        throttled_rounds=count(entry.get("throttled_rounds", 0), "throttled_rounds", 0),
    )


def _entry(entry: object) -> tuple[tuple[str, str], Measurement, VerdictRecord | None]:
    """One entry, checked; ``Invalid`` names the key (load_results adds the file, line, index and test)."""
    if not isinstance(entry, dict):
        raise Invalid("entry", f"expected an object with a string 'test', got {show(entry)}")
    test_id = text_of(entry.get("test"), "'test'")
    if not isinstance(entry.get("outcome", ""), str):
        raise Invalid("'outcome'", f"expected a string, got {show(entry['outcome'])}")
    measurement = _measurement(entry)
    raw_verdict = entry.get("verdict")
    try:
        verdict = None if raw_verdict is None else VerdictRecord.from_dict(raw_verdict)
    except (ValueError, TypeError, KeyError) as error:
        raise Invalid("'verdict'", str(error)) from None
    return (test_id, measurement.name), measurement, verdict


def save_results(path: Path, document: Mapping[str, Any]) -> None:
    """Write a result document (``results_document``, ``merged_document``) to ``path``, atomically."""
    write_atomically(path, encode(document))


def merged_document(files: Sequence[ResultFile]) -> dict[str, Any] | None:
    """One result document for several runs of one build (``ab``'s side): each test's rounds from every
    file, in the files' order; the device, provenance and profile of the first. None when no file is given."""
    if not files:
        return None
    merged: dict[tuple[str, str], Measurement] = {}
    for results in files:
        for key, m in results.measurements.items():
            if key in merged:
                first = merged[key]
                m = replace(
                    first, samples=first.samples + m.samples, probe_samples=first.probe_samples + m.probe_samples
                )
            merged[key] = m
    recorded = [Recorded(test, "passed", m, None) for (test, _), m in sorted(merged.items())]
    head = files[0]
    return results_document(
        recorded, device_kind=head.device_kind, device_key=head.device_key, provenance=head.provenance,
        profile=head.profile, world_size=1,
    )  # fmt: skip


def stamped_bytes(result: ResultFile, raw: bytes, stamp: Mapping[str, str | None]) -> bytes:
    """The file's document (``raw``: the bytes ``result`` was loaded from) with ``stamp`` added to its
    provenance (None: not known, left out), as bytes.

    A stamp that contradicts what the file records is refused (``ResultsError``): a night is filed
    under the commit it measured, never under another.
    """
    document = decode(raw, str(result.path))
    assert isinstance(document, dict)  # load_results validated these bytes
    provenance = document.setdefault("provenance", {})
    for key, value in stamp.items():
        if value is None:
            continue
        if provenance.get(key, value) != value:
            raise ResultsError(f"{result.path}: records {key} {provenance[key]!r}, not {value!r}; not filed")
        provenance[key] = value
    return encode(document)
