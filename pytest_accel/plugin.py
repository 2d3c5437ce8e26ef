"""The always-loaded surface of pytest-accel: options, markers, fixtures.

Importing this module imports neither torch nor any vendor library; the stateful part
(``pytest_accel.session.AccelSession``) is imported and registered in ``pytest_configure``.
Option parsing lives in ``pytest_accel.options``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_accel.engine.devices import DEVICE_CHOICES
from pytest_accel.engine.devices.hostalloc import HOST_ALLOCATOR_MODES
from pytest_accel.options import (
    MARKER_SETTINGS,
    OPERATOR_CHOICES,
    PROFILE_CHOICES,
    STRUCTURE_POLICIES,
    parse_output_folder,
    parse_output_path,
    parse_positive_float,
    parse_positive_int,
)

if TYPE_CHECKING:
    from pytest_accel.engine.devices.base import Device
    from pytest_accel.fixture import Throughput
    from pytest_accel.session import AccelSession

SESSION_KEY: pytest.StashKey[AccelSession] = pytest.StashKey()
_DEVICE_HELP = "device to measure on: auto (hpu, else cuda, else cpu), cpu, cuda or hpu (default: auto)"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register pytest-accel's options and ini settings."""
    group = parser.getgroup("accel", "pytest-accel: performance tests on accelerators")
    group.addoption("--accel-device", dest="accel_device", choices=DEVICE_CHOICES, default=None, help=_DEVICE_HELP)
    group.addoption(
        "--accel-profile",
        dest="accel_profile",
        choices=PROFILE_CHOICES,
        default=None,
        help="workload sizes: smoke (seconds on a laptop CPU) or full (the studies' sizes; needs a device)",
    )
    group.addoption(
        "--accel-json",
        dest="accel_json",
        type=parse_output_path,
        default=None,
        metavar="PATH",
        help="write every measurement of this run, with provenance, to PATH as JSON",
    )
    group.addoption(
        "--accel-measure-seconds",
        dest="accel_measure_seconds",
        type=parse_positive_float,
        default=None,
        metavar="S",
        help="timed budget per measurement in seconds (default: ini accel_measure_seconds, 1.0)",
    )
    group.addoption(
        "--accel-markdown",
        dest="accel_markdown",
        type=parse_output_path,
        default=None,
        metavar="PATH",
        help="write a Markdown summary of this run (regressions first) to PATH, e.g. for a CI job page",
    )
    group.addoption(
        "--accel-baselines",
        dest="accel_baselines",
        default=None,
        metavar="DIR",
        help="baseline folder (default: ini accel_baselines, else 'baselines' beside the ini file)",
    )
    group.addoption(
        "--accel-update",
        dest="accel_update",
        action="store_true",
        help="write this run's measurements into the baselines (only those measured; others untouched)",
    )
    group.addoption(
        "--accel-reset-history",
        dest="accel_reset_history",
        action="store_true",
        help="like --accel-update, and forget the earlier recordings of the measured tests (an accepted change)",
    )
    group.addoption(
        "--accel-calibrate",
        dest="accel_calibrate",
        action="store_true",
        help="measure the selected tests beside the standard neighbour (a second copy of them in a child pytest) "
        "and store how far it moved each one with its baseline: on a shared host, a slowdown beyond that is judged",
    )
    group.addoption(
        "--accel-strict",
        dest="accel_strict",
        action="store_true",
        help="a 'noisy' verdict fails its test (default: reported, passes)",
    )
    group.addoption(
        "--accel-require-baseline",
        dest="accel_require_baseline",
        action="store_true",
        help="a measurement with no baseline for this device fails its test (default: 'new', passes)",
    )
    group.addoption(
        "--accel-stale",
        dest="accel_stale",
        action="store_true",
        help="after collection, list baseline entries of tests that no longer exist, and exit",
    )
    group.addoption(
        "--accel-prune",
        dest="accel_prune",
        action="store_true",
        help="like --accel-stale, and remove those entries from the baseline file",
    )
    group.addoption(
        "--accel-operators",
        dest="accel_operators",
        choices=OPERATOR_CHOICES,
        default=None,
        help="when to take a workload's operator table with torch.profiler: auto (at --accel-update, stored in "
        "the baseline, and on a confirmed regression, diffed against it), always (every measurement too), "
        "off (default: ini accel_operators, else auto)",
    )
    group.addoption(
        "--accel-structure",
        dest="accel_structure",
        choices=STRUCTURE_POLICIES,
        default=None,
        help="what a change of what ran (operators, compiled graphs, graph breaks, recompilations, host syncs) "
        "does: fail its test, warn, or off: take no structural record (default: ini accel_structure, else fail)",
    )
    group.addoption(
        "--accel-structure-only",
        dest="accel_structure_only",
        action="store_true",
        help="judge only what ran, not time: a short warm-up and the structural record per measurement (seconds "
        "a test; no quiet machine or recordings of this host needed)",
    )
    group.addoption(
        "--accel-trace",
        dest="accel_trace",
        type=parse_output_folder,
        default=None,
        metavar="DIR",
        help="write the Chrome/Perfetto trace of each regressed workload (of every measurement with "
        "--accel-operators=always) into DIR, one file per test",
    )
    group.addoption(
        "--accel-cpu-threads",
        dest="accel_cpu_threads",
        type=parse_positive_int,
        default=None,
        metavar="N",
        help="torch threads when measuring on the CPU (default: ini accel_cpu_threads, else half the cores)",
    )
    group.addoption(
        "--accel-host-allocator",
        dest="accel_host_allocator",
        choices=HOST_ALLOCATOR_MODES,
        default=None,
        help="on the CPU: steady keeps freed memory in the process, as a caching allocator does, so no call "
        "pays for another's page faults; system leaves the C library's malloc as it is (default: ini "
        "accel_host_allocator, else steady)",
    )
    parser.addini("accel_device", "default for --device / --accel-device", default="auto")
    parser.addini("accel_operators", "when to take operator tables: auto, always or off", default="auto")
    parser.addini("accel_structure", "what a structural change does: fail, warn or off", default="fail")
    parser.addini("accel_baselines", "baseline folder, relative to the ini file", default="baselines")
    parser.addini("accel_tolerance", "default slowdown tolerance of the verdict (fraction)", default="0.05")
    parser.addini("accel_memory_tolerance", "default peak-memory growth tolerance (fraction)", default="0.10")
    parser.addini(
        "accel_state_noise_floor",
        "machine-state probe noise ignored before a verdict widens or turns noisy (fraction, default 0.10)",
        default="0.10",
    )
    parser.addini(
        "accel_foreign_cpu_margin",
        "share of the host's CPU that other processes may use beyond the baseline's recordings before a slower "
        "figure is noisy (fraction, default 0.15)",
        default="0.15",
    )
    parser.addini("accel_confirmations", "re-measurements before a regression fails a test", default="2")
    parser.addini(
        "accel_fresh_process_confirmation",
        "re-measure a confirmed regression once more in a fresh pytest process before failing (true/false)",
        default="true",
    )
    parser.addini(
        "accel_rank_timeout_seconds",
        "under torchrun: how long a rank waits for the others before failing, naming the missing ranks",
        default="300",
    )
    parser.addini("accel_cpu_threads", "torch threads on the CPU (0: half the cores)", default="0")
    parser.addini("accel_host_allocator", "the CPU's host allocator mode: steady or system", default="steady")
    parser.addini("accel_profile", "default for --accel-profile (smoke or full)", default="smoke")
    parser.addini("accel_measure_seconds", "timed budget per measurement, seconds", default="1.0")
    parser.addini("accel_min_rounds", "timed rounds per measurement at least, whatever the budget", default="20")
    parser.addini(
        "accel_warmup_max_seconds",
        "upper bound on warm-up per measurement, seconds of calls after the first (which may compile)",
        default="3.0",
    )


def _option_taken(parser: pytest.Parser, name: str) -> bool:
    groups = [parser._anonymous, *parser._groups]
    return any(name in option.names() for group in groups for option in group.options)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser) -> Generator[None]:
    """Add the short ``--device`` once conftests had their say: a project's own ``--device`` wins."""
    result = yield
    if not _option_taken(parser, "--device"):
        parser.getgroup("accel").addoption(
            "--device",
            dest="accel_device",
            choices=DEVICE_CHOICES,
            default=None,
            help=f"{_DEVICE_HELP}; same as --accel-device",
        )
    return result


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker and the session object that does the work."""
    config.addinivalue_line(
        "markers",
        f"perf(**settings): a performance test; settings override the ini for this test ({', '.join(MARKER_SETTINGS)})",
    )
    # Advice (a call far longer than the budget, more threads than cores) is shown, never an error,
    # also in projects that turn warnings into errors: it must not fail a nightly's long step.
    config.addinivalue_line("filterwarnings", "default::pytest_accel.core.advice.AccelAdvice")
    from pytest_accel.session import AccelSession

    session = AccelSession(config)
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, "accel-session")


@pytest.fixture(scope="session")
def accel_device(pytestconfig: pytest.Config) -> Device:
    """The device this run measures on (resolved from --device; never silently the CPU)."""
    return pytestconfig.stash[SESSION_KEY].device()


@pytest.fixture(scope="session")
def accel_profile(pytestconfig: pytest.Config) -> str:
    """The workload profile: ``smoke`` or ``full``."""
    return pytestconfig.stash[SESSION_KEY].options.profile


@pytest.fixture
def throughput(request: pytest.FixtureRequest, benchmark: Any, accel_device: Device) -> Throughput:
    """Measure a callable's items/s on the device: ``throughput(fn, items=B, unit="images")``."""
    return request.config.stash[SESSION_KEY].throughput(request.node, benchmark)
