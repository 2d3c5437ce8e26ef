"""Contract fakes of the energy counters engine/energy.py reads, each from its documentation or source.

- NVML, nvidia-ml-py 13.615 (``pynvml.py``; nvml.h): ``nvmlDeviceGetTotalEnergyConsumption(handle)`` returns an
  unsigned long long, millijoules since the driver was last reloaded, on Volta and later; otherwise it raises
  ``NVMLError_NotSupported``, one of the ``NVMLError`` subclasses nvidia-ml-py makes per return code. The handle
  comes from torch (``torch.cuda._get_pynvml_handler``), which maps ``CUDA_VISIBLE_DEVICES`` to NVML's numbering.
- HLML, habana-pyhlml 1.24.2.481 (``pyhlml/main.py``, ``pyhlml/hlml_error.py``): ``hlmlInit``,
  ``hlmlDeviceGetCount``, ``hlmlDeviceGetHandleByIndex``, ``hlmlDeviceGetModuleID``, and
  ``hlmlDeviceGetTotalEnergyConsumption(handle)``: millijoules since the last driver reload; errors are
  ``HLMLError``. The library itself (libhlml.so) was not available here: the fake follows the wrapper's calls.
- RAPL, Linux's powercap tree (Documentation/power/powercap/powercap.rst): ``/sys/class/powercap/intel-rapl:N``
  per package (``name`` "package-N", ``energy_uj``, ``max_energy_range_uj``; ``energy_uj`` wraps to 0 past the
  range), subzones ``intel-rapl:N:M`` (core, uncore, dram); ``energy_uj`` is readable by root only since 5.10.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def _errors(module: ModuleType, base: str, *names: str) -> None:
    """The library's error class and its subclasses, as its module defines them."""
    root = type(base, (Exception,), {"__module__": module.__name__})
    setattr(module, base, root)
    for name in names:
        setattr(module, f"{base}_{name}", type(f"{base}_{name}", (root,), {"__module__": module.__name__}))


@dataclass
class FakeCounter:
    """A cumulative counter in mJ: each read takes the next reading (the last repeats)."""

    readings: list[int] = field(default_factory=lambda: [1_000_000, 1_000_000, 1_150_000])
    supported: bool = True
    reads: int = 0

    def read(self) -> int:
        value = self.readings[min(self.reads, len(self.readings) - 1)]
        self.reads += 1
        return value


def install_fake_nvml(monkeypatch: pytest.MonkeyPatch, counter: FakeCounter) -> ModuleType:
    import torch

    module = ModuleType("pynvml")
    _errors(module, "NVMLError", "NotSupported", "NoPermission")

    def energy(handle: Any) -> int:
        assert handle == ("nvml handle", 0), handle  # torch's handle of card 0 of this process
        if not counter.supported:
            raise module.NVMLError_NotSupported("Not Supported")  # type: ignore[attr-defined]
        return counter.read()

    module.nvmlDeviceGetTotalEnergyConsumption = energy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", module)
    monkeypatch.setattr(torch.cuda, "_get_pynvml_handler", lambda device=None: ("nvml handle", device), raising=False)
    return module


def install_fake_hlml(monkeypatch: pytest.MonkeyPatch, modules: dict[int, FakeCounter]) -> ModuleType:
    """HLML seeing one device per module id in ``modules`` (in that order)."""
    module = ModuleType("pyhlml")
    _errors(module, "HLMLError")
    ids = list(modules)
    module.hlmlInit = lambda: None  # type: ignore[attr-defined]
    module.hlmlDeviceGetCount = lambda: len(ids)  # type: ignore[attr-defined]
    module.hlmlDeviceGetHandleByIndex = lambda index: ("hlml handle", ids[index])  # type: ignore[attr-defined]
    module.hlmlDeviceGetModuleID = lambda handle: handle[1]  # type: ignore[attr-defined]

    def energy(handle: Any) -> int:
        counter = modules[handle[1]]
        if not counter.supported:
            raise module.HLMLError("HLML_ERROR_NOT_SUPPORTED")  # type: ignore[attr-defined]
        return counter.read()

    module.hlmlDeviceGetTotalEnergyConsumption = energy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyhlml", module)
    return module


def rapl_tree(root: Path, packages: Sequence[int], max_range_uj: int = 262_143_328_850) -> list[Path]:
    """A powercap tree: one package zone per value of ``packages`` (its energy_uj), each with a core subzone
    (never counted: the package holds it), and a psys zone (not a package). Returns the packages' counter files."""
    counters = []
    for index, energy in enumerate(packages):
        zone = root / f"intel-rapl:{index}"
        for path, name, value in ((zone, f"package-{index}", energy), (zone / f"intel-rapl:{index}:0", "core", 5)):
            path.mkdir(parents=True)
            (path / "name").write_text(name + "\n")
            (path / "energy_uj").write_text(f"{value}\n")
            (path / "max_energy_range_uj").write_text(f"{max_range_uj}\n")
        (root / f"intel-rapl:{index}:0").symlink_to(zone / f"intel-rapl:{index}:0")  # as sysfs lists subzones too
        counters.append(zone / "energy_uj")
    psys = root / f"intel-rapl:{len(packages)}"
    psys.mkdir()
    (psys / "name").write_text("psys\n")
    (psys / "energy_uj").write_text("7\n")
    (psys / "max_energy_range_uj").write_text(f"{max_range_uj}\n")
    return counters
