"""A contract fake of optimum-habana's SD3 joint-attention processor, in both of its layouts.

Built from optimum-habana's source (github.com/huggingface/optimum-habana):

- ``v1.16.0`` and ``v1.17.0``: ``GaudiJointAttnProcessor2_0`` is defined in
  ``optimum/habana/diffusers/pipelines/stable_diffusion_3/pipeline_stable_diffusion_3.py``; its
  ``__init__(self)`` takes no argument and its call always passes FusedSDPA the ``"fast"`` softmax mode.
- ``v1.18.0`` onwards (read at ``v1.20.0`` and at 1.21.0.dev0): it lives in
  ``optimum/habana/diffusers/models/attention_processor.py`` as ``__init__(self, is_training=False)``, and the
  call passes ``"None" if self.is_training else "fast"`` ("Fast FSDPA is not supported in training mode").

The processor records the softmax mode it would give FusedSDPA and computes plain SDPA on the CPU.
"""

from __future__ import annotations

import importlib.machinery
import sys
from types import ModuleType
from typing import Any, final

import pytest

__all__ = ["LAYOUTS", "install_fake_optimum_habana"]

# layout -> the module that defines GaudiJointAttnProcessor2_0 in it.
LAYOUTS = {
    "pipeline": "optimum.habana.diffusers.pipelines.stable_diffusion_3.pipeline_stable_diffusion_3",
    "models": "optimum.habana.diffusers.models.attention_processor",
}


@final
class FakeOptimumHabana:
    """The processors made, in order, and the softmax mode each would run."""

    def __init__(self, layout: str) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
        self.layout = layout
        self.modes: list[str] = []  # FusedSDPA's softmax_mode per processor made: "fast" or "None"


def install_fake_optimum_habana(monkeypatch: pytest.MonkeyPatch, layout: str) -> FakeOptimumHabana:
    """Put ``optimum.habana`` with the processor where ``layout`` defines it into ``sys.modules``."""
    fake = FakeOptimumHabana(layout)
    from diffusers.models.attention_processor import JointAttnProcessor2_0

    class GaudiJointAttnProcessor2_0(JointAttnProcessor2_0):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__()
            if layout == "pipeline":
                if args or kwargs:  # v1.16-1.17: ``def __init__(self)``
                    raise TypeError("GaudiJointAttnProcessor2_0.__init__() takes 1 positional argument")
                fake.modes.append("fast")
                return
            (is_training,) = args or (kwargs.pop("is_training", False),)
            if kwargs:
                raise TypeError(f"unexpected keyword arguments {sorted(kwargs)}")
            self.is_training = is_training
            fake.modes.append("None" if is_training else "fast")

    names = LAYOUTS[layout].split(".")
    for depth in range(1, len(names) + 1):
        name = ".".join(names[:depth])
        module = ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=depth < len(names))
        if depth < len(names):
            module.__path__ = []  # a package, so the import system accepts what is under it
        monkeypatch.setitem(sys.modules, name, module)
        if depth > 1:
            setattr(sys.modules[".".join(names[: depth - 1])], names[depth - 1], module)
    sys.modules[LAYOUTS[layout]].__dict__["GaudiJointAttnProcessor2_0"] = GaudiJointAttnProcessor2_0
    return fake
