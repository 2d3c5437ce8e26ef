"""The environment as part of the build: what can change what runs besides the host and the repository.

A kernel developer's change is usually not in the repository under test but in what it runs on: a
torch or vendor-bridge build, diffusers, xformers, an extension rebuilt in place, a plugin on
``PYTHONPATH``, an environment variable that steers OpenMP or the Habana bridge. An ``Environment``
names each such part by a flat key and a value:

- ``dist <name>``: an installed distribution's version, with a stamp of its installed files (the hash
  of its ``RECORD``; for an editable install outside the repository, of its source files' sizes and
  times), so a rebuild at the same version reads as a change;
- ``plugin <name>``: a pytest plugin loaded from outside the repository and outside any distribution
  (a ``-p`` module on ``PYTHONPATH``, an object given to ``pytest.main``), by its file's hash;
- ``env <NAME>``: a variable that steers torch, OpenMP, BLAS, the allocator, the loader or a vendor
  stack (``STEERING_VARIABLES``), as the user set it;
- ``file <name>``: a start-up file Python runs (``sitecustomize``, ``usercustomize``, a ``.pth``), by hash.

Two environments with the same ``digest`` ran the same code outside the repository; ``changes`` names
what differs in a person's words (``diffusers 0.30.0 -> 0.31.0``, ``plugin spin_late added``).
Pure: no torch, no pytest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, final

from pytest_accel.core.validation import Invalid, show

__all__ = ["DIGEST_LENGTH", "ENVIRONMENT_PROVENANCE", "STEERING_VARIABLES", "Environment", "steering"]

# The provenance field that carries an environment's digest (baseline entries, result files).
ENVIRONMENT_PROVENANCE = "environment"
# Hex digits of the digest: 64 bits tell apart every environment a project will ever record.
DIGEST_LENGTH = 16
# Variables that change what torch and its libraries run: exact names, and prefixes (ending in "_").
# The device-selection variables (``CUDA_VISIBLE_DEVICES``, ``HABANA_VISIBLE_MODULES``) choose a card, which
# the device's provenance names; pytest-accel's own (``PYTEST_ACCEL_*``) say how a child was started.
STEERING_VARIABLES = (
    "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONOPTIMIZE", "PYTHONMALLOC", "PYTHONDEVMODE",
    "PYTHONNODEBUGRANGES", "PYTHON_JIT", "PYTHON_GIL", "GLIBC_TUNABLES", "THP_MEM_ALLOC_ENABLE",
    "TOKENIZERS_PARALLELISM", "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "BLIS_", "GOTO_", "VECLIB_", "DNNL_",
    "ONEDNN_", "ATEN_", "TORCH_", "PYTORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "PT_", "HABANA_", "HLS_", "GC_",
    "CUDA_", "CUDNN_", "CUBLAS_", "CUBLASLT_", "NCCL_", "NVIDIA_", "XFORMERS_", "TRITON_", "MALLOC_", "JEMALLOC_",
    "TCMALLOC_", "MIMALLOC_",
)  # fmt: skip
_NOT_STEERING = ("CUDA_VISIBLE_DEVICES", "HABANA_VISIBLE_MODULES", "HABANA_VISIBLE_DEVICES")
_KINDS = ("dist", "plugin", "env", "file")


def steering(variables: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``variables`` that steer what runs (``STEERING_VARIABLES``), sorted by name."""
    return {
        name: value
        for name, value in sorted(variables.items())
        if name not in _NOT_STEERING
        and not name.startswith("PYTEST_ACCEL_")
        and any(name == s or (s.endswith("_") and name.startswith(s)) for s in STEERING_VARIABLES)
    }


@final
@dataclass(frozen=True)
class Environment:
    """What ran besides the host and the repository: ``"<kind> <name>"`` -> its version, hash or value."""

    parts: Mapping[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """A short hash of every part: equal digests, the same environment."""
        canonical = json.dumps(dict(sorted(self.parts.items())), separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:DIGEST_LENGTH]

    def changes(self, now: Environment) -> tuple[str, ...]:
        """What differs from this (then) to ``now``, one phrase each, distributions first."""
        said = []
        for key in sorted(self.parts.keys() | now.parts.keys(), key=_order):
            then_value, now_value = self.parts.get(key), now.parts.get(key)
            if then_value != now_value:
                said.append(_change(key, then_value, now_value))
        return tuple(said)

    def to_json(self) -> dict[str, Any]:
        """The stored form: ``{"digest": ..., "parts": {...}}``."""
        return {"digest": self.digest, "parts": dict(sorted(self.parts.items()))}

    @classmethod
    def from_json(cls, data: object, where: str) -> Environment:
        """Inverse of ``to_json``; ``Invalid`` names the bad field (a digest that does not match its parts too)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("parts"), Mapping):
            raise Invalid(where, f"expected an object with 'digest' and 'parts', got {show(data)}")
        parts = data["parts"]
        for key, value in parts.items():
            if not isinstance(key, str) or key.partition(" ")[0] not in _KINDS or not isinstance(value, str):
                raise Invalid(f"{where}.parts", f"expected '<kind> <name>': string ({', '.join(_KINDS)}), got {key!r}")
        environment = cls(dict(parts))
        if data.get("digest") != environment.digest:
            raise Invalid(f"{where}.digest", f"{show(data.get('digest'))} is not the digest of its parts")
        return environment


def _order(key: str) -> tuple[int, str]:
    kind, _, name = key.partition(" ")
    return _KINDS.index(kind) if kind in _KINDS else len(_KINDS), name


def _change(key: str, then: str | None, now: str | None) -> str:
    kind, _, name = key.partition(" ")
    if kind == "dist":
        if then is None:
            return f"{name} {_version(now)} installed"
        if now is None:
            return f"{name} {_version(then)} removed"
        if _version(then) != _version(now):
            return f"{name} {_version(then)} -> {_version(now)}"
        return f"{name} {_version(now)} rebuilt (its files changed)"
    if kind == "env":
        return f"{name} {_shown(then)} -> {_shown(now)}"
    what = "plugin" if kind == "plugin" else "start-up file"
    return f"{what} {name} {'added' if then is None else 'removed' if now is None else 'changed'}"


def _version(value: str | None) -> str:
    """A distribution's version without its files' stamp (``1.2.0#ab12cd`` -> ``1.2.0``)."""
    return (value or "").partition("#")[0]


# A variable's value shown in a change, at most this long: its end kept (a path's last folders name it).
_SHOWN_LENGTH = 40


def _shown(value: str | None) -> str:
    if value is None:
        return "unset"
    return repr(value) if len(value) <= _SHOWN_LENGTH else repr("…" + value[1 - _SHOWN_LENGTH :])
