"""Workload builders for the perf suite: shapes and callables, no pytest."""

from __future__ import annotations

import importlib.util

__all__ = ["installed"]


def installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it.

    ``importlib.util.find_spec("a.b")`` raises when package ``a`` is missing; here that is "no".
    """
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a missing or broken parent package
        return False
