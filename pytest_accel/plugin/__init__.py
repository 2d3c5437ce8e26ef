"""The always-loaded surface of pytest-accel: options, markers, fixtures.

Importing this module imports neither torch nor any vendor library; the stateful part
(``pytest_accel.plugin.session.AccelSession``) is imported and registered in ``pytest_configure``.
The options are declared, parsed and handed to child processes in ``pytest_accel.plugin.options``.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_accel.engine.cards import pin_worker_cpus
from pytest_accel.engine.devices.hostalloc import as_the_user_set, ask_for_huge_pages, torch_importers
from pytest_accel.engine.processes import watch_lifeline
from pytest_accel.plugin.options import MARKER_SETTINGS, SETTINGS
from pytest_accel.plugin.workers import (
    auto_workers,
    fixed_cards,
    keep_stderr,
    place_workers,
    placed,
    places,
    unplaced,
)

if TYPE_CHECKING:
    from pytest_accel.engine.devices.base import Device
    from pytest_accel.plugin.fixture import Throughput
    from pytest_accel.plugin.session import AccelSession

SESSION_KEY: pytest.StashKey[AccelSession] = pytest.StashKey()
# The start of pytest-benchmark's warning (5.2) that it turned its timing off because xdist is active.
XDIST_DISABLED_WARNING = "Benchmarks are automatically disabled because xdist"
# What the run's setup was before pytest-accel touched it: the environment variables as the user set them, and
# who had imported torch before pytest-accel asked for huge pages (None: nobody had).
EARLY_KEY: pytest.StashKey[tuple[dict[str, str], tuple[str, ...] | None]] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register pytest-accel's options and ini settings, from the one table of them (``options.SETTINGS``)."""
    group = parser.getgroup("accel", "pytest-accel: performance tests on accelerators")
    for setting in SETTINGS.values():
        setting.declare(group, parser)


def _option_taken(parser: pytest.Parser, name: str) -> bool:
    groups = [parser._anonymous, *parser._groups]
    return any(name in option.names() for group in groups for option in group.options)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser) -> Generator[None]:
    """Add the short ``--device`` once conftests had their say: a project's own ``--device`` wins.

    Before them, as they may import torch: the steady host allocator's huge pages (hostalloc), and in an xdist
    worker on the CPU its own cores (plugin/workers.py)."""
    pin_worker_cpus(os.environ)
    keep_stderr()  # a placed worker's own stderr, before pytest captures it: where a hung test is named
    setting = SETTINGS["host_allocator"]
    mode = getattr(early_config.known_args_namespace, setting.dest, None) or early_config.getini(str(setting.ini))
    importers = None
    if "torch" in sys.modules:  # a script that called pytest.main, a -p plugin: named if torch's setup differs
        plugins = [(f"plugin {name}", plugin) for name, plugin in early_config.pluginmanager.list_name_plugin()]
        importers = torch_importers([("__main__ (the script that called pytest)", sys.modules["__main__"]), *plugins])
    early_config.stash[EARLY_KEY] = (as_the_user_set(os.environ), importers)
    ask_for_huge_pages(str(mode))
    result = yield
    if not _option_taken(parser, "--device"):
        parser.getgroup("accel").addoption("--device", **SETTINGS["device"].flag_arguments("; same as --accel-device"))
    return result


def asked_pytest_benchmark(args: Sequence[str]) -> bool:
    """Whether a command line asks pytest-benchmark for something itself (any ``--benchmark-*`` option)."""
    return any(arg.startswith("--benchmark-") for arg in args)


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker and the session object that does the work."""
    watch_lifeline()  # a child of another pytest-accel process dies with it (engine/processes.py)
    # One table by default: ours. pytest-benchmark's prints the same tests again in its own units
    # (without device, verdict or memory), so it shows only when the run asks pytest-benchmark for
    # something (any --benchmark-* option, on the command line, in PYTEST_ADDOPTS or in addopts).
    # Its JSON, saving and comparison are untouched; "quiet" only hides its table and info lines.
    # (pytest-benchmark reads the option in its own pytest_configure, which is trylast: after this.)
    typed = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split(), *config.getini("addopts")]
    if hasattr(config.option, "benchmark_quiet") and not asked_pytest_benchmark(typed):
        config.option.benchmark_quiet = True
    config.addinivalue_line(
        "markers",
        f"perf(**settings): a performance test; settings override the ini for this test ({', '.join(MARKER_SETTINGS)})",
    )
    # Advice (a call far longer than the budget, more threads than cores) is shown, never an error,
    # also in projects that turn warnings into errors: it must not fail a nightly's long step.
    config.addinivalue_line("filterwarnings", "default::pytest_accel.core.advice.AccelAdvice")
    if placed() or places(config):  # pytest-benchmark's configure (trylast) would say timing is off: not so here
        warnings.filterwarnings("ignore", message=XDIST_DISABLED_WARNING)  # undone when configure ends (pytest)
    from pytest_accel.plugin.session import AccelSession

    session = AccelSession(config, config.stash.get(EARLY_KEY, ({}, None)))
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, "accel-session")


def pytest_sessionstart(session: pytest.Session) -> None:
    """In an xdist worker this plugin placed, pytest-benchmark's timing as the command line asked: it turns
    itself off under xdist because workers would share one device; here each has its own card or cores
    (plugin/workers.py). Workers of a run that placed none (``--device auto``) keep its choice."""
    benchmark = getattr(session.config, "_benchmarksession", None)
    if benchmark is not None and placed() and not benchmark.skip:
        option = session.config.option
        benchmark.disabled = bool(option.benchmark_disable and not option.benchmark_enable)


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own answer, the CPU count
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` with ``--device cuda|hpu``: one xdist worker per visible card (plugin/workers.py)."""
    return auto_workers(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: Sequence[Any]) -> None:
    """Each xdist worker pinned to its own card (or cores) before its Python starts (plugin/workers.py)."""
    place_workers(config, specs)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--accel-fixed-cards``: each test on the same card every run (plugin/workers.py); else xdist's own."""
    return fixed_cards(config, log)


@pytest.fixture(scope="session")
def accel_device(pytestconfig: pytest.Config) -> Device:
    """The device this run measures on (resolved from --device; never silently the CPU)."""
    if (problem := unplaced(pytestconfig)) is not None:  # an xdist worker with no card of its own
        pytest.fail(problem, pytrace=False)
    return pytestconfig.stash[SESSION_KEY].parts.device()


@pytest.fixture(scope="session")
def accel_profile(pytestconfig: pytest.Config) -> str:
    """The workload profile: ``smoke`` or ``full``."""
    return pytestconfig.stash[SESSION_KEY].options.profile


@pytest.fixture
def throughput(request: pytest.FixtureRequest, benchmark: Any, accel_device: Device) -> Throughput:
    """Measure a callable's items/s on the device: ``throughput(fn, items=B, unit="images")``."""
    return request.config.stash[SESSION_KEY].throughput(request.node, benchmark)
