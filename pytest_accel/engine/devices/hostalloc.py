"""The host allocator as CPU timing sees it: keep freed memory, as an accelerator's caching allocator does.

Torch's CPU tensors come from the C library's ``malloc``. glibc returns a large freed block to the
kernel (``munmap``, or trimming the heap's top) by thresholds it adjusts at run time, so a kernel
that allocates a large intermediate either reuses warm pages or faults in fresh, zeroed ones, call
by call, depending on what the process freed before. Measured on a 2-core EPYC VM (math SDPA at
SD3's 256 px shape, two 32 MB attention matrices per call; docs/sensitivity.md): 16,000-20,000
page faults in most calls and about 1,500 in some, 61-64 ms against 47-53 ms per call; in the
perf test's rounds, stretches of rounds at 0.55x and at 1.3x of the median, and across processes
a test that ran in one mode or the other. With freed memory kept, the same kernel ran at 31-36 ms
with no page faults: the first figure was half the kernel, half the OS zeroing pages.

``steady`` (the default) tells glibc never to return freed memory (no ``mmap`` for large blocks,
no heap trimming): after warm-up a workload reuses its own pages, as it does on a GPU under torch's
caching allocator, and as Intel's PyTorch CPU tuning guide gets by preloading jemalloc or tcmalloc.
``system`` leaves the C library's defaults. Where a preloaded allocator replaces ``malloc``, or the
C library is not glibc, nothing is changed and the provenance says which allocator ran.
"""

from __future__ import annotations

import ctypes
import os
from functools import cache

__all__ = ["HOST_ALLOCATOR_MODES", "configure_host_allocator", "release_free_memory"]

HOST_ALLOCATOR_MODES = ("steady", "system")

# mallopt(3) parameters (glibc malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
# The largest trim threshold mallopt takes (an int): free memory at the heap's top is never returned.
_NEVER_TRIM = 2**31 - 1
_PRELOADED = ("jemalloc", "tcmalloc", "mimalloc")


@cache
def _glibc() -> ctypes.CDLL | None:
    """The process's glibc, or None (another C library, or none that ctypes can open)."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        libc.gnu_get_libc_version()
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        libc.malloc_trim.argtypes = (ctypes.c_size_t,)
    except (OSError, AttributeError):
        return None
    return libc


def _preloaded(preload: str | None = None) -> str | None:
    """The allocator ``LD_PRELOAD`` puts in front of the C library's malloc, if any."""
    for library in (preload if preload is not None else os.environ.get("LD_PRELOAD", "")).replace(":", " ").split():
        name = os.path.basename(library)
        if any(allocator in name for allocator in _PRELOADED):
            return name
    return None


_steady_applied = False  # mallopt cannot be undone: once set, every later run in this process has it


def configure_host_allocator(mode: str, apply: bool = True) -> str:
    """Apply ``mode`` (one of ``HOST_ALLOCATOR_MODES``) to this process's malloc; return what runs.

    The answer is provenance: ``glibc-steady``, ``glibc``, ``preloaded:<library>`` or ``system``.
    A figure taken under one is not compared with a baseline taken under another. ``apply=False``
    only says what applying would give.
    """
    global _steady_applied
    if mode not in HOST_ALLOCATOR_MODES:
        raise ValueError(f"unknown host allocator mode {mode!r}: choose one of {', '.join(HOST_ALLOCATOR_MODES)}")
    preloaded = _preloaded()
    if preloaded is not None:
        return f"preloaded:{preloaded}"
    libc = _glibc()
    if libc is None:
        return "system"
    if mode == "system" or _steady_applied:
        return "glibc-steady" if _steady_applied else "glibc"
    if not apply:
        return "glibc-steady"
    # Setting either parameter also turns off glibc's dynamic mmap threshold: the behaviour is fixed.
    if not (libc.mallopt(_M_MMAP_MAX, 0) and libc.mallopt(_M_TRIM_THRESHOLD, _NEVER_TRIM)):
        return "glibc"  # refused (never seen): say so rather than claim the steady mode
    _steady_applied = True
    return "glibc-steady"


def release_free_memory() -> None:
    """Return the heap's free pages to the kernel (glibc ``malloc_trim``), so that resident-memory
    growth measures what a workload needs, not what earlier tests left free; elsewhere nothing."""
    if _preloaded() is None and (libc := _glibc()) is not None:
        libc.malloc_trim(0)
