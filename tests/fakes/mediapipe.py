"""A contract fake of Habana's media pipeline (``habana_media_loader``), as ``workloads/device_decode.py`` uses it.

Only the classes and keyword arguments that module uses exist, with the names Habana documents
(docs.habana.ai, "Media Pipeline": ``MediaPipe``, ``fn.ReadImageDatasetFromDir``, ``fn.ImageDecoder``,
``fn.MediaConst``, ``fn.CropMirrorNorm``, ``HPUGenericPytorchIterator``). An unknown keyword or a
missing required one raises ``TypeError``, so a call the real library would reject fails here too.

The fake runs the graph for real, on the CPU, with Pillow and numpy: the reader lists the JPEG files
(sub-folder = class), the decoder center-crops each image to the output's aspect ratio and resizes it
bicubically (what ``randomCropType.CENTER_CROP`` with ``resize`` documents), and ``CropMirrorNorm``
computes ``(pixel - mean) * inv_std``. Constant shapes are Habana's, fastest dimension first
(``[1, 1, 3]`` is one value per channel). Pipeline events go to ``FakeMediaPipe.calls``.
"""

from __future__ import annotations

import importlib.machinery
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import numpy as np
import pytest

__all__ = ["FakeMediaPipe", "install_fake_mediapipe"]


class _Names:
    """Enum-like constant holders (``imgtype.RGB_P``): a value is its own qualified name."""

    def __init_subclass__(cls) -> None:
        for name in [n for n in vars(cls) if n.isupper()]:
            setattr(cls, name, f"{cls.__name__}.{name}")


class dtype(_Names):
    NDT = UINT8 = UINT32 = UINT64 = FLOAT32 = ""


class imgtype(_Names):
    RGB_I = RGB_P = ""


class ftype(_Names):
    NEAREST = LINEAR = BICUBIC = ""


class randomCropType(_Names):
    NO_CROP = CENTER_CROP = RANDOMIZED_AREA_AND_ASPECT_RATIO_CROP = ""


class _Symbol:
    """One output of an operator call inside ``definegraph``: evaluated per ``run()``."""

    def __init__(self, op: _Op, inputs: tuple[Any, ...], index: int = 0) -> None:
        self.op, self.inputs, self.index = op, inputs, index


class _Op:
    """An operator: keyword arguments checked at construction, a symbol per call in ``definegraph``."""

    KWARGS: ClassVar[frozenset[str]] = frozenset()
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    OUTPUTS: ClassVar[int] = 1

    def __init__(self, **kwargs: Any) -> None:
        unknown = set(kwargs) - self.KWARGS
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown keyword argument(s) {sorted(unknown)}")
        missing = self.REQUIRED - set(kwargs)
        if missing:
            raise TypeError(f"{type(self).__name__}: missing required keyword argument(s) {sorted(missing)}")
        self.kwargs = kwargs

    def __call__(self, *inputs: Any) -> Any:
        if self.OUTPUTS == 1:
            return _Symbol(self, inputs)
        return tuple(_Symbol(self, inputs, index) for index in range(self.OUTPUTS))

    def start_epoch(self, pipe: Any) -> None:
        """Readers rewind here; other operators keep no state."""

    def evaluate(self, pipe: Any, *values: Any) -> Any:
        raise NotImplementedError


class ReadImageDatasetFromDir(_Op):
    KWARGS = frozenset({"dir", "format", "shuffle", "seed", "max_file", "device", "label_dtype"})
    REQUIRED = frozenset({"dir", "format"})
    OUTPUTS = 2

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if kwargs.get("device", "cpu") != "cpu":
            raise ValueError("ReadImageDatasetFromDir runs on the cpu backend only")
        root = Path(kwargs["dir"])
        classes = sorted(p for p in root.iterdir() if p.is_dir())
        self.files = [(f, label) for label, c in enumerate(classes) for f in sorted(c.glob(f"*.{kwargs['format']}"))]
        if not self.files:
            raise ValueError(f"no .{kwargs['format']} files in the class folders of {root}")
        self.shuffle = kwargs.get("shuffle", True)
        self.position = 0

    def start_epoch(self, pipe: Any) -> None:
        if len(self.files) % pipe.batch_size:
            # The real reader pads or drops by undocumented rules; the workload must not depend on them.
            raise AssertionError(f"{len(self.files)} files do not make whole batches of {pipe.batch_size}")
        self.position = 0
        self.order = np.random.default_rng(0).permutation(len(self.files)) if self.shuffle else range(len(self.files))

    def evaluate(self, pipe: Any) -> tuple[np.ndarray, np.ndarray]:
        if self.position >= len(self.files):
            raise StopIteration
        chosen = [self.files[i] for i in list(self.order)[self.position : self.position + pipe.batch_size]]
        self.position += pipe.batch_size
        return np.array([str(f) for f, _ in chosen]), np.array([label for _, label in chosen], dtype=np.uint32)


class ImageDecoder(_Op):
    KWARGS = frozenset({"device", "output_format", "resize", "resampling_mode", "random_crop_type", "seed"})
    REQUIRED = frozenset({"device", "output_format", "resize"})

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if kwargs["device"] != "hpu":
            raise ValueError("the fake decodes for the hpu backend only, as the workload asks")

    def evaluate(self, pipe: Any, paths: np.ndarray) -> np.ndarray:
        from PIL import Image

        width, height = self.kwargs["resize"]
        crop = self.kwargs.get("random_crop_type", randomCropType.NO_CROP)
        resample = {ftype.BICUBIC: Image.Resampling.BICUBIC, ftype.LINEAR: Image.Resampling.BILINEAR}.get(
            self.kwargs.get("resampling_mode", ftype.LINEAR), Image.Resampling.NEAREST
        )
        images = []
        for path in paths:
            with Image.open(path) as image:
                image = image.convert("RGB")
                if crop == randomCropType.CENTER_CROP:  # the largest centered window of the output's aspect
                    scale = min(image.width / width, image.height / height)
                    w, h = round(width * scale), round(height * scale)
                    left, top = (image.width - w) // 2, (image.height - h) // 2
                    image = image.crop((left, top, left + w, top + h))
                images.append(np.asarray(image.resize((width, height), resample)))
        batch = np.stack(images)  # [N, H, W, 3]
        return batch.transpose(0, 3, 1, 2).copy() if self.kwargs["output_format"] == imgtype.RGB_P else batch


class MediaConst(_Op):
    KWARGS = frozenset({"data", "shape", "dtype", "device"})
    REQUIRED = frozenset({"data", "shape", "dtype"})

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(kwargs["data"], np.ndarray):  # documented type: "Numpy array"
            raise TypeError(f"MediaConst data must be a numpy array, not {type(kwargs['data']).__name__}")

    def evaluate(self, pipe: Any) -> np.ndarray:
        return np.asarray(self.kwargs["data"], dtype=np.float32).reshape(self.kwargs["shape"][::-1])


class CropMirrorNorm(_Op):
    KWARGS = frozenset({"crop_w", "crop_h", "crop_d", "crop_pos_x", "crop_pos_y", "mirror", "dtype", "device"})
    REQUIRED = frozenset({"crop_w", "crop_h"})

    def evaluate(self, pipe: Any, images: np.ndarray, mean: np.ndarray, inv_std: np.ndarray) -> np.ndarray:
        if images.ndim != 4 or images.shape[1] != 3:
            raise ValueError(f"CropMirrorNorm: the fake takes planar [N, 3, H, W] images, got {images.shape}")
        k = self.kwargs
        height, width = images.shape[2:]
        top = round((height - k["crop_h"]) * k.get("crop_pos_y", 0.5))
        left = round((width - k["crop_w"]) * k.get("crop_pos_x", 0.5))
        window = images[:, :, top : top + k["crop_h"], left : left + k["crop_w"]].astype(np.float32)
        if k.get("mirror", 0):
            window = window[..., ::-1]
        return ((window - mean[None]) * inv_std[None]).astype(np.float32)


class _Output:
    """What ``MediaPipe.run()`` returns per output: a device buffer; the iterator turns it into a tensor."""

    def __init__(self, array: np.ndarray) -> None:
        self.device = "hpu"
        self._array = array

    def as_nparray(self) -> np.ndarray:
        return self._array


class FakeMediaPipe:
    """The fake ``MediaPipe`` base class; ``calls`` is shared by every instance (reset per install)."""

    calls: ClassVar[list[str]] = []

    def __init__(
        self,
        device: str | None = None,
        prefetch_depth: int = 2,
        batch_size: int = 1,
        num_threads: int = 1,
        pipe_name: str | None = None,
    ) -> None:
        if device not in ("cpu", "mixed"):
            raise ValueError(f"MediaPipe device must be 'cpu' or 'mixed' ('legacy' is deprecated), not {device!r}")
        if batch_size < 1 or prefetch_depth < 1 or num_threads < 1:
            raise ValueError("batch_size, prefetch_depth and num_threads must be positive")
        self.batch_size = batch_size
        self.pipe_name = pipe_name
        self._outputs: tuple[_Symbol, ...] | None = None
        self.calls.append(f"MediaPipe.__init__(device={device})")

    def definegraph(self) -> Any:
        raise NotImplementedError("a MediaPipe subclass defines its graph")

    def close(self) -> None:
        self.calls.append("MediaPipe.close")

    def build(self) -> None:
        graph = self.definegraph()
        self._outputs = graph if isinstance(graph, tuple) else (graph,)
        self.calls.append("MediaPipe.build")

    def _ops(self) -> list[_Op]:
        seen: list[_Op] = []
        pending = list(self._outputs or ())
        while pending:
            symbol = pending.pop()
            if symbol.op not in seen:
                seen.append(symbol.op)
            pending += [i for i in symbol.inputs if isinstance(i, _Symbol)]
        return seen

    def iter_init(self) -> None:
        if self._outputs is None:
            raise RuntimeError("iter_init() before build()")
        for op in self._ops():
            op.start_epoch(self)
        self.calls.append("MediaPipe.iter_init")

    def run(self) -> Any:
        if self._outputs is None:
            raise RuntimeError("run() before build()")
        cache: dict[int, Any] = {}

        def value(symbol: _Symbol) -> Any:
            if id(symbol.op) not in cache:
                inputs = [value(i) if isinstance(i, _Symbol) else i for i in symbol.inputs]
                cache[id(symbol.op)] = symbol.op.evaluate(self, *inputs)
            result = cache[id(symbol.op)]
            return result[symbol.index] if symbol.op.OUTPUTS > 1 else result

        outputs = [_Output(value(symbol)) for symbol in self._outputs]
        self.calls.append("MediaPipe.run")
        return outputs if len(outputs) > 1 else outputs[0]


class HPUGenericPytorchIterator:
    """Builds the pipe; ``iter()`` starts an epoch; ``next()`` runs it and returns a list of tensors.

    As the real one, it registers ``pipe.close`` to run at exit (``EXIT_DELETERS`` here): dropping
    the iterator does not close the pipe.
    """

    EXIT_DELETERS: ClassVar[list[Any]] = []

    def __init__(self, mediapipe: FakeMediaPipe) -> None:
        self.EXIT_DELETERS.append(mediapipe.close)
        mediapipe.build()
        self.pipe = mediapipe

    def __iter__(self) -> HPUGenericPytorchIterator:
        self.pipe.iter_init()
        return self

    def __next__(self) -> list[Any]:
        import torch

        outputs = self.pipe.run()
        outputs = outputs if isinstance(outputs, list) else [outputs]
        return [torch.from_numpy(output.as_nparray()) for output in outputs]

    def __del__(self) -> None:
        FakeMediaPipe.calls.append("HPUGenericPytorchIterator.__del__")


def _module(name: str, **attributes: Any) -> ModuleType:
    module = ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    module.__path__ = []
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


def install_fake_mediapipe(monkeypatch: pytest.MonkeyPatch) -> type[FakeMediaPipe]:
    """Put a fake ``habana_frameworks.mediapipe`` into ``sys.modules`` for one test; returns the pipe class."""
    FakeMediaPipe.calls = []
    HPUGenericPytorchIterator.EXIT_DELETERS = []
    fn = _module(
        "habana_frameworks.mediapipe.fn",
        ReadImageDatasetFromDir=ReadImageDatasetFromDir,
        ImageDecoder=ImageDecoder,
        MediaConst=MediaConst,
        CropMirrorNorm=CropMirrorNorm,
    )
    modules = {
        "habana_frameworks.mediapipe": _module("habana_frameworks.mediapipe", fn=fn),
        "habana_frameworks.mediapipe.fn": fn,
        "habana_frameworks.mediapipe.mediapipe": _module(
            "habana_frameworks.mediapipe.mediapipe", MediaPipe=FakeMediaPipe
        ),
        "habana_frameworks.mediapipe.media_types": _module(
            "habana_frameworks.mediapipe.media_types",
            dtype=dtype,
            imgtype=imgtype,
            ftype=ftype,
            randomCropType=randomCropType,
        ),
        "habana_frameworks.mediapipe.plugins": _module("habana_frameworks.mediapipe.plugins"),
        "habana_frameworks.mediapipe.plugins.iterator_pytorch": _module(
            "habana_frameworks.mediapipe.plugins.iterator_pytorch", HPUGenericPytorchIterator=HPUGenericPytorchIterator
        ),
    }
    if "habana_frameworks" not in sys.modules:
        modules["habana_frameworks"] = _module("habana_frameworks")
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return FakeMediaPipe
