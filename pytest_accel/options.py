"""Reading ini options: typed, validated, a usage error naming the option when a value is bad."""

from __future__ import annotations

import math

import pytest

__all__ = ["ini_bool", "ini_choice", "ini_float", "ini_int"]


def ini_float(config: pytest.Config, name: str) -> float:
    """The ini option ``name`` as a float; a bad value is a usage error naming it."""
    raw = config.getini(name)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"ini option {name} = {raw!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise pytest.UsageError(f"ini option {name} = {raw!r} must be a finite number greater than 0")
    return value


def ini_bool(config: pytest.Config, name: str) -> bool:
    """The ini option ``name`` as a bool; a bad value is a usage error naming it."""
    raw = str(config.getini(name)).strip().lower()
    if raw not in ("true", "false", "1", "0", "yes", "no"):
        raise pytest.UsageError(f"ini option {name} = {raw!r}; use true or false")
    return raw in ("true", "1", "yes")


def ini_int(config: pytest.Config, name: str, minimum: int) -> int:
    """The ini option ``name`` as a int; a bad value is a usage error naming it."""
    raw = config.getini(name)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"ini option {name} = {raw!r} is not an integer") from None
    if value < minimum:
        raise pytest.UsageError(f"ini option {name} = {raw!r} must be at least {minimum}")
    return value


def ini_choice(config: pytest.Config, name: str, choices: tuple[str, ...]) -> str:
    """The ini option ``name`` as a choice; a bad value is a usage error naming it."""
    value = str(config.getini(name))
    if value not in choices:
        raise pytest.UsageError(f"ini option {name} = {value!r}; choose one of {', '.join(choices)}")
    return value
