"""An SQLite index of a history folder: the nights' figures, read once and queried fast. Pure: stdlib ``sqlite3``.

The folder stays the record; the index mirrors the folder it was last refreshed from, incrementally:
a file whose path, size and modification time are unchanged is not read again, a changed one is
re-read, one no longer there dropped. Reading a folder validates every file (milliseconds each for
50 measurements), so a history of thousands of nights takes seconds to scan; its index answers in a
fraction of that (docs/studies/history/README.md has the figures).

The index carries its schema version. A newer one is refused (written by a newer pytest-accel); an
older one is rebuilt from the folder, which loses nothing. A file that is not an index (another
database, or tables of another shape under the right version) is never touched, and one that cannot
be written (read-only) is named: ``HistoryIndexError``, never an ``sqlite3`` traceback.

Several jobs may open one index at once. Every write (the first build, a refresh) runs in one
``BEGIN IMMEDIATE`` transaction, which takes the file's write lock before anything is read: a second
process building the same new index waits for the first (up to ``LOCK_TIMEOUT_SECONDS``), then finds
its tables and its files already there, instead of inserting the same paths again.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
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
# The columns each table must have: an index of the right version with other tables is not ours.
_COLUMNS = {
    "schema_version": ("version",),
    "files": ("id", "path", "size", "mtime_ns", "device_key", "date", "label", "file_name", "commit_id"),
    "figures": ("file_id", "test", "metric", "compared", "items_per_second"),
}
# How long a process waits for another one's write (a first build of thousands of nights takes seconds).
LOCK_TIMEOUT_SECONDS = 120.0


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
            # Autocommit: every write is an explicit BEGIN IMMEDIATE transaction (``_writing``).
            self.connection = sqlite3.connect(path, timeout=LOCK_TIMEOUT_SECONDS, isolation_level=None)
        except sqlite3.Error as error:
            raise HistoryIndexError(f"{path}: cannot open: {error}") from None
        try:
            self.connection.execute("PRAGMA foreign_keys = ON")
            self._check_schema()
        except sqlite3.DatabaseError as error:  # "file is not a database", among others
            self.connection.close()
            raise self._unusable(error) from None
        except HistoryIndexError:
            self.connection.close()
            raise

    def _unusable(self, error: sqlite3.Error) -> HistoryIndexError:
        """What an ``sqlite3`` error means for this file, named."""
        text = str(error)
        if "readonly" in text or "read-only" in text:
            return HistoryIndexError(
                f"{self.path}: cannot write the index ({text}): make it writable, or give another --db"
            )
        if "locked" in text or "busy" in text:
            return HistoryIndexError(
                f"{self.path}: another process held the index for {LOCK_TIMEOUT_SECONDS:g} s ({text}); try again"
            )
        if isinstance(error, sqlite3.OperationalError | sqlite3.IntegrityError):
            return HistoryIndexError(f"{self.path}: cannot use the index ({text}); not touched")
        return HistoryIndexError(f"{self.path}: not an SQLite file ({text}); not touched")

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction that holds the file's write lock from its start (see the module docstring)."""
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield self.connection
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    def __enter__(self) -> HistoryIndex:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.connection.close()

    def _check_schema(self) -> None:
        """Create the tables in a new file; refuse a newer schema or a foreign database; rebuild an older one.
        An index that is right is only read (a read-only one serves queries); a change is re-decided under the
        write lock, since another process may have made it meanwhile."""
        if self._schema_state() == "current":
            return
        with self._writing() as connection:
            state = self._schema_state()
            if state == "older":  # derived from the folder: rebuilding loses nothing
                for table in ("figures", "files", "schema_version"):
                    connection.execute(f"DROP TABLE IF EXISTS {table}")
            if state != "current":
                for statement in _TABLES.split(";"):
                    if statement.strip():
                        connection.execute(statement)
                connection.execute("INSERT INTO schema_version VALUES (?)", (INDEX_SCHEMA,))

    def _schema_state(self) -> str:
        """ "empty", "older" or "current"; ``HistoryIndexError`` for a newer or a foreign file."""
        connection = self.connection
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return "empty"
        if "schema_version" not in tables or not tables <= set(_OURS):
            raise HistoryIndexError(f"{self.path}: an SQLite file, but not a pytest-accel history index; not touched")
        versions = [row[0] for row in connection.execute("SELECT version FROM schema_version")]
        if len(versions) != 1 or not isinstance(versions[0], int):
            raise HistoryIndexError(f"{self.path}: schema_version must hold one integer, holds {versions!r}")
        if versions[0] > INDEX_SCHEMA:
            raise HistoryIndexError(
                f"{self.path}: written by a newer pytest-accel (index schema {versions[0]}; this one reads "
                f"{INDEX_SCHEMA}): upgrade, or give another --db file"
            )
        if versions[0] < INDEX_SCHEMA:
            return "older"
        self._check_columns(connection, tables)
        return "current"

    def _check_columns(self, connection: sqlite3.Connection, tables: set[str]) -> None:
        """Refuse tables of another shape under this schema version (an index a tool or a person altered)."""
        for table, columns in _COLUMNS.items():
            found = tuple(row[1] for row in connection.execute(f"PRAGMA table_info({table})"))
            if table not in tables or found != columns:
                raise HistoryIndexError(
                    f"{self.path}: index schema {INDEX_SCHEMA}, but its table {table!r} has columns "
                    f"{', '.join(found) or 'none'} (expected {', '.join(columns)}): not a pytest-accel history "
                    "index; not touched (delete it to rebuild)"
                )

    def refresh(self, folder: Path) -> Refreshed:
        """Bring the index up to date with the result files under ``folder`` (``ResultsError``: a bad file;
        ``HistoryIndexError``: an index that cannot be written)."""
        on_disk = {}
        for path in result_paths(folder):
            status = path.stat()
            on_disk[str(path.resolve())] = (path, status.st_size, status.st_mtime_ns)
        try:
            return self._refresh(on_disk)
        except sqlite3.Error as error:
            raise self._unusable(error) from None

    def _known(self) -> dict[str, tuple[int, int, int]]:
        """Indexed path -> (row id, size, modification time)."""
        return {row[0]: row[1:] for row in self.connection.execute("SELECT path, id, size, mtime_ns FROM files")}

    def _refresh(self, on_disk: dict[str, tuple[Path, int, int]]) -> Refreshed:
        known = self._known()
        if known.keys() == on_disk.keys() and all(known[k][1:] == on_disk[k][1:] for k in known):
            return Refreshed(0, len(known), 0)  # up to date: nothing written (a read-only index serves)
        read = kept = 0
        # One transaction, locked before the index is read again: a bad file leaves the index as it was, and
        # a second refresher reads what the first wrote.
        with self._writing():
            known = self._known()
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
        try:
            return self._nights()
        except sqlite3.Error as error:
            raise self._unusable(error) from None

    def _nights(self) -> list[Night]:
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
