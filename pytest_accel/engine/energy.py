"""The energy counters pytest-accel reads, and the window they are read around (core/energy.py says what the
readings give). Each vendor library is imported lazily; a missing one, a device that does not count, a counter
that cannot be read: a reason, never an error, and never a failed test.

- CUDA: NVML's ``nvmlDeviceGetTotalEnergyConsumption`` (nvidia-ml-py; mJ since the driver loaded, Volta and
  later), on the handle torch maps this process's card to (``torch.cuda._get_pynvml_handler``: NVML ignores
  ``CUDA_VISIBLE_DEVICES``, torch does not).
- Gaudi: HLML's ``hlmlDeviceGetTotalEnergyConsumption`` (habana-pyhlml 1.24; mJ since the driver loaded), on the
  module ``HABANA_VISIBLE_MODULES`` names (``hlmlDeviceGetModuleID``), or the only one.
- CPU: the Linux powercap tree's RAPL package zones (``/sys/class/powercap/intel-rapl:N``: ``energy_uj``, which
  wraps at ``max_energy_range_uj``; root-only since Linux 5.10, CVE-2020-8694). A package counts the whole
  socket, every process on it.

The window: the workload's calls back to back, synchronised at both ends, for ``seconds`` (the counter's
resolution over that span bounds the figure's), after the timed rounds and outside them.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from pytest_accel.core.energy import Energy, spent
from pytest_accel.core.measurement import EAGER, WARM, Measurement, mode_note
from pytest_accel.engine.devices.base import Device

__all__ = [
    "POWERCAP", "POWERCAP_ENV", "Meter", "device_energy", "energy_window", "hlml_meter", "meter_for", "nvml_meter",
    "rapl_meter",
]  # fmt: skip

POWERCAP = Path("/sys/class/powercap")
POWERCAP_ENV = "PYTEST_ACCEL_POWERCAP"  # where the powercap tree is, if not there (a container that mounts /sys apart)
_MODULES_ENV = "HABANA_VISIBLE_MODULES"
_MILLI, _MICRO = 1e-3, 1e-6  # NVML's and HLML's counters are in mJ, RAPL's in uJ


@final
@dataclass(frozen=True)
class Meter:
    """Cumulative energy counters of one device: ``read()`` gives each in joules; ``wraps``, each one's range
    (None: 64 bits, it does not wrap)."""

    name: str
    read: Callable[[], tuple[float, ...]]
    wraps: tuple[float | None, ...]


def _zone_name(zone: Path) -> str:
    try:
        return (zone / "name").read_text().strip()
    except OSError:
        return ""


def rapl_meter(root: Path = POWERCAP) -> Meter | str:
    """The CPU packages' RAPL counters, or why there are none."""
    if not root.is_dir():
        return f"no powercap: {root} is absent (no RAPL driver, or a virtual machine that does not expose it)"
    zones = sorted(
        z for z in root.glob("intel-rapl:*") if z.name.count(":") == 1 and _zone_name(z).startswith("package")
    )
    if not zones:
        return f"no RAPL package zone under {root}"

    def read() -> tuple[float, ...]:
        return tuple(int((zone / "energy_uj").read_text()) * _MICRO for zone in zones)

    try:
        wraps = tuple(int((zone / "max_energy_range_uj").read_text()) * _MICRO for zone in zones)
        read()
    except PermissionError:
        return "RAPL's energy_uj is readable by root only (Linux 5.10 and later: CVE-2020-8694)"
    except (OSError, ValueError) as error:
        return f"RAPL's counters cannot be read: {error}"
    return Meter("rapl", read, wraps)


def nvml_meter(index: int) -> Meter | str:
    """The CUDA card ``index`` (torch's numbering) through NVML, or why not."""
    try:
        import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]
        import torch

        handle = torch.cuda._get_pynvml_handler(index)
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    except ModuleNotFoundError as error:
        return f"no NVML: {error.name} is not installed (pip install nvidia-ml-py)"
    except Exception as error:  # NVMLError_NotSupported (before Volta), no driver, no permission
        return f"NVML cannot read this GPU's energy ({type(error).__name__}: {error})"
    return Meter("nvml", lambda: (pynvml.nvmlDeviceGetTotalEnergyConsumption(handle) * _MILLI,), (None,))


def hlml_meter(environ: Mapping[str, str]) -> Meter | str:
    """This process's Gaudi module through HLML, or why not."""
    modules = [m.strip() for m in environ.get("HABANA_VISIBLE_MODULES", "").split(",") if m.strip()]
    try:
        import pyhlml  # type: ignore[import-not-found,import-untyped,unused-ignore]

        pyhlml.hlmlInit()
        handles = [pyhlml.hlmlDeviceGetHandleByIndex(i) for i in range(int(pyhlml.hlmlDeviceGetCount()))]
        if len(modules) == 1:
            handles = [h for h in handles if str(pyhlml.hlmlDeviceGetModuleID(h)) == modules[0]]
            if not handles:
                return f"HLML sees no module {modules[0]} (HABANA_VISIBLE_MODULES)"
        elif len(handles) != 1:
            return (f"which of the {len(handles)} Gaudi modules this process holds is not known: set "
                    "HABANA_VISIBLE_MODULES to one (pytest -n gives each worker one)")  # fmt: skip
        handle = handles[0]
        pyhlml.hlmlDeviceGetTotalEnergyConsumption(handle)
    except ModuleNotFoundError as error:
        return f"no HLML: {error.name} is not installed (pip install habana-pyhlml)"
    except Exception as error:  # HLMLError: no driver, not supported
        return f"HLML cannot read this module's energy ({type(error).__name__}: {error})"
    return Meter("hlml", lambda: (pyhlml.hlmlDeviceGetTotalEnergyConsumption(handle) * _MILLI,), (None,))


def meter_for(kind: str, index: int = 0) -> Meter | str:
    """This process's device's meter (found once per device and setting), or why there is none."""
    return _meter(kind, index, os.environ.get(POWERCAP_ENV) or str(POWERCAP), os.environ.get(_MODULES_ENV, ""))


@functools.cache
def _meter(kind: str, index: int, powercap: str, modules: str) -> Meter | str:
    if kind == "cuda":
        return nvml_meter(index)
    if kind == "hpu":
        return hlml_meter({_MODULES_ENV: modules})
    return rapl_meter(Path(powercap))


def _unread(meter: Meter, error: Exception) -> Energy:
    return Energy.unmeasured(meter.name, f"the counter could not be read ({type(error).__name__}: {error})")


def energy_window(
    fn: Callable[[], Any],
    meter: Meter | str,
    seconds: float,
    seconds_per_call: float,
    items_per_call: float,
    synchronize: Callable[[], None],
    clock: Callable[[], float] = time.perf_counter,
) -> Energy:
    """The energy ``fn``'s calls drew, back to back for about ``seconds``, read by ``meter``; or why not."""
    if isinstance(meter, str):
        return Energy.unmeasured("", meter)
    calls = max(1, math.ceil(seconds / seconds_per_call)) if seconds_per_call > 0 else 1
    synchronize()
    try:
        before = meter.read()
    except Exception as error:  # OSError, or a vendor library's own (NVMLError, HLMLError): never a failed test
        return _unread(meter, error)
    started = clock()
    for _ in range(calls):
        fn()
    synchronize()
    elapsed = clock() - started
    try:
        after = meter.read()
    except Exception as error:
        return _unread(meter, error)
    joules = spent(before, after, meter.wraps)
    if isinstance(joules, str):
        return Energy.unmeasured(meter.name, joules)
    return Energy(meter.name, joules, elapsed, calls * items_per_call)


def device_energy(
    fn: Callable[[], Any], device: Device, seconds: float, taken: Measurement, items_per_call: float
) -> Energy | None:
    """The energy window of a measurement ``taken`` on ``device`` (``items_per_call``: this process's, not a
    torchrun world's); None where energy is not read (``seconds`` 0, timing disabled)."""
    if seconds <= 0 or taken.disabled:
        return None
    if taken.timing != EAGER or taken.cache != WARM:
        why = f"the energy window calls the workload eagerly and warm; this figure was timed {mode_note(taken)}"
        return Energy.unmeasured("", why)

    def call() -> None:
        fn()
        device.mark_step()

    meter = meter_for(device.kind, int(getattr(device, "index", 0) or 0))
    return energy_window(call, meter, seconds, taken.seconds_per_call, items_per_call, device.synchronize)
