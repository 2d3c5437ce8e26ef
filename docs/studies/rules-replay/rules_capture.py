"""A pytest plugin (``-p rules_capture`` with this folder on ``PYTHONPATH``) that records every call of the time and
memory rules (``judge_time``, ``judge_memory``, ``combine``) made in the process, with its inputs and its verdict,
into the pickle file ``$RULES_CAPTURE``. ``replay.py`` then judges the same inputs again and compares."""

from __future__ import annotations

import atexit
import os
import pickle
import sys
from typing import Any

_CALLS: list[tuple[str, tuple[Any, ...], Any]] = []
_NAMES = ("judge_time", "judge_memory", "combine")


def _recording(name: str, rule: Any) -> Any:
    def recorded(*args: Any) -> Any:
        result = rule(*args)
        _CALLS.append((name, args, result))
        return result

    recorded.__wrapped__ = rule  # type: ignore[attr-defined]
    return recorded


def pytest_configure(config: Any) -> None:
    import pytest_accel.judgement.verdict as verdict

    originals = {name: getattr(verdict, name) for name in _NAMES}
    wrapped = {name: _recording(name, rule) for name, rule in originals.items()}
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("pytest_accel"):
            for name in _NAMES:
                if getattr(module, name, None) is originals[name]:
                    setattr(module, name, wrapped[name])


@atexit.register
def _write() -> None:
    path = os.environ.get("RULES_CAPTURE")
    if path and _CALLS:
        with open(f"{path}.{os.getpid()}", "wb") as out:
            pickle.dump(_CALLS, out)
