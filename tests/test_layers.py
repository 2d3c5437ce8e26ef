"""The package's layers hold: imports point down only, no module imports in a circle.

Read from the source with ``ast`` (every import counts: module level, inside functions, under
TYPE_CHECKING), so an upward import cannot hide behind a lazy import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_accel"

# Lower numbers are lower layers. A module may import its own layer or any below it.
LAYERS = {
    "core": 0,  # records and pure math every layer shares: Measurement, stats, units
    "storage": 1,  # files: strict reading, canonical writing, locks, atomic writes, the versioned entry files
    "engine": 2,  # devices (the only torch / vendor imports), the measuring loop, the machine's probes
    "judgement": 3,  # verdicts, the gate and how confirmations are weighed, the file codecs, history
    "sittings": 4,  # what starts processes to settle a suspect or calibrate: fresh pytest, recorded build, neighbour
    "outputs": 5,  # terminal table, Markdown / HTML pages, plots, exports, the history folder
}
FACE = 6  # plugin, options, session, fixture, ranks, cli: the pytest face and the command line
PURE = ("core", "storage", "judgement", "outputs")  # no torch, no pytest: tested fast and exhaustively

# The face is two stacks, one folder each, that never import each other: the pytest plugin (pytest
# loads plugin/__init__, which registers the session, which connects the parts) and the command line
# (commands/: cli -> bisect -> bisectsteps -> ab -> abcount -> absides -> abworker). A module may import face
# modules of its own stack on a lower tier only; a new face module needs a place.
FACE_MODULES = {
    # the pytest plugin
    "plugin.settings": ("plugin", 0),  # how one option is declared (its Setting) and the readers of option text
    "plugin.options": ("plugin", 1),  # every option declared once: read, validated, handed to children
    "plugin.fixture": ("plugin", 0),  # Throughput: knows no session, built from plain values and callbacks
    "plugin.ranks": ("plugin", 0),  # torchrun's hooks
    "plugin.status": ("plugin", 0),  # a long test's live status
    "plugin.plans": ("plugin", 2),  # what a test takes beside its figure (operator tables, structural record)
    "plugin.finish": ("plugin", 2),  # the run's figures, files and closing lines
    "plugin.parts": ("plugin", 2),  # the device, stores and gates, built lazily
    "plugin.workers": ("plugin", 3),  # xdist: each worker's card or cores, what workers tell the controller
    "plugin.session": ("plugin", 4),  # the wiring: hooks that connect the parts
    "plugin": ("plugin", 5),  # pytest's entry: options, fixtures, registers the session
    # the command line
    "commands": ("commands", 0),  # the folder's docstring
    "commands.abworker": ("commands", 0),  # a side's worker: standard library and pytest only
    "commands.absides": ("commands", 1),
    "commands.abtracks": ("commands", 1),  # one test over a sitting: pure
    "commands.abcount": ("commands", 2),  # ab by the work counted: each side's run read into verdicts
    "commands.ab": ("commands", 3),
    "commands.bisectsteps": ("commands", 4),  # a bisect's sittings, each an ab sitting
    "commands.bisect": ("commands", 5),  # the search of a range and its answer
    "commands.cli": ("commands", 6),
    "__main__": ("commands", 7),
}
SESSION_LINES = 250  # the face only wires: logic lives in the layers and parts it connects


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], FACE) if len(parts) > 1 else FACE


def imports_of(path: Path, package: str | None = None) -> set[str]:
    """Every module this file imports, as absolute dotted names (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if package is None:
        package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # "from pkg import module"
    return found


def graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: {m for m in imports_of(path) if m in modules and m != name} for name, path in modules.items()}


def test_every_module_has_a_layer() -> None:
    assert {name.split(".")[1] for name in graph() if "." in name and layer(name) < FACE} == set(LAYERS)


def test_imports_point_down_only() -> None:
    upward = [
        f"{name} (layer {layer(name)}) imports {target} (layer {layer(target)})"
        for name, targets in graph().items()
        for target in targets
        if layer(target) > layer(name)
    ]
    assert upward == []


def test_no_import_circles() -> None:
    edges = graph()
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    circles: list[list[str]] = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    assert circles == []


def face_modules() -> set[str]:
    return {name for name in graph() if layer(name) == FACE and name != "pytest_accel"}


def test_every_face_module_has_a_place() -> None:
    assert {name.split(".", 1)[1] for name in face_modules()} == set(FACE_MODULES)


def test_each_stack_is_a_folder() -> None:
    """A face module lives in its stack's folder (``__main__`` is the command line's entry at the root)."""
    misplaced = sorted(
        name for name, (stack, _) in FACE_MODULES.items() if name != "__main__" and name.split(".")[0] != stack
    )
    assert misplaced == []


def test_the_face_points_one_way() -> None:
    """Within the face: the plugin's stack and the command line's never import each other, and a module
    imports only lower tiers of its own stack (nothing imports the session but the plugin)."""
    wrong = []
    for name in sorted(face_modules()):
        stack, tier = FACE_MODULES[name.split(".", 1)[1]]
        for target in sorted(graph()[name] & face_modules()):
            their_stack, their_tier = FACE_MODULES[target.split(".", 1)[1]]
            if their_stack != stack or their_tier >= tier:
                wrong.append(f"{name} ({stack} {tier}) imports {target} ({their_stack} {their_tier})")
    assert wrong == []


def test_the_session_only_wires() -> None:
    lines = len((PACKAGE / "plugin" / "session.py").read_text(encoding="utf-8").splitlines())
    assert lines <= SESSION_LINES


# What starts a process or a thread: the standard library's means, and the engine's one home of child processes.
LAUNCHING = ("subprocess", "threading", "multiprocessing", "concurrent", "pty", "pytest_accel.engine.processes")


def launches_in(path: Path, package: str | None = None) -> list[str]:
    """What in this file starts a process or a thread: imports of ``LAUNCHING``, calls of ``os.fork`` and kin."""
    found = sorted(m for m in imports_of(path, package) if m in LAUNCHING or m.split(".")[0] in LAUNCHING[:-1])
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found += sorted(
        f"os.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"
        and re.fullmatch(r"fork|forkpty|system|popen|spawn\w*|exec\w*|posix_spawn\w*", node.attr)
    )  # fmt: skip
    return found


@pytest.mark.parametrize("folder", PURE)
def test_pure_layers_start_no_process_and_no_thread(folder: str) -> None:
    """What judges starts nothing: processes and threads belong to ``engine/`` and ``sittings/`` (and the face)."""
    launching = {module_name(path): found for path in (PACKAGE / folder).rglob("*.py") if (found := launches_in(path))}
    assert launching == {}


def test_the_launch_check_sees_a_process_start(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("import os\ndef f():\n    from subprocess import run\n    os.fork()\n")
    found = launches_in(source, package="pytest_accel.judgement")
    assert "subprocess" in found and "os.fork" in found


@pytest.mark.parametrize("folder", PURE)
def test_pure_layers_import_neither_torch_nor_pytest(folder: str) -> None:
    heavy = {
        module_name(path): sorted(m for m in imports_of(path) if m.split(".")[0] in ("torch", "pytest", "_pytest"))
        for path in (PACKAGE / folder).rglob("*.py")
    }
    assert {name: found for name, found in heavy.items() if found} == {}


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The ast walk finds a function-level import under TYPE_CHECKING, relative or absolute."""
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pytest_accel.plugin.session import AccelSession\n"
        "def f():\n    import pytest_accel.outputs.pages\n"
        "from ..judgement import gate\n"
    )
    found = imports_of(source, package="pytest_accel.engine")
    assert {"pytest_accel.plugin.session", "pytest_accel.outputs.pages", "pytest_accel.judgement.gate"} <= found


def test_modules_stay_readable() -> None:
    """No module over 600 lines (the house style's limit): a bigger one wants splitting."""
    sizes = {module_name(p): len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {name: lines for name, lines in sizes.items() if lines > 600} == {}


def test_functions_stay_readable() -> None:
    """No function over 80 lines (the house style's limit), docstring included."""
    long: dict[str, int] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                name = f"{module_name(path)}.{node.name}"
                if node.end_lineno - node.lineno + 1 > 80:
                    long[name] = node.end_lineno - node.lineno + 1
    assert long == {}


ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def test_the_map_names_every_module_and_no_other() -> None:
    """docs/architecture.md is the one map of the code: every module it names (``folder/module.py``,
    relative to the package) exists, and every module of the package is named there."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    outside = ("tests/", "benchmarks/", "perf_tests/", "docs/")  # files of the repository, not of the package
    named = {name for name in re.findall(r"`((?:[a-z_]+/)*[a-z_]+\.py)`", text) if not name.startswith(outside)}
    modules = {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")}
    assert {"missing from the map": sorted(modules - named), "named but absent": sorted(named - modules)} == {
        "missing from the map": [],
        "named but absent": [],
    }
