"""Baselines: what a recorded figure holds, which one is comparable, and their files.

Files: ``<root>/<device_key>/<profile>.json`` at world size 1, ``<root>/<device_key>/<profile>-w<N>.json``
above it, kept by the one entry store (storage/entries.py: header, lock, merge, atomic write).
Pure: stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, final, overload

from pytest_accel.core.measurement import (
    CALIBRATED,
    EAGER,
    FOREIGN_CPU,
    WARM,
    Measurement,
    compared_samples,
)
from pytest_accel.core.operator_table import OperatorProfile
from pytest_accel.core.stats import median
from pytest_accel.core.validation import Invalid as _Invalid
from pytest_accel.core.validation import byte_count as _byte_count
from pytest_accel.core.validation import encodable as _encodable
from pytest_accel.core.validation import finite as _finite
from pytest_accel.core.validation import positive as _positive
from pytest_accel.core.validation import samples as _samples
from pytest_accel.core.validation import show as _show
from pytest_accel.core.validation import states as _states
from pytest_accel.core.validation import text as _text
from pytest_accel.judgement.spans import times as _times
from pytest_accel.storage.entries import EntryFiles
from pytest_accel.storage.files import StoreError

__all__ = [
    "COMPARABLE_PROVENANCE",
    "IDENTITY_PROVENANCE",
    "MAJOR_VERSION_PROVENANCE",
    "MAX_RUN_HISTORY",
    "SETUP_PROVENANCE",
    "BaselineEntry",
    "BaselineStore",
    "card_history",
    "mode_provenance",
    "on_card",
    "provenance_changes",
    "run_history",
    "state_history",
    "time_history",
]

# A card's own recordings judge its figures from this many on (``on_card``): the spread between runs needs two.
OWN_CARD_RECORDINGS = 2
# Significant digits kept of each sample on write: 1e-5 relative is far below any timing noise, and short
# numbers keep baseline diffs reviewable.
SAMPLE_SIGNIFICANT_DIGITS = 5

# Keys an entry must have; the others default (no probe, memory unknown, suite tolerances, no provenance).
_REQUIRED_ENTRY_KEYS = ("unit", "items_per_call", "samples")
# Provenance fields of the hardware that change what a figure means: a baseline that differs in one is not
# compared ("new"). A CPU's stepping, caches and vector ISA (a key names family and model).
COMPARABLE_PROVENANCE = ("cpu_stepping", "cache_l2", "cache_l3", "vector_isa")
# Provenance fields of the run's setup, which the user can restore: the thread count, and the host allocator's
# mode (engine/devices/hostalloc.py: with freed memory returned, calls pay page faults; huge pages or not). A
# figure whose setup differs from its baseline's is not judged, and fails its test unless the run allows it
# (``BaselineEntry.setup_differs``): a broken gate, never a "new" workload.
SETUP_PROVENANCE = ("cpu_threads", "host_allocator")
# The hardware a figure came from: the device's name (a CPU's vendor and model name, a GPU's, a Gaudi
# generation) and a CPU's family and model number. Like the fields above, they must be equal; a field
# that one side records and the other does not makes the figure "new", never compared.
IDENTITY_PROVENANCE = ("device_model", "cpu_family", "cpu_model_number")
# Said when two host allocators differ only in huge pages (engine/devices/hostalloc.py): the usual causes.
_HUGE_PAGES_WHY = (
    ": large blocks on huge pages in one and not the other (torch allocated memory before pytest-accel could"
    " ask, THP_MEM_ALLOC_ENABLE set, or the kernel's transparent huge pages setting)"
)
# Compared by major version only: a driver's minor release does not change what a figure means.
MAJOR_VERSION_PROVENANCE = ("cuda_driver",)
# Recorded runs kept per baseline entry: enough for a stable spread, few enough that a baseline
# follows slow, accepted drift (each --accel-update drops the oldest).
MAX_RUN_HISTORY = 10


def _tolerance(value: object, path: str) -> float | None:
    if value is None:
        return None
    number = _finite(value)
    if number is None or number < 0:
        raise _Invalid(path, f"expected null or a finite number >= 0, got {_show(value)}")
    return number


def _provenance(value: object, path: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise _Invalid(path, f"expected an object of strings, got {_show(value)}")
    for key, item in value.items():
        if not isinstance(key, str) or not _encodable(key):
            raise _Invalid(path, f"expected an object of strings, key {_show(key)} is not a string")
        if not isinstance(item, str) or not _encodable(item):
            raise _Invalid(f"{path}[{key!r}]", f"expected a string, got {_show(item)}")
    return dict(value)


def _calibration(value: object, path: str) -> tuple[Mapping[str, float], ...]:
    """Calibration runs: objects with a positive "median", a "foreign_cpu" share in [0, 1], and the
    state probes' figures of that run (seconds per call, each > 0; none in files written before)."""
    runs = _states(value, path)
    for index, run in enumerate(runs):
        where = f"{path}[{index}]"
        if not {CALIBRATED, FOREIGN_CPU} <= set(run):
            raise _Invalid(where, f"expected the keys {CALIBRATED!r} and {FOREIGN_CPU!r}, got {sorted(run)}")
        if any(seconds <= 0 for name, seconds in run.items() if name not in (CALIBRATED, FOREIGN_CPU)):
            raise _Invalid(where, f"expected positive state-probe figures, got {dict(run)}")
        if run[CALIBRATED] <= 0 or run[FOREIGN_CPU] > 1:
            raise _Invalid(where, f"expected a positive median and a share in [0, 1], got {dict(run)}")
    return runs


def _energy(value: object, path: str) -> float | None:
    return None if value is None else _positive(value, path)


def _cards(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(card, str) and _encodable(card) for card in value):
        raise _Invalid(path, f"expected a list of card names, got {_show(value)}")
    return tuple(value)


def _round_significant(value: float) -> float:
    """The value to SAMPLE_SIGNIFICANT_DIGITS significant digits (unrounded where rounding would overflow)."""
    rounded = float(f"{value:.{SAMPLE_SIGNIFICANT_DIGITS}g}")
    return rounded if math.isfinite(rounded) else value


# How a figure was timed (core/measurement.py), in an entry's provenance where it is not the default:
# a graph-replay or cold figure is never compared with an eager or warm one.
_MODE_DEFAULTS = {"timing": EAGER, "cache": WARM}


def mode_provenance(measurement: Measurement, defaults: bool = False) -> dict[str, str]:
    """``{"timing": "graph", "cache": "cold"}``: a measurement's timing mode, the defaults only when asked."""
    modes = {"timing": measurement.timing, "cache": measurement.cache}
    return {key: value for key, value in modes.items() if defaults or value != _MODE_DEFAULTS[key]}


@final
@dataclass(frozen=True)
class BaselineEntry:
    """The recorded figure of one metric of one test: raw samples, what one call does, and where it came from."""

    test: str  # pytest node id
    metric: str  # measurement name, "throughput" unless the test takes several
    unit: str  # what one item is: "images", "tokens", "samples"
    items_per_call: float  # items one call of the workload processes
    samples: tuple[float, ...]  # seconds per call, one per timed round; at least one
    probe_samples: tuple[float, ...] = ()  # seconds per reference-kernel call, one per round (see Measurement)
    # The compared figure (median of probe-normalised samples, else of seconds) of each of the last
    # recordings, oldest first: the spread between runs, which one run's samples cannot show.
    run_medians: tuple[float, ...] = ()
    peak_memory_bytes: int | None = None  # peak device memory during the timed rounds, when known
    tolerance: float | None = None  # per-test slowdown tolerance; None: the suite's
    memory_tolerance: float | None = None  # per-test memory growth tolerance; None: the suite's
    provenance: Mapping[str, str] = field(default_factory=dict, hash=False)  # torch version, commit, date...
    # The machine's state (probe name -> median seconds per call) of each of the last recordings,
    # oldest first: the states the baseline covers (see Measurement.state and the verdict's rule 2).
    run_states: tuple[Mapping[str, float], ...] = field(default=(), hash=False)
    # The latest recording's top operators per call (core/operator_table.py); None in entries recorded
    # before pytest-accel took them, or with --accel-operators=off: a regression then has no diff.
    operators: OperatorProfile | None = field(default=None, hash=False)
    # Each calibration run (--accel-calibrate, judgement/calibrate.py), oldest first: its compared
    # figure ("median", as in run_medians), the share of the host's CPU other processes used
    # ("foreign_cpu") and its state probes. Read by the verdict's rules/host_shared.py.
    calibration: tuple[Mapping[str, float], ...] = field(default=(), hash=False)
    # When each of the last recordings was taken (UTC, ISO 8601), oldest first, kept with run_medians;
    # entries written before times were kept have fewer (judgement/spans.py: what drift they can hold).
    run_times: tuple[str, ...] = field(default=(), hash=False)
    # The card each of the last recordings was taken on (an xdist worker's, ``Measurement.extra["card"]``;
    # "" where not known), oldest first, kept with run_medians: a card's figures are judged on its own (``on_card``).
    run_cards: tuple[str, ...] = field(default=(), hash=False)
    # Joules per item of the latest recording's energy window (engine/energy.py); None: none was read.
    energy_per_item: float | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        try:
            _text(self.test, "test")
            _text(self.metric, "metric")
            _text(self.unit, "unit")
            normalized = {
                "items_per_call": _positive(self.items_per_call, "items_per_call"),
                "samples": _samples(self.samples, "samples", allow_empty=False),
                "probe_samples": _samples(self.probe_samples, "probe_samples", allow_empty=True),
                "run_medians": _samples(self.run_medians, "run_medians", allow_empty=True),
                "run_states": _states(self.run_states, "run_states"),
                "calibration": _calibration(self.calibration, "calibration"),
                "run_times": _times(self.run_times, "run_times"),
                "run_cards": _cards(self.run_cards, "run_cards"),
                "peak_memory_bytes": _byte_count(self.peak_memory_bytes, "peak_memory_bytes"),
                "tolerance": _tolerance(self.tolerance, "tolerance"),
                "memory_tolerance": _tolerance(self.memory_tolerance, "memory_tolerance"),
                "provenance": _provenance(self.provenance, "provenance"),
            }
            probes, rounds = len(self.probe_samples), len(self.samples)
            if probes and probes != rounds:
                raise _Invalid("probe_samples", f"{probes} probe samples for {rounds} samples (one per round)")
        except _Invalid as invalid:
            raise ValueError(f"invalid BaselineEntry {invalid}") from None
        for name, value in normalized.items():  # lists to tuples, ints to floats, a private provenance copy
            object.__setattr__(self, name, value)

    @property
    def items_per_second(self) -> float:
        """The recorded throughput: items per call over the median seconds per call."""
        return self.items_per_call / median(self.samples)

    @property
    def compared_median(self) -> float:
        """The figure a verdict compares, of the latest recording (probe-normalised where recorded)."""
        return median(compared_samples(self.samples, self.probe_samples))

    def incomparable(self, measurement: Measurement, provenance: Mapping[str, str]) -> tuple[str, str] | None:
        """Why ``measurement`` (taken with ``provenance``) must not be judged against this entry, or None:
        in a few words for the summary (``timing eager -> graph``), and as a sentence."""
        if self.unit != measurement.unit or self.items_per_call != measurement.items_per_call:
            return (
                f"workload {self.items_per_call:g} {self.unit} -> {measurement.items_per_call:g} {measurement.unit}",
                (
                    f"the baseline measured {self.items_per_call:g} {self.unit} per call, this run "
                    f"{measurement.items_per_call:g} {measurement.unit}: the workload changed"
                ),
            )
        for key, now_mode in mode_provenance(measurement, defaults=True).items():  # graph vs eager, cold vs warm
            then_mode = self.provenance.get(key, _MODE_DEFAULTS[key])
            if then_mode != now_mode:
                return f"{key} {then_mode} -> {now_mode}", (
                    f"the baseline was timed with {key}={then_mode}, this run with {key}={now_mode}: another mode"
                )
        for key in (*IDENTITY_PROVENANCE, *COMPARABLE_PROVENANCE, *MAJOR_VERSION_PROVENANCE, *SETUP_PROVENANCE):
            then, now = self.provenance.get(key), provenance.get(key)
            if (then is None and now is None) or (key in SETUP_PROVENANCE and then is not None and now is not None):
                continue  # a setup both name is weighed by setup_differs
            if then is None:
                return (
                    f"the baseline lacks {key}",
                    f"the baseline does not say its {key} (this run: {now}): record it again",
                )
            if now is None:
                return f"this run lacks {key}", f"this run does not know its {key} (the baseline's: {then})"
            if key in MAJOR_VERSION_PROVENANCE:
                then, now = then.split(".")[0], now.split(".")[0]
            if then != now:
                return f"{key} {then} -> {now}", f"the baseline was taken with {key}={then}, this run has {key}={now}"
        return None

    def setup_differs(self, provenance: Mapping[str, str]) -> tuple[str, str] | None:
        """How this run's setup (``SETUP_PROVENANCE``) differs from the baseline's, or None: in a few words
        (``host_allocator glibc-steady-huge -> glibc-steady``), and as a sentence. A field only one side
        names is ``incomparable``'s."""
        for key in SETUP_PROVENANCE:
            then, now = self.provenance.get(key), provenance.get(key)
            if then is not None and now is not None and then != now:
                sentence = f"the baseline was recorded with {key}={then}, this run has {key}={now}"
                return f"{key} {then} -> {now}", sentence + _HUGE_PAGES_WHY * _only_huge_pages_differ(key, then, now)
        return None

    def to_json(self) -> dict[str, Any]:
        """The entry as stored under ``entries[test][metric]``; samples rounded to 5 significant digits."""
        return {
            "unit": self.unit,
            "items_per_call": self.items_per_call,
            "samples": [_round_significant(sample) for sample in self.samples],
            "probe_samples": [_round_significant(sample) for sample in self.probe_samples],
            "run_medians": [_round_significant(value) for value in self.run_medians],
            "run_states": [
                {name: _round_significant(seconds) for name, seconds in sorted(state.items())}
                for state in self.run_states
            ],
            "peak_memory_bytes": self.peak_memory_bytes,
            "tolerance": self.tolerance,
            "memory_tolerance": self.memory_tolerance,
            "provenance": dict(self.provenance),
            **({} if self.operators is None else {"operators": self.operators.to_json()}),
            **({"calibration": [dict(sorted(run.items())) for run in self.calibration]} if self.calibration else {}),
            **({"run_times": list(self.run_times)} if self.run_times else {}),
            **({"run_cards": list(self.run_cards)} if any(self.run_cards) else {}),
            **({} if self.energy_per_item is None else {"energy_per_item": self.energy_per_item}),
        }

    @classmethod
    def from_json(cls, test: str, metric: str, data: object, where: str) -> BaselineEntry:
        """Validate one stored entry; ``where`` (the file) and the key path are named in any StoreError."""
        base = f"entries[{test!r}][{metric!r}]"
        try:
            _text(test, f"entries[{test!r}] (test id)")
            _text(metric, f"{base} (metric)")
            if not isinstance(data, Mapping):
                raise _Invalid(base, f"expected an object, got {_show(data)}")
            for key in _REQUIRED_ENTRY_KEYS:
                if key not in data:
                    raise _Invalid(base, f"missing {key!r}")
            rounds = len(_samples(data["samples"], f"{base}['samples']", allow_empty=False))
            probes = len(_samples(data.get("probe_samples", []), f"{base}['probe_samples']", allow_empty=True))
            if probes and probes != rounds:
                problem = f"{probes} probe samples for {rounds} samples (one per round)"
                raise _Invalid(f"{base}['probe_samples']", problem)
            return cls(
                test=test,
                metric=metric,
                unit=_text(data["unit"], f"{base}['unit']"),
                items_per_call=_positive(data["items_per_call"], f"{base}['items_per_call']"),
                samples=_samples(data["samples"], f"{base}['samples']", allow_empty=False),
                probe_samples=_samples(data.get("probe_samples", []), f"{base}['probe_samples']", allow_empty=True),
                run_medians=_samples(data.get("run_medians", []), f"{base}['run_medians']", allow_empty=True),
                run_states=_states(data.get("run_states", []), f"{base}['run_states']"),
                calibration=_calibration(data.get("calibration", []), f"{base}['calibration']"),
                run_times=_times(data.get("run_times", []), f"{base}['run_times']"),
                run_cards=_cards(data.get("run_cards", []), f"{base}['run_cards']"),
                energy_per_item=_energy(data.get("energy_per_item"), f"{base}['energy_per_item']"),
                peak_memory_bytes=_byte_count(data.get("peak_memory_bytes"), f"{base}['peak_memory_bytes']"),
                tolerance=_tolerance(data.get("tolerance"), f"{base}['tolerance']"),
                memory_tolerance=_tolerance(data.get("memory_tolerance"), f"{base}['memory_tolerance']"),
                provenance=_provenance(data.get("provenance", {}), f"{base}['provenance']"),
                operators=(
                    None
                    if data.get("operators") is None
                    else OperatorProfile.from_json(data["operators"], f"{base}['operators']")
                ),
            )
        except _Invalid as invalid:
            raise StoreError(f"{where}: {invalid}") from None


def run_history(
    previous: BaselineEntry | None, measurement: Measurement, provenance: Mapping[str, str], reset: bool
) -> tuple[float, ...]:
    """The run medians to store with a new recording: the previous ones plus this run's, when comparable.

    Every recording is kept (up to MAX_RUN_HISTORY), also one that moved: a machine whose kernels
    drift between sessions must show that spread, or the gate flags the drift. ``reset``
    (--accel-reset-history) starts the history anew, for an accepted change of the code.
    """
    current = median(measurement.compared_samples)
    if not _continues(previous, measurement, provenance, reset):
        return (current,)
    assert previous is not None
    earlier = previous.run_medians or (previous.compared_median,)
    return (*earlier, current)[-MAX_RUN_HISTORY:]


def state_history(
    previous: BaselineEntry | None, measurement: Measurement, provenance: Mapping[str, str], reset: bool
) -> tuple[Mapping[str, float], ...]:
    """The machine states to store with a new recording, kept by the same rule as ``run_history``."""
    current = (dict(measurement.state),) if measurement.state else ()
    if not _continues(previous, measurement, provenance, reset):
        return current
    assert previous is not None
    return (*previous.run_states, *current)[-MAX_RUN_HISTORY:]


# Provenance fields shown when they changed since the baseline (an upgrade explains a shift).
_SHOWN_PROVENANCE = ("torch", "cuda_runtime", "cuda_driver", "habana_torch_plugin", "device_model")


def provenance_changes(entry: BaselineEntry, provenance: Mapping[str, str]) -> str:
    """'torch 2.13.0 -> 2.14.1' for the shown fields that differ; '' when none do."""
    changes = [
        f"{key} {entry.provenance[key]} -> {provenance[key]}"
        for key in _SHOWN_PROVENANCE
        if key in entry.provenance and key in provenance and entry.provenance[key] != provenance[key]
    ]
    return ", ".join(changes)


def time_history(
    previous: BaselineEntry | None, measurement: Measurement, provenance: Mapping[str, str], reset: bool, now: str
) -> tuple[str, ...]:
    """The recording times to store with a new recording taken at ``now``, kept by the rule of ``run_history``."""
    if not _continues(previous, measurement, provenance, reset):
        return (now,)
    assert previous is not None
    return (*previous.run_times, now)[-MAX_RUN_HISTORY:]


def card_history(
    previous: BaselineEntry | None, measurement: Measurement, provenance: Mapping[str, str], reset: bool
) -> tuple[str, ...]:
    """The cards to store with a new recording, kept by the rule of ``run_history`` ("" for one not known)."""
    current = str(measurement.extra.get("card", ""))
    if not _continues(previous, measurement, provenance, reset):
        return (current,)
    assert previous is not None
    earlier = previous.run_cards if len(previous.run_cards) == len(previous.run_medians) else ()
    return (*([""] * (len(previous.run_medians) - len(earlier))), *earlier, current)[-MAX_RUN_HISTORY:]


@overload
def on_card(entry: BaselineEntry, card: str | None) -> BaselineEntry: ...
@overload
def on_card(entry: None, card: str | None) -> None: ...
def on_card(entry: BaselineEntry | None, card: str | None) -> BaselineEntry | None:
    """``entry`` judged on the recordings taken on ``card`` (its run medians, states and times), where it has
    ``OWN_CARD_RECORDINGS`` of them or more; else as it is, every recording of the card class. The latest
    recording's samples (the within-run spread) stay whichever card took them."""
    if entry is None or not card or len(entry.run_cards) != len(entry.run_medians):
        return entry
    kept = [index for index, recorded in enumerate(entry.run_cards) if recorded == card]
    if len(kept) < OWN_CARD_RECORDINGS or len(kept) == len(entry.run_cards):
        return entry

    def own(values: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(values[index] for index in kept) if len(values) == len(entry.run_cards) else values

    return replace(
        entry, run_medians=own(entry.run_medians), run_states=own(entry.run_states),
        run_times=own(entry.run_times), run_cards=own(entry.run_cards),
    )  # fmt: skip


def _continues(
    previous: BaselineEntry | None, measurement: Measurement, provenance: Mapping[str, str], reset: bool
) -> bool:
    """Whether a new recording extends the previous entry's history (else it starts anew)."""
    if reset or previous is None or previous.incomparable(measurement, provenance) is not None:
        return False
    if previous.setup_differs(provenance) is not None:
        return False
    return bool(previous.probe_samples) == bool(measurement.probe_samples)  # normalised and raw do not mix


@final
class BaselineStore:
    """The baseline files under one root folder: ``<root>/<device_key>/<profile>[-w<N>].json``."""

    __slots__ = ("_files", "root")

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._files: EntryFiles[BaselineEntry] = EntryFiles(self.root, BaselineEntry.from_json, "device key")

    def path_for(self, device_key: str, profile: str, world_size: int = 1) -> Path:
        """The file holding the baselines of one device class, profile and world size."""
        return self._files.path_for(device_key, profile, world_size)

    def load(self, device_key: str, profile: str, world_size: int = 1) -> dict[tuple[str, str], BaselineEntry]:
        """The entries of one file by (test, metric); empty when there is none. Never writes."""
        return self._files.load(device_key, profile, world_size)

    def update(self, device_key: str, profile: str, world_size: int, entries: Iterable[BaselineEntry]) -> Path:
        """Record the given entries (the last wins for a repeated pair), keeping every other entry; returns the file.

        Nothing is written when no entries are given, or when the file on disk is corrupt (StoreError).
        """
        given = {(entry.test, entry.metric): entry.to_json() for entry in entries}
        return self._files.update(device_key, profile, world_size, given)

    def prune(self, device_key: str, profile: str, world_size: int, keep_tests: Collection[str]) -> list[str]:
        """Remove the entries of tests not in ``keep_tests``; returns their ids, sorted. No write if none."""
        return self._files.prune(device_key, profile, world_size, keep_tests)

    def identify(self, path: Path) -> tuple[str, str, int]:
        """(device key, profile, world size) of a file under the root, the inverse of ``path_for``."""
        return self._files.identify(path)

    def files(self) -> list[Path]:
        """Every baseline file under the root, sorted (lock and temporary files excluded)."""
        return self._files.files()


def _only_huge_pages_differ(key: str, then: str, now: str) -> bool:
    return key == "host_allocator" and then.removesuffix("-huge") == now.removesuffix("-huge")
