"""The BridgeTower vision-language data path: real JPEG bytes, decoded and transformed as the Gaudi example does.

The dataset makes its JPEGs once, at test time, with Pillow: photograph-like sizes and smooth,
noisy content (so the encoder does real work and the files have realistic sizes), plus captions.
The transform is the example's: resize the shorter side to 294 (bicubic), center-crop 294x294,
scale to [0, 1], normalise with CLIP's mean and std. Text is tokenised by hashing words into the
vocabulary and padding to 128 tokens (BridgeTower's ``max_seq_length``): a real tokenizer would
need a hub download, and tokenising is not what the study's data path measured.
"""

from __future__ import annotations

import io
import random
import zlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["CLIP_MEAN", "CLIP_STD", "IMAGE_SIDE", "JpegCaptionDataset", "make_jpegs", "transform"]

IMAGE_SIDE = 294  # BridgeTower-large's image size
TEXT_TOKENS = 128  # max_seq_length in the example
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
# Sizes of typical photographs (the study fine-tuned on New Yorker cartoons and photos).
_PHOTO_SIZES = ((640, 480), (800, 600), (1024, 768), (500, 375), (480, 640), (1280, 720))
_WORDS = (
    "a", "cartoon", "of", "a", "cat", "with", "an", "umbrella", "sitting", "on", "the", "roof", "at", "night",
)  # fmt: skip


def make_jpegs(count: int, seed: int = 0, quality: int = 90) -> list[tuple[bytes, str]]:
    """``count`` (JPEG bytes, caption) pairs, reproducible from ``seed``."""
    from PIL import Image

    rng = random.Random(seed)
    samples = []
    for _ in range(count):
        width, height = rng.choice(_PHOTO_SIZES)
        # A smooth gradient image with noise, drawn at 1/8 size and upscaled: JPEG-friendly but not trivial.
        small = Image.effect_noise((width // 8, height // 8), 64).convert("RGB")
        tint = Image.new("RGB", small.size, tuple(rng.randrange(256) for _ in range(3)))
        image = Image.blend(small, tint, 0.5).resize((width, height), Image.Resampling.BILINEAR)
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=quality)
        caption = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(5, 20)))
        samples.append((buffer.getvalue(), caption))
    return samples


def transform(jpeg: bytes) -> torch.Tensor:
    """Decode, resize the shorter side to 294 (bicubic), center-crop, normalise: [3, 294, 294] float."""
    import torch
    from PIL import Image

    with Image.open(io.BytesIO(jpeg)) as image:
        image = image.convert("RGB")
        scale = IMAGE_SIDE / min(image.size)
        size = (max(IMAGE_SIDE, round(image.width * scale)), max(IMAGE_SIDE, round(image.height * scale)))
        image = image.resize(size, Image.Resampling.BICUBIC)
        left, top = (image.width - IMAGE_SIDE) // 2, (image.height - IMAGE_SIDE) // 2
        image = image.crop((left, top, left + IMAGE_SIDE, top + IMAGE_SIDE))
        pixels = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8)
    chw = pixels.view(IMAGE_SIDE, IMAGE_SIDE, 3).permute(2, 0, 1).float().div_(255)
    mean = torch.tensor(CLIP_MEAN).view(3, 1, 1)
    std = torch.tensor(CLIP_STD).view(3, 1, 1)
    return (chw - mean) / std


def tokenize(caption: str, vocab: int) -> tuple[list[int], list[int]]:
    """Hash words to ids in [3, vocab) (0-2 are BOS/PAD/EOS), pad to 128: (ids, attention mask)."""
    words = [3 + zlib.crc32(word.encode()) % (vocab - 3) for word in caption.split()]
    ids = [0, *words[: TEXT_TOKENS - 2], 2]
    mask = [1] * len(ids)
    padding = TEXT_TOKENS - len(ids)
    return ids + [1] * padding, mask + [0] * padding


class CorruptImage(ValueError):
    """A sample's JPEG bytes could not be decoded: names the index, so a bad file is found, not hung on."""


class JpegCaptionDataset:
    """A map-style dataset of (JPEG bytes, caption) held in memory; workers decode on access."""

    def __init__(self, samples: list[tuple[bytes, str]], vocab: int) -> None:
        self.samples = samples
        self.vocab = vocab

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> dict[str, Any]:
        import torch
        from PIL import UnidentifiedImageError

        jpeg, caption = self.samples[index]
        try:
            pixels = transform(jpeg)
        except (OSError, UnidentifiedImageError, ValueError) as error:
            raise CorruptImage(f"sample {index}: JPEG of {len(jpeg)} bytes does not decode: {error}") from error
        ids, mask = tokenize(caption, self.vocab)
        return {
            "pixel_values": pixels,
            "input_ids": torch.tensor(ids),
            "attention_mask": torch.tensor(mask),
        }
