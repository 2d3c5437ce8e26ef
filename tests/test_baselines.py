"""The baseline store: round trips, merging, corrupt files, concurrent writers, atomic replacement, pruning."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import tempfile
from dataclasses import replace
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_accel.judgement.baselines import BaselineEntry, BaselineStore
from pytest_accel.storage.entries import SCHEMA_VERSION
from pytest_accel.storage.files import StoreError

DEVICE = "cpu-amd-epyc-2c"
PROFILE = "smoke"
TEST = "perf_tests/test_attention.py::test_sdpa_forward_sd3"
# Writers and updates per writer in the concurrency test: enough to interleave, quick to spawn.
WRITERS, UPDATES_PER_WRITER = 4, 10
TMP_FIXTURE = settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)


def entry(test: str = TEST, metric: str = "throughput", samples: tuple[float, ...] = (0.0231, 0.0229)) -> BaselineEntry:
    return BaselineEntry(
        test=test,
        metric=metric,
        unit="samples",
        items_per_call=2.0,
        samples=samples,
        probe_samples=(0.0017,) * len(samples),  # one per round
        peak_memory_bytes=12345678,
        provenance={"torch": "2.13.0+cpu", "commit": "abc123", "cpu_threads": "1"},
    )


def five_digit(written: BaselineEntry) -> BaselineEntry:
    """The entry as it should load again: samples to 5 significant digits."""

    def digits(values: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(float(f"{value:.5g}") for value in values)

    return replace(written, samples=digits(written.samples), probe_samples=digits(written.probe_samples))


def valid_document(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "device_key": DEVICE,
        "profile": PROFILE,
        "world_size": 1,
        "entries": {TEST: {"throughput": entry().to_json()}},
    }
    document.update(changes)
    return document


def write(store: BaselineStore, content: bytes | str | dict[str, Any]) -> Path:
    path = store.path_for(DEVICE, PROFILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, dict):
        content = json.dumps(content)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


@pytest.fixture
def store(tmp_path: Path) -> BaselineStore:
    """A store under an empty temporary root."""
    return BaselineStore(tmp_path / "baselines")


# --- layout and round trips ---


def test_paths_follow_device_profile_and_world_size(store: BaselineStore) -> None:
    assert store.path_for(DEVICE, PROFILE) == store.root / DEVICE / "smoke.json"
    assert store.path_for(DEVICE, PROFILE, 8) == store.root / DEVICE / "smoke-w8.json"


@pytest.mark.parametrize("name", ["../x", "a/b", "a\\b", "..", ".", ".hidden", "", "x..y"])
def test_path_for_rejects_names_that_escape_or_hide(store: BaselineStore, name: str) -> None:
    with pytest.raises(ValueError, match="cannot name"):
        store.path_for(name, PROFILE)
    with pytest.raises(ValueError, match="cannot name"):
        store.path_for(DEVICE, name)


def test_path_for_rejects_ambiguous_profiles_and_bad_world_sizes(store: BaselineStore) -> None:
    with pytest.raises(ValueError, match="world-size suffix"):
        store.path_for(DEVICE, "smoke-w2")  # would be the file of "smoke" at world size 2
    for world_size in (0, -1, True):
        with pytest.raises(ValueError, match="world size"):
            store.path_for(DEVICE, PROFILE, world_size)


def test_update_then_load_round_trips_with_five_digit_samples(store: BaselineStore) -> None:
    written = entry(samples=(0.0231234567, 1.23456789e-7))
    path = store.update(DEVICE, PROFILE, 1, [written])
    assert path == store.path_for(DEVICE, PROFILE)
    loaded = store.load(DEVICE, PROFILE)
    assert list(loaded) == [(TEST, "throughput")]
    assert loaded[TEST, "throughput"].samples == (0.023123, 1.2346e-7)
    assert loaded[TEST, "throughput"] == replace(written, samples=(0.023123, 1.2346e-7))


def test_file_is_stable_sorted_and_readable(store: BaselineStore) -> None:
    path = store.update(DEVICE, PROFILE, 1, [entry("t::b"), entry("t::a", "latency")])
    first = path.read_bytes()
    store.update(DEVICE, PROFILE, 1, [entry("t::a", "latency"), entry("t::b")])
    assert path.read_bytes() == first
    text = first.decode()
    assert text.endswith("}\n")
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert list(json.loads(text)) == ["device_key", "entries", "profile", "schema", "world_size"]


node_ids = st.builds(
    lambda module, name, param: f"perf_tests/{module}.py::{name}[{param}]",
    st.text(min_size=1, max_size=12),
    st.text(min_size=1, max_size=12),
    st.text(max_size=12),
)
seconds = st.floats(min_value=1e-300, max_value=1e300)  # finite and positive; the overflow edge has its own test
baseline_entries = st.lists(seconds, min_size=1, max_size=6).flatmap(
    lambda samples: st.builds(
        BaselineEntry,
        test=node_ids,
        metric=st.sampled_from(["throughput", "latency", "décodage"]),
        unit=st.text(min_size=1, max_size=8),
        items_per_call=seconds,
        samples=st.just(tuple(samples)),
        # none, or one per round: a baseline with another count is refused
        probe_samples=st.just(()) | st.lists(seconds, min_size=len(samples), max_size=len(samples)).map(tuple),
        peak_memory_bytes=st.none() | st.integers(min_value=0, max_value=2**64),
        tolerance=st.none() | st.floats(min_value=0.0, max_value=10.0),
        memory_tolerance=st.none() | st.floats(min_value=0.0, max_value=10.0),
        provenance=st.dictionaries(st.text(max_size=8), st.text(max_size=16), max_size=3),
    )
)


@given(st.lists(baseline_entries, min_size=1, max_size=4))
@settings(deadline=None, max_examples=60)
def test_load_of_update_is_the_entries_with_rounded_samples(written: list[BaselineEntry]) -> None:
    with tempfile.TemporaryDirectory() as root:
        store = BaselineStore(Path(root))
        path = store.update(DEVICE, PROFILE, 2, written)
        loaded = store.load(DEVICE, PROFILE, 2)
        expected = {(item.test, item.metric): five_digit(item) for item in written}  # the last of a pair wins
        assert loaded == expected
        first = path.read_bytes()
        store.update(DEVICE, PROFILE, 2, loaded.values())  # rounding twice changes nothing
        assert path.read_bytes() == first


def test_rounding_keeps_the_largest_float_finite(store: BaselineStore) -> None:
    store.update(DEVICE, PROFILE, 1, [entry(samples=(1.7976931348623157e308,))])  # 5 digits round up to inf
    assert store.load(DEVICE, PROFILE)[TEST, "throughput"].samples == (1.7976931348623157e308,)


def test_entries_are_validated_and_normalized_when_built() -> None:
    built = BaselineEntry(TEST, "throughput", "images", 2, [0.5], [], [], None, None, None, {})  # type: ignore[arg-type]
    assert built.samples == (0.5,) and built.probe_samples == () and isinstance(built.items_per_call, float)
    for samples in ((), (0.1, -1.0), (math.nan,), (math.inf,)):
        with pytest.raises(ValueError, match="samples: expected a list of positive finite numbers"):
            entry(samples=samples)
    with pytest.raises(ValueError, match="test: expected a non-empty string"):
        entry(test="")


def test_missing_optional_fields_default_and_unknown_keys_are_ignored(store: BaselineStore) -> None:
    data = {"unit": "images", "items_per_call": 4, "samples": [0.25], "added_by_a_newer_writer": {"x": 1}}
    write(store, valid_document(entries={TEST: {"throughput": data}}))
    loaded = store.load(DEVICE, PROFILE)[TEST, "throughput"]
    assert loaded == BaselineEntry(TEST, "throughput", "images", 4.0, (0.25,))


# --- merging ---


def test_update_replaces_only_the_given_pairs(store: BaselineStore) -> None:
    other_profile = store.update(DEVICE, "nightly", 1, [entry()])
    wide = store.update(DEVICE, PROFILE, 4, [entry()])
    untouched = {path: path.read_bytes() for path in (other_profile, wide)}
    store.update(DEVICE, PROFILE, 1, [entry(), entry(metric="latency"), entry("t::other")])
    store.update(DEVICE, PROFILE, 1, [entry(samples=(0.5,))])
    loaded = store.load(DEVICE, PROFILE)
    assert loaded[TEST, "throughput"].samples == (0.5,)
    assert loaded[TEST, "latency"] == entry(metric="latency")  # another metric of the same test
    assert loaded["t::other", "throughput"] == entry("t::other")  # another test
    assert {path: path.read_bytes() for path in untouched} == untouched


def test_update_keeps_untouched_entries_as_stored(store: BaselineStore) -> None:
    kept = {"unit": "images", "items_per_call": 1.0, "samples": [0.123456789], "from_the_future": [1, 2]}
    write(store, valid_document(entries={"t::kept": {"throughput": kept}}))
    store.update(DEVICE, PROFILE, 1, [entry()])
    assert json.loads(store.path_for(DEVICE, PROFILE).read_text())["entries"]["t::kept"] == {"throughput": kept}


def test_new_files_are_world_readable_and_rewrites_keep_the_mode(store: BaselineStore) -> None:
    path = store.update(DEVICE, PROFILE, 1, [entry()])
    assert path.stat().st_mode & 0o777 == 0o644  # not mkstemp's private 0o600: the file is meant to be shared
    path.chmod(0o664)
    store.update(DEVICE, PROFILE, 1, [entry("t::new")])
    assert path.stat().st_mode & 0o777 == 0o664


def test_update_with_no_entries_writes_nothing(store: BaselineStore) -> None:
    store.update(DEVICE, PROFILE, 1, [])
    assert not store.root.exists()


def test_load_of_a_missing_file_is_empty_and_creates_nothing(store: BaselineStore) -> None:
    assert store.load(DEVICE, PROFILE) == {}
    assert not store.root.exists()
    store.update(DEVICE, "other", 1, [entry()])
    assert store.load(DEVICE, PROFILE) == {}


def test_files_lists_baselines_only(store: BaselineStore) -> None:
    assert store.files() == []
    paths = [store.update(device, profile, 1, [entry()]) for device, profile in [("b", "x"), ("a", "y"), ("a", "x")]]
    (store.root / "a" / ".x.json.abc.tmp").write_text("{")
    assert store.files() == sorted(paths)


def test_a_writer_killed_mid_write_leaves_no_temporary_file_for_long(store: BaselineStore) -> None:
    """A kill during a write left ``.smoke.json.*.tmp`` files no later run removed."""
    path = store.update(DEVICE, PROFILE, 1, [entry()])
    stale = path.parent / f".{path.name}.k1ll3d.tmp"
    stale.write_bytes(b"{" * 1000)
    other = path.parent / ".other.json.k1ll3d.tmp"  # another file's: its own writer may be at work
    other.write_bytes(b"{")
    store.update(DEVICE, PROFILE, 1, [entry("t::b")])
    assert not stale.exists() and other.exists()
    assert set(store.load(DEVICE, PROFILE)) == {(TEST, "throughput"), ("t::b", "throughput")}


# --- corrupt files ---


def assert_refused(store: BaselineStore, content: bytes | str | dict[str, Any], *fragments: str) -> None:
    path = write(store, content)
    before = path.read_bytes()
    for attempt in (lambda: store.load(DEVICE, PROFILE), lambda: store.update(DEVICE, PROFILE, 1, [entry("t::new")])):
        with pytest.raises(StoreError) as error:
            attempt()
        for fragment in (str(path), *fragments):
            assert fragment in str(error.value)
    assert path.read_bytes() == before
    assert sorted(os.listdir(path.parent)) == [".smoke.lock", "smoke.json"]  # no temp file left


def test_a_broken_bracket_names_file_line_and_column(store: BaselineStore) -> None:
    text = json.dumps(valid_document(), indent=2).replace("]", ")", 1)
    line = next(number for number, content in enumerate(text.splitlines(), 1) if ")" in content)
    assert_refused(store, text, "invalid JSON", f"line {line}, column")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (json.dumps(valid_document())[:-7], "invalid JSON at line 1, column"),
        (b"", "empty"),
        (b"\n  \n", "empty"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("[1, 2]", "top level, got a list"),
        ('"baseline"', "top level"),
        ("[" * 100_000, "invalid JSON"),
        ("[" + "1" * 5000 + "]", "invalid JSON"),  # beyond Python's int-parsing digit limit
    ],
    ids=["truncated", "empty", "blank", "binary", "list", "string", "deep", "long-int"],
)
def test_unparsable_files_are_refused(store: BaselineStore, content: bytes | str, fragment: str) -> None:
    assert_refused(store, content, fragment)


def bad_entry(**changes: Any) -> dict[str, Any]:
    return valid_document(entries={"t::x": {"throughput": {**entry().to_json(), **changes}}})


SAMPLES_PATH = "entries['t::x']['throughput']['samples']: expected a list of positive finite numbers"


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        (bad_entry(samples=0.5), SAMPLES_PATH),
        (bad_entry(samples=[0.5, "fast"]), f"{SAMPLES_PATH}, item 1 is 'fast'"),
        (bad_entry(samples=[0.5, -0.5]), SAMPLES_PATH),
        (bad_entry(samples=[]), SAMPLES_PATH),
        (bad_entry(samples=[True]), SAMPLES_PATH),
        (bad_entry(samples=[10**400]), SAMPLES_PATH),  # an int beyond float range
        (bad_entry(samples=[math.nan]), f"{SAMPLES_PATH}, item 0 is nan"),
        (bad_entry(probe_samples=[math.inf]), "['probe_samples']: expected a list"),
        (bad_entry(items_per_call=0), "['items_per_call']: expected a positive finite number"),
        (bad_entry(peak_memory_bytes=1.5), "['peak_memory_bytes']"),
        (bad_entry(tolerance=-0.1), "['tolerance']"),
        (bad_entry(provenance={"torch": 2}), "['provenance']['torch']: expected a string"),
        (bad_entry(extra=[1e999]), "entries['t::x']['throughput']['extra'][0]: inf is not a finite number"),
        (bad_entry(extra="\ud800"), "['extra']: contains a lone surrogate"),
        (valid_document(entries={"t::x": {"throughput": {"unit": "x", "samples": [1.0]}}}), "missing 'items_per_call'"),
        (valid_document(entries={"t::x": [1]}), "entries['t::x']: expected an object of metrics"),
        (valid_document(entries=[]), "'entries': expected an object"),
        (valid_document(device_key="gpu-h200"), "'device_key' is 'gpu-h200'"),
        (valid_document(profile="nightly"), "'profile' is 'nightly'"),
        (valid_document(world_size=2), "'world_size' is 2"),
        (valid_document(world_size=True), "'world_size' is True"),
        (valid_document(comment="hi"), "unknown ['comment']"),
        ({key: value for key, value in valid_document().items() if key != "entries"}, "missing ['entries']"),
        ({key: value for key, value in valid_document().items() if key != "schema"}, "'schema' must be an integer"),
        (valid_document(schema="1"), "'schema' must be an integer >= 1 (got '1')"),
        (valid_document(schema=0), "'schema' must be an integer >= 1"),
    ],
)
def test_wrong_content_is_refused_with_its_key_path(
    store: BaselineStore, document: dict[str, Any], fragment: str
) -> None:
    assert_refused(store, json.dumps(document), fragment)


def test_nan_written_as_json_nan_is_refused(store: BaselineStore) -> None:
    text = json.dumps(bad_entry(samples=[0.5, 0.25])).replace("0.25", "NaN")
    assert "NaN" in text
    assert_refused(store, text, SAMPLES_PATH)


def test_a_future_schema_asks_for_an_upgrade(store: BaselineStore) -> None:
    future = {"schema": SCHEMA_VERSION + 1, "layout": "whatever schema 2 is"}
    assert_refused(store, future, f"newer pytest-accel (schema {SCHEMA_VERSION + 1}", "upgrade")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
# Where a mutation puts a random JSON value: the whole file, each level, each field of an entry.
MUTATION_TARGETS: list[tuple[str, ...]] = [
    (),
    *[(key,) for key in valid_document()],
    ("entries", "t::x"),
    ("entries", "t::x", "throughput"),
    *[("entries", "t::x", "throughput", key) for key in entry().to_json()],
]


@st.composite
def mutated_documents(draw: st.DrawFn) -> bytes:
    """A valid file with one value anywhere replaced by a random JSON value (NaN and huge ints included)."""
    document: Any = bad_entry()
    target = draw(st.sampled_from(MUTATION_TARGETS))
    value = draw(JSON_VALUES)
    if not target:
        return json.dumps(value).encode()
    parent = document
    for key in target[:-1]:
        parent = parent[key]
    parent[target[-1]] = value
    return json.dumps(document).encode()


@given(content=st.binary(max_size=300) | mutated_documents())
@settings(TMP_FIXTURE, max_examples=300)
def test_any_bytes_load_or_raise_baseline_error(store: BaselineStore, content: bytes) -> None:
    path = write(store, content)
    try:
        store.load(DEVICE, PROFILE)
    except StoreError as error:
        assert str(path) in str(error)
        with pytest.raises(StoreError):
            store.update(DEVICE, PROFILE, 1, [entry("t::new")])
        assert path.read_bytes() == content
    else:  # what loads can be merged into
        store.update(DEVICE, PROFILE, 1, [entry("t::new")])
        assert ("t::new", "throughput") in store.load(DEVICE, PROFILE)


# --- concurrent writers and atomic replacement ---


def concurrent_writer(root: str, writer: int, start: Barrier) -> None:
    """Run in a child process: record UPDATES_PER_WRITER entries of its own, one update each."""
    store = BaselineStore(Path(root))
    start.wait()
    for number in range(UPDATES_PER_WRITER):
        store.update(DEVICE, PROFILE, 1, [entry(f"t::writer{writer}[{number}]")])


def test_concurrent_writers_lose_nothing(store: BaselineStore) -> None:
    context = multiprocessing.get_context("spawn")  # fork is unsafe with torch's threads in this process
    start = context.Barrier(WRITERS)
    writers = [
        context.Process(target=concurrent_writer, args=(str(store.root), writer, start)) for writer in range(WRITERS)
    ]
    for process in writers:
        process.start()
    for process in writers:
        process.join(timeout=60)
    assert [process.exitcode for process in writers] == [0] * WRITERS
    loaded = store.load(DEVICE, PROFILE)
    expected = {(f"t::writer{w}[{n}]", "throughput") for w in range(WRITERS) for n in range(UPDATES_PER_WRITER)}
    assert set(loaded) == expected
    assert sorted(os.listdir(store.root / DEVICE)) == [".smoke.lock", "smoke.json"]


def fail_replace(*args: object) -> None:
    raise OSError("disk unplugged mid-update")


@pytest.mark.parametrize("existing", [True, False])
def test_a_failed_replace_leaves_the_old_file_and_no_temp(
    store: BaselineStore, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    path = store.path_for(DEVICE, PROFILE)
    if existing:
        store.update(DEVICE, PROFILE, 1, [entry()])
    before = path.read_bytes() if existing else None
    monkeypatch.setattr(os, "replace", fail_replace)
    with pytest.raises(OSError, match="unplugged"):
        store.update(DEVICE, PROFILE, 1, [entry("t::new")])
    assert (path.read_bytes() if existing else None) == before
    assert sorted(os.listdir(path.parent)) == [".smoke.lock", "smoke.json"][: 2 if existing else 1]


# --- pruning ---


def test_prune_removes_only_stale_tests(store: BaselineStore) -> None:
    store.update(DEVICE, PROFILE, 1, [entry("t::kept"), entry("t::gone"), entry("t::gone", "latency"), entry("t::old")])
    other = store.update(DEVICE, PROFILE, 2, [entry("t::gone")])
    other_bytes = other.read_bytes()
    assert store.prune(DEVICE, PROFILE, 1, ["t::kept", "t::never-recorded"]) == ["t::gone", "t::old"]
    assert list(store.load(DEVICE, PROFILE)) == [("t::kept", "throughput")]
    assert other.read_bytes() == other_bytes


def test_prune_with_nothing_stale_does_not_write(store: BaselineStore, monkeypatch: pytest.MonkeyPatch) -> None:
    path = store.update(DEVICE, PROFILE, 1, [entry("t::kept")])
    before = path.stat()
    monkeypatch.setattr(os, "replace", fail_replace)  # any write would raise
    assert store.prune(DEVICE, PROFILE, 1, {"t::kept"}) == []
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert store.prune(DEVICE, "missing", 1, set()) == []
    assert not store.path_for(DEVICE, "missing").exists()


def test_prune_refuses_a_corrupt_file(store: BaselineStore) -> None:
    path = write(store, "{")
    with pytest.raises(StoreError, match="line 1, column 2"):
        store.prune(DEVICE, PROFILE, 1, set())
    assert path.read_bytes() == b"{"


def test_stale_tests_are_those_of_collected_or_vanished_files_only(tmp_path: Path) -> None:
    from pytest_accel.judgement.recording import stale_tests

    (tmp_path / "kept.py").write_text("")
    (tmp_path / "other.py").write_text("")
    recorded = ["kept.py::test_a", "kept.py::test_gone", "other.py::test_b", "deleted.py::test_c"]
    # other.py was not collected in this run (a -k elsewhere, a partial path): its entries are not judged.
    assert stale_tests(recorded, {"kept.py::test_a"}, tmp_path) == ["deleted.py::test_c", "kept.py::test_gone"]
