"""The run's options: command line + ini + perf marker, read and validated once into frozen records.

Option values pass through small ``parse_*`` functions given as ``type=`` (a bad value is argparse's
usage error naming the option); ini values through ``ini_*`` readers that raise ``pytest.UsageError``
naming the setting. ``AccelOptions.from_config`` builds the one record the rest of the plugin reads.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, final

import pytest

from pytest_accel.engine.devices import DEVICE_CHOICES
from pytest_accel.engine.devices.hostalloc import HOST_ALLOCATOR_MODES
from pytest_accel.engine.measure import MeasureConfig
from pytest_accel.judgement.confirm import ChildSettings
from pytest_accel.judgement.structures import STRUCTURE_POLICIES
from pytest_accel.judgement.verdict import VerdictPolicy

__all__ = [
    "MARKER_SETTINGS",
    "OPERATOR_CHOICES",
    "PROFILE_CHOICES",
    "STRUCTURE_POLICIES",
    "AccelOptions",
    "ini_bool",
    "ini_choice",
    "ini_float",
    "ini_int",
    "parse_output_folder",
    "parse_output_path",
    "parse_positive_float",
    "parse_positive_int",
]

PROFILE_CHOICES = ("smoke", "full")
# When an operator table is taken (core/operators.py): auto = at --accel-update and on a confirmed
# regression; always = for every measurement too (what `pytest-accel ab` diffs); off = never.
OPERATOR_CHOICES = ("auto", "always", "off")
# @pytest.mark.perf(...) keywords: measurement settings, then verdict thresholds.
_MARKER_MEASURE = ("measure_seconds", "warmup_max_seconds", "min_rounds", "round_seconds")
_MARKER_POLICY = ("tolerance", "memory_tolerance")
# ... and what a structural change does to this test (STRUCTURE_POLICIES).
_MARKER_STRUCTURE = "structure"
MARKER_SETTINGS = (*_MARKER_MEASURE, *_MARKER_POLICY, _MARKER_STRUCTURE)
_MARKER_INTEGERS = ("min_rounds",)  # the others are numbers (seconds, fractions)


def parse_positive_float(text: str) -> float:
    """Option type: a finite number > 0 (seconds, fractions)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number greater than 0")
    return value


def parse_positive_int(text: str) -> int:
    """Option type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def parse_output_path(text: str) -> Path:
    """Option type: a file path whose folder exists (checked now, not after an hour of measuring)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory; give a file name")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"the folder of {text!r} does not exist")
    return path


def parse_output_folder(text: str) -> Path:
    """Option type: a folder to write into (made when needed); refused when a file is in its place."""
    path = Path(text)
    for part in (path, *path.parents):
        if part.exists():
            if not part.is_dir():
                raise argparse.ArgumentTypeError(f"{str(part)!r} is a file; --accel-trace needs a folder")
            break
    return path


def ini_float(config: pytest.Config, name: str) -> float:
    """The ini option ``name`` as a float; a bad value is a usage error naming it."""
    raw = config.getini(name)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"ini option {name} = {raw!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise pytest.UsageError(f"ini option {name} = {raw!r} must be a finite number greater than 0")
    return value


def ini_bool(config: pytest.Config, name: str) -> bool:
    """The ini option ``name`` as a bool; a bad value is a usage error naming it."""
    raw = str(config.getini(name)).strip().lower()
    if raw not in ("true", "false", "1", "0", "yes", "no"):
        raise pytest.UsageError(f"ini option {name} = {raw!r}; use true or false")
    return raw in ("true", "1", "yes")


def ini_int(config: pytest.Config, name: str, minimum: int) -> int:
    """The ini option ``name`` as an int; a bad value is a usage error naming it."""
    raw = config.getini(name)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"ini option {name} = {raw!r} is not an integer") from None
    if value < minimum:
        raise pytest.UsageError(f"ini option {name} = {raw!r} must be at least {minimum}")
    return value


def ini_choice(config: pytest.Config, name: str, choices: tuple[str, ...]) -> str:
    """The ini option ``name`` as a choice; a bad value is a usage error naming it."""
    value = str(config.getini(name))
    if value not in choices:
        raise pytest.UsageError(f"ini option {name} = {value!r}; choose one of {', '.join(choices)}")
    return value


@final
@dataclass(frozen=True)
class AccelOptions:
    """Every pytest-accel setting of one run, from the command line and the ini file."""

    device: str  # the --device choice: auto, cpu, cuda or hpu
    profile: str  # smoke or full
    measure_seconds: float  # timed budget per measurement
    warmup_max_seconds: float  # warm-up budget, counted after the first call
    min_rounds: int  # timed rounds at least, whatever the budget
    policy: VerdictPolicy  # the suite's verdict thresholds (a perf marker may override them per test)
    confirmations: int  # in-process re-measurements of a suspected regression
    fresh_confirmation: bool  # confirm a regression in a fresh pytest process too
    cpu_threads: int | None  # torch threads on the CPU; None: the device's default (half the cores)
    update: bool  # record this run's measurements as baselines (--accel-update or --accel-reset-history)
    reset_history: bool  # forget the earlier recordings of the measured tests
    calibrate: bool  # measure beside the standard neighbour and store how far it moved each test
    strict: bool  # a noisy verdict fails
    require_baseline: bool  # a new (unjudged) measurement fails
    baselines: Path  # the baseline folder
    rank_timeout_seconds: float  # under torchrun: how long a rank waits for the others
    json_path: Path | None  # --accel-json
    markdown_path: Path | None  # --accel-markdown
    stale: bool  # --accel-stale: list entries of tests that no longer exist, and exit
    prune: bool  # --accel-prune: remove them
    operators: str = "auto"  # when operator tables are taken: auto, always or off (OPERATOR_CHOICES)
    trace_dir: Path | None = None  # --accel-trace: the Chrome trace of each regressed workload goes there
    structure: str = "fail"  # what a structural change does: fail, warn or off (STRUCTURE_POLICIES)
    structure_only: bool = False  # --accel-structure-only: judge what ran, not time
    host_allocator: str = "steady"  # the CPU's malloc mode (engine/devices/hostalloc.py)

    @classmethod
    def from_config(cls, config: pytest.Config) -> AccelOptions:
        """Read and validate every option once; a bad value is a usage error naming it."""
        option = config.option
        if option.accel_structure_only and (option.accel_structure == "off" or option.accel_calibrate):
            raise pytest.UsageError(
                "--accel-structure-only judges only what ran: it needs structural records (not --accel-structure=off)"
                " and takes no timed figure to calibrate (not --accel-calibrate)"
            )
        if option.accel_calibrate and (option.accel_update or option.accel_reset_history):
            raise pytest.UsageError(
                "--accel-calibrate measures beside a neighbour and must not record those figures as baselines: "
                "record with --accel-update in a run of its own first"
            )
        return cls(
            device=option.accel_device or ini_choice(config, "accel_device", DEVICE_CHOICES),
            profile=option.accel_profile or ini_choice(config, "accel_profile", PROFILE_CHOICES),
            measure_seconds=option.accel_measure_seconds or ini_float(config, "accel_measure_seconds"),
            warmup_max_seconds=ini_float(config, "accel_warmup_max_seconds"),
            min_rounds=ini_int(config, "accel_min_rounds", minimum=1),
            policy=VerdictPolicy(
                tolerance=ini_float(config, "accel_tolerance"),
                memory_tolerance=ini_float(config, "accel_memory_tolerance"),
                state_noise_floor=ini_float(config, "accel_state_noise_floor"),
                foreign_cpu_margin=ini_float(config, "accel_foreign_cpu_margin"),
            ),
            confirmations=ini_int(config, "accel_confirmations", minimum=0),
            fresh_confirmation=ini_bool(config, "accel_fresh_process_confirmation"),
            cpu_threads=option.accel_cpu_threads or ini_int(config, "accel_cpu_threads", minimum=0) or None,
            update=bool(option.accel_update or option.accel_reset_history),
            reset_history=bool(option.accel_reset_history),
            calibrate=bool(option.accel_calibrate),
            strict=bool(option.accel_strict),
            require_baseline=bool(option.accel_require_baseline),
            baselines=_baselines_root(config),
            rank_timeout_seconds=ini_float(config, "accel_rank_timeout_seconds"),
            json_path=option.accel_json,
            markdown_path=option.accel_markdown,
            stale=bool(option.accel_stale or option.accel_prune),
            prune=bool(option.accel_prune),
            operators=option.accel_operators or ini_choice(config, "accel_operators", OPERATOR_CHOICES),
            trace_dir=option.accel_trace,
            structure=option.accel_structure or ini_choice(config, "accel_structure", STRUCTURE_POLICIES),
            structure_only=bool(option.accel_structure_only),
            host_allocator=option.accel_host_allocator
            or ini_choice(config, "accel_host_allocator", HOST_ALLOCATOR_MODES),
        )

    def child_settings(self, device: str, cpu_threads: int | None, inherited: tuple[str, ...]) -> ChildSettings:
        """These options as a child pytest gets them (a confirmation, the calibration's neighbour): the
        resolved ``device`` kind, its CPU thread count, and the parent's options that decide what code runs.

        Every setting that decides a figure or a verdict goes to the child as its ini override: a
        setting added here is all a child needs (the one place that lists them)."""
        policy = self.policy
        ini = {
            "accel_measure_seconds": self.measure_seconds,
            "accel_warmup_max_seconds": self.warmup_max_seconds,
            "accel_min_rounds": self.min_rounds,
            "accel_tolerance": policy.tolerance,
            "accel_memory_tolerance": policy.memory_tolerance,
            "accel_state_noise_floor": policy.state_noise_floor,
            "accel_foreign_cpu_margin": policy.foreign_cpu_margin,
            "accel_confirmations": self.confirmations,
            "accel_host_allocator": self.host_allocator,
        }
        return ChildSettings(
            device=device,
            profile=self.profile,
            baselines=self.baselines,
            ini=tuple((name, str(value)) for name, value in ini.items()),
            cpu_threads=cpu_threads,
            inherited=inherited,
        )

    def measure_config(self, marker: dict[str, Any]) -> MeasureConfig:
        """Measurement settings for one test: these options, overridden by its perf marker's keywords.

        Raises ``ValueError`` naming an unknown or bad setting.
        """
        unknown = set(marker) - set(MARKER_SETTINGS)
        if unknown:
            raise ValueError(
                f"unknown perf marker setting(s) {', '.join(sorted(unknown))}; known: {', '.join(MARKER_SETTINGS)}"
            )
        structure = marker.get(_MARKER_STRUCTURE, "fail")
        if structure not in STRUCTURE_POLICIES:
            raise ValueError(f"bad perf marker setting: structure={structure!r}: choose one of {STRUCTURE_POLICIES}")
        for name, value in marker.items():
            if name == _MARKER_STRUCTURE:
                continue
            wanted = int if name in _MARKER_INTEGERS else (int, float)
            if isinstance(value, bool) or not isinstance(value, wanted):
                kind = "an integer" if wanted is int else "a number"
                raise ValueError(f"bad perf marker setting: {name}={value!r}: expected {kind}")
        settings: dict[str, Any] = {
            "measure_seconds": self.measure_seconds,
            "warmup_max_seconds": self.warmup_max_seconds,
            "min_rounds": self.min_rounds,
        }
        settings.update({k: v for k, v in marker.items() if k in _MARKER_MEASURE})
        try:
            return MeasureConfig(**settings)
        except (TypeError, ValueError) as error:
            raise ValueError(f"bad perf marker setting: {error}") from None

    def structure_for(self, marker: dict[str, Any]) -> str:
        """What a structural change does to one test: its perf marker's ``structure=``, else the run's.

        The run's "off" wins (no record is taken); a marker may turn a failing change into a warning.
        """
        if self.structure == "off":
            return "off"
        return str(marker.get(_MARKER_STRUCTURE, self.structure))

    def policy_for(self, marker: dict[str, Any]) -> VerdictPolicy:
        """The verdict thresholds for one test: these options, overridden by its perf marker's keywords."""
        overrides = {k: v for k, v in marker.items() if k in _MARKER_POLICY}
        try:
            return replace(self.policy, **overrides) if overrides else self.policy
        except (TypeError, ValueError) as error:
            raise ValueError(f"bad perf marker setting: {error}") from None


def _baselines_root(config: pytest.Config) -> Path:
    if config.option.accel_baselines:
        return Path(config.option.accel_baselines).resolve()
    base = config.inipath.parent if config.inipath else config.rootpath
    return base / str(config.getini("accel_baselines"))
