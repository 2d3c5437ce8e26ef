"""Files pytest-accel writes and reads: strict JSON in, canonical JSON out, atomic writes under a lock.

Every file format of the package (baselines, structural records, result files, the history, the
peaks cache) reads and writes through here, so a file is decoded by one strict parser (a duplicate
key, a NaN, a truncated file are errors naming the file) and written one way: a temporary file
beside it, fsync, ``os.replace``, so a reader or a crash sees the old file or the new one, never a
mix. Pure: stdlib only.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from pytest_accel.core.validation import Invalid, decode_json

__all__ = ["StoreError", "encode", "locked", "read_document", "write_atomically"]

# Mode of a newly created file: baselines and histories are meant to be committed and read by everyone.
NEW_FILE_MODE = 0o644


class StoreError(Exception):
    """A file that cannot be used or written; the message names the file and the problem."""


def read_document(path: Path) -> object | None:
    """The JSON value in ``path``, None when there is no file; ``StoreError`` naming the file otherwise."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:  # a folder where the file should be, a file where a folder should, a link loop
        raise StoreError(f"{path}: cannot read: {error.strerror or error}") from None
    return decode(raw, str(path))


def decode(raw: bytes, where: str) -> object:
    """The JSON value in a file's bytes, or a ``StoreError`` that says where the syntax broke."""
    try:
        return decode_json(raw, where)
    except Invalid as invalid:
        raise StoreError(str(invalid)) from None


def encode(document: Any) -> bytes:
    """A document's bytes: sorted keys, two-space indent, UTF-8, a trailing newline; equal content, equal bytes.

    JSON has no NaN and no infinity (``jq`` and most readers refuse Python's ``Infinity``): a
    non-finite number, such as the open end of an interval of one pair, is written ``null``.
    """
    try:
        text = json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError:  # rare: walk the document once more, writing null for each non-finite number
        text = json.dumps(_finite(document), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode()


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: a reader (or a crash) sees the old file or the new one, never a mix."""
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else NEW_FILE_MODE
    descriptor, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
            os.fchmod(stream.fileno(), mode)
        os.replace(temp_name, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    # Make the rename itself durable; best effort, as some file systems refuse to fsync a folder.
    with suppress(OSError):
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


@contextmanager
def locked(lock: Path, guarded: Path | None = None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the file ``lock`` (created, and left in place) across processes.

    ``guarded``: the file the lock protects. Every writer of it holds this lock, so a temporary file of
    it found now was left by a writer killed mid-write: it is removed, or they pile up.
    """
    import fcntl  # POSIX only: imported here so that reading files works everywhere

    try:
        handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as error:
        raise StoreError(f"{lock.parent}: cannot lock: {error.strerror or error}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if guarded is not None:
            for stale in guarded.parent.glob(f".{guarded.name}.*.tmp"):
                with suppress(FileNotFoundError):
                    stale.unlink()
        yield
    finally:
        os.close(handle)  # closing releases the lock
