"""The run's options: command line + ini + perf marker, read and validated once into frozen records.

Each option is declared once, as a field of ``AccelOptions`` carrying a ``Setting``: its ini name,
default and help, its command-line flag and help, how its text is read, and whether a child pytest
(a confirmation, the calibration's neighbour) gets this run's value. ``plugin.pytest_addoption``
registers the flags and ini settings from that table, ``AccelOptions.from_config`` reads them, and
``AccelOptions.child_settings`` hands them on. A bad flag is argparse's usage error naming the flag;
a bad ini value a ``pytest.UsageError`` naming the setting; both quote the value.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, final

import pytest

from pytest_accel.core.validation import integer_text, number_text, parse_output_folder, parse_output_path
from pytest_accel.engine.devices import DEVICE_CHOICES
from pytest_accel.engine.devices.hostalloc import HOST_ALLOCATOR_MODES
from pytest_accel.engine.sampling import MeasureConfig
from pytest_accel.judgement.confirm import ChildSettings
from pytest_accel.judgement.gate import GateMode
from pytest_accel.judgement.structures import STRUCTURE_POLICIES
from pytest_accel.judgement.verdict import VerdictPolicy

__all__ = [
    "MARKER_SETTINGS",
    "OPERATOR_CHOICES",
    "PROFILE_CHOICES",
    "SETTINGS",
    "STRUCTURE_POLICIES",
    "AccelOptions",
    "Setting",
    "parse_output_folder",
    "parse_output_path",
]

PROFILE_CHOICES = ("smoke", "full")
# When an operator table is taken (core/operator_table.py): auto = at --accel-update and on a confirmed
# regression; always = for every measurement too (what `pytest-accel ab` diffs); off = never.
OPERATOR_CHOICES = ("auto", "always", "off")
# @pytest.mark.perf(...) keywords: measurement settings, then verdict thresholds.
_MARKER_MEASURE = ("measure_seconds", "warmup_max_seconds", "min_rounds", "round_seconds")
_MARKER_POLICY = ("tolerance", "memory_tolerance")
# ... and what a structural change does to this test (STRUCTURE_POLICIES).
_MARKER_STRUCTURE = "structure"
_MARKER_COUNT = "count"  # count this test's work under callgrind (True), or never (False), whatever the run says
MARKER_SETTINGS = (*_MARKER_MEASURE, *_MARKER_POLICY, _MARKER_STRUCTURE, _MARKER_COUNT)
_MARKER_INTEGERS = ("min_rounds",)  # the others are numbers (seconds, fractions)
# The verdict thresholds among the settings: they make the run's VerdictPolicy.
_POLICY_FIELDS = (
    "tolerance", "memory_tolerance", "noisy_spread_floor", "probe_drift_limit", "state_noise_floor",
    "foreign_cpu_margin",
)  # fmt: skip

Reader = Callable[[Any], Any]  # an option's text -> its value; ValueError quoting the text says what is wrong


def _positive(text: Any) -> float:
    return number_text(text)


def _at_least_zero(text: Any) -> float:
    return number_text(text, zero_allowed=True)


def _above_one(text: Any) -> float:
    value = number_text(text)
    if value <= 1:
        raise ValueError(f"{text!r} must be greater than 1")
    return value


def _integer(minimum: int) -> Reader:
    return lambda text: integer_text(text, minimum)


def _boolean(text: Any) -> bool:
    word = str(text).strip().lower()
    if word not in ("true", "false", "1", "0", "yes", "no"):
        raise ValueError(f"{word!r}; use true or false")
    return word in ("true", "1", "yes")


def _choice(choices: tuple[str, ...]) -> Reader:
    def read(text: Any) -> str:
        value = str(text)
        if value not in choices:
            raise ValueError(f"{value!r}; choose one of {', '.join(choices)}")
        return value

    return read


def _baselines_root(config: pytest.Config) -> Path:
    """``--accel-baselines`` against the current folder, else ini ``accel_baselines`` against the ini file's."""
    if config.option.accel_baselines:
        return Path(config.option.accel_baselines).resolve()
    base = config.inipath.parent if config.inipath else config.rootpath
    return base / str(config.getini("accel_baselines"))


def _history_root(config: pytest.Config) -> Path | None:
    """``--accel-history`` against the current folder, else ini ``accel_history`` against the ini file's; None: none."""
    if config.option.accel_history:
        return Path(config.option.accel_history).resolve()
    if not (text := str(config.getini("accel_history")).strip()):
        return None
    return (config.inipath.parent if config.inipath else config.rootpath) / text


@final
@dataclass(frozen=True)
class Setting:
    """One option, declared once: its ini setting, its command-line flag, how its text is read, and
    whether a child pytest gets this run's value (as an ini override)."""

    ini: str | None = None  # the ini name; None: a flag only
    ini_help: str = ""
    default: str | None = None  # the ini default, as an ini file writes it
    flag: str | None = None  # the command-line flag; None: an ini setting only
    flag_help: str = ""
    read: Reader | None = None  # the ini text (and the flag's) -> value; None: the flag is a switch
    flag_read: Reader | None = None  # the flag's reader where it differs from the ini's
    choices: tuple[str, ...] | None = None  # the flag's choices (argparse lists them)
    metavar: str | None = None
    child: bool = False  # a child pytest gets this run's value as an ini override
    implied_by: str | None = None  # a switch also set by another option's (--accel-prune implies --accel-stale)
    resolve: Callable[[pytest.Config], Any] | None = None  # replaces "the flag, else the ini" where both mean more

    @property
    def dest(self) -> str:
        """Where argparse keeps the flag's value (``config.option.<dest>``)."""
        assert self.flag is not None
        return self.flag.lstrip("-").replace("-", "_")

    def declare(self, group: pytest.OptionGroup, parser: pytest.Parser) -> None:
        """Register the flag in ``group`` and the ini setting with ``parser``."""
        if self.flag is not None:
            group.addoption(self.flag, **self.flag_arguments())
        if self.ini is not None:
            shown = f" (default: {self.default})" if self.default else ""
            parser.addini(self.ini, self.ini_help + shown, default=self.default)

    def flag_arguments(self, help_suffix: str = "") -> dict[str, Any]:
        """``addoption``'s keywords for this flag (another spelling of it passes the same, ``--device``)."""
        arguments: dict[str, Any] = {"dest": self.dest, "help": self.flag_help + help_suffix}
        reader = self.flag_read or self.read
        if self.choices is not None:
            arguments.update(choices=self.choices, default=None)
        elif reader is None:
            arguments.update(action="store_true")
        elif reader is not str:
            arguments.update(type=_argparse_type(reader), default=None)
        else:
            arguments.update(default=None)
        if self.metavar is not None:
            arguments["metavar"] = self.metavar
        return arguments

    def value(self, config: pytest.Config) -> Any:
        """This run's value: the flag's when given, else the ini's; a bad ini value is a usage error naming it."""
        if self.resolve is not None:
            return self.resolve(config)
        given = getattr(config.option, self.dest) if self.flag is not None else None
        if given or self.ini is None:
            return bool(given) if self.read is None and self.choices is None else given
        assert self.read is not None
        raw = config.getini(self.ini)
        try:
            return self.read(raw)
        except ValueError as error:
            raise pytest.UsageError(f"ini option {self.ini} = {error}") from None


def _argparse_type(reader: Reader) -> Callable[[str], Any]:
    """``reader`` as argparse's ``type=``: its ``ValueError`` becomes the message argparse shows."""

    def read(text: str) -> Any:
        try:
            return reader(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return read


def _setting(**declaration: Any) -> dict[str, Setting]:
    """The metadata of a field of ``AccelOptions``: the ``Setting`` that declares it (see ``SETTINGS``)."""
    return {"setting": Setting(**declaration)}


def _switch(flag: str, flag_help: str, implied_by: str | None = None) -> dict[str, Setting]:
    """A flag that is on or off (``store_true``), with no ini setting."""
    return _setting(flag=flag, flag_help=flag_help, implied_by=implied_by)


def _chosen(
    flag: str, choices: tuple[str, ...], flag_help: str, ini: str, ini_help: str, default: str, child: bool = False
) -> dict[str, Setting]:
    """One of ``choices``, from the flag, else the ini setting (whose ``default`` is one of them)."""
    return _setting(
        flag=flag, choices=choices, flag_help=flag_help, ini=ini, ini_help=ini_help, default=default,
        read=_choice(choices), child=child,
    )  # fmt: skip


def _output(flag: str, metavar: str, flag_help: str, read: Reader = parse_output_path) -> dict[str, Setting]:
    """A file (or with ``read=parse_output_folder`` a folder) this run writes, checked before it measures."""
    return _setting(flag=flag, read=read, metavar=metavar, flag_help=flag_help)


def _ini(ini: str, default: str, read: Reader, ini_help: str, child: bool = True) -> dict[str, Setting]:
    """A setting of the ini file only; by default a child pytest gets this run's value."""
    return _setting(ini=ini, default=default, read=read, ini_help=ini_help, child=child)


# The defaults that live with their rules, written as an ini file writes them: declared once, there.
_POLICY, _MEASURE, _GATE = VerdictPolicy(), MeasureConfig(), GateMode()


def _text(value: float) -> str:
    """A default as an ini file writes it: ``0.05``, ``20``."""
    return repr(value)


_COUNT_HELP = (
    "count each perf test's work under valgrind's callgrind (instructions per call, one thread, torch's portable "
    "kernels, a counting process per core) and fail a test whose count grew: exact, whatever the host's load (CPU)"
)
DEVICE_HELP = "device to measure on: auto (hpu, else cuda, else cpu), cpu, cuda or hpu (default: auto)"


@final
@dataclass(frozen=True)
class AccelOptions:
    """Every pytest-accel setting of one run, from the command line and the ini file.

    The fields are the table of options: ``--help`` lists the flags in this order, then the ini settings.
    """

    # the --device choice: auto, cpu, cuda or hpu
    device: str = field(metadata=_chosen(
        "--accel-device", DEVICE_CHOICES, DEVICE_HELP, "accel_device", "default for --device / --accel-device", "auto"
    ))  # fmt: skip
    # smoke or full
    profile: str = field(metadata=_chosen(
        "--accel-profile", PROFILE_CHOICES,
        "workload sizes: smoke (seconds on a laptop CPU) or full (the studies' sizes; needs a device)",
        "accel_profile", "default for --accel-profile (smoke or full)", "smoke",
    ))  # fmt: skip
    # --accel-json
    json_path: Path | None = field(metadata=_output(
        "--accel-json", "PATH", "write every measurement of this run, with provenance, to PATH as JSON"
    ))  # fmt: skip
    # timed budget per measurement
    measure_seconds: float = field(metadata=_setting(
        flag="--accel-measure-seconds", read=_positive, metavar="S", child=True,
        flag_help="timed budget per measurement in seconds (default: ini accel_measure_seconds)",
        ini="accel_measure_seconds", ini_help="timed budget per measurement, seconds",
        default=_text(_MEASURE.measure_seconds),
    ))  # fmt: skip
    # --accel-markdown
    markdown_path: Path | None = field(metadata=_output(
        "--accel-markdown", "PATH",
        "write a Markdown summary of this run (regressions first) to PATH, e.g. for a CI job page",
    ))  # fmt: skip
    # the baseline folder
    baselines: Path = field(metadata=_setting(
        flag="--accel-baselines", read=str, metavar="DIR", resolve=_baselines_root,
        flag_help="baseline folder (default: ini accel_baselines, else 'baselines' beside the ini file)",
        ini="accel_baselines", ini_help="baseline folder, relative to the ini file", default="baselines",
    ))  # fmt: skip
    # the nightly history whose nights' drift widens each figure's bound
    history: Path | None = field(metadata=_setting(
        flag="--accel-history", read=str, metavar="DIR", resolve=_history_root, child=True,
        flag_help="the nightly results history (the folder pytest-accel archive fills): how far each figure moved "
        "between its unchanged nights there widens its bound (default: ini accel_history; none)",
        ini="accel_history", ini_help="nightly results history folder, relative to the ini file", default="",
    ))  # fmt: skip
    # record this run's measurements as baselines (--accel-update or --accel-reset-history)
    update: bool = field(metadata=_switch(
        "--accel-update", "write this run's measurements into the baselines (only those measured; others untouched)",
        implied_by="reset_history",
    ))  # fmt: skip
    # forget the earlier recordings of the measured tests
    reset_history: bool = field(metadata=_switch(
        "--accel-reset-history",
        "like --accel-update, and forget the earlier recordings of the measured tests (an accepted change)",
    ))  # fmt: skip
    # measure beside the standard neighbour and store how far it moved each test
    calibrate: bool = field(metadata=_switch(
        "--accel-calibrate",
        "measure the selected tests beside the standard neighbour (a second copy of them in a child pytest) and "
        "store how far it moved each one with its baseline: on a shared host, a slowdown beyond that is judged",
    ))  # fmt: skip
    # a figure not judged fails: noisy, or new against an incomparable baseline
    strict: bool = field(metadata=_switch(
        "--accel-strict",
        "a figure not judged fails its test: 'noisy', or 'new' (nothing comparable to judge it against)"
        " (default: reported, passes)",
    ))  # fmt: skip
    # a figure whose setup (host allocator, huge pages, threads) differs from its baseline's passes, not judged
    allow_setup_mismatch: bool = field(metadata=_switch(
        "--accel-allow-setup-mismatch",
        "a figure whose setup differs from its baseline's (host allocator, huge pages, threads) passes as not"
        " judged (default: it fails its test, naming the difference and how to restore it)",
    ))  # fmt: skip
    # a new (unjudged) measurement fails
    require_baseline: bool = field(metadata=_switch(
        "--accel-require-baseline",
        "a measurement with no baseline for this device fails its test (default: 'new', passes)",
    ))  # fmt: skip
    # --accel-stale: list entries of tests that no longer exist, and exit
    stale: bool = field(metadata=_switch(
        "--accel-stale", "after collection, list baseline entries of tests that no longer exist, and exit",
        implied_by="prune",
    ))  # fmt: skip
    # --accel-prune: remove them
    prune: bool = field(metadata=_switch(
        "--accel-prune", "like --accel-stale, and remove those entries from the baseline file"
    ))  # fmt: skip
    # when operator tables are taken: auto, always or off (OPERATOR_CHOICES)
    operators: str = field(metadata=_chosen(
        "--accel-operators", OPERATOR_CHOICES,
        "when to take a workload's operator table with torch.profiler: auto (at --accel-update, stored in the "
        "baseline, and on a confirmed regression, diffed against it), always (every measurement too), off "
        "(default: ini accel_operators, else auto)",
        "accel_operators", "when to take operator tables: auto, always or off", "auto",
    ))  # fmt: skip
    # what a structural change does: fail, warn or off (STRUCTURE_POLICIES)
    structure: str = field(metadata=_chosen(
        "--accel-structure", STRUCTURE_POLICIES,
        "what a change of what ran (operators, compiled graphs, graph breaks, recompilations, host syncs) does: "
        "fail its test, warn, or off: take no structural record (default: ini accel_structure, else fail)",
        "accel_structure", "what a structural change does: fail, warn or off", "fail",
    ))  # fmt: skip
    # --accel-structure-only: judge what ran, not time
    structure_only: bool = field(metadata=_switch(
        "--accel-structure-only",
        "judge only what ran, not time: a short warm-up and the structural record per measurement (seconds a "
        "test; no quiet machine or recordings of this host needed)",
    ))  # fmt: skip
    # --accel-count: count each perf test's work under callgrind (judgement/counts.py), and judge it
    count: bool = field(metadata=_switch("--accel-count", _COUNT_HELP))
    # --accel-trace: the Chrome trace of each regressed workload goes there
    trace_dir: Path | None = field(metadata=_output(
        "--accel-trace", "DIR",
        "write the Chrome/Perfetto trace of each regressed workload (of every measurement with "
        "--accel-operators=always) into DIR, one file per test",
        read=parse_output_folder,
    ))  # fmt: skip
    # torch threads on the CPU; None: the device's default (half the cores)
    cpu_threads: int | None = field(metadata=_setting(
        flag="--accel-cpu-threads", flag_read=_integer(1), metavar="N",
        flag_help="torch threads when measuring on the CPU (default: ini accel_cpu_threads, else half the cores)",
        ini="accel_cpu_threads", ini_help="torch threads on the CPU (0: half the cores)", default="0",
        read=lambda text: integer_text(text, 0) or None,
    ))  # fmt: skip
    # Settings of the ini file only. A child gets each that decides a figure or a verdict.
    # warm-up budget, counted after the first call
    warmup_max_seconds: float = field(metadata=_ini(
        "accel_warmup_max_seconds", _text(_MEASURE.warmup_max_seconds), _positive,
        "upper bound on warm-up per measurement, seconds of calls after the first (which may compile)",
    ))  # fmt: skip
    # the machine-state probes beside the rounds (off: a verdict cannot tell a state shift from a regression)
    state_probes: bool = field(metadata=_ini(
        "accel_state_probes", "true", _boolean,
        "time the machine-state probes (a copy, a gather, a fresh mapping) beside the rounds, so that a verdict "
        "can tell a machine-state shift from a regression (true/false; ab turns them off)",
    ))  # fmt: skip
    # the work counted with callgrind's cache simulation (misses beside the instructions), at several times the cost
    count_misses: bool = field(metadata=_ini(
        "accel_count_misses", "false", _boolean,
        "with --accel-count, simulate the caches too and judge last-level misses beside the instructions "
        "(true/false; several times slower)", child=False,
    ))  # fmt: skip
    # timed rounds at least, whatever the budget
    min_rounds: int = field(metadata=_ini(
        "accel_min_rounds", _text(_MEASURE.min_rounds), _integer(1),
        "timed rounds per measurement at least, whatever the budget",
    ))  # fmt: skip
    # the suite's verdict thresholds (``policy``; a perf marker may override the first two per test)
    tolerance: float = field(metadata=_ini(
        "accel_tolerance", _text(_POLICY.tolerance), _positive, "default slowdown tolerance of the verdict (fraction)"
    ))  # fmt: skip
    memory_tolerance: float = field(metadata=_ini(
        "accel_memory_tolerance", _text(_POLICY.memory_tolerance), _positive,
        "default peak-memory growth tolerance (fraction)",
    ))  # fmt: skip
    noisy_spread_floor: float = field(metadata=_ini(
        "accel_noisy_spread_floor", _text(_POLICY.noisy_spread_floor), _positive,
        "a run whose rounds spread more than this (IQR/median, and 3x the baseline's) is too unsteady to judge: "
        "noisy (fraction)",
    ))  # fmt: skip
    probe_drift_limit: float = field(metadata=_ini(
        "accel_probe_drift_limit", _text(_POLICY.probe_drift_limit), _above_one,
        "a run whose reference kernel runs this many times faster or slower than at the baseline's recording is "
        "in another machine state: noisy",
    ))  # fmt: skip
    state_noise_floor: float = field(metadata=_ini(
        "accel_state_noise_floor", _text(_POLICY.state_noise_floor), _positive,
        "machine-state probe noise ignored before a verdict widens or turns noisy (fraction)",
    ))  # fmt: skip
    foreign_cpu_margin: float = field(metadata=_ini(
        "accel_foreign_cpu_margin", _text(_POLICY.foreign_cpu_margin), _positive,
        "share of the host's CPU that other processes may use beyond the baseline's recordings before a slower "
        "figure is noisy (fraction)",
    ))  # fmt: skip
    # in-process re-measurements of a suspected regression
    confirmations: int = field(metadata=_ini(
        "accel_confirmations", _text(_GATE.confirmations), _integer(0),
        "re-measurements before a regression fails a test",
    ))  # fmt: skip
    # confirm a regression in a fresh pytest process too
    fresh_confirmation: bool = field(metadata=_ini(
        "accel_fresh_process_confirmation", "true", _boolean,
        "re-measure a confirmed regression once more in a fresh pytest process before failing (true/false)",
        child=False,
    ))  # fmt: skip
    # suspects measured beside their recorded build: the run's budget for those sittings
    recorded_minutes: float = field(metadata=_ini(
        "accel_recorded_minutes", "20", _at_least_zero,
        "minutes a run may spend in all measuring suspects beside the build their baseline recorded (an ab sitting "
        "of that commit against this tree, for a confirmed regression or a figure left unjudged while it read "
        "slower; 0: never)",
        child=False,
    ))  # fmt: skip
    # a figure that abstained because of a neighbour: how long the run may wait, in all, for it to leave
    quiet_wait_seconds: float = field(metadata=_ini(
        "accel_quiet_wait_seconds", "120", _at_least_zero,
        "seconds a run may wait in all for a neighbour to leave, to measure again the figures it left unjudged "
        "(0: never wait)",
        child=False,
    ))  # fmt: skip
    # under torchrun: how long a rank waits for the others
    rank_timeout_seconds: float = field(metadata=_ini(
        "accel_rank_timeout_seconds", "300", _positive,
        "under torchrun: how long a rank waits for the others before failing, naming the missing ranks",
        child=False,
    ))  # fmt: skip
    # the CPU's malloc mode (engine/devices/hostalloc.py)
    host_allocator: str = field(metadata=_chosen(
        "--accel-host-allocator", HOST_ALLOCATOR_MODES,
        "on the CPU: steady keeps freed memory in the process, as a caching allocator does, so no call pays for "
        "another's page faults; system leaves the C library's malloc as it is (default: ini accel_host_allocator, "
        "else steady)",
        "accel_host_allocator", "the CPU's host allocator mode: steady or system", "steady", child=True,
    ))  # fmt: skip

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
        values = {name: setting.value(config) for name, setting in SETTINGS.items()}
        for name, setting in SETTINGS.items():
            if setting.implied_by is not None:
                values[name] = values[name] or values[setting.implied_by]
        return cls(**values)

    @property
    def policy(self) -> VerdictPolicy:
        """The suite's verdict thresholds (a perf marker may override them per test)."""
        return VerdictPolicy(**{name: getattr(self, name) for name in _POLICY_FIELDS})

    def child_settings(self, device: str, cpu_threads: int | None, inherited: tuple[str, ...]) -> ChildSettings:
        """These options as a child pytest gets them (a confirmation, the calibration's neighbour): the
        resolved ``device`` kind, its CPU thread count, and the parent's options that decide what code runs.

        Every setting that decides a figure or a verdict goes to the child as its ini override: those
        declared with ``child=True``."""
        ini = tuple(
            (s.ini, str(getattr(self, name)))
            for name, s in SETTINGS.items()
            if s.child and s.ini and getattr(self, name) is not None
        )
        return ChildSettings(
            device=device,
            profile=self.profile,
            baselines=self.baselines,
            ini=ini,
            cpu_threads=cpu_threads,
            inherited=inherited,
        )

    def gate_mode(self, child: ChildSettings | None, one_reading: bool = False) -> GateMode:
        """How this run's gate acts; ``child``: the settings of a child that confirms a regression (a fresh
        process, a sitting beside the recorded build), if this run may start one; ``one_reading``: this run
        is such a child."""
        return GateMode(
            update=self.update or self.calibrate,
            strict=self.strict,
            require_baseline=self.require_baseline,
            allow_setup_mismatch=self.allow_setup_mismatch,
            confirmations=0 if self.calibrate else self.confirmations,  # calibration reports moves, judges none
            fresh_process=child if self.fresh_confirmation else None,
            quiet_wait_seconds=self.quiet_wait_seconds,
            one_reading=one_reading,
            recorded=child if self.recorded_minutes > 0 and not (self.update or self.calibrate) else None,
            recorded_minutes=self.recorded_minutes,
        )

    def unjudged_fails(self) -> str | None:
        """The option that fails a figure that was never judged (not measured, nothing to compare), or None."""
        if self.update or self.calibrate:
            return None
        if self.strict:
            return "--accel-strict is set"
        return "--accel-require-baseline is set" if self.require_baseline else None

    def thread_advice(self, device_kind: str, cores: int) -> str:
        """Advice when ``--accel-cpu-threads`` asks the CPU for more threads than the host has cores; else ""."""
        if device_kind != "cpu" or not self.cpu_threads or self.cpu_threads <= cores:
            return ""
        return (
            f"--accel-cpu-threads {self.cpu_threads} is more than this host's {cores} cores:"
            " the threads contend for cores, and the figures measure that contention"
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
        if not isinstance(marker.get(_MARKER_COUNT, False), bool):
            raise ValueError(f"bad perf marker setting: count={marker[_MARKER_COUNT]!r}: expected True or False")
        for name, value in marker.items():
            if name in (_MARKER_STRUCTURE, _MARKER_COUNT):
                continue
            wanted = int if name in _MARKER_INTEGERS else (int, float)
            if isinstance(value, bool) or not isinstance(value, wanted):
                kind = "an integer" if wanted is int else "a number"
                raise ValueError(f"bad perf marker setting: {name}={value!r}: expected {kind}")
        settings: dict[str, Any] = {
            "measure_seconds": self.measure_seconds,
            "warmup_max_seconds": self.warmup_max_seconds,
            "min_rounds": self.min_rounds,
            "state_probes": self.state_probes,
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

    def count_for(self, marker: dict[str, Any]) -> bool:  # its perf marker's count=, else --accel-count
        return bool(marker.get(_MARKER_COUNT, self.count))

    def policy_for(self, marker: dict[str, Any]) -> VerdictPolicy:
        """The verdict thresholds for one test: these options, overridden by its perf marker's keywords."""
        overrides = {k: v for k, v in marker.items() if k in _MARKER_POLICY}
        try:
            return replace(self.policy, **overrides) if overrides else self.policy
        except (TypeError, ValueError) as error:
            raise ValueError(f"bad perf marker setting: {error}") from None


# The table of options, in declaration order: field name -> its Setting.
SETTINGS: dict[str, Setting] = {f.name: f.metadata["setting"] for f in fields(AccelOptions)}
