"""The suite's device-side JPEG decode, run on the CPU through fakes of the decoders.

Gaudi (Habana's media pipeline): the contract fake runs the pipeline's graph on the CPU, so these
tests check what the workload asks of the media engine: the documented operators and arguments, a
graph whose output matches the CPU data path's transform, captions that stay with their images
across epochs, and a clear error instead of an undocumented partial batch.

CUDA (nvJPEG): ``torchvision.io.decode_jpeg`` is replaced by a Pillow decode to uint8 [3, H, W],
so the resize, crop and normalise the GPU runs are checked against the CPU transform too.
Neither real decoder has run here (README: support matrix).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch
from fakes.mediapipe import install_fake_mediapipe

pytest.importorskip("PIL", reason="the fake decodes with Pillow (pip install 'pytest-accel[models]')")

import workloads
from workloads import device_decode, images

from pytest_accel.engine.devices.cpu import CpuDevice

VOCAB = 1000


@pytest.fixture(scope="module")
def samples() -> list[tuple[bytes, str]]:
    return images.make_jpegs(16, seed=3)


def test_pixels_match_the_cpu_data_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, samples: list[tuple[bytes, str]]
) -> None:
    """Decode + center crop + bicubic resize + normalise on the 'device' gives the CPU transform's batch."""
    install_fake_mediapipe(monkeypatch)
    with device_decode.media_pipe_batches(samples, 8, VOCAB, tmp_path) as next_batch:
        batch = next_batch()
    expected = torch.stack([images.transform(jpeg) for jpeg, _ in samples[:8]])
    assert batch["pixel_values"].shape == (8, 3, images.IMAGE_SIDE, images.IMAGE_SIDE)
    assert batch["pixel_values"].dtype == torch.float32
    # Crop-then-resize (media engine) and resize-then-crop (Pillow) differ only by resampling: measured mean
    # 0.006 (max 0.15) against a mean |pixel| of 0.61; a wrong mean or std moves the mean by 0.1 or more.
    difference = (batch["pixel_values"] - expected).abs()
    assert float(difference.mean()) < 0.02, f"mean |difference| {float(difference.mean()):.4f} in normalised units"
    ids = torch.tensor([images.tokenize(caption, VOCAB)[0] for _, caption in samples[:8]])
    assert torch.equal(batch["input_ids"], ids)


def test_epochs_cycle_with_captions_in_step(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, samples: list[tuple[bytes, str]]
) -> None:
    """Two batches per epoch: the third call starts epoch two, and images and captions restart together."""
    pipe = install_fake_mediapipe(monkeypatch)
    with device_decode.media_pipe_batches(samples, 8, VOCAB, tmp_path) as next_batch:
        first, second, third = next_batch(), next_batch(), next_batch()
    assert not torch.equal(first["input_ids"], second["input_ids"])
    assert torch.equal(first["input_ids"], third["input_ids"])
    assert torch.equal(first["pixel_values"], third["pixel_values"])
    assert pipe.calls.count("MediaPipe.iter_init") == 2
    assert pipe.calls[0] == "MediaPipe.__init__(device=mixed)"
    assert pipe.calls[-2:] == ["HPUGenericPytorchIterator.__del__", "MediaPipe.close"], "the pipe outlived its test"


def test_a_corrupt_jpeg_names_the_batch_it_is_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The media engine's own error names no sample: the workload says which files the failing batch read."""
    install_fake_mediapipe(monkeypatch)
    samples = images.make_jpegs(16)
    jpeg, caption = samples[11]
    samples[11] = (jpeg[: len(jpeg) // 3], caption)
    with device_decode.media_pipe_batches(samples, 8, VOCAB, tmp_path) as next_batch:
        next_batch()  # samples 0..7 decode
        with pytest.raises(
            RuntimeError, match=r"failed while serving samples 8\.\.15; .* sample_000008\.jpg\.\.sample_000015"
        ):
            next_batch()


def test_partial_batches_are_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A last partial batch would depend on the reader's undocumented padding: refused, naming the sizes."""
    install_fake_mediapipe(monkeypatch)
    with (
        pytest.raises(ValueError, match="whole batches: 12 samples, batch 8"),
        device_decode.media_pipe_batches(images.make_jpegs(12), 8, VOCAB, tmp_path),
    ):
        pass


def test_jpegs_are_written_in_sample_order(tmp_path: Path, samples: list[tuple[bytes, str]]) -> None:
    """Sorted file order is sample order, and files of an earlier, larger dataset do not linger."""
    device_decode.write_jpegs(samples + samples, tmp_path / "jpegs")
    paths = device_decode.write_jpegs(samples, tmp_path / "jpegs")
    assert paths == sorted((tmp_path / "jpegs").iterdir())
    assert [p.read_bytes() for p in paths] == [jpeg for jpeg, _ in samples]


@pytest.mark.parametrize(
    ("kind", "installed", "reason"),
    [
        ("cpu", False, "needs CUDA \\(nvJPEG\\) or Gaudi \\(media pipeline\\), not cpu"),
        ("hpu", False, "pip install habana-media-loader"),
        ("cuda", False, "needs a torchvision matching this torch: ModuleNotFoundError"),
        ("hpu", True, None),
    ],
)
def test_unavailable_reason(monkeypatch: pytest.MonkeyPatch, kind: str, installed: bool, reason: str | None) -> None:
    """The skip reason names what is missing; with the media loader present, Gaudi decode runs."""
    if installed:
        install_fake_mediapipe(monkeypatch)
    else:
        for name in [n for n in sys.modules if n.startswith("habana_frameworks")]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.setitem(sys.modules, "torchvision", None)  # import fails, as with a mismatched build
        if kind == "hpu" and workloads.installed("habana_frameworks"):
            pytest.skip("habana_frameworks is installed here")
    found = device_decode.unavailable_reason(SimpleNamespace(kind=kind))  # type: ignore[arg-type]
    if reason is None:
        assert found is None
    else:
        assert found is not None and re.search(reason, found), found


def _pillow_decode_jpeg(inputs: list[torch.Tensor], device: Any = "cpu") -> list[torch.Tensor]:
    """``torchvision.io.decode_jpeg``'s contract for a list input: uint8 [3, H, W] per image, on ``device``."""
    import io

    from PIL import Image

    decoded = []
    for data in inputs:
        assert data.dtype == torch.uint8 and data.dim() == 1, "decode_jpeg takes 1-D uint8 tensors of file bytes"
        with Image.open(io.BytesIO(data.numpy().tobytes())) as image:
            rgb = torch.frombuffer(bytearray(image.convert("RGB").tobytes()), dtype=torch.uint8)
            decoded.append(rgb.view(image.height, image.width, 3).permute(2, 0, 1).to(device))
    return decoded


def test_nvjpeg_path_matches_the_cpu_data_path(
    monkeypatch: pytest.MonkeyPatch, samples: list[tuple[bytes, str]]
) -> None:
    """The CUDA path's resize (antialiased bicubic), crop and normalise agree with Pillow's transform."""
    torchvision = ModuleType("torchvision")
    torchvision.io = SimpleNamespace(decode_jpeg=_pillow_decode_jpeg)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torchvision", torchvision)
    with device_decode.nvjpeg_batches(samples, 8, VOCAB, CpuDevice()) as next_batch:
        first, second, third = next_batch(), next_batch(), next_batch()
    expected = torch.stack([images.transform(jpeg) for jpeg, _ in samples[:8]])
    assert first["pixel_values"].shape == expected.shape
    # Measured: mean 0.004, max 0.016 (without antialias: max 0.096, the aliasing of a 2.4x shrink).
    difference = (first["pixel_values"] - expected).abs()
    assert float(difference.mean()) < 0.02, f"mean |difference| {float(difference.mean()):.4f} in normalised units"
    assert float(difference.max()) < 0.05, f"max |difference| {float(difference.max()):.4f}: aliasing?"
    assert torch.equal(third["input_ids"], first["input_ids"]) and not torch.equal(
        second["input_ids"], first["input_ids"]
    )
