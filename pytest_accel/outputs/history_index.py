"""An SQLite index of a history folder: the nights' figures, read once and queried fast. Pure: stdlib ``sqlite3``.

The folder stays the record; the index mirrors the folder it was last refreshed from, incrementally:
a file whose path, size and modification time are unchanged is not read again, a changed one is
re-read, one no longer there dropped. Reading a folder validates every file (milliseconds each for
50 measurements), so a history of thousands of nights takes seconds to scan; its index answers in a
fraction of that (docs/studies/history/README.md has the figures).

The index carries its schema version. A newer one is refused (written by a newer pytest-accel); an
older one is rebuilt from the folder, which loses nothing. A file that is not an index is never touched.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import final

from pytest_accel.judgement.results import load_results
from pytest_accel.outputs.history_store import Figure, Night, night_of, result_paths

__all__ = ["INDEX_SCHEMA", "HistoryIndex", "HistoryIndexError", "Refreshed"]

INDEX_SCHEMA = 1  # version of the tables below this code writes and reads

_TABLES = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,      -- absolute
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    device_key TEXT NOT NULL,
    date TEXT NOT NULL,
    label TEXT NOT NULL,
    file_name TEXT NOT NULL,
    commit_id TEXT NOT NULL
);
CREATE TABLE figures (
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    test TEXT NOT NULL,
    metric TEXT NOT NULL,
    compared REAL NOT NULL,
    items_per_second REAL NOT NULL,
    PRIMARY KEY (file_id, test, metric)
);
CREATE INDEX files_by_night ON files (device_key, date, file_name);
CREATE INDEX figures_by_measurement ON figures (test, metric);
"""
_OURS = ("schema_version", "files", "figures")


class HistoryIndexError(Exception):
    """An index file that cannot be used; the message names the file and why."""


@final
@dataclass(frozen=True)
class Refreshed:
    """What a refresh did: files read (new or changed), kept as they were, dropped (gone from the folder)."""

    read: int
    kept: int
    dropped: int


@final
class HistoryIndex:
    """One index file, open; use as a context manager (``with HistoryIndex(path) as index:``)."""

    __slots__ = ("connection", "path")

    def __init__(self, path: Path) -> None:
        if path.exists() and not path.is_file():
            raise HistoryIndexError(f"{path}: is not a file")
        self.path = path
        try:
            self.connection = sqlite3.connect(path)
        except sqlite3.Error as error:
            raise HistoryIndexError(f"{path}: cannot open: {error}") from None
        try:
            self.connection.execute("PRAGMA foreign_keys = ON")
            self._check_schema()
        except sqlite3.DatabaseError as error:  # "file is not a database", among others
            self.connection.close()
            raise HistoryIndexError(f"{path}: not an SQLite file ({error}); not touched") from None
        except HistoryIndexError:
            self.connection.close()
            raise

    def __enter__(self) -> HistoryIndex:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.connection.close()

    def _check_schema(self) -> None:
        """Create the tables in a new file; refuse a newer schema or a foreign database; rebuild an older one."""
        tables = {row[0] for row in self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            with self.connection:
                self.connection.executescript(_TABLES)
                self.connection.execute("INSERT INTO schema_version VALUES (?)", (INDEX_SCHEMA,))
            return
        if "schema_version" not in tables or not tables <= set(_OURS):
            raise HistoryIndexError(f"{self.path}: an SQLite file, but not a pytest-accel history index; not touched")
        versions = [row[0] for row in self.connection.execute("SELECT version FROM schema_version")]
        if len(versions) != 1 or not isinstance(versions[0], int):
            raise HistoryIndexError(f"{self.path}: schema_version must hold one integer, holds {versions!r}")
        if versions[0] > INDEX_SCHEMA:
            raise HistoryIndexError(
                f"{self.path}: written by a newer pytest-accel (index schema {versions[0]}; this one reads "
                f"{INDEX_SCHEMA}): upgrade, or give another --db file"
            )
        if versions[0] < INDEX_SCHEMA:  # derived from the folder: rebuilding loses nothing
            with self.connection:
                for table in ("figures", "files", "schema_version"):
                    self.connection.execute(f"DROP TABLE IF EXISTS {table}")
            self._check_schema()

    def refresh(self, folder: Path) -> Refreshed:
        """Bring the index up to date with the result files under ``folder`` (``ResultsError``: a bad file)."""
        on_disk = {}
        for path in result_paths(folder):
            status = path.stat()
            on_disk[str(path.resolve())] = (path, status.st_size, status.st_mtime_ns)
        known = {row[0]: row[1:] for row in self.connection.execute("SELECT path, id, size, mtime_ns FROM files")}
        read = kept = 0
        with self.connection:  # one transaction: a bad file leaves the index as it was
            for key, (path, size, mtime_ns) in on_disk.items():
                if key in known and known[key][1:] == (size, mtime_ns):
                    kept += 1
                    continue
                if key in known:
                    self.connection.execute("DELETE FROM files WHERE id = ?", (known[key][0],))
                self.add(key, size, mtime_ns, night_of(load_results(path)))
                read += 1
            gone = [known[key][0] for key in known if key not in on_disk]
            self.connection.executemany("DELETE FROM files WHERE id = ?", [(file_id,) for file_id in gone])
        return Refreshed(read, kept, len(gone))

    def add(self, path: str, size: int, mtime_ns: int, night: Night) -> None:
        """Insert one night (the caller holds the transaction); ``path`` is the file's absolute path."""
        cursor = self.connection.execute(
            "INSERT INTO files (path, size, mtime_ns, device_key, date, label, file_name, commit_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (path, size, mtime_ns, night.device_key, night.date, night.label, night.file_name, night.commit),
        )
        self.connection.executemany(
            "INSERT INTO figures (file_id, test, metric, compared, items_per_second) VALUES (?, ?, ?, ?, ?)",
            [(cursor.lastrowid, *key, f.compared, f.items_per_second) for key, f in night.figures.items()],
        )

    def nights(self) -> list[Night]:
        """Every indexed night, in device and night order."""
        files = self.connection.execute(
            "SELECT id, device_key, date, label, file_name, commit_id FROM files"
            " ORDER BY device_key, date, file_name, path"
        ).fetchall()
        figures: dict[int, dict[tuple[str, str], Figure]] = {row[0]: {} for row in files}
        for file_id, test, metric, compared, rate in self.connection.execute(
            "SELECT file_id, test, metric, compared, items_per_second FROM figures"
        ):
            if file_id in figures:
                figures[file_id][(test, metric)] = Figure(compared, rate)
        return [Night(key, date, label, name, commit, figures[id_]) for id_, key, date, label, name, commit in files]
