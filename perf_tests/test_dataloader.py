"""The BridgeTower data path: samples/s with DataLoader workers 0, 1, 2, and with JPEG decode on the device.

Device decode is nvJPEG (torchvision) on CUDA and Habana's media pipeline on Gaudi; elsewhere, or
when the library is missing, those variants skip with the reason. ``pytest-accel report --pivot
workers`` lays the results out as the study's table: a row per device, a column per loader.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from workloads import bridgetower, device_decode, images
from workloads.checks import check_measurement

from pytest_accel.engine.devices.base import Device

pytest.importorskip("PIL", reason="the data path decodes JPEGs with Pillow (pip install 'pytest-accel[models]')")
pytest.importorskip("transformers", reason="BridgeTower needs transformers (pip install 'pytest-accel[models]')")

DEVICE_DECODE = "device decode"
# The study's columns: DataLoader workers 0 / 1 / 2 decoding with Pillow, then JPEG decode on the device.
LOADERS = (0, 1, 2, pytest.param(DEVICE_DECODE, id="device-decode"))


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


def _skip_unless_decodable(loader: int | str, device: Device) -> None:
    if loader == DEVICE_DECODE and (reason := device_decode.unavailable_reason(device)) is not None:
        pytest.skip(reason)


@contextlib.contextmanager
def batches(
    dataset: images.JpegCaptionDataset, batch: int, loader: int | str, device: Device, workdir: Path
) -> Iterator[Callable[[], dict[str, torch.Tensor]]]:
    """``next_batch()`` from a DataLoader with ``loader`` workers, or decoded on the device (skips with the reason)."""
    if loader != DEVICE_DECODE:
        with bridgetower.loader_batches(dataset, batch, int(loader)) as next_batch:
            yield next_batch
        return
    _skip_unless_decodable(loader, device)
    with device_decode.device_decode_batches(dataset.samples, batch, dataset.vocab, device, workdir) as next_batch:
        yield next_batch


# Rounds of at least 0.25 s span several batches: with workers, a batch is either ready (prefetched)
# or waited for, so one batch per round gives a bimodal figure (IQR/median up to ±177% at 2 workers).
# And with background producers (workers, a prefetching media pipeline) the rounds are `pipelined`:
# back to back, so that no pause between them lets the producers get ahead.
@pytest.mark.perf(round_seconds=0.25, min_rounds=10)
@pytest.mark.parametrize("workers", LOADERS)
def test_data_path(
    throughput: Any,
    accel_device: Device,
    accel_profile: str,
    jpeg_dataset: images.JpegCaptionDataset,
    workers: int | str,
    tmp_path: Path,
) -> None:
    """Decode + resize + crop + normalise + collate (or the device's decode): samples/s."""
    _, batch = _sizes(accel_profile)
    with batches(jpeg_dataset, batch, workers, accel_device, tmp_path) as next_batch:
        sample = next_batch()["pixel_values"]
        assert sample.shape == (batch, 3, images.IMAGE_SIDE, images.IMAGE_SIDE)
        result = throughput(
            lambda: next_batch()["pixel_values"], items=batch, unit="samples", pipelined=workers != 0, workers=workers
        )
    check_measurement(result, unit="samples", items=batch)


@pytest.mark.parametrize("workers", LOADERS)
def test_contrastive_training_end_to_end(
    throughput: Any,
    accel_device: Device,
    accel_profile: str,
    jpeg_dataset: images.JpegCaptionDataset,
    workers: int | str,
    tmp_path: Path,
) -> None:
    """Loader (or device decode) + BridgeTower contrastive training step: the samples/s of the study's table."""
    if accel_profile == "full" and accel_device.kind == "cpu":
        pytest.skip("the full profile (BridgeTower-large, 866 M parameters) needs an accelerator")
    _skip_unless_decodable(workers, accel_device)  # before building the model
    _, batch = _sizes(accel_profile)
    model = bridgetower.build(accel_profile, accel_device)
    step = bridgetower.train_step(model, accel_device)
    with batches(jpeg_dataset, batch, workers, accel_device, tmp_path) as next_batch:
        result = throughput(
            lambda: step(next_batch()), items=batch, unit="samples", pipelined=workers != 0, workers=workers
        )
    check_measurement(result, unit="samples", items=batch)


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
