"""The MMDiT training step across devices: DistributedDataParallel (and FSDP) under torchrun.

Run on every rank, e.g. one node with 8 devices:
    torchrun --nproc-per-node 8 -m pytest perf_tests/test_distributed.py --device cuda --accel-profile full
Throughput is global (every rank's images over the slowest rank's round time); the baseline file is
per world size; the scaling efficiency against the world-size-1 baseline is in the report.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch
from workloads import mmdit
from workloads.checks import check_measurement

from pytest_accel.engine.devices.base import Device

pytest.importorskip("diffusers", reason="the MMDiT workloads need diffusers (pip install 'pytest-accel[models]')")


def _world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


@pytest.mark.parametrize("wrapper", ["ddp", "fsdp"])
def test_mmdit_train_step_distributed(throughput: Any, accel_device: Device, accel_profile: str, wrapper: str) -> None:
    """Training images/s per job at batch 16 per device (smoke: 2), world size from torchrun.

    Without torchrun the "ddp" case runs the plain model: the same test id at world size 1 is the
    one-device reference that the scaling efficiency of an N-rank run is computed against.
    """
    world = _world_size()
    if wrapper == "fsdp" and world == 1:
        pytest.skip("fsdp needs a multi-rank job: run under torchrun --nproc-per-node N")
    if accel_profile == "full" and accel_device.kind == "cpu":
        pytest.skip("the full profile needs an accelerator")
    if wrapper == "fsdp" and accel_device.kind == "cpu":
        pytest.skip("FSDP shards parameters across GPUs/HPUs; on CPU ranks DDP is the measured wrapper")
    config = mmdit.CONFIGS[(accel_profile, "sd3")]
    batch = 16 if accel_profile == "full" else 2
    side = mmdit.latent_side(1024 if accel_profile == "full" else 512, accel_profile)
    model = mmdit.build(config, accel_device)
    checkpointing = mmdit.checkpointing(model, accel_profile)  # before wrapping: batch 16 at 1024² needs it
    if wrapper == "ddp" and world > 1:
        from torch.nn.parallel import DistributedDataParallel

        ids = [accel_device.torch_device().index] if accel_device.kind == "cuda" else None
        model = DistributedDataParallel(model, device_ids=ids)
    elif wrapper == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel

        model = FullyShardedDataParallel(model, device_id=accel_device.torch_device())
    data = mmdit.make_batch(config, batch, side, accel_device, torch.float32)
    step = mmdit.train_step(model, data, accel_device)
    flops = 3 * mmdit.forward_flops(config, batch, side)  # per device
    result = throughput(step, items=batch, unit="images", flops=flops, wrapper=wrapper, checkpointing=checkpointing)
    check_measurement(result, unit="images", items=batch * world, flops=flops)
