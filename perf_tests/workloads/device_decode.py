"""JPEG decode on the device: nvJPEG through torchvision on CUDA; Habana's media pipeline on Gaudi.

Both produce what the CPU data path (``images.transform`` in DataLoader workers) produces: a batch of
[3, 294, 294] float images, shorter side resized to 294 (bicubic), center-cropped, CLIP-normalised,
next to the captions' token ids. Only the pixels are made on the device; text stays a CPU tensor,
as in the Gaudi example, and the training step moves it.

The media pipeline is written against Habana's documented API (``habana_media_loader``: docs.habana.ai,
"Media Pipeline"; the operators ``ReadImageDatasetFromDir``, ``ImageDecoder``, ``MediaConst``,
``CropMirrorNorm`` and the ``HPUGenericPytorchIterator``), the same graph as optimum-habana's
``clip_media_pipe.py``: decode with a center crop to the output's aspect ratio and a bicubic resize,
then a fused normalise. It is tested through a contract fake (``tests/fakes/mediapipe.py``) and has
not yet run on Gaudi hardware.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workloads import installed
from workloads.images import CLIP_MEAN, CLIP_STD, IMAGE_SIDE, tokenize

if TYPE_CHECKING:
    import torch

    from pytest_accel.engine.devices.base import Device

__all__ = ["device_decode_batches", "media_pipe_batches", "nvjpeg_batches", "unavailable_reason", "write_jpegs"]

Batch = dict[str, "torch.Tensor"]
# Batches the media pipeline prepares ahead of the one being consumed (optimum-habana's queue_depth).
MEDIA_PREFETCH_DEPTH = 3


def unavailable_reason(device: Device) -> str | None:
    """Why device-side decode cannot run on ``device``, or None when it can."""
    if device.kind == "cuda":
        try:  # installed is not enough: a torchvision built for another torch fails on import
            from torchvision.io import decode_jpeg  # noqa: F401
        except Exception as error:  # any import failure is a reason to skip, named
            return f"CUDA JPEG decode (nvJPEG) needs a torchvision matching this torch: {type(error).__name__}: {error}"
        return None
    if device.kind == "hpu":
        if not installed("habana_frameworks.mediapipe"):
            return "Gaudi JPEG decode needs Habana's media pipeline: pip install habana-media-loader (Gaudi 2/3)"
        return None
    return f"device-side JPEG decode needs CUDA (nvJPEG) or Gaudi (media pipeline), not {device.kind}"


def _captions(samples: Sequence[tuple[bytes, str]], vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every caption tokenised once: (input_ids, attention_mask), one row per sample."""
    import torch

    pairs = [tokenize(caption, vocab) for _, caption in samples]
    return torch.tensor([ids for ids, _ in pairs]), torch.tensor([mask for _, mask in pairs])


@contextlib.contextmanager
def device_decode_batches(
    samples: Sequence[tuple[bytes, str]], batch: int, vocab: int, device: Device, workdir: Path
) -> Iterator[Callable[[], Batch]]:
    """``next_batch()`` with pixels decoded on ``device``, cycling the dataset; see ``unavailable_reason``."""
    reason = unavailable_reason(device)
    if reason is not None:
        raise RuntimeError(reason)
    if device.kind == "cuda":
        with nvjpeg_batches(samples, batch, vocab, device) as next_batch:
            yield next_batch
    else:
        with media_pipe_batches(samples, batch, vocab, workdir) as next_batch:
            yield next_batch


@contextlib.contextmanager
def nvjpeg_batches(
    samples: Sequence[tuple[bytes, str]], batch: int, vocab: int, device: Device
) -> Iterator[Callable[[], Batch]]:
    """``torchvision.io.decode_jpeg(device="cuda")`` on each batch's bytes, then resize, crop, normalise on the GPU."""
    import torch
    from torchvision import io

    if len(samples) < batch:
        raise ValueError(f"nvJPEG decode needs at least one whole batch: {len(samples)} samples, batch {batch}")
    target = device.torch_device()
    encoded = [torch.frombuffer(bytearray(jpeg), dtype=torch.uint8) for jpeg, _ in samples]
    input_ids, attention_mask = _captions(samples, vocab)
    mean = torch.tensor(CLIP_MEAN, device=target).view(1, 3, 1, 1)
    std = torch.tensor(CLIP_STD, device=target).view(1, 3, 1, 1)
    batches = len(samples) // batch  # drop_last, as the CPU loader
    position = 0

    def next_batch() -> Batch:
        nonlocal position
        rows = slice(position * batch, (position + 1) * batch)
        position = (position + 1) % batches
        decoded = io.decode_jpeg(encoded[rows], device=target)
        pixels = torch.cat([_resize_crop(image) for image in decoded])
        return {
            "pixel_values": (pixels / 255 - mean) / std,
            "input_ids": input_ids[rows],
            "attention_mask": attention_mask[rows],
        }

    yield next_batch


def _resize_crop(image: torch.Tensor) -> torch.Tensor:
    """[3, H, W] uint8 -> [1, 3, 294, 294] float: shorter side to 294 (bicubic), center crop."""
    import torch

    scale = IMAGE_SIDE / min(image.shape[-2:])
    size = (max(IMAGE_SIDE, round(image.shape[-2] * scale)), max(IMAGE_SIDE, round(image.shape[-1] * scale)))
    # antialias: Pillow's bicubic filters over the source pixels when shrinking; a plain bicubic would alias.
    full = torch.nn.functional.interpolate(
        image[None].float(), size=size, mode="bicubic", align_corners=False, antialias=True
    )
    top, left = (size[0] - IMAGE_SIDE) // 2, (size[1] - IMAGE_SIDE) // 2
    return full[..., top : top + IMAGE_SIDE, left : left + IMAGE_SIDE]


def write_jpegs(samples: Sequence[tuple[bytes, str]], folder: Path) -> list[Path]:
    """The JPEG bytes as files (the media pipeline reads files), named so that sorted order is sample order.

    The folder is emptied first: a file left from a larger dataset would shift every caption after it.
    """
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    paths = []
    for index, (jpeg, _) in enumerate(samples):
        path = folder / f"sample_{index:06d}.jpg"
        path.write_bytes(jpeg)
        paths.append(path)
    return paths


@contextlib.contextmanager
def media_pipe_batches(
    samples: Sequence[tuple[bytes, str]], batch: int, vocab: int, workdir: Path
) -> Iterator[Callable[[], Batch]]:
    """Gaudi's media engine decodes, crops and resizes; ``CropMirrorNorm`` normalises; pixels arrive on the HPU."""
    import numpy as np
    from habana_frameworks.mediapipe import fn
    from habana_frameworks.mediapipe.media_types import dtype, ftype, imgtype, randomCropType
    from habana_frameworks.mediapipe.mediapipe import MediaPipe
    from habana_frameworks.mediapipe.plugins.iterator_pytorch import HPUGenericPytorchIterator

    if not samples or len(samples) % batch:
        # Whole batches only: how a reader pads or drops a last partial batch is not part of its documented API.
        raise ValueError(f"the media pipeline needs whole batches: {len(samples)} samples, batch {batch}")
    folder = workdir / "jpegs"
    write_jpegs(samples, folder / "sample")
    input_ids, attention_mask = _captions(samples, vocab)
    # CropMirrorNorm computes (pixel - mean) * inv_std on 0-255 pixels: CLIP's statistics scaled by 255.
    mean = np.asarray(CLIP_MEAN, dtype=np.float32) * 255
    inv_std = 1 / (np.asarray(CLIP_STD, dtype=np.float32) * 255)

    class BridgeTowerMediaPipe(MediaPipe):  # type: ignore[misc,valid-type]
        """read files -> decode (center crop, bicubic resize to 294) on the device -> normalise."""

        def __init__(self) -> None:
            super().__init__(
                device="mixed",  # reader on the CPU, decode and normalise on the HPU
                prefetch_depth=MEDIA_PREFETCH_DEPTH,
                batch_size=batch,
                num_threads=1,
                pipe_name="pytest_accel_bridgetower",
            )
            self.reader = fn.ReadImageDatasetFromDir(
                dir=str(folder),  # one sub-folder, so one class label: the labels are not used
                format="jpg",
                shuffle=False,  # batch k holds samples k*batch..: the captions are matched by position
                device="cpu",
            )
            self.decode = fn.ImageDecoder(
                device="hpu",
                output_format=imgtype.RGB_P,  # planar: [batch, 3, H, W] on the torch side
                random_crop_type=randomCropType.CENTER_CROP,
                resize=[IMAGE_SIDE, IMAGE_SIDE],
                resampling_mode=ftype.BICUBIC,
            )
            self.mean = fn.MediaConst(data=mean, shape=[1, 1, 3], dtype=dtype.FLOAT32)
            self.inv_std = fn.MediaConst(data=inv_std, shape=[1, 1, 3], dtype=dtype.FLOAT32)
            self.normalise = fn.CropMirrorNorm(
                crop_w=IMAGE_SIDE, crop_h=IMAGE_SIDE, crop_pos_x=0.5, crop_pos_y=0.5, dtype=dtype.FLOAT32
            )

        def definegraph(self) -> Any:
            jpegs, _labels = self.reader()
            images = self.decode(jpegs)
            return self.normalise(images, self.mean(), self.inv_std())

    pipe = BridgeTowerMediaPipe()
    # The iterator registers pipe.close to run at exit; the suite makes one pipe per test, so each is
    # closed when its test is done instead (on Gaudi: whether the exit-time close then minds is unverified).
    live = [HPUGenericPytorchIterator(mediapipe=pipe)]  # builds the pipe
    iter(live[0])  # iter_init: the first epoch
    position = 0  # batches served in this epoch: which captions go with the next images

    def run_pipe() -> Any:
        try:
            return next(live[0])
        except StopIteration:
            raise
        except Exception as error:  # the media engine names no sample: say which files this batch read
            first = position * batch
            ahead = min(len(samples), first + (MEDIA_PREFETCH_DEPTH + 1) * batch) - 1
            raise RuntimeError(
                f"the media pipeline failed while serving samples {first}..{first + batch - 1}; it decodes up to "
                f"{MEDIA_PREFETCH_DEPTH} batches ahead, so the bad file is one of sample_{first:06d}.jpg.."
                f"sample_{ahead:06d}.jpg in {folder / 'sample'}: {type(error).__name__}: {error}"
            ) from error

    def next_batch() -> Batch:
        nonlocal position
        try:
            (pixels,) = run_pipe()
        except StopIteration:
            iter(live[0])
            position = 0
            (pixels,) = run_pipe()
        rows = slice(position * batch, (position + 1) * batch)
        position += 1
        return {"pixel_values": pixels, "input_ids": input_ids[rows], "attention_mask": attention_mask[rows]}

    try:
        yield next_batch
    finally:
        live.clear()
        pipe.close()
