"""Structural records on disk and the structural verdict: what ran, compared exactly.

Files: ``<root>/structure/<structure key>/<profile>[-w<N>].json``, kept by the entry store that
keeps the baselines (storage/entries.py: atomically, under a lock, only the measured entries rewritten). The key
is what decides a structure (device kind and its dispatch capability, torch version: see
engine/structure.py), not the host generation: one recording on any host of a kind gates every
host of that kind, quiet or busy. Where the key differs the structure is "new", never compared.

Pure: no torch, no pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from pytest_accel.core.outcomes import STRUCTURE, Outcome, outcome_of
from pytest_accel.core.structure import Structure, changes
from pytest_accel.storage.entries import EntryFiles

__all__ = [
    "RECORD_HINT",
    "STRUCTURE_POLICIES",
    "StructureGate",
    "StructureStore",
    "StructureVerdict",
    "judge_structure",
    "structure_failure",
]

# The closing line of every failure a person may want to accept: the command that records the change.
RECORD_HINT = "if intended, accept it"

# What a structural change does to its test: fail it (the default), warn (reported, passes), or
# off (no record is taken).
STRUCTURE_POLICIES = ("fail", "warn", "off")
_FOLDER = "structure"


@final
@dataclass(frozen=True)
class StructureVerdict:
    """``changed`` / ``unchanged`` / ``new``, the lines naming each change, and whether a change fails its test."""

    outcome: Outcome  # one of core.outcomes.STRUCTURE
    lines: tuple[str, ...] = ()
    enforced: bool = True

    @property
    def fails(self) -> bool:
        return self.outcome is Outcome.CHANGED and self.enforced

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome.value, "lines": list(self.lines), "enforced": self.enforced}

    @classmethod
    def from_dict(cls, data: object) -> StructureVerdict:
        """Inverse of ``to_dict``; raises ``ValueError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"structure verdict: expected an object, got {type(data).__name__}")
        outcome, lines, enforced = data.get("outcome"), data.get("lines", []), data.get("enforced", True)
        checked = outcome_of(outcome, STRUCTURE, "structure verdict")
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            raise ValueError("structure verdict: 'lines' must be a list of strings")
        if not isinstance(enforced, bool):
            raise ValueError("structure verdict: 'enforced' must be true or false")
        return cls(checked, tuple(lines), enforced)


def judge_structure(then: Structure | None, now: Structure, enforced: bool) -> StructureVerdict:
    """``now`` against the stored record: every difference is a change (no tolerance: they are counts)."""
    if then is None:
        return StructureVerdict(Outcome.NEW, (f"no structural record for this test under {now.key}",), enforced)
    lines = changes(then, now)
    return StructureVerdict(Outcome.CHANGED if lines else Outcome.UNCHANGED, tuple(lines), enforced)


def structure_failure(test: str, key: str, verdict: StructureVerdict, accept: str) -> str:
    """The failure message of a structural change (the time verdict's failure, if any, goes above it)."""
    body = "\n".join(f"  {line}" for line in verdict.lines)
    return f"perf structure changed: {test.rpartition('::')[2]} (under {key})\n{body}\n  {RECORD_HINT}: {accept}"


def _record(test: str, metric: str, data: object, where: str) -> Structure:
    """One stored record, validated (``Invalid`` names its key path; the store adds the file)."""
    return Structure.from_json(data, f"entries[{test!r}][{metric!r}]")


@final
class StructureStore:
    """The structural records under a baseline root: ``<root>/structure/<key>/<profile>[-w<N>].json``."""

    __slots__ = ("_files", "root")

    def __init__(self, baselines_root: Path) -> None:
        self.root = Path(baselines_root) / _FOLDER
        self._files: EntryFiles[Structure] = EntryFiles(self.root, _record, "structure key")

    def path_for(self, key: str, profile: str, world_size: int = 1) -> Path:
        """The file holding the records of one structure key, profile and world size."""
        return self._files.path_for(key, profile, world_size)

    def load(self, key: str, profile: str, world_size: int = 1) -> dict[tuple[str, str], Structure]:
        """The records of one file by (test, metric); empty when there is none. A bad one: ``StoreError``."""
        return self._files.load(key, profile, world_size)

    def update(self, key: str, profile: str, world_size: int, records: Iterable[tuple[str, str, Structure]]) -> Path:
        """Record the given (test, metric, record)s, keeping every other entry; nothing written if none."""
        given = {(test, metric): record.to_json() for test, metric, record in records}
        return self._files.update(key, profile, world_size, given)


@final
class StructureGate:
    """One run's structural verdicts: records judged against the stored ones, and kept for ``--accel-update``."""

    def __init__(
        self,
        stored: Callable[[], Mapping[tuple[str, str], Structure]],
        update: bool,
        accept: Callable[[str], str] = lambda test: "pytest ... --accel-update -k <this test>",
    ) -> None:
        self._stored = stored  # loaded lazily: a corrupt file is reported by whoever loads it first
        self._update = update
        self._accept = accept  # test id -> the command that records it anew, pasteable as printed
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
        return verdict, structure_failure(test, now.key, verdict, self._accept(test))
