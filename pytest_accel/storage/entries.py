"""Versioned entry files: ``<root>/<key>/<profile>[-w<N>].json``, merged atomically under a lock.

The one store under the baselines (``key`` = the device key) and the structural records (``key`` =
the structure key). A file holds a header and ``entries[test][metric]``::

    {"schema": 1, "device_key": <key>, "profile": <profile>, "world_size": <N>, "entries": {...}}

``update`` replaces only the pairs it is given and keeps every other entry as it was on disk (extra
keys a newer writer added included). Writing, in pseudo-code::

    with flock(<root>/<key>/.<file stem>.lock):        # one writer per file, across processes
        document = read and validate the file            # corrupt -> StoreError, nothing written
        document.entries[test][metric] = entry           # for each given entry
        write a temp file beside it, fsync, os.replace   # readers see the old or the new file, never half

Pure: stdlib only. What an entry holds is the caller's: it passes a ``parse`` that validates one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar, final

from pytest_accel.core.validation import Invalid, check_plain_json, show
from pytest_accel.storage.files import StoreError, encode, locked, read_document, write_atomically

__all__ = ["SCHEMA_VERSION", "EntryFiles", "check_header", "check_name"]

# Version of the file layout. A reader refuses a higher number: a newer writer may have changed what a
# field means, and guessing would compare against the wrong figure.
SCHEMA_VERSION = 1
# Keys of a file's top level, all required. Unknown ones are refused rather than silently dropped on update.
_TOP_LEVEL_KEYS = ("schema", "device_key", "profile", "world_size", "entries")
# A profile ending like this would name the file of another profile at another world size.
_WORLD_SIZE_SUFFIX = re.compile(r"-w\d+\Z")

T = TypeVar("T")
# Validates one stored entry: (test, metric, its JSON, the file) -> the entry; raises Invalid or StoreError.
Parse = Callable[[str, str, object, str], T]


def check_name(value: str, what: str) -> None:
    """Refuse a name that would leave its folder, hide its file, or be ambiguous."""
    separators = {"/", "\\", os.sep, os.altsep or "/"}
    if (
        not isinstance(value, str)
        or not value
        or value.startswith(".")
        or ".." in value
        or "\0" in value
        or any(separator in value for separator in separators)
    ):
        raise ValueError(f"{what} {value!r} cannot name a baseline folder or file (empty, a path, or hidden)")


def check_header(document: object, where: str, key: str, profile: str, world_size: int) -> dict[str, Any]:
    """The top-level object, once its schema, keys and location fields are right."""
    if not isinstance(document, dict):
        raise StoreError(f"{where}: expected a JSON object at the top level, got {show(document)}")
    schema = document.get("schema")
    if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1:
        found = "it is missing" if "schema" not in document else f"got {show(schema)}"
        raise StoreError(f"{where}: 'schema' must be an integer >= 1 ({found})")
    if schema > SCHEMA_VERSION:
        raise StoreError(
            f"{where}: written by a newer pytest-accel (schema {schema}; this one reads schema {SCHEMA_VERSION}); "
            "upgrade pytest-accel to use it"
        )
    missing = [name for name in _TOP_LEVEL_KEYS if name not in document]
    unknown = sorted(name for name in document if name not in _TOP_LEVEL_KEYS)
    if missing or unknown:
        raise StoreError(f"{where}: top-level keys: missing {missing}, unknown {unknown}")
    for name, expected in (("device_key", key), ("profile", profile), ("world_size", world_size)):
        found = document[name]
        if type(found) is not type(expected) or found != expected:
            raise StoreError(f"{where}: '{name}' is {show(found)} but the file's location says {expected!r}")
    if not isinstance(document["entries"], dict):
        raise StoreError(f"{where}: 'entries': expected an object, got {show(document['entries'])}")
    return document


@final
class EntryFiles(Generic[T]):
    """The entry files under one root folder: ``<root>/<key>/<profile>[-w<N>].json``."""

    __slots__ = ("_parse", "key_name", "root")

    def __init__(self, root: Path, parse: Parse[T], key_name: str) -> None:
        self.root = Path(root)
        self._parse = parse
        self.key_name = key_name  # what the folder's name is, in messages: "device key", "structure key"

    def path_for(self, key: str, profile: str, world_size: int = 1) -> Path:
        """The file holding the entries of one key, profile and world size."""
        check_name(key, self.key_name)
        check_name(profile, "profile")
        if _WORLD_SIZE_SUFFIX.search(profile):
            raise ValueError(f"profile {profile!r} ends like a world-size suffix (-w<N>); choose another name")
        if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
            raise ValueError(f"world size must be an integer >= 1, got {world_size!r}")
        name = profile if world_size == 1 else f"{profile}-w{world_size}"
        return self.root / key / f"{name}.json"

    def read(self, key: str, profile: str, world_size: int) -> tuple[dict[str, Any], dict[tuple[str, str], T]]:
        """The raw ``entries`` object of one file and its validated entries; both empty if there is no file."""
        path = self.path_for(key, profile, world_size)
        document = read_document(path)
        if document is None:
            return {}, {}
        where = str(path)
        entries: dict[str, Any] = check_header(document, where, key, profile, world_size)["entries"]
        parsed: dict[tuple[str, str], T] = {}
        try:
            for test, metrics in entries.items():
                if not isinstance(metrics, dict):
                    raise Invalid(f"entries[{test!r}]", f"expected an object of metrics, got {show(metrics)}")
                for metric, data in metrics.items():
                    parsed[(test, metric)] = self._parse(test, metric, data, where)
            check_plain_json(entries, "entries")
        except Invalid as invalid:
            raise StoreError(f"{where}: {invalid}") from None
        return entries, parsed

    def load(self, key: str, profile: str, world_size: int = 1) -> dict[tuple[str, str], T]:
        """The entries of one file by (test, metric); empty when there is none. Never writes."""
        return self.read(key, profile, world_size)[1]

    def update(self, key: str, profile: str, world_size: int, given: Mapping[tuple[str, str], Any]) -> Path:
        """Write the given (test, metric) -> entry JSON, keeping every other entry; returns the file.

        Nothing is written when nothing is given, or when the file on disk is corrupt (StoreError).
        """
        path = self.path_for(key, profile, world_size)
        if not given:
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        with locked(path.parent / f".{path.stem}.lock", guarded=path):
            stored, _ = self.read(key, profile, world_size)
            for (test, metric), entry in given.items():
                stored.setdefault(test, {})[metric] = entry
            write_atomically(path, self._serialize(key, profile, world_size, stored))
        return path

    def prune(self, key: str, profile: str, world_size: int, keep_tests: Collection[str]) -> list[str]:
        """Remove the entries of tests not in ``keep_tests``; returns their ids, sorted. No write if none."""
        path = self.path_for(key, profile, world_size)
        if not path.exists():
            return []
        keep = set(keep_tests)
        with locked(path.parent / f".{path.stem}.lock", guarded=path):
            stored, _ = self.read(key, profile, world_size)
            stale = sorted(test for test in stored if test not in keep)
            if stale:
                kept = {test: metrics for test, metrics in stored.items() if test in keep}
                write_atomically(path, self._serialize(key, profile, world_size, kept))
        return stale

    def identify(self, path: Path) -> tuple[str, str, int]:
        """(key, profile, world size) of a file under the root, the inverse of ``path_for``.

        Raises ``StoreError`` for a name ``path_for`` would not give.
        """
        key, stem = path.parent.name, path.stem
        profile, world = stem, 1
        suffix = _WORLD_SIZE_SUFFIX.search(stem)
        if suffix is not None:
            profile, world = stem[: suffix.start()], int(suffix.group()[2:])
        try:
            if self.path_for(key, profile, world) != path:
                raise ValueError("not where this store keeps it")
        except ValueError as error:
            raise StoreError(
                f"{path}: not a baseline file name (<{self.key_name}>/<profile>[-w<N>].json): {error}"
            ) from None
        return key, profile, world

    def files(self) -> list[Path]:
        """Every entry file under the root, sorted (lock and temporary files excluded)."""
        if not self.root.is_dir():
            return []
        return sorted(
            path
            for path in self.root.glob("*/*.json")
            if path.is_file() and not path.name.startswith(".") and not path.parent.name.startswith(".")
        )

    @staticmethod
    def _serialize(key: str, profile: str, world_size: int, entries: Mapping[str, Any]) -> bytes:
        document = {
            "schema": SCHEMA_VERSION,
            "device_key": key,
            "profile": profile,
            "world_size": world_size,
            "entries": entries,
        }
        return encode(document)
