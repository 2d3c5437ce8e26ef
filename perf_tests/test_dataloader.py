"""The BridgeTower data path: samples/s with DataLoader workers 0, 1, 2, and with device-side JPEG decode."""

from __future__ import annotations

import multiprocessing
from typing import Any

import pytest
import torch
from workloads import bridgetower, images

from pytest_accel.devices.base import Device

pytest.importorskip("PIL", reason="the data path decodes JPEGs with Pillow (pip install 'pytest-accel[models]')")
pytest.importorskip("transformers", reason="BridgeTower needs transformers (pip install 'pytest-accel[models]')")

WORKERS = (0, 1, 2)


def _sizes(profile: str) -> tuple[int, int]:
    """(samples in the dataset, batch): the study's per-device batch 48 in full."""
    return (384, 48) if profile == "full" else (64, 8)


@pytest.fixture(scope="module")
def jpeg_dataset(accel_profile: str) -> images.JpegCaptionDataset:
    """Real JPEG bytes and captions, made once per module."""
    count, _ = _sizes(accel_profile)
    return images.JpegCaptionDataset(images.make_jpegs(count), vocab=1000 if accel_profile != "full" else 50265)


@pytest.fixture(autouse=True)
def no_orphan_workers() -> Any:
    """Every test leaves no DataLoader worker behind, passed or failed."""
    yield
    alive = multiprocessing.active_children()
    assert not alive, f"DataLoader workers survived the test: {alive}"


@pytest.mark.parametrize("workers", WORKERS)
def test_data_path(throughput: Any, accel_profile: str, jpeg_dataset: images.JpegCaptionDataset, workers: int) -> None:
    """Decode + resize + crop + normalise + collate, fed by a real DataLoader: samples/s."""
    _, batch = _sizes(accel_profile)
    with bridgetower.loader_batches(jpeg_dataset, batch, workers) as next_batch:
        result = throughput(lambda: next_batch()["pixel_values"], items=batch, unit="samples", workers=workers)
    assert result.disabled or result.items_per_second > 0


@pytest.mark.parametrize("workers", WORKERS)
def test_contrastive_training_end_to_end(
    throughput: Any, accel_device: Device, accel_profile: str, jpeg_dataset: images.JpegCaptionDataset, workers: int
) -> None:
    """Loader + BridgeTower contrastive training step: the samples/s the study's table reports."""
    if accel_profile == "full" and accel_device.kind == "cpu":
        pytest.skip("the full profile (BridgeTower-large, 866 M parameters) needs an accelerator")
    _, batch = _sizes(accel_profile)
    model = bridgetower.build(accel_profile, accel_device)
    step = bridgetower.train_step(model, accel_device)
    with bridgetower.loader_batches(jpeg_dataset, batch, workers) as next_batch:
        result = throughput(lambda: step(next_batch()), items=batch, unit="samples", workers=workers)
    assert result.disabled or result.items_per_second > 0


def test_data_path_device_decode(throughput: Any, accel_device: Device, accel_profile: str) -> None:
    """JPEG decode on the device: nvJPEG through torchvision on CUDA; Habana's media pipeline on Gaudi."""
    if accel_device.kind == "hpu":
        pytest.skip("Habana media-pipeline decode is not implemented in this suite yet (see README: gaps)")
    if accel_device.kind != "cuda":
        pytest.skip(f"device-side JPEG decode needs CUDA (nvJPEG) or Gaudi (media pipeline), not {accel_device.kind}")
    io = pytest.importorskip("torchvision.io", reason="CUDA JPEG decode needs torchvision")
    _, batch = _sizes(accel_profile)
    encoded = [torch.frombuffer(bytearray(jpeg), dtype=torch.uint8) for jpeg, _ in images.make_jpegs(batch)]
    mean = torch.tensor(images.CLIP_MEAN, device=accel_device.torch_device()).view(1, 3, 1, 1)
    std = torch.tensor(images.CLIP_STD, device=accel_device.torch_device()).view(1, 3, 1, 1)

    def decode_batch() -> torch.Tensor:
        decoded = io.decode_jpeg(encoded, device=accel_device.torch_device())
        side = images.IMAGE_SIDE
        resized = []
        for image in decoded:
            scale = side / min(image.shape[-2:])
            size = (max(side, round(image.shape[-2] * scale)), max(side, round(image.shape[-1] * scale)))
            full = torch.nn.functional.interpolate(image[None].float(), size=size, mode="bicubic", align_corners=False)
            top, left = (size[0] - side) // 2, (size[1] - side) // 2
            resized.append(full[..., top : top + side, left : left + side])
        return (torch.cat(resized) / 255 - mean) / std

    result = throughput(decode_batch, items=batch, unit="samples", workers="device")
    assert result.disabled or result.items_per_second > 0


def test_corrupt_jpeg_is_reported_not_hung(accel_profile: str) -> None:
    """A truncated JPEG in the dataset raises an error naming the sample, through worker processes too."""
    samples = images.make_jpegs(8)
    jpeg, caption = samples[5]
    samples[5] = (jpeg[: len(jpeg) // 3], caption)
    dataset = images.JpegCaptionDataset(samples, vocab=1000)
    with (
        pytest.raises(images.CorruptImage, match=r"sample 5: JPEG of \d+ bytes does not decode"),
        bridgetower.loader_batches(dataset, 4, workers=2) as next_batch,
    ):
        next_batch()
        next_batch()


def test_transform_matches_the_example() -> None:
    """The decoded sample is [3, 294, 294], CLIP-normalised (values span well beyond [0, 1])."""
    ((jpeg, caption),) = images.make_jpegs(1)
    pixels = images.transform(jpeg)
    assert pixels.shape == (3, images.IMAGE_SIDE, images.IMAGE_SIDE)
    assert float(pixels.min()) < 0 < float(pixels.max())
    ids, mask = images.tokenize(caption, 1000)
    assert len(ids) == len(mask) == images.TEXT_TOKENS and ids[0] == 0 and 2 in ids


def test_bridgetower_large_parameter_count_on_meta() -> None:
    """The full profile builds BridgeTower-large: 866,612,737 parameters, counted without memory."""
    model = bridgetower.build("full", None)
    assert sum(p.numel() for p in model.parameters()) == bridgetower.BRIDGETOWER_LARGE_PARAMETERS
