"""SD3's MMDiT as diffusers builds it (``SD3Transformer2DModel``, ``JointTransformerBlock``), random weights.

The timed regions:
- block: one ``JointTransformerBlock`` forward (and backward), image + text tokens of one resolution;
- train step: rectified-flow loss (noise interpolation, velocity target, MSE), backward, AdamW step;
- inference: the transformer's 30-step Euler flow-matching loop with classifier-free guidance (two
  transformer passes per step, as the pipeline's default guidance does). Text encoders and the VAE
  are outside the timed region: they run once per image and are not what the studies compared.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, final

from workloads import installed
from workloads.training import finish_step

if TYPE_CHECKING:
    import torch

    from pytest_accel.engine.devices.base import Device

__all__ = [
    "CONFIGS",
    "GRAPH_MODES",
    "INFERENCE_STEPS",
    "PROCESSORS",
    "MMDiTConfig",
    "attention_processor",
    "build",
    "build_block",
    "checkpointing",
    "forward_flops",
    "inference_loop",
    "latent_side",
    "make_batch",
    "parameter_count",
    "processor_unavailable",
    "train_step",
]

PROCESSORS = ("sdpa", "sdpa-math", "xformers", "gaudi-fused-sdpa")

INFERENCE_STEPS = 30  # the studies' 1024x1024 figure: 30 steps
GUIDANCE_SCALE = 7.0  # diffusers' SD3 pipeline default; > 1 means two transformer passes per step
SD3_PARAMETERS = 2_028_328_000  # SD3-medium, counted on the meta device (REFERENCE.md)
SD35_PARAMETERS = 2_243_171_520  # SD3.5-medium


@final
@dataclass(frozen=True)
class MMDiTConfig:
    """``SD3Transformer2DModel`` constructor arguments, plus the text sequence it is fed."""

    name: str
    num_layers: int
    num_attention_heads: int
    attention_head_dim: int
    joint_attention_dim: int  # width of the text encoders' features
    caption_projection_dim: int  # must equal heads x head_dim
    pooled_projection_dim: int
    in_channels: int = 16
    out_channels: int = 16
    patch_size: int = 2
    sample_size: int = 128
    pos_embed_max_size: int = 192
    dual_attention_layers: tuple[int, ...] = ()
    qk_norm: str | None = None
    text_tokens: int = field(default=154, compare=False)  # 77 CLIP + 77 T5, as Stability's code and diffusers' tests

    def model_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``SD3Transformer2DModel``."""
        kwargs = asdict(self)
        for key in ("name", "text_tokens"):
            kwargs.pop(key)
        return kwargs

    @property
    def width(self) -> int:
        """The transformer's hidden width: heads x head dim."""
        return self.num_attention_heads * self.attention_head_dim


_SD3_MEDIUM = dict(
    num_layers=24, num_attention_heads=24, attention_head_dim=64, joint_attention_dim=4096,
    caption_projection_dim=1536, pooled_projection_dim=2048,
)  # fmt: skip
# A same-class MMDiT small enough for seconds on a CPU: 2 layers, 4 heads x 32, 32 text tokens.
_SMOKE = dict(
    num_layers=2, num_attention_heads=4, attention_head_dim=32, joint_attention_dim=64,
    caption_projection_dim=128, pooled_projection_dim=64, sample_size=32, pos_embed_max_size=64, text_tokens=32,
)  # fmt: skip

CONFIGS: dict[tuple[str, str], MMDiTConfig] = {
    ("full", "sd3"): MMDiTConfig("sd3-medium-d24", **_SD3_MEDIUM),  # type: ignore[arg-type]
    ("full", "sd3.5"): MMDiTConfig(
        "sd3.5-medium",
        **_SD3_MEDIUM,
        pos_embed_max_size=384,  # type: ignore[arg-type]
        dual_attention_layers=tuple(range(13)),
        qk_norm="rms_norm",
    ),
    ("smoke", "sd3"): MMDiTConfig("sd3-smoke", **_SMOKE),  # type: ignore[arg-type]
    ("smoke", "sd3.5"): MMDiTConfig(
        "sd3.5-smoke",
        **_SMOKE,
        dual_attention_layers=(0,),
        qk_norm="rms_norm",  # type: ignore[arg-type]
    ),
}


def latent_side(image_side: int, profile: str) -> int:
    """Latent side for an image side: /8 (the VAE). Smoke images are a quarter of the side, so
    a "1024px" smoke case has the token count of a 256px image (16x smaller in both the image
    and the model), and keeps the ordering of the three resolutions."""
    return image_side // 8 if profile == "full" else image_side // 32


def processor_unavailable(name: str, device: Device, training: bool = False) -> str | None:
    """Why a joint-attention processor cannot run on ``device`` (in a training step when ``training``), or None."""
    if name == "xformers":
        if device.kind != "cuda":
            return f"XFormersJointAttnProcessor needs CUDA (xFormers has no CPU kernel), not {device.kind}"
        if not installed("xformers"):
            return "xformers is not installed (pip install 'pytest-accel[cuda]')"
    if name == "gaudi-fused-sdpa":
        if device.kind != "hpu":
            return f"optimum-habana's GaudiJointAttnProcessor2_0 (FusedSDPA) needs Gaudi, not {device.kind}"
        if not installed("optimum.habana"):
            return "optimum-habana is not installed (pip install 'pytest-accel[hpu]')"
        return _gaudi_processor_unusable(training)
    return None


def _gaudi_processor_unusable(training: bool) -> str | None:
    processor, takes_training = _gaudi_joint_processor()
    if processor is None:
        return "this optimum-habana has no GaudiJointAttnProcessor2_0 (SD3's FusedSDPA processor)"
    if training and not takes_training:
        return (
            "optimum-habana before 1.18 runs FusedSDPA's 'fast' softmax in GaudiJointAttnProcessor2_0 always, "
            "which Habana does not support in training: install optimum-habana 1.18 or newer"
        )
    return None


# Where optimum-habana defines SD3's FusedSDPA processor: 1.18 onwards, with ``is_training`` (its FusedSDPA
# softmax is "fast" for inference only); 1.16-1.17, under the SD3 pipeline, always "fast".
_GAUDI_PROCESSOR_MODULES = (
    ("optimum.habana.diffusers.models.attention_processor", True),
    ("optimum.habana.diffusers.pipelines.stable_diffusion_3.pipeline_stable_diffusion_3", False),
)


def _gaudi_joint_processor() -> tuple[Any, bool]:
    """optimum-habana's ``GaudiJointAttnProcessor2_0`` class and whether it takes ``is_training``; None if absent."""
    import importlib

    for module, takes_training in _GAUDI_PROCESSOR_MODULES:
        try:
            return importlib.import_module(module).GaudiJointAttnProcessor2_0, takes_training
        except (ImportError, AttributeError):
            continue
    return None, False


# How the transformer is run: eagerly, compiled (inductor; Habana's "hpu_backend" on Gaudi), as CUDA
# graphs (torch.compile's "reduce-overhead"), or as HPU graphs (habana_frameworks' wrap_in_hpu_graph).
GRAPH_MODES = ("eager", "compile", "cuda-graphs", "hpu-graphs")


def graph_mode_unavailable(mode: str, device: Device) -> str | None:
    """Why ``mode`` cannot run on ``device`` in this process, or None."""
    import importlib
    import shutil

    from pytest_accel.engine.devices.hpu import lazy_mode

    if mode not in GRAPH_MODES:
        raise ValueError(f"unknown graph mode {mode!r}; choose one of {', '.join(GRAPH_MODES)}")
    if mode == "compile" and device.kind == "hpu" and lazy_mode():
        return "torch.compile on Gaudi needs the bridge's eager mode (PT_HPU_LAZY_MODE=0); this process runs it lazy"
    if mode == "compile" and device.kind == "cpu" and not any(map(shutil.which, ("c++", "g++", "clang++"))):
        return "torch.compile (inductor) on the CPU needs a C++ compiler (c++, g++ or clang++ on PATH)"
    if mode == "cuda-graphs" and device.kind != "cuda":
        return f"CUDA graphs (torch.compile mode='reduce-overhead') need CUDA, not {device.kind}"
    if mode == "hpu-graphs":
        if device.kind != "hpu":
            return f"HPU graphs (wrap_in_hpu_graph) need Gaudi, not {device.kind}"
        # The bridge defines wrap_in_hpu_graph only in lazy mode (hpu/__init__.py imports .graphs if is_lazy()).
        if not lazy_mode() or not hasattr(importlib.import_module("habana_frameworks.torch.hpu"), "wrap_in_hpu_graph"):
            return (
                "HPU graphs (wrap_in_hpu_graph) exist in the bridge's lazy mode only, and this process runs it eager "
                "(the default of releases after 1.19): run with PT_HPU_LAZY_MODE=1 to time them"
            )
    return None


def with_graphs(model: Any, mode: str, device: Device) -> Any:
    """``model`` run as ``mode`` asks; compilation and graph capture happen at the first call (warm-up)."""
    import importlib

    import torch

    if mode == "eager":
        return model
    if mode == "compile":
        return torch.compile(model, backend="hpu_backend" if device.kind == "hpu" else "inductor")
    if mode == "cuda-graphs":
        return torch.compile(model, mode="reduce-overhead")
    if mode == "hpu-graphs":
        return importlib.import_module("habana_frameworks.torch.hpu").wrap_in_hpu_graph(model)
    raise ValueError(f"unknown graph mode {mode!r}; choose one of {', '.join(GRAPH_MODES)}")


def build_block(config: MMDiTConfig, device: Device, dtype: torch.dtype) -> Any:
    """One ``JointTransformerBlock`` of the config's width, random weights."""
    import torch
    from diffusers.models.attention import JointTransformerBlock

    torch.manual_seed(0)
    block = JointTransformerBlock(
        dim=config.width,
        num_attention_heads=config.num_attention_heads,
        attention_head_dim=config.attention_head_dim,
        qk_norm=config.qk_norm,
    )
    return block.to(device.torch_device(), dtype)


def build(config: MMDiTConfig, device: Device | None, dtype: torch.dtype | None = None) -> Any:
    """``SD3Transformer2DModel`` with random weights; on the meta device when ``device`` is None."""
    import torch
    from diffusers import SD3Transformer2DModel

    if device is None:
        with torch.device("meta"):
            return SD3Transformer2DModel(**config.model_kwargs())
    torch.manual_seed(0)
    model = SD3Transformer2DModel(**config.model_kwargs())
    return model.to(device.torch_device(), dtype or torch.float32)


def parameter_count(config: MMDiTConfig) -> int:
    """Parameters of the whole transformer, counted on the meta device (no memory used)."""
    return sum(p.numel() for p in build(config, None).parameters())


@dataclass
class Batch:
    """One batch of transformer inputs."""

    latents: torch.Tensor  # [B, C, h, w]
    text: torch.Tensor  # [B, S, joint_attention_dim]
    pooled: torch.Tensor  # [B, pooled_projection_dim]


def make_batch(config: MMDiTConfig, batch: int, side: int, device: Device, dtype: torch.dtype) -> Batch:
    """Random (never zero) inputs of the right shapes, reproducible."""
    import torch

    g = torch.Generator().manual_seed(1)
    latents = torch.randn(batch, config.in_channels, side, side, generator=g)
    text = torch.randn(batch, config.text_tokens, config.joint_attention_dim, generator=g)
    pooled = torch.randn(batch, config.pooled_projection_dim, generator=g)
    return Batch(*(t.to(device.torch_device(), dtype) for t in (latents, text, pooled)))


def autocast(device: Device) -> contextlib.AbstractContextManager[Any]:
    """bf16 mixed precision where the device has it (as the studies trained), else nothing."""
    import torch

    dtype = device.autocast_dtype()
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.kind, dtype=dtype)


def checkpointing(model: Any, profile: str) -> str:
    """The full profile checkpoints every transformer block, as a setup that fits one device must.

    Stability trained this model at batch 16 per device (Gaudi 2 at 16, 1.5x an H100-80GB; batch 32
    fit Gaudi 2's 96 GB). Without activation checkpointing, batch 16 at 1024x1024 peaked at
    137.56 GiB on a 139.8 GiB H200 and ran out of memory (docs/studies/device-check-h200, 2026-12-01): fp32
    master weights, gradients and AdamW's two moments are 32 GB; every block's activations the rest.
    With diffusers' ``enable_gradient_checkpointing`` only each block's inputs are kept and its
    activations are recomputed in the backward pass (about a third more compute; the figure's FLOPs
    stay the model's: 3x forward). The smoke profile keeps every activation. The distributed train step
    needs it as much: DDP keeps a whole replica per device, FSDP shards parameters, not activations.
    """
    if profile != "full":
        return "off"
    model.enable_gradient_checkpointing()
    return "blocks"


def train_step(
    model: Any, batch: Batch, device: Device, lr: float = 1e-4, fixed_noise: bool = False
) -> Callable[[], torch.Tensor]:
    """One rectified-flow training step: returns a callable that runs it and returns the loss.

    ``fixed_noise`` reuses one noise draw and one set of timesteps every step (a fixed objective,
    to check that the step learns); the timed step draws fresh ones, as training does.
    """
    import torch
    import torch.nn.functional as F

    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    g = torch.Generator(device="cpu").manual_seed(2)
    size = batch.latents.shape[0]
    fixed = (torch.randn(batch.latents.shape, generator=g), torch.randn(size, generator=g))

    def step() -> torch.Tensor:
        raw_noise, raw_sigma = (
            fixed if fixed_noise else (torch.randn(batch.latents.shape, generator=g), torch.randn(size, generator=g))
        )
        noise = raw_noise.to(batch.latents)
        # Logit-normal timesteps, as SD3 trains: sigma in (0, 1), denser in the middle.
        sigma = torch.sigmoid(raw_sigma).to(batch.latents)
        s = sigma.view(-1, 1, 1, 1)
        noisy = (1 - s) * batch.latents + s * noise
        target = noise - batch.latents  # the velocity the flow must predict
        with autocast(device):
            prediction = model(noisy, batch.text, batch.pooled, sigma * 1000, return_dict=False)[0]
        return finish_step(F.mse_loss(prediction.float(), target.float()), optimizer, device)

    return step


def inference_loop(model: Any, batch: Batch, device: Device, steps: int = INFERENCE_STEPS) -> Callable[[], Any]:
    """The denoising loop of SD3's pipeline, transformer only: Euler flow matching with CFG."""
    import torch

    uncond_text, uncond_pooled = torch.zeros_like(batch.text), torch.zeros_like(batch.pooled)
    text = torch.cat([uncond_text, batch.text])
    pooled = torch.cat([uncond_pooled, batch.pooled])
    sigmas = torch.linspace(1.0, 0.0, steps + 1).tolist()

    @torch.no_grad()
    def generate() -> torch.Tensor:
        x = batch.latents.clone()  # starts from noise
        for sigma, following in itertools.pairwise(sigmas):
            timestep = torch.full((2 * x.shape[0],), sigma * 1000, device=x.device, dtype=x.dtype)
            with autocast(device):
                velocity = model(torch.cat([x, x]), text, pooled, timestep, return_dict=False)[0]
            uncond, cond = velocity.float().chunk(2)
            guided = uncond + GUIDANCE_SCALE * (cond - uncond)
            x = x + (following - sigma) * guided.to(x.dtype)
            device.mark_step()
        return x

    return generate


@functools.cache
def forward_flops(config: MMDiTConfig, batch: int, side: int) -> float:
    """FLOPs of one transformer forward, counted once with FlopCounterMode on the meta device.

    Under meta tensors SDPA dispatches to its math decomposition, whose matmuls are counted.
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = build(config, None)
    with torch.device("meta"):
        latents = torch.empty(batch, config.in_channels, side, side)
        text = torch.empty(batch, config.text_tokens, config.joint_attention_dim)
        pooled = torch.empty(batch, config.pooled_projection_dim)
        timestep = torch.empty(batch)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(latents, text, pooled, timestep, return_dict=False)
    return float(counter.get_total_flops())


@contextlib.contextmanager
def attention_processor(model: Any, name: str, training: bool = False) -> Iterator[None]:
    """Select a joint-attention processor by name for the model or block under test (``training``: a step
    that runs backward, for processors whose kernel differs there)."""
    from diffusers.models.attention_processor import JointAttnProcessor2_0, XFormersJointAttnProcessor
    from torch.nn.attention import SDPBackend, sdpa_kernel

    # A whole transformer has set_attn_processor; a single JointTransformerBlock has attn.set_processor.
    setter = getattr(model, "set_attn_processor", None) or model.attn.set_processor
    if name == "xformers":
        setter(XFormersJointAttnProcessor())
        yield
    elif name == "gaudi-fused-sdpa":
        # optimum-habana's SD3 processor: FusedSDPA inside diffusers' joint attention.
        processor, takes_training = _gaudi_joint_processor()
        if (unusable := _gaudi_processor_unusable(training)) is not None:
            raise RuntimeError(unusable)
        setter(processor(is_training=training) if takes_training else processor())
        yield
    else:
        setter(JointAttnProcessor2_0())
        backends = {"sdpa-math": [SDPBackend.MATH], "sdpa-flash": [SDPBackend.FLASH_ATTENTION]}
        with sdpa_kernel(backends[name]) if name in backends else contextlib.nullcontext():
            yield
