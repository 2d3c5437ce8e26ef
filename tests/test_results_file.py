"""The ``--accel-json`` reader: as strict as the baseline store, never a traceback."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_accel.commands.cli import main
from pytest_accel.core.measurement import COLD, TIMINGS, WARM, Measurement
from pytest_accel.judgement.results import SECONDS_RANGE, Recorded, ResultsError, load_results, results_document


def document(**entry: Any) -> dict[str, Any]:
    """A valid result file with one entry, fields overridden by ``entry`` (None removes one)."""
    good = Measurement("images", 2.0, (0.01, 0.011, 0.012), probe_samples=(0.001, 0.001, 0.001))
    data = results_document(
        [Recorded("test_x.py::test_a", "passed", good, None)],
        device_kind="cpu", device_key="cpu-k-2c", provenance={"torch": "2.13"}, profile="smoke", world_size=1,
    )  # fmt: skip
    for key, value in entry.items():
        if value is None:
            del data["results"][0][key]
        else:
            data["results"][0][key] = value
    return data


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
    return path


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"samples": "123"}, "samples: expected a list of positive finite numbers"),
        ({"items_per_call": -5}, "items_per_call: expected a positive finite number, got -5"),
        ({"items_per_call": "x"}, "items_per_call: expected a positive finite number, got 'x'"),
        ({"calls_per_round": "x"}, "calls_per_round: expected an integer >= 1, got 'x'"),
        ({"unit": 3}, "unit: expected a non-empty string, got 3"),
        ({"extra": [1]}, "extra: expected an object, got a list"),
        ({"probe_samples": [0.001]}, "probe_samples: 1 probe samples for 3 samples"),
        ({"samples": [1e308]}, "samples: item 0 is 1e+308 seconds, outside [1e-12, 1e+06]"),
        ({"samples": [5e-324]}, "samples: item 0 is 5e-324 seconds, outside"),
        ({"flops_per_call": -1.0}, "flops_per_call: expected null or a finite number >= 0, got -1.0"),
        ({"state": {"memory": -1}}, "state['memory']: expected a finite number >= 0"),
        ({"warmup_settled": "yes"}, "warmup_settled: expected true or false"),
        ({"surprise": 1}, "'surprise': unknown key"),
        ({"samples": None}, "samples: expected a list of positive finite numbers, got None"),
        ({"verdict": {"outcome": "maybe"}}, "'verdict':"),
        ({"timing": "fast"}, "timing: expected one of eager, graph, got 'fast'"),
        ({"cache": 1}, "cache: expected warm or cold, got 1"),
        ({"throttled_rounds": -1}, "throttled_rounds: expected an integer >= 0, got -1"),
    ],
)
def test_corrupt_fields_are_named_with_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: dict[str, Any], message: str
) -> None:
    path = write(tmp_path, document(**entry))
    before = path.read_text()
    with pytest.raises(ResultsError, match="results\\[0\\]") as error:
        load_results(path)
    assert message in str(error.value) and f"{path}, line " in str(error.value)
    for command in (["report", str(path)], ["compare", str(path), str(path)]):
        assert main(command) == 2  # a named error, never exit 1 (which compare uses for a regression)
        assert message in capsys.readouterr().err
    assert path.read_text() == before


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (bytes(range(256)) * 16, "not UTF-8 text"),
        (b'{"schema": 1, "device": {"key": "k"}, "results": [{"test": "t", "samples": [1' + b"0" * 400 + b"]}]}",
         "samples: expected a list of positive finite numbers"),
        (b"[" * 100_000, "invalid JSON"),
        (b'{"schema": 1, "device": {"key": "k"}, "results": [{"test": "\\ud800", "unit": "x"}]}',
         "'test': expected a non-empty string"),
        (b"", "the file is empty"),
    ],
)  # fmt: skip
def test_hostile_bytes_are_refused_not_crashed_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], raw: bytes, message: str
) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(raw)
    assert main(["compare", str(path), str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and message in err and "Traceback" not in err


def test_a_folder_is_not_a_result_file(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="cannot read"):
        load_results(tmp_path)


def test_a_test_recorded_twice_is_refused(tmp_path: Path) -> None:
    data = document()
    data["results"].append(data["results"][0])
    with pytest.raises(ResultsError, match=r"results\[1\]: test_x.py::test_a appears twice"):
        load_results(write(tmp_path, data))


positive_seconds = st.floats(SECONDS_RANGE[0], SECONDS_RANGE[1], allow_nan=False)
measurements = st.builds(
    Measurement,
    unit=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1),
    items_per_call=st.floats(1e-6, 1e9),
    samples=st.lists(positive_seconds, max_size=8).map(tuple),
    calls_per_round=st.integers(1, 1000),
    flops_per_call=st.none() | st.floats(0, 1e18),
    peak_memory_bytes=st.none() | st.integers(0, 2**50),
    name=st.sampled_from(["throughput", "decode", "prefill"]),
    timing=st.sampled_from(TIMINGS),
    cache=st.sampled_from([WARM, COLD]),
    throttled_rounds=st.integers(0, 50),
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(st.lists(measurements, max_size=4), st.text(st.characters(blacklist_categories=("Cs",)), min_size=1))
def test_what_is_written_reads_back_equal(tmp_path: Path, written: list[Measurement], test_id: str) -> None:
    unique = {m.name: m for m in written}
    records = [Recorded(test_id, "passed", m, None) for m in unique.values()]
    data = results_document(records, device_kind="cpu", device_key="k", provenance={}, profile="smoke", world_size=1)
    loaded = load_results(write(tmp_path, data))
    assert dict(loaded.measurements) == {(test_id, m.name): m for m in unique.values()}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
keys = st.sampled_from(
    ["unit", "items_per_call", "samples", "probe_samples", "calls_per_round", "warmup_calls", "warmup_seconds",
     "warmup_settled", "flops_per_call", "bytes_per_call", "peak_memory_bytes", "device_key", "state", "name",
     "extra", "test", "outcome", "verdict", "timing", "cache", "throttled_rounds", "other"]
)  # fmt: skip


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=300)
@given(st.lists(st.tuples(keys, json_values), min_size=1, max_size=3))
def test_any_corruption_is_refused_or_read_as_a_valid_measurement(
    tmp_path: Path, corruptions: list[tuple[str, object]]
) -> None:
    data = document()
    for key, value in corruptions:
        data["results"][0][key] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))  # NaN and Infinity included, as Python's writer allows
    try:
        loaded = load_results(path)
    except ResultsError as error:
        assert str(path) in str(error)
        return
    (measurement,) = loaded.measurements.values()
    assert measurement.items_per_call > 0 and math.isfinite(measurement.items_per_call)
    assert all(SECONDS_RANGE[0] <= s <= SECONDS_RANGE[1] for s in measurement.samples)
    assert len(measurement.probe_samples) in (0, len(measurement.samples))
    assert isinstance(measurement.unit, str) and measurement.unit


def test_a_run_that_measured_nothing_reads_as_an_empty_file(tmp_path: Path) -> None:
    """What the plugin writes when no test measured (no device was made: its key is null)."""
    path = tmp_path / "empty.json"
    path.write_text(
        json.dumps(
            results_document([], device_kind="auto", device_key=None, provenance={}, profile="smoke", world_size=1)
        )
    )
    read = load_results(path)
    assert read.measurements == {} and read.device_key == ""
    document = json.loads(path.read_text())
    document["results"] = [{"test": "t"}]  # a null key with results is still refused
    path.write_text(json.dumps(document))
    with pytest.raises(ResultsError, match="string 'key'"):
        load_results(path)


def test_an_error_names_the_line_of_its_own_entry(tmp_path: Path) -> None:
    """The line is that of the bad entry's test id, even when earlier entries carry the same id."""
    data = document()
    first = data["results"][0]
    data["results"] = [
        {**first, "name": "decode"},
        {**first, "test": "test_x.py::test_b"},
        {**first, "name": "prefill", "items_per_call": -1},  # the bad one: test_a's third figure
    ]
    path = write(tmp_path, data)
    lines = path.read_text().splitlines()
    wanted = [number for number, line in enumerate(lines, 1) if '"items_per_call": -1' in line]
    with pytest.raises(ResultsError) as error:
        load_results(path)
    assert f"{path}, line {wanted[0]}: results[2] (test_x.py::test_a): items_per_call" in str(error.value)


def _numbered(path: Path, marker: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if marker in line)


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("separators", [(", ", ": "), (",", ":")])
def test_the_line_is_found_however_the_file_was_written(
    tmp_path: Path, ensure_ascii: bool, separators: tuple[str, str]
) -> None:
    """Raw UTF-8 test ids (``jq``, ``ensure_ascii=False``), ``\\u`` escapes, compact separators: one line each."""
    data = document()
    first = data["results"][0]
    data["results"] = [{**first, "test": "test_ü.py::test_größe[μ]"}, {**first, "test": "test_ü.py::test_b",
                       "items_per_call": -1}]  # fmt: skip
    path = tmp_path / "r.json"
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=ensure_ascii, separators=separators)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ResultsError) as error:
        load_results(path)
    wanted = _numbered(path, f'"items_per_call"{separators[1]}-1')
    assert f"{path}, line {wanted}: results[1] (test_ü.py::test_b): items_per_call" in str(error.value)


def test_an_entry_that_is_not_an_object_and_a_repeated_one_are_named_by_line(tmp_path: Path) -> None:
    data = document()
    data["results"] = [data["results"][0], "test_x.py::test_a"]
    path = write(tmp_path, data)
    with pytest.raises(ResultsError) as error:
        load_results(path)
    line = _numbered(path, '    "test_x.py::test_a"')
    assert f"{path}, line {line}: results[1]: entry: expected an object" in str(error.value)
    data["results"] = [data["results"][0]] * 2
    path = write(tmp_path, data)
    with pytest.raises(ResultsError) as error:
        load_results(path)
    starts = [number for number, line in enumerate(path.read_text().splitlines(), 1) if line == "    {"]
    assert str(error.value) == (
        f"{path}, line {starts[1]}: results[1]: test_x.py::test_a appears twice (first as results[0], line {starts[0]})"
    )


@pytest.mark.parametrize("schema", [0, -1])
def test_a_schema_below_one_is_refused_as_the_baselines_refuse_it(
    tmp_path: Path, schema: int, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, {**document(), "schema": schema})
    with pytest.raises(ResultsError, match=rf"'schema' must be an integer >= 1 \(got {schema}\)"):
        load_results(path)
    for command in (["report", str(path)], ["compare", str(path), str(path)]):
        assert main(command) == 2
        assert "'schema' must be an integer >= 1" in capsys.readouterr().err


def test_a_valid_file_is_read_without_locating_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines are located only on an error: a per-entry search from the file's start made big files quadratic."""
    import pytest_accel.judgement.results as results

    def refuse(*args: object) -> str:
        raise AssertionError("a line was located for a valid entry")

    monkeypatch.setattr(results, "_line_of", refuse)
    data = document()
    data["results"] = [{**data["results"][0], "test": f"test_x.py::test_{index}"} for index in range(50)]
    assert len(load_results(write(tmp_path, data)).measurements) == 50


def test_the_runs_wait_for_quiet_is_kept_and_a_bad_one_refused(tmp_path: Path) -> None:
    data = document()
    assert load_results(write(tmp_path, data)).waited == 0.0  # files without it: no wait
    assert load_results(write(tmp_path, {**data, "quiet_waited_seconds": 42.5})).waited == 42.5
    written = results_document([], device_kind="cpu", device_key="k", provenance={}, profile="smoke", world_size=1,
                               waited=12.46)  # fmt: skip
    assert written["quiet_waited_seconds"] == 12.5
    for bad in (-1, "12", True, None):
        with pytest.raises(ResultsError, match=r"quiet_waited_seconds: expected seconds \(a number >= 0\)"):
            load_results(write(tmp_path, {**data, "quiet_waited_seconds": bad}))
