"""Validation of JSON read from files: every problem named by its key path, no file ever trusted.

Shared by the baseline store and the result-file reader, which must be equally strict; and the
numbers and paths written as text in options (the plugin's and the command line's). Pure: no torch, no pytest.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "SAMPLES_PROBLEM",
    "Invalid",
    "at_least_zero",
    "byte_count",
    "check_plain_json",
    "count",
    "decode_json",
    "encodable",
    "finite",
    "integer_text",
    "line_at",
    "number_text",
    "parse_output_folder",
    "parse_output_path",
    "positive",
    "samples",
    "show",
    "states",
    "text",
]

# Longest quotation of an offending value in an error message.
_SHOWN_VALUE_CHARS = 60
# What a samples list must be, the start of every message about one (tools may search for it).
SAMPLES_PROBLEM = "expected a list of positive finite numbers"


class Invalid(Exception):
    """A content problem at a key path, raised before the file it belongs to is named."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path

    @property
    def key(self) -> str | None:
        """The first key of the path (``samples`` of ``samples``, ``state`` of ``state['x']``), when it names one."""
        named = re.match(r"'?([A-Za-z_][A-Za-z0-9_]*)", self.path)
        return named.group(1) if named else None


def show(value: object) -> str:
    """A short quotation of a JSON value for an error message."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    quoted = repr(value)
    return quoted if len(quoted) <= _SHOWN_VALUE_CHARS else quoted[: _SHOWN_VALUE_CHARS - 3] + "..."


def finite(value: object) -> float | None:
    """The value as a float when it is a finite number (bools are not numbers here), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float range
        return None
    return number if math.isfinite(number) else None


def number_text(text: Any, *, zero_allowed: bool = False) -> float:
    """A number written as text (an option's value): finite, and > 0 (>= 0 with ``zero_allowed``).

    Raises ``ValueError`` quoting the text and saying what is wrong; the caller names the option.
    """
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_allowed):
        raise ValueError(f"{text!r} must be a finite number {'>= 0' if zero_allowed else 'greater than 0'}")
    return value


def integer_text(text: Any, minimum: int) -> int:
    """An integer written as text (an option's value), at least ``minimum``; ``ValueError`` as ``number_text``."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"{text!r} must be at least {minimum}")
    return value


def encodable(text: str) -> bool:
    """Whether the string is valid Unicode text (JSON escapes can smuggle in lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text(value: object, path: str) -> str:
    if not isinstance(value, str) or not value or not encodable(value):
        raise Invalid(path, f"expected a non-empty string, got {show(value)}")
    return value


def positive(value: object, path: str) -> float:
    number = finite(value)
    if number is None or number <= 0:
        raise Invalid(path, f"expected a positive finite number, got {show(value)}")
    return number


def at_least_zero(value: object, path: str, *, optional: bool) -> float | None:
    if value is None and optional:
        return None
    number = finite(value)
    if number is None or number < 0:
        raise Invalid(path, f"expected {'null or ' if optional else ''}a finite number >= 0, got {show(value)}")
    return number


def count(value: object, path: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise Invalid(path, f"expected an integer >= {minimum}, got {show(value)}")
    return value


def samples(value: object, path: str, *, allow_empty: bool) -> tuple[float, ...]:
    if not isinstance(value, (list, tuple)):
        raise Invalid(path, f"{SAMPLES_PROBLEM}, got {show(value)}")
    if not value and not allow_empty:
        raise Invalid(path, f"{SAMPLES_PROBLEM}, got an empty list")
    if all(type(item) is float and 0 < item < math.inf for item in value):  # the common case, in one pass
        return tuple(value)
    samples = []
    for index, item in enumerate(value):
        number = finite(item)
        if number is None or number <= 0:
            raise Invalid(path, f"{SAMPLES_PROBLEM}, item {index} is {show(item)}")
        samples.append(number)
    return tuple(samples)


def states(value: object, path: str) -> tuple[dict[str, float], ...]:
    """Recorded machine states: a list of objects of probe name -> seconds per call (or share), finite, >= 0."""
    if not isinstance(value, (list, tuple)):
        raise Invalid(path, f"expected a list of objects of numbers >= 0, got {show(value)}")
    states = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise Invalid(f"{path}[{index}]", f"expected an object of numbers >= 0, got {show(item)}")
        state = {}
        for name, seconds in item.items():
            text(name, f"{path}[{index}] (probe name)")
            number = finite(seconds)
            if number is None or number < 0:
                raise Invalid(f"{path}[{index}][{name!r}]", f"expected a finite number >= 0, got {show(seconds)}")
            state[name] = number
        states.append(state)
    return tuple(states)


def byte_count(value: object, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(path, f"expected null or an integer >= 0, got {show(value)}")
    return value


def check_plain_json(value: object, path: str) -> None:
    """Refuse non-finite numbers and lone surrogates anywhere (they would not survive a rewrite)."""
    pending: list[tuple[object, str]] = [(value, path)]
    while pending:  # iterative: nesting as deep as json accepts must not overflow the stack
        item, where = pending.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise Invalid(where, f"{item!r} is not a finite number")
        if isinstance(item, str) and not encodable(item):
            raise Invalid(where, "contains a lone surrogate, which is not text")
        if isinstance(item, dict):
            for key, child in item.items():
                if not encodable(key):
                    raise Invalid(where, f"key {key!r} contains a lone surrogate, which is not text")
                pending.append((child, f"{where}[{key!r}]"))
        elif isinstance(item, list):
            pending.extend((child, f"{where}[{index}]") for index, child in enumerate(item))


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict; a key given twice is refused (json.loads would keep the last)."""
    result = dict(pairs)
    if len(result) < len(pairs):  # rare: find the key given twice
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


def decode_json(raw: bytes, where: str) -> object:
    """The JSON value in a file's bytes, or ``Invalid`` saying where it broke (``where``: the file)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Invalid(where, f"not UTF-8 text (byte {error.start})") from None
    if not text.strip():
        raise Invalid(where, "the file is empty (expected a JSON object)")
    try:
        return json.loads(text, object_pairs_hook=_refuse_duplicate_keys)
    except _DuplicateKey as duplicate:
        problem = f"the key {duplicate.key!r} appears twice in one object (a hand edit? which one is meant?)"
        raise Invalid(where, problem) from None
    except json.JSONDecodeError as error:
        raise Invalid(where, f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    except (ValueError, RecursionError) as error:  # an int too long to convert; nesting too deep
        raise Invalid(where, f"invalid JSON: {error}") from None


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _skip(text: str, pos: int) -> int:
    """The offset of the first character at or after ``pos`` that is not JSON whitespace."""
    found = _SPACE.match(text, pos)
    assert found is not None  # the pattern matches the empty string
    return found.end()


def line_at(text: str, path: Sequence[str | int]) -> int | None:
    """The 1-based line where the member at ``path`` (object keys, list indices) of the JSON ``text``
    begins (an object member's key, a list item), whatever the writer's separators, indentation or
    escapes (``jq``'s raw UTF-8, ``json.dumps``'s ``\\u`` escapes, compact ``":"``); None when there is
    no such member. Only the containers on the way are walked; the values beside them are skipped."""
    pos = _skip(text, 1 if text.startswith("\ufeff") else 0)
    start = pos
    for step in path:
        found = _member(text, pos, step)
        if found is None:
            return None
        start, pos = found
    return text.count("\n", 0, start) + 1


def _member(text: str, pos: int, step: str | int) -> tuple[int, int] | None:
    """(where the member begins, where its value begins) in the container at ``pos``, or None."""
    opener = text[pos : pos + 1]
    if opener != ("[" if isinstance(step, int) else "{"):
        return None
    try:
        pos = _skip(text, pos + 1)
        index = 0
        while text[pos : pos + 1] not in ("]", "}", ""):
            start = pos
            if opener == "{":
                key, pos = _DECODER.raw_decode(text, pos)
                pos = _skip(text, pos)
                if text[pos : pos + 1] != ":":
                    return None
                pos = _skip(text, pos + 1)
                if key == step:
                    return start, pos
            elif index == step:
                return start, pos
            _, pos = _DECODER.raw_decode(text, pos)
            pos = _skip(text, pos)
            if text[pos : pos + 1] == ",":
                pos = _skip(text, pos + 1)
            index += 1
    except (json.JSONDecodeError, RecursionError):
        return None
    return None


def parse_output_path(text: str) -> Path:
    """A file path whose folder exists (checked now, not after an hour of measuring)."""
    path = Path(text)
    if path.is_dir():
        raise ValueError(f"{text!r} is a directory; give a file name")
    if not path.parent.is_dir():
        raise ValueError(f"the folder of {text!r} does not exist")
    return path


def parse_output_folder(text: str) -> Path:
    """A folder to write into (made when needed); refused when a file is in its place."""
    path = Path(text)
    for part in (path, *path.parents):
        if part.exists():
            if not part.is_dir():
                raise ValueError(f"{str(part)!r} is a file; --accel-trace needs a folder")
            break
    return path
