"""Device backends: ``resolve_device`` picks one from the ``--device`` choice."""

from __future__ import annotations

from pytest_accel.engine.devices.base import Device, DeviceUnavailable, OutOfMemoryReport, RegionTimer

__all__ = [
    "DEVICE_CHOICES",
    "Device",
    "DeviceUnavailable",
    "OutOfMemoryReport",
    "RegionTimer",
    "make_device",
    "resolve_device",
]

DEVICE_CHOICES = ("auto", "cpu", "cuda", "hpu")
# `auto` tries these in order: a Gaudi box often also has a (useless for us) CUDA stub, never the reverse.
_AUTO_ORDER = ("hpu", "cuda", "cpu")


def make_device(kind: str, cpu_threads: int | None = None, index: int = 0, host_allocator: str = "steady") -> Device:
    """The backend object for one device kind, without checking that it is present."""
    if kind == "cpu":
        from pytest_accel.engine.devices.cpu import CpuDevice

        return CpuDevice(cpu_threads, host_allocator)
    if kind == "cuda":
        from pytest_accel.engine.devices.cuda import CudaDevice

        return CudaDevice(index)
    if kind == "hpu":
        from pytest_accel.engine.devices.hpu import HpuDevice

        return HpuDevice()
    raise ValueError(f"unknown device kind {kind!r}; choose one of {', '.join(DEVICE_CHOICES)}")


def resolve_device(
    choice: str, cpu_threads: int | None = None, index: int = 0, host_allocator: str = "steady"
) -> Device:
    """The device for a ``--device`` choice; raises ``DeviceUnavailable`` naming what exists instead."""
    if choice == "auto":
        for kind in _AUTO_ORDER:
            device = make_device(kind, cpu_threads, index, host_allocator)
            if device.is_available():
                return device
        raise AssertionError("the CPU is always available")
    device = make_device(choice, cpu_threads, index, host_allocator)
    if device.is_available():
        return device
    found = [kind for kind in _AUTO_ORDER if kind != choice and make_device(kind).is_available()]
    raise DeviceUnavailable(
        f"--device {choice} was requested but no {choice} device is usable: {device.unavailable_reason()}. "
        f"Found instead: {', '.join(found)}. Pass --device {found[0]} to measure on it."
    )
