"""``pytest-accel ab``'s comparison file (``<out>/comparison.json``): its schema, its name, and its reading.

``commands/ab.py`` writes it; every reader (the recorded-build sitting, a person's script) reads it through
``load_comparison``, which checks the schema and each row, so a file of another version or a broken row is
named, never half read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from pytest_accel.judgement.paired import PairedVerdict
from pytest_accel.storage.files import StoreError, read_document

__all__ = ["COMPARISON_FILE", "COMPARISON_SCHEMA", "Comparison", "ComparisonError", "load_comparison"]

COMPARISON_SCHEMA = 1
COMPARISON_FILE = "comparison.json"


class ComparisonError(Exception):
    """A comparison file that cannot be read: its path and what is wrong."""


@final
@dataclass(frozen=True)
class Comparison:
    """What a sitting concluded: each (test, metric)'s paired verdict, and the exit code ``ab`` gave."""

    exit_code: int
    verdicts: Mapping[tuple[str, str], PairedVerdict]

    def verdict_for(self, test: str, metric: str) -> PairedVerdict | None:
        return self.verdicts.get((test, metric))


def load_comparison(out: Path) -> Comparison | None:
    """The comparison file in ``ab``'s ``--out`` folder ``out``; None when there is none."""
    path = out / COMPARISON_FILE
    try:
        document = read_document(path)
    except StoreError as error:
        raise ComparisonError(str(error)) from None
    if document is None:
        return None
    if not isinstance(document, dict) or document.get("schema") != COMPARISON_SCHEMA:
        found = document.get("schema") if isinstance(document, dict) else type(document).__name__
        raise ComparisonError(f"{path}: schema {found!r}, this pytest-accel reads {COMPARISON_SCHEMA}")
    rows, exit_code = document.get("tests"), document.get("exit_code")
    if not isinstance(rows, list) or not isinstance(exit_code, int):
        raise ComparisonError(f"{path}: 'tests' must be a list and 'exit_code' an integer")
    verdicts: dict[tuple[str, str], PairedVerdict] = {}
    for index, row in enumerate(rows):
        verdicts[_key(row, path, index)] = _verdict(row, path, index)
    return Comparison(exit_code, verdicts)


def _key(row: Any, path: Path, index: int) -> tuple[str, str]:
    if not isinstance(row, dict) or not isinstance(row.get("test"), str) or not isinstance(row.get("metric"), str):
        raise ComparisonError(f"{path}: tests[{index}] must name its 'test' and 'metric'")
    return row["test"], row["metric"]


def _verdict(row: dict[str, Any], path: Path, index: int) -> PairedVerdict:
    try:
        return PairedVerdict.from_dict(row)
    except (KeyError, TypeError, ValueError) as error:
        raise ComparisonError(f"{path}: tests[{index}]: {error}") from None
