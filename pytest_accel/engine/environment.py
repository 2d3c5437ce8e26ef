"""Takes the environment fingerprint of this process (``core/environment.py`` says what it holds).

Read once a run, when its first figure is judged or recorded: the installed distributions (with a
stamp of their installed files), the pytest plugins loaded from outside the repository and outside
any distribution, the steering variables as the user set them (before pytest-accel set its own), and
the start-up files Python ran. What lies inside the repository (``rootdir``) is the code under test,
not its environment: a recorded-build sitting checks it out per side.

It costs about a quarter of a second with torch, diffusers and transformers installed (most of it
hashing torch's ``RECORD``): once a run.
"""

from __future__ import annotations

import hashlib
import json
import os
import site
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from types import ModuleType

from pytest_accel.core.environment import Environment, steering

__all__ = ["editable_sources", "take_environment"]

# An editable install's source files hashed by their sizes and times, at most this many: a large
# source tree (torch's own) is still stamped in well under a second; a change beyond them goes unseen.
_MOST_SOURCE_FILES = 20_000
_SOURCE_SUFFIXES = (".py", ".so", ".pyd", ".dylib", ".pth")
_SKIPPED_FOLDERS = {".git", "__pycache__", "node_modules", ".tox", ".nox", ".venv", "build", ".mypy_cache"}


def take_environment(
    rootdir: Path, plugins: Iterable[tuple[str, object]], variables: Mapping[str, str] | None = None
) -> Environment:
    """This process's environment: distributions, ``plugins`` (pytest's ``(name, plugin)`` pairs) from outside
    ``rootdir`` and any distribution, the steering ``variables`` (this process's by default), start-up files."""
    root = _resolved(rootdir)
    parts: dict[str, str] = {}
    for name, dist in _installed().items():
        parts[f"dist {name}"] = f"{dist.version}#{_stamp(dist, root)}"
    for name, plugin in plugins:
        if (stamp := _plugin_stamp(plugin, root)) is not None:
            parts[f"plugin {_plugin_name(name, plugin)}"] = stamp
    for name, value in steering(os.environ if variables is None else variables).items():
        parts[f"env {name}"] = value
    for path in _startup_files():
        parts[f"file {path.name}"] = _file_hash(path)
    return Environment(parts)


def _installed() -> dict[str, metadata.Distribution]:
    """Each distribution by name: the first on ``sys.path``, which is the one imported, except that the
    build metadata an editable install leaves in its source tree (``<name>.egg-info``, no ``RECORD``) gives
    way to the installed record of the same name, so a process started in that tree (``python -m pytest``
    from the repository root puts it first on the path) and one started elsewhere name the same build."""
    found: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():
        name = _dist_name(dist)
        if name and (name not in found or (_build_metadata(found[name]) and not _build_metadata(dist))):
            found[name] = dist
    return found


def _build_metadata(dist: metadata.Distribution) -> bool:
    return dist.read_text("RECORD") is None and _editable_source(dist) is None


def editable_sources() -> list[Path]:
    """The source folders of this environment's editable installs (PEP 610), each once."""
    found: list[Path] = []
    for dist in metadata.distributions():
        source = _editable_source(dist)
        if source is not None and source not in found:
            found.append(source)
    return found


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def _dist_name(dist: metadata.Distribution) -> str:
    name = dist.metadata["Name"] if dist.metadata is not None else None
    return str(name).lower().replace("_", "-") if name else ""


def _stamp(dist: metadata.Distribution, root: Path) -> str:
    """A hash that changes when the distribution's installed files do: its RECORD (which lists each file's
    hash), and for an editable install outside ``root`` its source files' sizes and times."""
    digest = hashlib.sha256((dist.read_text("RECORD") or "").encode("utf-8", "surrogateescape"))
    if (source := _editable_source(dist)) is not None and not _inside(source, root):
        for path, size, mtime in _source_files(source):
            digest.update(f"{path}\0{size}\0{mtime}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:10]


def _editable_source(dist: metadata.Distribution) -> Path | None:
    """The source folder of an editable install (PEP 610's ``direct_url.json``), or None."""
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        return None
    if not isinstance(direct, dict) or not (direct.get("dir_info") or {}).get("editable"):
        return None
    url = str(direct.get("url", ""))
    return Path(url.removeprefix("file://")) if url.startswith("file://") else None


def _source_files(source: Path) -> list[tuple[str, int, int]]:
    found: list[tuple[str, int, int]] = []
    for folder, subfolders, files in os.walk(source):
        subfolders[:] = sorted(d for d in subfolders if d not in _SKIPPED_FOLDERS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(_SOURCE_SUFFIXES):
                path = os.path.join(folder, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                found.append((os.path.relpath(path, source), info.st_size, info.st_mtime_ns))
                if len(found) >= _MOST_SOURCE_FILES:
                    return found
    return found


def _inside(path: Path, root: Path) -> bool:
    resolved = _resolved(path)
    return resolved == root or root in resolved.parents


def _installed_prefixes() -> tuple[Path, ...]:
    """Where Python's own library and the installed distributions live."""
    paths = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    if site.ENABLE_USER_SITE and site.USER_SITE:
        paths.add(site.USER_SITE)
    return tuple(_resolved(Path(path)) for path in paths)


def _plugin_file(plugin: object) -> str | None:
    module = plugin if isinstance(plugin, ModuleType) else sys.modules.get(type(plugin).__module__)
    return getattr(module, "__file__", None) if module is not None else None


def _plugin_stamp(plugin: object, root: Path) -> str | None:
    """The hash of a plugin's file, or None: pytest's and pytest-accel's own, the repository's, a
    distribution's (its version stands for it), or one with no file."""
    module_name = plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__module__
    if module_name.split(".")[0] in ("_pytest", "pytest", "pytest_accel", "pluggy", "builtins"):
        return None
    file = _plugin_file(plugin)
    if file is None:
        return None
    path = Path(file)
    if _inside(path, root) or any(_inside(path, prefix) for prefix in _installed_prefixes()):
        return None
    return _file_hash(path)


def _plugin_name(name: str, plugin: object) -> str:
    """A plugin's name that is the same in every run: its module's, or its class's for an object."""
    if isinstance(plugin, ModuleType):
        return plugin.__name__
    return f"{type(plugin).__module__}.{type(plugin).__qualname__}" if name.isdigit() else name


def _startup_files() -> list[Path]:
    """The start-up files Python ran: ``sitecustomize`` and ``usercustomize``, and the ``.pth`` files of the
    site folders."""
    found = []
    for name in ("sitecustomize", "usercustomize"):
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            found.append(Path(file))
    folders = site.getsitepackages() if hasattr(site, "getsitepackages") else []
    for folder in [*folders, *([site.USER_SITE] if site.ENABLE_USER_SITE and site.USER_SITE else [])]:
        try:
            found.extend(sorted(Path(folder).glob("*.pth")))
        except OSError:
            continue
    return found


def _file_hash(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:10]
    except OSError:
        return "unreadable"
