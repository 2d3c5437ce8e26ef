"""The category of pytest-accel's advice warnings (pure: no torch, no pytest)."""

from __future__ import annotations

__all__ = ["AccelAdvice"]


class AccelAdvice(UserWarning):
    """Advice about how a measurement is set up: shown in the warnings summary, never an error."""
