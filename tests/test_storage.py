"""The one file layer: strict reading, canonical writing, the versioned entry files (storage/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_accel.core.validation import Invalid
from pytest_accel.judgement.structures import StructureStore
from pytest_accel.storage.entries import EntryFiles
from pytest_accel.storage.files import StoreError, encode, read_document, write_atomically


def _number(test: str, metric: str, data: object, where: str) -> float:
    if not isinstance(data, (int, float)):
        raise Invalid(f"entries[{test!r}][{metric!r}]", "expected a number")
    return float(data)


def test_encode_is_canonical_and_writes_no_infinity() -> None:
    assert encode({"b": 1, "a": "é"}) == '{\n  "a": "é",\n  "b": 1\n}\n'.encode()
    assert json.loads(encode({"a": [float("inf"), 1.5], "b": float("nan")})) == {"a": [None, 1.5], "b": None}


def test_read_document_says_missing_and_names_a_bad_file(tmp_path: Path) -> None:
    assert read_document(tmp_path / "none.json") is None
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1, "a": 2}')
    with pytest.raises(StoreError, match=r"bad\.json: the key 'a' appears twice"):
        read_document(bad)


def test_write_atomically_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    write_atomically(path, b"1\n")
    assert path.stat().st_mode & 0o777 == 0o644
    path.chmod(0o600)
    write_atomically(path, b"2\n")
    assert (path.read_bytes(), path.stat().st_mode & 0o777) == (b"2\n", 0o600)
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_entry_files_merge_and_keep_what_they_were_not_given(tmp_path: Path) -> None:
    files = EntryFiles(tmp_path, _number, "device key")
    files.update("k", "smoke", 1, {("t::a", "throughput"): 1.0})
    files.update("k", "smoke", 1, {("t::b", "throughput"): 2.0})
    assert files.load("k", "smoke") == {("t::a", "throughput"): 1.0, ("t::b", "throughput"): 2.0}
    assert files.prune("k", "smoke", 1, ["t::b"]) == ["t::a"]
    assert files.identify(files.path_for("k", "smoke", 4)) == ("k", "smoke", 4)


def test_a_bad_entry_names_the_file_and_the_key_and_nothing_is_written(tmp_path: Path) -> None:
    files = EntryFiles(tmp_path, _number, "device key")
    path = files.update("k", "smoke", 1, {("t::a", "throughput"): 1.0})
    path.write_text(path.read_text().replace("1.0", '"x"'))
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"smoke\.json: entries\['t::a'\]\['throughput'\]: expected a number"):
        files.update("k", "smoke", 1, {("t::b", "throughput"): 2.0})
    assert path.read_bytes() == before


def test_structural_records_refuse_an_ambiguous_profile_as_baselines_do(tmp_path: Path) -> None:
    """One path rule for both stores: "smoke-w2" would be the file of "smoke" at world size 2."""
    with pytest.raises(ValueError, match="world-size suffix"):
        StructureStore(tmp_path).path_for("cpu-avx2", "smoke-w2")
