"""Exports for the dashboards: github-action-benchmark's custom JSON and Bencher's metric format, checked
against their documented schemas (written out below) and against the result file's own figures."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nights import night_document, write_night

from pytest_accel.commands.cli import main
from pytest_accel.core.measurement import Measurement
from pytest_accel.judgement.results import Recorded, ResultFile, load_results, results_document
from pytest_accel.outputs.exports import bencher_metrics, github_action_benchmark

# github-action-benchmark, tools customBiggerIsBetter / customSmallerIsBetter (its README's "Examples",
# and src/extract.ts: interface BenchmarkResult { name: string; value: number; range?: string;
# unit: string; extra?: string }): a JSON list of such objects.
GITHUB_ACTION_BENCHMARK = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["name", "unit", "value"],
        "properties": {
            "name": {"type": "string"},
            "unit": {"type": "string"},
            "value": {"type": "number"},
            "range": {"type": "string"},
            "extra": {"type": "string"},
        },
        "additionalProperties": False,
    },
}
# Bencher Metric Format, https://bencher.dev/docs/reference/bencher-metric-format (its JSON Schema,
# draft-07): benchmark name -> measure slug -> {value, lower_value?, upper_value?}.
BENCHER_METRIC_FORMAT = {
    "type": "object",
    "patternProperties": {
        ".+": {
            "type": "object",
            "patternProperties": {
                ".+": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "number"},
                        "lower_value": {"type": "number"},
                        "upper_value": {"type": "number"},
                    },
                    "required": ["value"],
                }
            },
        }
    },
}
_TYPES: dict[str, Any] = {"array": list, "object": dict, "string": str}


def violations(value: object, schema: dict[str, Any], where: str = "$") -> list[str]:
    """The subset of JSON Schema the two formats use (type, required, properties, patternProperties,
    additionalProperties: false, items), checked by hand: every violation, with its path."""
    kind = schema.get("type")
    if kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # no NaN
        return [] if ok else [f"{where}: expected a number, got {value!r}"]
    if kind is not None and not isinstance(value, _TYPES[kind]):
        return [f"{where}: expected {kind}, got {type(value).__name__}"]
    found: list[str] = []
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += violations(item, schema["items"], f"{where}[{index}]")
    if isinstance(value, dict):
        found += [f"{where}: missing {key!r}" for key in schema.get("required", ()) if key not in value]
        for key, item in value.items():
            rules = [schema["properties"][key]] if key in schema.get("properties", {}) else []
            rules += [rule for pattern, rule in schema.get("patternProperties", {}).items() if re.search(pattern, key)]
            if not rules and schema.get("additionalProperties") is False:
                found.append(f"{where}: unexpected key {key!r}")
            for rule in rules:
                found += violations(item, rule, f"{where}[{key!r}]")
    return found


def result_file(tmp_path: Path, document: dict[str, Any]) -> ResultFile:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document))
    return load_results(path)


def test_the_validator_agrees_with_jsonschema_where_it_is_installed() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    cases: list[tuple[object, dict[str, Any]]] = [
        ([{"name": "a", "unit": "u", "value": 1.5}], GITHUB_ACTION_BENCHMARK),
        ([{"name": "a", "unit": "u", "value": "1.5"}], GITHUB_ACTION_BENCHMARK),
        ([{"name": "a", "value": 1}], GITHUB_ACTION_BENCHMARK),
        ([{"name": "a", "unit": "u", "value": 1, "range": 3}], GITHUB_ACTION_BENCHMARK),
        ([{"name": "a", "unit": "u", "value": 1, "colour": "red"}], GITHUB_ACTION_BENCHMARK),
        ({"b": {"latency": {"value": 88.0, "lower_value": 87.4}}}, BENCHER_METRIC_FORMAT),
        ({"b": {"latency": {"lower_value": 87.4}}}, BENCHER_METRIC_FORMAT),
        ({"b": {"latency": {"value": "fast"}}}, BENCHER_METRIC_FORMAT),
        ({"b": [1]}, BENCHER_METRIC_FORMAT),
    ]
    for value, schema in cases:
        assert (violations(value, schema) == []) == jsonschema.Draft7Validator(schema).is_valid(value), value


def test_github_action_benchmark_entries(tmp_path: Path) -> None:
    document = night_document(3)
    document["provenance"]["commit"] = "0123abc"
    result = result_file(tmp_path, document)
    bigger = github_action_benchmark(result, bigger_is_better=True)
    smaller = github_action_benchmark(result, bigger_is_better=False)
    for entries in (bigger, smaller):
        assert violations(json.loads(json.dumps(entries)), GITHUB_ACTION_BENCHMARK) == []
        assert [e["name"] for e in entries] == ["t.py::test_slow", "t.py::test_steady"]  # test_off: not timed
    slow = result.measurements[("t.py::test_slow", "throughput")]
    assert bigger[0]["unit"] == "images/s" and bigger[0]["value"] == slow.items_per_second
    assert smaller[0]["unit"] == "ms/call" and smaller[0]["value"] == pytest.approx(slow.seconds_per_call * 1e3)
    assert bigger[0]["range"].startswith("± ")
    assert bigger[0]["extra"].splitlines()[:2] == ["device: cpu-synthetic-2c", "commit: 0123abc"]


def test_bencher_metric_format(tmp_path: Path) -> None:
    result = result_file(tmp_path, night_document(3))
    document = bencher_metrics(result)
    assert violations(json.loads(json.dumps(document)), BENCHER_METRIC_FORMAT) == []
    slow = document["t.py::test_slow"]
    assert set(slow) == {"throughput", "latency", "peak-memory"} and slow["peak-memory"] == {"value": 1048576.0}
    m = result.measurements[("t.py::test_slow", "throughput")]
    assert slow["latency"]["value"] == pytest.approx(m.seconds_per_call * 1e9)  # Bencher's latency: nanoseconds
    assert slow["throughput"]["value"] == m.items_per_second
    assert all(len(slug) <= 64 for measures in document.values() for slug in measures)  # BMF's slug limit


@settings(max_examples=50, deadline=None)
@given(
    samples=st.lists(st.floats(1e-7, 10.0), min_size=1, max_size=30),
    items=st.floats(0.5, 1e6),
    metric=st.sampled_from(["throughput", "decode"]),
    memory=st.none() | st.integers(0, 1 << 40),
)
def test_exported_values_round_trip(samples: list[float], items: float, metric: str, memory: int | None) -> None:
    """Whatever the samples: the value is the result's own figure, inside its bounds, and the JSON is valid."""
    m = Measurement("tokens", items, tuple(samples), name=metric, peak_memory_bytes=memory)
    result = ResultFile(Path("r.json"), "cuda-x", "full", "", {}, {("t::a", metric): m}, {("t::a", metric): None})
    name = "t::a" if metric == "throughput" else "t::a [decode]"
    (bigger,) = github_action_benchmark(result, bigger_is_better=True)
    (smaller,) = github_action_benchmark(result, bigger_is_better=False)
    assert (bigger["name"], bigger["value"], smaller["value"] / 1e3) == (
        name,
        m.items_per_second,
        pytest.approx(m.seconds_per_call),
    )
    document = json.loads(json.dumps(bencher_metrics(result)))
    assert violations(document, BENCHER_METRIC_FORMAT) == [] and list(document) == [name]
    for measure in ("throughput", "latency"):
        figure = document[name][measure]
        assert figure["lower_value"] <= figure["value"] <= figure["upper_value"]
    assert document[name]["latency"]["value"] == pytest.approx(m.seconds_per_call * 1e9)
    assert ("peak-memory" in document[name]) == (memory is not None)


def test_export_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_night(tmp_path / "r.json", 1)
    before = source.read_bytes()
    assert main(["export", "--format", "gab-bigger", str(source)]) == 0
    assert violations(json.loads(capsys.readouterr().out), GITHUB_ACTION_BENCHMARK) == []
    out = tmp_path / "bmf.json"
    assert main(["export", "--format", "bencher", str(source), "--output", str(out)]) == 0
    assert violations(json.loads(out.read_text()), BENCHER_METRIC_FORMAT) == []
    assert main(["export", "--format", "gab-smaller", str(source), "--output", str(source)]) == 2
    assert "is one of the inputs" in capsys.readouterr().err and source.read_bytes() == before
    empty = results_document(
        [Recorded("t::off", "passed", Measurement("x", 1.0, ()), None)], device_kind="cpu", device_key="cpu-k",
        provenance={}, profile="smoke", world_size=1,
    )  # fmt: skip
    source.write_text(json.dumps(empty))
    assert main(["export", "--format", "bencher", str(source)]) == 2
    assert "no timed measurement to export" in capsys.readouterr().err
