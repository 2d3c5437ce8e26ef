"""BridgeTower for contrastive learning (transformers), random weights, and the loader that feeds it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from workloads.images import IMAGE_SIDE
from workloads.training import finish_step

if TYPE_CHECKING:
    import torch

    from pytest_accel.engine.devices.base import Device

__all__ = ["BRIDGETOWER_LARGE_PARAMETERS", "build", "config", "loader_batches", "train_step"]

BRIDGETOWER_LARGE_PARAMETERS = 866_612_737  # bridgetower-large-itm-mlm-itc, counted on the meta device
# Loader workers that stop answering for this long raise instead of hanging the suite.
WORKER_TIMEOUT_SECONDS = 120.0


def config(profile: str) -> Any:
    """The large config (RoBERTa-large text, ViT-L/14 vision at 294, 6 cross-modal layers) or a tiny one."""
    from transformers import BridgeTowerConfig

    if profile == "full":
        text = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
        vision = dict(hidden_size=1024, num_hidden_layers=24, patch_size=14, image_size=IMAGE_SIDE)
        cross = dict(hidden_size=1024, num_hidden_layers=6, num_attention_heads=16)
    else:
        text = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, vocab_size=1000)
        vision = dict(hidden_size=64, num_hidden_layers=2, patch_size=14, image_size=IMAGE_SIDE)
        cross = dict(hidden_size=64, num_hidden_layers=1, num_attention_heads=2)
    return BridgeTowerConfig(
        text_config=text,
        vision_config=vision,
        contrastive_hidden_size=512 if profile == "full" else 32,
        logit_scale_init_value=2.6592,  # log(1/0.07), CLIP's initial temperature, as the released model
        **cross,
    )


def build(profile: str, device: Device | None) -> Any:
    """``BridgeTowerForContrastiveLearning`` with random weights (meta device when ``device`` is None)."""
    import torch
    from transformers import BridgeTowerForContrastiveLearning

    if device is None:
        with torch.device("meta"):
            return BridgeTowerForContrastiveLearning(config(profile))
    torch.manual_seed(0)
    return BridgeTowerForContrastiveLearning(config(profile)).to(device.torch_device())


@contextlib.contextmanager
def loader_batches(dataset: Any, batch: int, workers: int) -> Iterator[Callable[[], dict[str, torch.Tensor]]]:
    """``next_batch()`` over a real DataLoader, cycling epochs; its worker processes end on exit, always."""
    from torch.utils.data import DataLoader

    loader = DataLoader(
        dataset,
        batch_size=batch,
        num_workers=workers,
        drop_last=True,
        persistent_workers=workers > 0,  # steady state: epochs reuse the workers, as a long training run
        timeout=WORKER_TIMEOUT_SECONDS if workers else 0,
    )
    iterator = iter(loader)

    def next_batch() -> dict[str, torch.Tensor]:
        nonlocal iterator
        try:
            return next(iterator)
        except StopIteration:
            iterator = iter(loader)
            return next(iterator)

    try:
        yield next_batch
    finally:
        # DataLoader has no public close(); its iterator's shutdown is what __del__ would call.
        shutdown = getattr(iterator, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()


def to_device(batch: dict[str, torch.Tensor], device: Device) -> dict[str, torch.Tensor]:
    """Move a collated batch to the device (non-blocking where the memory is pinned)."""
    return {key: value.to(device.torch_device(), non_blocking=True) for key, value in batch.items()}


def train_step(model: Any, device: Device) -> Callable[[dict[str, torch.Tensor]], torch.Tensor]:
    """Contrastive loss on one batch, backward, AdamW: returns ``step(batch) -> loss``."""
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)

    def step(batch: dict[str, torch.Tensor]) -> torch.Tensor:
        inputs = to_device(batch, device)
        pixel_mask = torch.ones(
            inputs["pixel_values"].shape[0],
            IMAGE_SIDE,
            IMAGE_SIDE,
            dtype=torch.long,
            device=inputs["pixel_values"].device,
        )
        loss = model(**inputs, pixel_mask=pixel_mask, return_loss=True).loss
        return finish_step(loss, optimizer, device)

    return step
