"""The environments baselines were recorded in: ``<root>/environment/<device key>/<digest>.json``.

A baseline entry names its recordings' environment by digest (provenance ``environment``); the whole
fingerprint is kept once, here, so a later run can name what changed since (``diffusers 0.30.0 ->
0.31.0``). A file's name is its content's digest: it is written once and never changed, so recording
two runs at once cannot lose one. Pure: stdlib and ``core`` only.
"""

from __future__ import annotations

from pathlib import Path
from typing import final

from pytest_accel.core.environment import Environment
from pytest_accel.core.validation import Invalid
from pytest_accel.storage.entries import check_name
from pytest_accel.storage.files import StoreError, encode, read_document, write_atomically

__all__ = ["EnvironmentStore"]

_FOLDER = "environment"


@final
class EnvironmentStore:
    """Environment fingerprints under a baseline root, one file per device key and digest."""

    __slots__ = ("root",)

    def __init__(self, baselines_root: Path) -> None:
        self.root = Path(baselines_root) / _FOLDER

    def path_for(self, device_key: str, digest: str) -> Path:
        """The file of one environment of one device key."""
        check_name(device_key, "device key")
        check_name(digest, "environment digest")
        return self.root / device_key / f"{digest}.json"

    def save(self, device_key: str, environment: Environment) -> Path:
        """Keep ``environment`` (nothing is written when its file exists: the name is the content's digest)."""
        path = self.path_for(device_key, environment.digest)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, encode(environment.to_json()))
        return path

    def load(self, device_key: str, digest: str) -> Environment | None:
        """The environment of that digest, None when it was not kept; ``StoreError`` for a bad file."""
        path = self.path_for(device_key, digest)
        document = read_document(path)
        if document is None:
            return None
        try:
            environment = Environment.from_json(document, str(path))
        except Invalid as invalid:
            raise StoreError(str(invalid)) from None
        if environment.digest != digest:
            raise StoreError(f"{path}: holds environment {environment.digest}, not {digest}")
        return environment
