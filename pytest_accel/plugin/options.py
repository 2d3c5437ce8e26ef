"""The run's options: command line + ini + perf marker, read and validated once into frozen records.

Each option is declared once, as a field of ``AccelOptions`` carrying a ``Setting``: its ini name,
default and help, its command-line flag and help, how its text is read, and whether a child pytest
(a confirmation, the calibration's neighbour) gets this run's value. ``plugin.pytest_addoption``
registers the flags and ini settings from that table, ``AccelOptions.from_config`` reads them, and
``AccelOptions.child_settings`` hands them on. A bad flag is argparse's usage error naming the flag;
a bad ini value a ``pytest.UsageError`` naming the setting; both quote the value.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, final

import pytest

from pytest_accel.core.cost import parse_prices
from pytest_accel.core.validation import integer_text, parse_output_folder, parse_output_path
from pytest_accel.engine.devices import DEVICE_CHOICES
from pytest_accel.engine.devices.hostalloc import HOST_ALLOCATOR_MODES
from pytest_accel.engine.sampling import MeasureConfig
from pytest_accel.judgement.confirm import ChildSettings
from pytest_accel.judgement.gate import GateMode
from pytest_accel.judgement.structures import STRUCTURE_POLICIES
from pytest_accel.judgement.verdict import VerdictPolicy
from pytest_accel.plugin.settings import (
    Setting,
    above_one,
    at_least_zero,
    boolean,
    chosen,
    declared,
    ini_setting,
    integer,
    output,
    positive,
    switch,
)

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
    "tolerance", "memory_tolerance", "energy_tolerance", "noisy_spread_floor", "probe_drift_limit", "state_noise_floor",
    "foreign_cpu_margin",
)  # fmt: skip


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
    device: str = field(metadata=chosen(
        "--accel-device", DEVICE_CHOICES, DEVICE_HELP, "accel_device", "default for --device / --accel-device", "auto"
    ))  # fmt: skip
    # smoke or full
    profile: str = field(metadata=chosen(
        "--accel-profile", PROFILE_CHOICES,
        "workload sizes: smoke (seconds on a laptop CPU) or full (the studies' sizes; needs a device)",
        "accel_profile", "default for --accel-profile (smoke or full)", "smoke",
    ))  # fmt: skip
    # --accel-json
    json_path: Path | None = field(metadata=output(
        "--accel-json", "PATH", "write every measurement of this run, with provenance, to PATH as JSON"
    ))  # fmt: skip
    # timed budget per measurement
    measure_seconds: float = field(metadata=declared(
        flag="--accel-measure-seconds", read=positive, metavar="S", child=True,
        flag_help="timed budget per measurement in seconds (default: ini accel_measure_seconds)",
        ini="accel_measure_seconds", ini_help="timed budget per measurement, seconds",
        default=_text(_MEASURE.measure_seconds),
    ))  # fmt: skip
    # --accel-markdown
    markdown_path: Path | None = field(metadata=output(
        "--accel-markdown", "PATH",
        "write a Markdown summary of this run (regressions first) to PATH, e.g. for a CI job page",
    ))  # fmt: skip
    # the baseline folder
    baselines: Path = field(metadata=declared(
        flag="--accel-baselines", read=str, metavar="DIR", resolve=_baselines_root,
        flag_help="baseline folder (default: ini accel_baselines, else 'baselines' beside the ini file)",
        ini="accel_baselines", ini_help="baseline folder, relative to the ini file", default="baselines",
    ))  # fmt: skip
    # the nightly history whose nights' drift widens each figure's bound
    history: Path | None = field(metadata=declared(
        flag="--accel-history", read=str, metavar="DIR", resolve=_history_root, child=True,
        flag_help="the nightly results history (the folder pytest-accel archive fills): how far each figure moved "
        "between its unchanged nights there widens its bound (default: ini accel_history; none)",
        ini="accel_history", ini_help="nightly results history folder, relative to the ini file", default="",
    ))  # fmt: skip
    # record this run's measurements as baselines (--accel-update or --accel-reset-history)
    update: bool = field(metadata=switch(
        "--accel-update", "write this run's measurements into the baselines (only those measured; others untouched)",
        implied_by="reset_history",
    ))  # fmt: skip
    # forget the earlier recordings of the measured tests
    reset_history: bool = field(metadata=switch(
        "--accel-reset-history",
        "like --accel-update, and forget the earlier recordings of the measured tests (an accepted change)",
    ))  # fmt: skip
    # measure beside the standard neighbour and store how far it moved each test
    calibrate: bool = field(metadata=switch(
        "--accel-calibrate",
        "measure the selected tests beside the standard neighbour (a second copy of them in a child pytest) and "
        "store how far it moved each one with its baseline: on a shared host, a slowdown beyond that is judged",
    ))  # fmt: skip
    # a figure not judged fails: noisy, or new against an incomparable baseline
    strict: bool = field(metadata=switch(
        "--accel-strict",
        "a figure not judged fails its test: 'noisy', or 'new' (nothing comparable to judge it against)"
        " (default: reported, passes)",
    ))  # fmt: skip
    # a figure whose setup (host allocator, huge pages, threads) differs from its baseline's passes, not judged
    allow_setup_mismatch: bool = field(metadata=switch(
        "--accel-allow-setup-mismatch",
        "a figure whose setup differs from its baseline's (host allocator, huge pages, threads) passes as not"
        " judged (default: it fails its test, naming the difference and how to restore it)",
    ))  # fmt: skip
    # a new (unjudged) measurement fails
    require_baseline: bool = field(metadata=switch(
        "--accel-require-baseline",
        "a measurement with no baseline for this device fails its test (default: 'new', passes)",
    ))  # fmt: skip
    # --accel-stale: list entries of tests that no longer exist, and exit
    stale: bool = field(metadata=switch(
        "--accel-stale", "after collection, list baseline entries of tests that no longer exist, and exit",
        implied_by="prune",
    ))  # fmt: skip
    # --accel-prune: remove them
    prune: bool = field(metadata=switch(
        "--accel-prune", "like --accel-stale, and remove those entries from the baseline file"
    ))  # fmt: skip
    # when operator tables are taken: auto, always or off (OPERATOR_CHOICES)
    operators: str = field(metadata=chosen(
        "--accel-operators", OPERATOR_CHOICES,
        "when to take a workload's operator table with torch.profiler: auto (at --accel-update, stored in the "
        "baseline, and on a confirmed regression, diffed against it), always (every measurement too), off "
        "(default: ini accel_operators, else auto)",
        "accel_operators", "when to take operator tables: auto, always or off", "auto",
    ))  # fmt: skip
    # what a structural change does: fail, warn or off (STRUCTURE_POLICIES)
    structure: str = field(metadata=chosen(
        "--accel-structure", STRUCTURE_POLICIES,
        "what a change of what ran (operators, compiled graphs, graph breaks, recompilations, host syncs) does: "
        "fail its test, warn, or off: take no structural record (default: ini accel_structure, else fail)",
        "accel_structure", "what a structural change does: fail, warn or off", "fail",
    ))  # fmt: skip
    # --accel-structure-only: judge what ran, not time
    structure_only: bool = field(metadata=switch(
        "--accel-structure-only",
        "judge only what ran, not time: a short warm-up and the structural record per measurement (seconds a "
        "test; no quiet machine or recordings of this host needed)",
    ))  # fmt: skip
    # --accel-count: count each perf test's work under callgrind (judgement/counts.py), and judge it
    count: bool = field(metadata=switch("--accel-count", _COUNT_HELP))
    # --accel-trace: the Chrome trace of each regressed workload goes there
    trace_dir: Path | None = field(metadata=output(
        "--accel-trace", "DIR",
        "write the Chrome/Perfetto trace of each regressed workload (of every measurement with "
        "--accel-operators=always) into DIR, one file per test",
        read=parse_output_folder,
    ))  # fmt: skip
    # torch threads on the CPU; None: the device's default (half the cores)
    cpu_threads: int | None = field(metadata=declared(
        flag="--accel-cpu-threads", flag_read=integer(1), metavar="N",
        flag_help="torch threads when measuring on the CPU (default: ini accel_cpu_threads, else half the cores)",
        ini="accel_cpu_threads", ini_help="torch threads on the CPU (0: half the cores)", default="0",
        read=lambda text: integer_text(text, 0) or None,
    ))  # fmt: skip
    # Settings of the ini file only. A child gets each that decides a figure or a verdict.
    # warm-up budget, counted after the first call
    warmup_max_seconds: float = field(metadata=ini_setting(
        "accel_warmup_max_seconds", _text(_MEASURE.warmup_max_seconds), positive,
        "upper bound on warm-up per measurement, seconds of calls after the first (which may compile)",
    ))  # fmt: skip
    # the machine-state probes beside the rounds (off: a verdict cannot tell a state shift from a regression)
    state_probes: bool = field(metadata=ini_setting(
        "accel_state_probes", "true", boolean,
        "time the machine-state probes (a copy, a gather, a fresh mapping) beside the rounds, so that a verdict "
        "can tell a machine-state shift from a regression (true/false; ab turns them off)",
    ))  # fmt: skip
    # the work counted with callgrind's cache simulation (misses beside the instructions), at several times the cost
    count_misses: bool = field(metadata=ini_setting(
        "accel_count_misses", "false", boolean,
        "with --accel-count, simulate the caches too and judge last-level misses beside the instructions "
        "(true/false; several times slower)", child=False,
    ))  # fmt: skip
    # the energy window after the timed rounds (engine/energy.py); 0: energy is not read
    energy_seconds: float = field(metadata=ini_setting(
        "accel_energy_seconds", _text(_MEASURE.energy_seconds), at_least_zero,
        "seconds of the workload's calls back to back after the timed rounds, read by the device's energy counter "
        "(NVML, HLML, RAPL): joules per item, watts (0: energy is not read)",
    ))  # fmt: skip
    # what a device-hour costs, per device class (core/cost.py)
    prices: dict[str, float] = field(metadata=declared(
        flag="--accel-price-per-hour", read=parse_prices, metavar="CLASS=PRICE,...",
        flag_help="what a device-hour costs, per device class (cuda=4.10,cuda-h100=6.98,cpu=0.40): items per dollar "
        "in the table and the JSON (default: ini accel_price_per_hour; none)",
        ini="accel_price_per_hour", ini_help="what a device-hour costs, per device class: cuda=4.10, cpu=0.40",
        default="",
    ))  # fmt: skip
    # what a kWh costs: the energy's own cost per million items
    price_per_kwh: float = field(metadata=ini_setting(
        "accel_price_per_kwh", "0", at_least_zero,
        "what a kWh costs: with an energy figure, its cost per million items in the JSON (0: none)", child=False,
    ))  # fmt: skip
    # timed rounds at least, whatever the budget
    min_rounds: int = field(metadata=ini_setting(
        "accel_min_rounds", _text(_MEASURE.min_rounds), integer(1),
        "timed rounds per measurement at least, whatever the budget",
    ))  # fmt: skip
    # the suite's verdict thresholds (``policy``; a perf marker may override the first two per test)
    tolerance: float = field(metadata=ini_setting(
        "accel_tolerance", _text(_POLICY.tolerance), positive, "default slowdown tolerance of the verdict (fraction)"
    ))  # fmt: skip
    memory_tolerance: float = field(metadata=ini_setting(
        "accel_memory_tolerance", _text(_POLICY.memory_tolerance), positive,
        "default peak-memory growth tolerance (fraction)",
    ))  # fmt: skip
    energy_tolerance: float = field(metadata=ini_setting(
        "accel_energy_tolerance", _text(_POLICY.energy_tolerance), positive,
        "default energy-per-item growth tolerance (fraction), in every energy window read",
    ))  # fmt: skip
    noisy_spread_floor: float = field(metadata=ini_setting(
        "accel_noisy_spread_floor", _text(_POLICY.noisy_spread_floor), positive,
        "a run whose rounds spread more than this (IQR/median, and 3x the baseline's) is too unsteady to judge: "
        "noisy (fraction)",
    ))  # fmt: skip
    probe_drift_limit: float = field(metadata=ini_setting(
        "accel_probe_drift_limit", _text(_POLICY.probe_drift_limit), above_one,
        "a run whose reference kernel runs this many times faster or slower than at the baseline's recording is "
        "in another machine state: noisy",
    ))  # fmt: skip
    state_noise_floor: float = field(metadata=ini_setting(
        "accel_state_noise_floor", _text(_POLICY.state_noise_floor), positive,
        "machine-state probe noise ignored before a verdict widens or turns noisy (fraction)",
    ))  # fmt: skip
    foreign_cpu_margin: float = field(metadata=ini_setting(
        "accel_foreign_cpu_margin", _text(_POLICY.foreign_cpu_margin), positive,
        "share of the host's CPU that other processes may use beyond the baseline's recordings before a slower "
        "figure is noisy (fraction)",
    ))  # fmt: skip
    # in-process re-measurements of a suspected regression
    confirmations: int = field(metadata=ini_setting(
        "accel_confirmations", _text(_GATE.confirmations), integer(0),
        "re-measurements before a regression fails a test",
    ))  # fmt: skip
    # confirm a regression in a fresh pytest process too
    fresh_confirmation: bool = field(metadata=ini_setting(
        "accel_fresh_process_confirmation", "true", boolean,
        "re-measure a confirmed regression once more in a fresh pytest process before failing (true/false)",
        child=False,
    ))  # fmt: skip
    # suspects measured beside their recorded build: the run's budget for those sittings
    recorded_minutes: float = field(metadata=ini_setting(
        "accel_recorded_minutes", "20", at_least_zero,
        "minutes a run may spend in all measuring suspects beside the build their baseline recorded (an ab sitting "
        "of that commit against this tree, for a confirmed regression or a figure left unjudged while it read "
        "slower; 0: never)",
        child=False,
    ))  # fmt: skip
    # a figure that abstained because of a neighbour: how long the run may wait, in all, for it to leave
    quiet_wait_seconds: float = field(metadata=ini_setting(
        "accel_quiet_wait_seconds", "120", at_least_zero,
        "seconds a run may wait in all for a neighbour to leave, to measure again the figures it left unjudged "
        "(0: never wait)",
        child=False,
    ))  # fmt: skip
    # under torchrun: how long a rank waits for the others
    rank_timeout_seconds: float = field(metadata=ini_setting(
        "accel_rank_timeout_seconds", "300", positive,
        "under torchrun: how long a rank waits for the others before failing, naming the missing ranks",
        child=False,
    ))  # fmt: skip
    # under xdist: each test on the same card every run, not on whichever worker is free (plugin/workers.py)
    fixed_cards: bool = field(metadata=switch(
        "--accel-fixed-cards",
        "under xdist (-n) with a named device: each test on the same card every run (test k of the selection on "
        "worker k mod N) instead of on whichever worker is free: ab's two builds of a test alternate on one card, "
        "and a test's own card's recordings gather night after night",
    ))  # fmt: skip
    # under xdist: how long one test may run in a worker before the worker is ended, named (plugin/workers.py)
    worker_timeout_seconds: float = field(metadata=ini_setting(
        "accel_worker_timeout_seconds", "3600", at_least_zero,
        "under xdist (-n) with a named device: seconds one test may run in a worker before the worker is ended "
        "with its stacks dumped, named by xdist as crashed in that test (0: never)",
        child=False,
    ))  # fmt: skip
    # the CPU's malloc mode (engine/devices/hostalloc.py)
    host_allocator: str = field(metadata=chosen(
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
            "energy_seconds": self.energy_seconds,
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
