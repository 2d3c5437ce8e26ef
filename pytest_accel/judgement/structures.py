"""Structural records on disk and the structural verdict: what ran, compared exactly.

Files: ``<root>/structure/<structure key>/<profile>[-w<N>].json``, written like baseline files
(atomically, under a lock, only the measured entries rewritten; baselines.py's helpers). The key
is what decides a structure (device kind and its dispatch capability, torch version: see
engine/structure.py), not the host generation: one recording on any host of a kind gates every
host of that kind, quiet or busy. Where the key differs the structure is "new", never compared.

Pure: no torch, no pytest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from pytest_accel.core.structure import Structure, changes
from pytest_accel.core.validation import Invalid, check_plain_json
from pytest_accel.judgement.baselines import (
    SCHEMA_VERSION,
    BaselineError,
    check_header,
    check_name,
    decode_file,
    locked,
    write_atomically,
)

__all__ = [
    "CHANGED",
    "NEW",
    "STRUCTURE_POLICIES",
    "UNCHANGED",
    "StructureGate",
    "StructureStore",
    "StructureVerdict",
    "judge_structure",
    "structure_failure",
]

CHANGED, UNCHANGED, NEW = "changed", "unchanged", "new"
# What a structural change does to its test: fail it (the default), warn (reported, passes), or
# off (no record is taken).
STRUCTURE_POLICIES = ("fail", "warn", "off")
_FOLDER = "structure"


@final
@dataclass(frozen=True)
class StructureVerdict:
    """``changed`` / ``unchanged`` / ``new``, the lines naming each change, and whether a change fails its test."""

    outcome: str
    lines: tuple[str, ...] = ()
    enforced: bool = True

    @property
    def fails(self) -> bool:
        return self.outcome == CHANGED and self.enforced

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "lines": list(self.lines), "enforced": self.enforced}

    @classmethod
    def from_dict(cls, data: object) -> StructureVerdict:
        """Inverse of ``to_dict``; raises ``ValueError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"structure verdict: expected an object, got {type(data).__name__}")
        outcome, lines, enforced = data.get("outcome"), data.get("lines", []), data.get("enforced", True)
        if outcome not in (CHANGED, UNCHANGED, NEW):
            raise ValueError(f"structure verdict: unknown outcome {outcome!r}")
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            raise ValueError("structure verdict: 'lines' must be a list of strings")
        if not isinstance(enforced, bool):
            raise ValueError("structure verdict: 'enforced' must be true or false")
        return cls(outcome, tuple(lines), enforced)


def judge_structure(then: Structure | None, now: Structure, enforced: bool) -> StructureVerdict:
    """``now`` against the stored record: every difference is a change (no tolerance: they are counts)."""
    if then is None:
        return StructureVerdict(NEW, (f"no structural record for this test under {now.key}",), enforced)
    lines = changes(then, now)
    return StructureVerdict(CHANGED if lines else UNCHANGED, tuple(lines), enforced)


def structure_failure(test: str, key: str, verdict: StructureVerdict) -> str:
    """The failure message of a structural change (the time verdict's failure, if any, goes above it)."""
    body = "\n".join(f"  {line}" for line in verdict.lines)
    return (
        f"perf structure changed: {test} under {key}: a different set of operations ran\n{body}\n"
        "  if the change is intended, record it: pytest ... --accel-update -k <this test>"
    )


@final
class StructureStore:
    """The structural records under a baseline root: ``<root>/structure/<key>/<profile>[-w<N>].json``."""

    __slots__ = ("root",)

    def __init__(self, baselines_root: Path) -> None:
        self.root = Path(baselines_root) / _FOLDER

    def path_for(self, key: str, profile: str, world_size: int = 1) -> Path:
        check_name(key, "structure key")
        check_name(profile, "profile")
        return self.root / key / (f"{profile}.json" if world_size == 1 else f"{profile}-w{world_size}.json")

    def _read(self, path: Path, key: str, profile: str, world_size: int) -> dict[str, Any]:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise BaselineError(f"{path}: cannot read: {error.strerror or error}") from None
        document = check_header(decode_file(raw, str(path)), str(path), key, profile, world_size)
        entries: dict[str, Any] = document["entries"]
        try:
            check_plain_json(entries, "entries")
            self._parse(entries)  # every record valid, or nothing is read (and nothing is written over it)
        except Invalid as invalid:
            raise BaselineError(f"{path}: {invalid}") from None
        return entries

    @staticmethod
    def _parse(entries: Mapping[str, Any]) -> dict[tuple[str, str], Structure]:
        records = {}
        for test, metrics in entries.items():
            if not isinstance(metrics, dict):
                raise Invalid(f"entries[{test!r}]", "expected an object of metrics")
            for metric, data in metrics.items():
                records[(test, metric)] = Structure.from_json(data, f"entries[{test!r}][{metric!r}]")
        return records

    def load(self, key: str, profile: str, world_size: int = 1) -> dict[tuple[str, str], Structure]:
        """The records of one file by (test, metric); empty when there is none. A bad one: ``BaselineError``."""
        return self._parse(self._read(self.path_for(key, profile, world_size), key, profile, world_size))

    def update(self, key: str, profile: str, world_size: int, records: Iterable[tuple[str, str, Structure]]) -> Path:
        """Record the given (test, metric, record)s, keeping every other entry; nothing written if none."""
        path = self.path_for(key, profile, world_size)
        given = {(test, metric): record for test, metric, record in records}
        if not given:
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        with locked(path):
            stored = self._read(path, key, profile, world_size)
            for (test, metric), record in given.items():
                stored.setdefault(test, {})[metric] = record.to_json()
            document = {
                "schema": SCHEMA_VERSION,
                "device_key": key,
                "profile": profile,
                "world_size": world_size,
                "entries": stored,
            }
            text = json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
            write_atomically(path, (text + "\n").encode("utf-8"))
        return path


@final
class StructureGate:
    """One run's structural verdicts: records judged against the stored ones, and kept for ``--accel-update``."""

    def __init__(self, stored: Callable[[], Mapping[tuple[str, str], Structure]], update: bool) -> None:
        self._stored = stored  # loaded lazily: a corrupt file is reported by whoever loads it first
        self._update = update
        self.taken: list[tuple[str, str, Structure]] = []

    def expected(self, test: str, metric: str) -> Structure | None:
        """The stored record ``now`` will be judged against; None when there is none or records are being taken."""
        return None if self._update else self._stored().get((test, metric))

    def judge(self, test: str, metric: str, now: Structure, policy: str) -> tuple[StructureVerdict, str | None]:
        """The verdict of one record and its failure message (None unless the change fails the test)."""
        self.taken.append((test, metric, now))
        verdict = judge_structure(self._stored().get((test, metric)), now, enforced=policy == "fail")
        if self._update or not verdict.fails:
            return verdict, None
        return verdict, structure_failure(test, now.key, verdict)
