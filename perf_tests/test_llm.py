"""A Llama-2-70B-shaped LLM: training tokens/s, and generation at 128 in / 2048 out (prefill, decode)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from workloads import llama
from workloads.checks import check_measurement

from pytest_accel.engine.devices.base import Device

pytest.importorskip("transformers", reason="the LLM workloads need transformers (pip install 'pytest-accel[models]')")


def _size(profile: str, device: Device) -> llama.LlamaShape:
    if profile == "full" and device.kind == "cpu":
        pytest.skip("the full profile (Llama-2-70B layers: 0.86 B parameters each) needs an accelerator")
    return llama.shape(profile)


def _dtype(device: Device) -> torch.dtype:
    return device.autocast_dtype()  # bf16 on accelerators (the study trained in fp16/bf16), fp32 on the CPU


def test_llm_train_step(throughput: Any, accel_device: Device, accel_profile: str) -> None:
    """Forward + backward + AdamW on micro batch 2: tokens/s (full: the real layer shape, FULL_LAYERS layers)."""
    size = _size(accel_profile, accel_device)
    model = llama.build(size, accel_device)  # fp32 master weights; autocast computes in bf16 on devices
    ids = llama.tokens(size, size.train_batch, size.train_tokens, accel_device)
    step = llama.train_step(model, ids, accel_device)
    # 6 x parameters x tokens (2 forward + 4 backward), the standard dense-transformer count.
    flops = 6.0 * sum(p.numel() for p in model.parameters()) * ids.numel()
    result = throughput(step, items=ids.numel(), unit="tokens", flops=flops, layers=size.layers)
    check_measurement(result, unit="tokens", items=ids.numel(), flops=flops)


# The full profile's decode is timed over the first DECODE_WINDOW of the 2048 new tokens: one call
# of the whole 2048 outlasted 45 s per test on an H200 (warm-up, a memory call and 20 rounds of
# calls of ~1 s each; docs/studies/device-check-h200), past what a nightly can give each of its tests.
DECODE_WINDOW = 256
# ... and in fewer rounds (5 of 256 tokens, a few seconds each), a 1 s warm-up budget: perf marker
# settings that perf_tests/conftest.py gives these tests in the full profile only.
FULL_PROFILE_PERF = {"test_llm_generation": {"min_rounds": 5, "warmup_max_seconds": 1.0}}


@pytest.mark.parametrize("batch", [1, 4])
def test_llm_generation(throughput: Any, accel_device: Device, accel_profile: str, batch: int) -> None:
    """Greedy generation: prefill (128 prompt tokens) and decode (smoke: 64 new tokens) measured apart.

    "prefill" times generate() of one new token: the prompt's forward pass. "decode" times the
    generation of N tokens and counts N x batch tokens; the single prefill inside it is one forward
    against N decode forwards. Full: N is the first DECODE_WINDOW (256) of the study's 2048 new tokens,
    in 5 rounds (FULL_PROFILE_PERF): a figure of the decode's rate
    at KV-cache positions 128-384, within a nightly's budget, not of the whole 2048-token call.
    """
    size = _size(accel_profile, accel_device)
    new_tokens = min(size.new_tokens, DECODE_WINDOW)
    model = llama.build(size, accel_device, _dtype(accel_device)).eval()
    prompt = llama.tokens(size, batch, size.prompt_tokens, accel_device, seed=1)
    prefill = throughput(
        llama.generate(model, prompt, 1), items=batch * size.prompt_tokens, unit="tokens", name="prefill"
    )
    decode = throughput(
        llama.generate(model, prompt, new_tokens), items=batch * new_tokens, unit="tokens", name="decode"
    )
    assert prefill.disabled or decode.seconds_per_call > prefill.seconds_per_call


def test_tiny_llm_training_lowers_its_loss(accel_device: Device) -> None:
    """The timed step is a real training step: 10 steps on a fixed batch lower the loss."""
    size = llama.shape("smoke")
    model = llama.build(size, accel_device)
    step = llama.train_step(model, llama.tokens(size, 2, 32, accel_device), accel_device)
    losses = [float(step()) for _ in range(10)]
    assert losses[-1] < 0.8 * losses[0], losses


def test_full_70b_parameter_count_on_meta() -> None:
    """All 80 layers of the real shape, built on the meta device: Llama-2-70B's 68.98 B parameters."""
    model = llama.build(llama.shape("full"), None, layers=80)
    assert sum(p.numel() for p in model.parameters()) == llama.LLAMA2_70B_PARAMETERS
