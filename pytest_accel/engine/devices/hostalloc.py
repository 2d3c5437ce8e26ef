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

The steady mode also puts torch's large blocks (2 MiB and more) on transparent huge pages, as an
accelerator's allocator maps its segments in large pages: torch does so when ``THP_MEM_ALLOC_ENABLE``
is set before its first allocation (c10's ``alloc_cpu``: page-aligned, ``madvise(MADV_HUGEPAGE)``).
Measured on a 2-core Intel Xeon VM (family 6 model 167; math SDPA at the smoke decode shape, two
12.6 MB copies per call, in ``ab`` sittings of unchanged code; docs/studies/huge-pages): on huge
pages the pairs' log ratios spread about half as wide as on 4 KiB pages and the call took less time;
the other SDPA kernels changed in no one direction. The plugin sets the variable before the
conftests load (``ask_for_huge_pages``). Torch reads it at its first CPU allocation, not at its
import: measured with torch 2.13.0 (``import torch, diffusers, transformers``, then the variable set,
then a 4 MiB tensor: on huge pages; one 10-element tensor allocated before the variable: not), so a
script that imported torch before ``pytest.main``, or a ``-p`` plugin that imports it, still gets huge
pages. A process whose torch allocated before, a host with huge pages off, or the variable set by the
user leaves it as it is; the provenance says which (``-huge``: large blocks sit on huge pages), and
``allocator_cause`` says why, for a figure whose baseline was recorded in the other setup.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable, Mapping, MutableMapping
from functools import cache
from pathlib import Path
from types import ModuleType

__all__ = [
    "HOST_ALLOCATOR_MODES",
    "HUGE_PAGES_ASKED_ENV",
    "HUGE_PAGES_ENV",
    "allocator_cause",
    "as_the_user_set",
    "ask_for_huge_pages",
    "configure_host_allocator",
    "large_blocks_on_huge_pages",
    "release_free_memory",
    "torch_importers",
    "with_huge_pages",
]

HOST_ALLOCATOR_MODES = ("steady", "system")

# mallopt(3) parameters (glibc malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
# The largest trim threshold mallopt takes (an int): free memory at the heap's top is never returned.
_NEVER_TRIM = 2**31 - 1
_PRELOADED = ("jemalloc", "tcmalloc", "mimalloc")
# torch's CPU allocator reads it once, at its first allocation (c10/core/impl/alloc_cpu.cpp).
HUGE_PAGES_ENV = "THP_MEM_ALLOC_ENABLE"
# Set beside it when pytest-accel set it (a child inherits both): the user's environment did not have it.
HUGE_PAGES_ASKED_ENV = "PYTEST_ACCEL_HUGE_PAGES_ASKED"
_THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")
_PROBE_BYTES = 4 * 2**20  # above torch's 2 MiB threshold for huge pages


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


def _thp_setting(path: Path = _THP_SETTING) -> str | None:
    """The kernel's transparent huge page mode (``always``, ``madvise``, ``never``), or None (no such file)."""
    try:
        text = path.read_text(encoding="ascii")
    except OSError:
        return None
    chosen = [word[1:-1] for word in text.split() if word.startswith("[") and word.endswith("]")]
    return chosen[0] if chosen else None


def ask_for_huge_pages(mode: str, environ: MutableMapping[str, str] | None = None) -> bool:
    """In the steady mode, have torch put large CPU blocks on huge pages: set ``HUGE_PAGES_ENV`` in
    ``environ`` (this process's by default, which its children inherit); True when it was set here.

    Nothing is set when the mode is not steady, the user set the variable, or the kernel has huge pages
    off. Torch imported already does not stop it: torch reads the variable at its first allocation
    (the module docstring); where it allocated before, the provenance says no huge pages."""
    target = os.environ if environ is None else environ
    if mode != "steady" or HUGE_PAGES_ENV in target or _thp_setting() in (None, "never"):
        return False
    target[HUGE_PAGES_ENV] = "1"
    target[HUGE_PAGES_ASKED_ENV] = "1"
    return True


def as_the_user_set(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without what pytest-accel set in it (``ask_for_huge_pages``)."""
    if environ.get(HUGE_PAGES_ASKED_ENV) != "1":
        return dict(environ)
    return {name: value for name, value in environ.items() if name not in (HUGE_PAGES_ENV, HUGE_PAGES_ASKED_ENV)}


def torch_importers(candidates: Iterable[tuple[str, object]]) -> tuple[str, ...]:
    """The labels of ``candidates`` ((label, module or plugin object)) whose namespace holds torch or a part of
    it: who imported torch, when it was imported before pytest-accel could ask for huge pages."""
    found = []
    for label, holder in candidates:
        module = holder if isinstance(holder, ModuleType) else sys.modules.get(type(holder).__module__)
        if module is not None and any(_of_torch(value) for value in list(vars(module).values())):
            found.append(label)
    return tuple(found)


def _of_torch(value: object) -> bool:
    if isinstance(value, ModuleType):
        return value.__name__ == "torch" or value.__name__.startswith("torch.")
    module = getattr(value, "__module__", None)
    return isinstance(module, str) and (module == "torch" or module.startswith("torch."))


def allocator_cause(
    mode: str, allocator: str, user_environ: Mapping[str, str], importers: tuple[str, ...] | None
) -> tuple[str, str]:
    """Why this run's host allocator (its provenance name) is what it is, and how to restore the steady mode
    with huge pages: for a figure whose baseline was recorded in another setup. ``importers``: who imported
    torch before pytest-accel asked for huge pages (``torch_importers``), None where torch came later."""
    if allocator.startswith("preloaded:"):
        library = allocator.removeprefix("preloaded:")
        return f"LD_PRELOAD puts {library} in front of the C library's malloc", f"run without {library} in LD_PRELOAD"
    if mode != "steady":
        return (
            f"this run asked for the {mode} host allocator (--accel-host-allocator or ini accel_host_allocator)",
            "run with the steady host allocator (the default)",
        )
    if allocator.endswith("-huge"):
        return (
            "this run's large blocks sit on huge pages; the baseline's did not (recorded before pytest-accel "
            "asked for them, or with torch allocating first)",
            "record this setup on purpose: --accel-reset-history -k <these tests> (the old recordings are replaced)",
        )
    if HUGE_PAGES_ENV in user_environ:
        shown = f"{HUGE_PAGES_ENV}={user_environ[HUGE_PAGES_ENV]}"
        return f"{shown} was set in the environment, so pytest-accel did not ask for huge pages", f"unset {shown}"
    if _thp_setting() in (None, "never"):
        return "the kernel's transparent huge pages are off", f"turn them on (madvise) in {_THP_SETTING}"
    who = ", ".join(importers) if importers else "a module loaded before pytest-accel (a plugin, or the caller)"
    return (
        f"torch allocated memory before pytest-accel asked for huge pages (torch was imported first, by {who})",
        "create no tensor before pytest starts (import torch in fixtures and tests), or set "
        f"{HUGE_PAGES_ENV}=1 before torch starts",
    )


def large_blocks_on_huge_pages() -> bool:
    """Whether a large torch CPU block of this process lands in memory that may take huge pages: the
    kernel's mode is ``always``, or the block's mapping has the huge page advice (``hg`` in smaps)."""
    setting = _thp_setting()
    if setting in (None, "never"):
        return False
    if setting == "always":
        return True
    import torch

    block = torch.empty(_PROBE_BYTES, dtype=torch.uint8)
    return "hg" in _mapping_flags(block.data_ptr())


def _mapping_flags(address: int, smaps: Path = Path("/proc/self/smaps")) -> tuple[str, ...]:
    """The ``VmFlags`` of the mapping that holds ``address`` (empty where smaps cannot be read)."""
    inside = False
    try:
        with smaps.open(encoding="ascii", errors="replace") as lines:
            for line in lines:
                head = line.split(" ", 1)[0]
                if "-" in head and ":" not in head:
                    start, _, end = head.partition("-")
                    inside = int(start, 16) <= address < int(end, 16)
                elif inside and line.startswith("VmFlags:"):
                    return tuple(line.split()[1:])
    except (OSError, ValueError):
        pass
    return ()


def with_huge_pages(allocator: str, huge: bool) -> str:
    """The provenance's name of the host allocator: ``-huge`` when large blocks sit on huge pages."""
    return f"{allocator}-huge" if huge else allocator
