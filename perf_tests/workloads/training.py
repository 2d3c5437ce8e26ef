"""The end of every training step in the suite: backward, optimizer step, gradients dropped, step marked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from pytest_accel.engine.devices.base import Device

__all__ = ["finish_step"]


def finish_step(loss: torch.Tensor, optimizer: Any, device: Device) -> torch.Tensor:
    """Backward, step, ``zero_grad(set_to_none=True)``, and ``mark_step`` (HPU lazy mode: the graph ends here)."""
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    device.mark_step()
    return loss.detach()
