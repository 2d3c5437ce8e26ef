"""The nightly history as a folder of result files: how a night is filed, and how the folder is read.

Pure: no torch, no pytest. The layout, one file per night and device::

    FOLDER/<device key>/<date>-<commit>-<run>.json

Each file is an ``--accel-json`` result file, validated on the way in, whose provenance also names the
commit, the runner and the run. A folder of plain files is what a git branch holds: the nightly keeps
its history on a data branch, where nothing expires, and ``pytest-accel history`` reads the branch's
checkout (or any folder of result files, at any depth); a night's bisect starts at the newest earlier
night that judged its regressed tests unchanged (``last_good_night``).

Filing is atomic (storage/files.py: a temporary file renamed into place) and serialised by an
exclusive ``flock`` on ``FOLDER/.pytest-accel.lock``, so two jobs filing into one folder at once
cannot interleave; a file of the same name is never overwritten: the identical file is a no-op,
a different one an error.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import final

from pytest_accel.core.outcomes import Outcome
from pytest_accel.core.stats import median
from pytest_accel.judgement.results import ResultFile, ResultsError, load_results, read_results, stamped_bytes
from pytest_accel.judgement.verdict import VerdictRecord
from pytest_accel.storage.files import StoreError, locked, write_atomically

__all__ = [
    "LOCK_NAME",
    "PROVENANCE_KEYS",
    "Figure",
    "HistoryError",
    "Night",
    "Stamp",
    "archive",
    "archive_name",
    "by_device",
    "last_good_night",
    "night_of",
    "read_folder",
    "recent_figures",
    "regressed_tests",
    "result_paths",
]

LOCK_NAME = ".pytest-accel.lock"  # in the history folder; hidden, so readers and `git add <device>/` skip it
# What filing adds to a result file's provenance, where the run did not record it itself.
PROVENANCE_KEYS = ("commit", "runner", "run")
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")  # a device key usable as one folder name
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class HistoryError(Exception):
    """A history folder or a file for it that cannot be used; the message names the path and why."""


@final
@dataclass(frozen=True)
class Figure:
    """One measurement's figures on one night: what the history table and its change points read."""

    compared: float  # median of the compared samples (time relative to the reference kernel, else seconds)
    items_per_second: float


@final
@dataclass(frozen=True)
class Night:
    """One result file of the history, reduced to what ``pytest-accel history`` shows."""

    device_key: str
    date: str  # ISO 8601 as written by the run; "" for files written before dates were recorded
    label: str  # the night's name in tables: its date, else the file's stem
    file_name: str  # orders two files of one date
    commit: str  # from the provenance; "" when unknown
    figures: Mapping[tuple[str, str], Figure]  # (test id, metric) -> figures; timed measurements only

    @property
    def order(self) -> tuple[str, str]:
        """Nights sort by date, then file name (the order the history has always used)."""
        return (self.date, self.file_name)


def night_of(result: ResultFile) -> Night:
    """The night a result file records (measurements with timing disabled have no figures, and are left out)."""
    figures = {
        key: Figure(median(m.compared_samples), m.items_per_second)
        for key, m in result.measurements.items()
        if not m.disabled
    }
    return Night(
        device_key=result.device_key,
        date=result.date,
        label=result.date[:10] or result.path.stem,
        file_name=result.path.name,
        commit=result.provenance.get("commit", ""),
        figures=figures,
    )


def result_paths(folder: Path) -> list[Path]:
    """Every ``*.json`` under ``folder``, at any depth, outside hidden folders (``.git``) and hidden files."""
    if not folder.is_dir():
        raise HistoryError(f"{folder}: no such folder")
    found = (path for path in folder.rglob("*.json") if path.is_file())
    paths = sorted(p for p in found if not any(part.startswith(".") for part in p.relative_to(folder).parts))
    if not paths:
        raise HistoryError(f"{folder}: no result files (*.json)")
    return paths


def read_folder(folder: Path) -> list[Night]:
    """Every result file under ``folder``, validated, as nights (``ResultsError`` names a bad file)."""
    return [night_of(load_results(path)) for path in result_paths(folder)]


def recent_figures(folder: Path, device_key: str, limit: int) -> dict[tuple[str, str], list[tuple[float, bool]]]:
    """Each measurement's (compared figure, relative to the reference kernel?) on the newest ``limit`` nights of
    ``device_key`` in the history ``folder``, oldest first: the series a figure's drift is read from.

    The nights filed as the nightly files them (``FOLDER/<device key>/``) are read, newest ``limit`` only;
    a folder of another layout is read whole. ``HistoryError`` or ``ResultsError`` names a bad folder or file.
    """
    filed = folder / device_key
    if filed.is_dir():
        results = [load_results(path) for path in sorted(result_paths(filed), key=lambda p: p.name)[-limit:]]
    else:
        results = [result for result in map(load_results, result_paths(folder)) if result.device_key == device_key]
    results = sorted(results, key=lambda result: (result.date, result.path.name))[-limit:]
    series: dict[tuple[str, str], list[tuple[float, bool]]] = {}
    for result in results:
        for key, m in result.measurements.items():
            if not m.disabled:
                series.setdefault(key, []).append((median(m.compared_samples), bool(m.probe_samples)))
    return series


def by_device(nights: Sequence[Night]) -> dict[str, list[Night]]:
    """Nights grouped by device key (keys in order), each device's in night order."""
    grouped: dict[str, list[Night]] = {}
    for night in nights:
        grouped.setdefault(night.device_key, []).append(night)
    return {key: sorted(grouped[key], key=lambda n: n.order) for key in sorted(grouped)}


@final
@dataclass(frozen=True)
class Stamp:
    """What filing records beside a night's own provenance; None: not known, and not recorded."""

    commit: str | None  # the commit measured; None: the file name says "unknown"
    runner: str | None  # the machine that ran it
    run: str | None  # the CI run (id and attempt); None: the file name carries a hash of the file instead


def _slug(text: str, limit: int) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "", text)[:limit]


def archive_name(result: ResultFile, stamp: Stamp, content: bytes) -> Path:
    """``<device key>/<date>-<commit>-<run>.json`` for a result file (``content``: its bytes, hashed without a run)."""
    if not result.device_key or not result.measurements:
        raise HistoryError(
            f"{result.path}: measured nothing (no result: a -k or marker that selected no perf test?); nothing to file"
        )
    if not _SAFE.fullmatch(result.device_key) or ".." in result.device_key:
        raise HistoryError(f"{result.path}: device key {result.device_key!r} cannot name a folder")
    date = result.date[:10]
    if not _DATE.fullmatch(date):
        raise HistoryError(f"{result.path}: no date (written by a pytest-accel older than dates); cannot be filed")
    commit = _slug((stamp.commit or "").split("+")[0], 12) or "unknown"
    run = _slug(stamp.run or "", 40) or "h" + hashlib.sha256(content).hexdigest()[:12]
    return Path(result.device_key) / f"{date}-{commit}-{run}.json"


def archive(source: Path, folder: Path, stamp: Stamp) -> tuple[Path, bool]:
    """File one result file into the history ``folder``; returns (its path there, whether it was written now).

    The identical file already there is not written again; a different file of the same name is an error.
    """
    content = read_results(source)  # read once: what is validated is what is filed
    result = load_results(source, content)  # ResultsError: not a valid result file
    target = folder / archive_name(result, stamp, content)
    try:
        data = stamped_bytes(
            result, content, dict(zip(PROVENANCE_KEYS, (stamp.commit, stamp.runner, stamp.run), strict=True))
        )
        folder.mkdir(parents=True, exist_ok=True)
        with locked(folder / LOCK_NAME):  # blocks until another filer is done
            if target.is_file() and target.read_bytes() == data:
                return target, False
            if target.exists() or target.is_symlink():
                raise HistoryError(
                    f"{target}: already holds a different result file; not overwritten"
                    " (another run that night? --run-id)"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, data)
    except (ResultsError, StoreError) as error:
        raise HistoryError(str(error)) from None
    except OSError as error:
        raise HistoryError(f"{target}: cannot write: {error.strerror or error}") from None
    return target, True


def regressed_tests(path: Path) -> list[str]:
    """The tests a result file calls slower than their baseline (``ResultsError`` names a bad file): what a bisect
    by time can search. Peak memory and what ran have their own diffs (ab's memory verdict; the structural record)."""
    verdicts = load_results(path).verdicts
    return sorted({test for (test, _), v in verdicts.items() if v is not None and v.time.outcome is Outcome.REGRESSED})


_FAST = (Outcome.UNCHANGED, Outcome.IMPROVED)


def last_good_night(history: Path, result_path: Path, tests: Sequence[str], usable: Callable[[str], bool]) -> str:
    """The commit of the newest night of ``history``, on the result file's device and before it, whose time
    verdict of every one of ``tests`` was unchanged or improved (a noisy night is no evidence of a fast one)
    and whose commit is ``usable`` (an ancestor of the bad one): where a bisect of that file's regressions starts."""
    tonight = load_results(result_path)
    nights = []
    for path in result_paths(history):
        night = load_results(path)
        commit = night.provenance.get("commit", "")
        if night.device_key != tonight.device_key or not commit or (tonight.date and night.date >= tonight.date):
            continue
        verdicts: dict[str, list[VerdictRecord | None]] = {}
        for (test, _), verdict in night.verdicts.items():
            verdicts.setdefault(test, []).append(verdict)
        fast = {t for t, vs in verdicts.items() if all(v is not None and v.time.outcome in _FAST for v in vs)}
        if set(tests) <= fast and usable(commit):
            nights.append((night.date, path.name, commit))
    if not nights:
        raise HistoryError(
            f"{history}: no night on {tonight.device_key} before {tonight.date or result_path.name} judged "
            f"{', '.join(tests)} unchanged or faster at an ancestor of the bad commit: give --good REV"
        )
    return max(nights)[2]
