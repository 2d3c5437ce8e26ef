"""One card per pytest-xdist worker: the cards the caller made visible, each worker's share, and the pin.

The pin is the vendor's own variable, put into each worker's environment by execnet before the worker's
Python runs anything (an XSpec's ``env:``, applied by ``execnet.multi.Group.makegateway`` ahead of
pytest in the worker: execnet 2.1), so no torch, vendor bridge or conftest of a worker can see another card:

- CUDA: ``CUDA_VISIBLE_DEVICES``, read by the CUDA runtime at its first call: indices or ``GPU-`` UUIDs,
  comma-separated (CUDA C Programming Guide, "CUDA Environment Variables").
- Gaudi: ``HABANA_VISIBLE_MODULES``, the module ids the Habana driver opens, comma-separated (Intel Gaudi
  documentation, "Multiple Workloads on a Single Docker" / "Multiple Tenants"); the bridge then numbers the
  visible modules from 0, as CUDA does.

A worker's card is always one the caller made visible: with the variable set, its entries in order; without
it, every card the management library counts (NVML, HLML; imported lazily). More workers than cards is an
error naming both counts. On the CPU a worker gets its own cores instead (``os.sched_setaffinity``):
the caller's allowed CPUs in contiguous slices, applied by the worker itself when its plugin configures.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "CARD_VARIABLES",
    "WORKER_CARD_ENV",
    "WORKER_CPUS_ENV",
    "CardError",
    "assign_cards",
    "card_count",
    "core_slices",
    "pin_worker_cpus",
    "visible_cards",
    "worker_card",
    "worker_place",
]

CARD_VARIABLES = {"cuda": "CUDA_VISIBLE_DEVICES", "hpu": "HABANA_VISIBLE_MODULES"}
WORKER_CARD_ENV = "PYTEST_ACCEL_WORKER_CARD"  # the caller's name of a worker's card (an index, a UUID, a module id)
WORKER_CPUS_ENV = "PYTEST_ACCEL_WORKER_CPUS"  # a CPU worker's cores, comma-separated


class CardError(Exception):
    """The workers cannot each have a card (or cores) of their own; the message names both counts."""


def visible_cards(kind: str, environ: Mapping[str, str], count: Callable[[], int]) -> tuple[str, ...]:
    """The cards the caller made visible, by the names the caller used: the variable's entries when it is
    set (an empty one hides every card), else ``0 .. count()-1``."""
    variable = CARD_VARIABLES[kind]
    if variable in environ:
        return tuple(entry.strip() for entry in environ[variable].split(",") if entry.strip())
    return tuple(str(index) for index in range(count()))


def assign_cards(kind: str, cards: Sequence[str], workers: int) -> list[str]:
    """Worker ``i``'s card: ``cards[i]``; an error naming both counts when there are more workers than cards."""
    if workers > len(cards):
        variable = CARD_VARIABLES[kind]
        shown = ",".join(cards) if cards else "none"
        raise CardError(
            f"-n {workers}: {workers} workers but {len(cards)} {kind} card(s) visible ({variable}: {shown});"
            f" one card per worker: use -n {len(cards)} or fewer" if cards else
            f"-n {workers}: no {kind} card is visible ({variable}: {shown})"
        )  # fmt: skip
    return list(cards[:workers])


def core_slices(cpus: Sequence[int], workers: int) -> list[tuple[int, ...]]:
    """The allowed CPUs in ``workers`` contiguous slices, as even as they divide (the first ones larger)."""
    ordered = sorted(cpus)
    if workers > len(ordered):
        raise CardError(
            f"-n {workers}: {workers} workers but {len(ordered)} CPU(s) allowed; one core per worker at least"
        )
    size, extra = divmod(len(ordered), workers)
    slices, start = [], 0
    for index in range(workers):
        end = start + size + (1 if index < extra else 0)
        slices.append(tuple(ordered[start:end]))
        start = end
    return slices


def card_count(kind: str) -> int:
    """How many cards the management library sees (no CUDA context, no device acquired): NVML for CUDA
    (nvidia-ml-py), HLML for Gaudi (habana-pyhlml); 0 where it is missing or has no driver."""
    try:
        if kind == "cuda":
            import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]

            pynvml.nvmlInit()
            try:
                return int(pynvml.nvmlDeviceGetCount())
            finally:
                pynvml.nvmlShutdown()
        if kind == "hpu":
            import pyhlml  # type: ignore[import-not-found,import-untyped,unused-ignore]

            pyhlml.hlmlInit()
            try:
                return int(pyhlml.hlmlDeviceGetCount())
            finally:
                pyhlml.hlmlShutdown()
    except Exception:  # no library (ModuleNotFoundError), no driver: the library's own error types
        return 0
    return 0


def worker_card() -> str | None:
    """This xdist worker's card, as the caller named it (an index, a UUID, a module id); None outside a worker."""
    return os.environ.get(WORKER_CARD_ENV) or None


def worker_place() -> str | None:
    """Where this placed worker measures: its card, or a CPU worker's cores (``cpus 2 3``); None elsewhere."""
    cpus = os.environ.get(WORKER_CPUS_ENV)
    return worker_card() or (f"cpus {cpus.replace(',', ' ')}" if cpus else None)


def pin_worker_cpus(environ: Mapping[str, str]) -> tuple[int, ...] | None:
    """In a CPU worker: bind this process (and the threads it starts) to its cores; None when not asked."""
    value = environ.get(WORKER_CPUS_ENV)
    if not value or not hasattr(os, "sched_setaffinity"):
        return None
    cpus = tuple(int(cpu) for cpu in value.split(","))
    os.sched_setaffinity(0, cpus)
    return cpus
