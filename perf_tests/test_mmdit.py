"""SD3 MMDiT as Stability measured it: blocks, the training step (images/s), 30-step inference (s/image)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from workloads import mmdit
from workloads.checks import check_measurement

from pytest_accel.engine.devices.base import Device

pytest.importorskip("diffusers", reason="the MMDiT workloads need diffusers (pip install 'pytest-accel[models]')")

RESOLUTIONS = (256, 512, 1024)
# Full profile: a 30-step inference at 1024x1024 takes about a second a call on an H200, so 5 rounds
# (perf_tests/conftest.py gives these perf marker settings in the full profile only).
FULL_PROFILE_PERF = {
    "test_inference_30_steps": {"min_rounds": 5},
    "test_inference_30_steps_graphs": {"min_rounds": 5},
}


def _config(profile: str, device: Device, variant: str = "sd3") -> mmdit.MMDiTConfig:
    if profile == "full" and device.kind == "cpu":
        pytest.skip("the full profile (the 2B MMDiT at the studies' sizes) needs an accelerator; use --device cuda|hpu")
    return mmdit.CONFIGS[(profile, variant)]


def _processor(name: str, device: Device, training: bool = False) -> str:
    reason = mmdit.processor_unavailable(name, device, training)
    if reason is not None:
        pytest.skip(reason)
    return name


def _dtype(device: Device) -> torch.dtype:
    # Blocks are measured in the training precision: bf16 on accelerators, fp32 on the CPU.
    return device.autocast_dtype()


def _block_inputs(config: mmdit.MMDiTConfig, batch: int, side: int, device: Device) -> tuple[torch.Tensor, ...]:
    tokens = (side // config.patch_size) ** 2
    g = torch.Generator().manual_seed(0)
    image = torch.randn(batch, tokens, config.width, generator=g)
    text = torch.randn(batch, config.text_tokens, config.width, generator=g)
    temb = torch.randn(batch, config.width, generator=g)
    return tuple(t.to(device.torch_device(), _dtype(device)) for t in (image, text, temb))


def _block_flops(config: mmdit.MMDiTConfig, batch: int, side: int) -> float:
    # Whole-model forward FLOPs over its layers: one block's share (embeddings are <1%).
    return mmdit.forward_flops(config, batch, side) / config.num_layers


@pytest.mark.parametrize("processor", ["sdpa", "sdpa-math", "xformers", "gaudi-fused-sdpa"])
@pytest.mark.parametrize("resolution", RESOLUTIONS)
@pytest.mark.parametrize("backward", [False, True], ids=["forward", "forward-backward"])
def test_joint_block(
    throughput: Any, accel_device: Device, accel_profile: str, resolution: int, processor: str, backward: bool
) -> None:
    """One JointTransformerBlock (image + text stream, joint attention) at one resolution's token count."""
    config = _config(accel_profile, accel_device)
    _processor(processor, accel_device, training=backward)
    batch, side = (16 if accel_profile == "full" else 2), mmdit.latent_side(resolution, accel_profile)
    block = mmdit.build_block(config, accel_device, _dtype(accel_device))
    image, text, temb = _block_inputs(config, batch, side, accel_device)
    image.requires_grad_(backward)

    def call() -> Any:
        text_out, image_out = block(image, text, temb)
        if not backward:
            return image_out
        block.zero_grad(set_to_none=True)
        image.grad = None
        (image_out.float().square().mean() + text_out.float().square().mean()).backward()
        return image.grad

    flops = _block_flops(config, batch, side) * (3 if backward else 1)  # backward ~ 2x forward
    with mmdit.attention_processor(block, processor, training=backward), torch.set_grad_enabled(backward):
        result = throughput(call, items=batch, unit="images", flops=flops, resolution=resolution)
    check_measurement(result, unit="images", items=batch, flops=flops)


@pytest.mark.parametrize("processor", ["sdpa", "sdpa-math", "xformers", "gaudi-fused-sdpa"])
@pytest.mark.parametrize("batch", [16, 32])
def test_train_step(throughput: Any, accel_device: Device, accel_profile: str, batch: int, processor: str) -> None:
    """Rectified-flow training step + AdamW: images/s per device at the study's batch sizes (smoke: /8).

    Full: 1024x1024 images (4096 image tokens), batch 16 and 32 per device as Stability's training
    table, every block checkpointed (``mmdit.checkpointing``). Smoke: the small model at 512x512-equivalent
    tokens, batch 2 and 4.
    """
    config = _config(accel_profile, accel_device)
    _processor(processor, accel_device, training=True)
    if accel_profile != "full":
        batch //= 8
    side = mmdit.latent_side(1024 if accel_profile == "full" else 512, accel_profile)
    model = mmdit.build(config, accel_device)  # fp32 master weights; autocast computes in bf16
    checkpointing = mmdit.checkpointing(model, accel_profile)
    data = mmdit.make_batch(config, batch, side, accel_device, torch.float32)
    step = mmdit.train_step(model, data, accel_device)
    flops = 3 * mmdit.forward_flops(config, batch, side)  # forward + backward (2x forward)
    with mmdit.attention_processor(model, processor, training=True):
        result = throughput(
            step, items=batch, unit="images", flops=flops, model=config.name, checkpointing=checkpointing
        )
    check_measurement(result, unit="images", items=batch, flops=flops)


def test_checkpointed_step_computes_what_the_plain_one_does(accel_device: Device) -> None:
    """The full profile's block checkpointing changes memory and time, not the gradients (smoke model)."""
    config = mmdit.CONFIGS[("smoke", "sd3")]
    data = mmdit.make_batch(config, 2, 8, accel_device, torch.float32)
    gradients = []
    for profile in ("smoke", "full"):
        model = mmdit.build(config, accel_device).train()
        assert mmdit.checkpointing(model, profile) == ("blocks" if profile == "full" else "off")
        out = model(data.latents, data.text, data.pooled, torch.tensor([500.0, 250.0]), return_dict=False)[0]
        out.square().mean().backward()
        gradients.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    plain, checkpointed = gradients
    assert len(plain) == len(checkpointed) > 0
    for a, b in zip(plain, checkpointed, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("processor", ["sdpa", "xformers", "gaudi-fused-sdpa"])
def test_inference_30_steps(throughput: Any, accel_device: Device, accel_profile: str, processor: str) -> None:
    """30 denoising steps with guidance at 1024x1024 (smoke: 256x256 on the small model): s/image."""
    config = _config(accel_profile, accel_device)
    _processor(processor, accel_device)
    side = mmdit.latent_side(1024, accel_profile)
    model = mmdit.build(config, accel_device).eval()
    data = mmdit.make_batch(config, 1, side, accel_device, torch.float32)
    generate = mmdit.inference_loop(model, data, accel_device)
    flops = mmdit.INFERENCE_STEPS * mmdit.forward_flops(config, 2, side)  # 2: guidance doubles the batch
    with mmdit.attention_processor(model, processor):
        result = throughput(generate, items=1, unit="images", flops=flops, steps=mmdit.INFERENCE_STEPS)
    check_measurement(result, unit="images", items=1, flops=flops)


@pytest.mark.parametrize("graphs", [m for m in mmdit.GRAPH_MODES if m != "eager"])
def test_inference_30_steps_graphs(throughput: Any, accel_device: Device, accel_profile: str, graphs: str) -> None:
    """The 30-step loop with the transformer compiled or captured as graphs: the figure without launch overhead.

    Compilation and capture happen in the first call, which the warm-up keeps out of the figure
    (about 27 s for ``compile`` of the smoke model on 2 CPU cores). SDPA on CUDA and CPU, FusedSDPA on Gaudi.
    """
    config = _config(accel_profile, accel_device)
    reason = mmdit.graph_mode_unavailable(graphs, accel_device)
    if reason is not None:
        pytest.skip(reason)
    processor = _processor("gaudi-fused-sdpa" if accel_device.kind == "hpu" else "sdpa", accel_device)
    side = mmdit.latent_side(1024, accel_profile)
    model = mmdit.build(config, accel_device).eval()
    data = mmdit.make_batch(config, 1, side, accel_device, torch.float32)
    flops = mmdit.INFERENCE_STEPS * mmdit.forward_flops(config, 2, side)
    with mmdit.attention_processor(model, processor):
        # Eager first: wrap_in_hpu_graph replaces the module's forward in place.
        eager = mmdit.inference_loop(model, data, accel_device)()
        generate = mmdit.inference_loop(mmdit.with_graphs(model, graphs, accel_device), data, accel_device)
        result = throughput(generate, items=1, unit="images", flops=flops, steps=mmdit.INFERENCE_STEPS, graphs=graphs)
        # The compiled loop computes what the eager one does (same weights, noise and text).
        torch.testing.assert_close(generate().float(), eager.float(), rtol=2e-2, atol=2e-2)
    check_measurement(result, unit="images", items=1, flops=flops)


def test_smoke_training_step_learns(accel_device: Device) -> None:
    """The timed step is a real training step: on a fixed batch and noise, 8 steps lower the loss by 10%+."""
    config = mmdit.CONFIGS[("smoke", "sd3")]
    model = mmdit.build(config, accel_device)
    data = mmdit.make_batch(config, 2, 8, accel_device, torch.float32)
    step = mmdit.train_step(model, data, accel_device, lr=1e-3, fixed_noise=True)
    losses = [float(step()) for _ in range(8)]
    assert all(torch.isfinite(torch.tensor(losses)))
    assert sum(losses[-3:]) / 3 < 0.9 * sum(losses[:3]) / 3, losses


@pytest.mark.parametrize("variant, expected", [("sd3", mmdit.SD3_PARAMETERS), ("sd3.5", mmdit.SD35_PARAMETERS)])
def test_full_model_parameter_count_on_meta(variant: str, expected: int) -> None:
    """The full profile builds the real SD3(.5)-medium MMDiT: parameters counted without memory."""
    assert mmdit.parameter_count(mmdit.CONFIGS[("full", variant)]) == expected


def test_smoke_sd35_variant_runs(accel_device: Device) -> None:
    """The SD3.5 variant (dual attention, RMS QK-norm) builds and runs a forward in the smoke profile."""
    config = mmdit.CONFIGS[("smoke", "sd3.5")]
    model = mmdit.build(config, accel_device)
    data = mmdit.make_batch(config, 1, 8, accel_device, torch.float32)
    with torch.no_grad():
        out = model(data.latents, data.text, data.pooled, torch.tensor([500.0]), return_dict=False)[0]
    assert out.shape == data.latents.shape and bool(torch.isfinite(out).all())
