"""Where a figure sits under its device's roofline (Williams, Waterman and Patterson, CACM 2009): from the FLOPs
and bytes one call does and the device's peaks, its arithmetic intensity, the attainable rate at that
intensity (the roof), the share of it the call reached, and what bounds it.

- compute-bound: the intensity is at or right of the ridge (peak FLOP/s over peak bytes/s);
- memory-bound: left of it;
- launch-bound: the roof would finish the call's work in less than ``LAUNCH_SECONDS``, yet it reached under
  ``LAUNCH_SHARE`` of the roof: its time is the cost of starting it (a kernel launch, an eager operator's
  dispatch), not its FLOPs or bytes.

Pure: no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, final

__all__ = ["BOUNDS", "LAUNCH_SECONDS", "LAUNCH_SHARE", "Roofline", "bound_then", "roofline"]

# A launch costs microseconds (a CUDA kernel launch about 5 us, an eager CPU operator's dispatch a few us): a call
# whose roof time is under 20 us and that reached under 10% of its roof spends its time starting, not working.
LAUNCH_SECONDS = 20e-6
LAUNCH_SHARE = 0.10
BOUNDS = ("compute-bound", "memory-bound", "launch-bound")


@final
@dataclass(frozen=True)
class Roofline:
    """One call under the roof: FLOP per byte, the attainable TFLOP/s there, the share reached, the bound."""

    intensity: float  # FLOP per byte moved
    roof_tflops: float  # min(peak compute, intensity x peak bandwidth)
    percent_of_roof: float  # the achieved TFLOP/s over the roof, in %
    bound: str  # one of BOUNDS
    peaks: str  # whose peaks: "measured" (this run's matmul and copy)

    def to_json(self) -> dict[str, Any]:
        return {"intensity": self.intensity, "roof_tflops": self.roof_tflops,
                "percent_of_roof": self.percent_of_roof, "bound": self.bound, "peaks": self.peaks}  # fmt: skip


def roofline(
    flops_per_call: float | None,
    bytes_per_call: float | None,
    seconds_per_call: float,
    peak_tflops: float,
    peak_bytes_per_second: float,
    peaks: str = "measured",
) -> Roofline | None:
    """The call under the roof of these peaks; None without both its FLOPs and bytes, or a time."""
    if not flops_per_call or not bytes_per_call or not seconds_per_call > 0:
        return None
    if not peak_tflops > 0 or not peak_bytes_per_second > 0:
        return None
    intensity = flops_per_call / bytes_per_call
    peak_flops = peak_tflops * 1e12
    roof = min(peak_flops, intensity * peak_bytes_per_second)
    share = flops_per_call / seconds_per_call / roof
    if flops_per_call / roof < LAUNCH_SECONDS and share < LAUNCH_SHARE:
        bound = "launch-bound"
    elif intensity * peak_bytes_per_second >= peak_flops:
        bound = "compute-bound"
    else:
        bound = "memory-bound"
    return Roofline(intensity, roof / 1e12, 100 * share, bound, peaks)


def bound_then(now: Roofline, flops_per_call: float, bytes_per_call: float, seconds_then: float,
               peak_tflops: float, peak_bytes_per_second: float) -> str | None:  # fmt: skip
    """The bound the same call had at ``seconds_then`` (its baseline's time) under the same roof, where it
    differs from ``now``'s; None where it is the same."""
    then = roofline(flops_per_call, bytes_per_call, seconds_then, peak_tflops, peak_bytes_per_second, now.peaks)
    return None if then is None or then.bound == now.bound else then.bound
