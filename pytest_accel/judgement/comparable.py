"""Whether a stored baseline can judge a figure, and on what: the rules before the time verdict.

- No baseline, or one of other hardware or another workload: "new" (``not_comparable``).
- A setup the user can restore differs (host allocator, huge pages, threads): not judged, and it fails its
  test unless the run allows it (``setup_mismatch``): a broken gate, never a new workload.
- The environment changed since the recordings and the reference kernel itself runs slower: the normalised
  figure may have cancelled a slowdown both share, so it is judged on raw time too (``judged_raw_too``).

Pure: no torch, no pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pytest_accel.core.measurement import Measurement, throttle_problem
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Verdict
from pytest_accel.core.stats import median
from pytest_accel.core.units import format_percent_change
from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.verdict import RECORD, Observation, VerdictPolicy, judge_time

__all__ = ["COMPARABLE", "NO_BASELINE", "judged_raw_too", "not_comparable", "setup_mismatch"]

NO_BASELINE = "no baseline"


def _observation(taken: Measurement) -> Observation:
    return Observation(taken.samples, taken.probe_samples, taken.peak_memory_bytes, (), taken.state)


COMPARABLE = Verdict(Outcome.UNCHANGED, "time", "comparable")  # not_comparable's "go on and judge it"


def not_comparable(
    measurement: Measurement,
    entry: BaselineEntry | None,
    provenance: Mapping[str, str],
    setup_causes: Mapping[str, tuple[str, str]],
) -> Verdict:
    """The verdict on a figure its baseline cannot judge: new (none, other hardware or workload), or not judged
    (a setup the user can restore: ``setup_mismatch``); ``COMPARABLE`` when it can be judged."""
    if entry is None:  # new either way; a throttled figure says so (and --accel-update does not record it)
        throttled = throttle_problem(measurement)
        why = "no baseline for this test on this device" + ("" if throttled is None else f"; and {throttled}")
        return Verdict(Outcome.NEW, "time", why, abstention=Abstention(NO_BASELINE, RECORD, cause=Cause.NO_BASELINE))
    differs = entry.incomparable(measurement, provenance)
    if differs is not None:
        short, reason = differs
        return Verdict(
            Outcome.NEW,
            "time",
            f"not compared: {reason}",
            abstention=Abstention(short, f"re-{RECORD}", cause=Cause.NOT_COMPARED),
        )
    if (setup := entry.setup_differs(provenance)) is not None:
        return setup_mismatch(setup, entry.provenance, setup_causes)
    return COMPARABLE


def setup_mismatch(
    setup: tuple[str, str], recorded: Mapping[str, str], causes: Mapping[str, tuple[str, str]]
) -> Verdict:
    """The verdict on a figure whose run's setup differs from its baseline's (``BaselineEntry.setup_differs``):
    not judged, naming the difference, what caused it where the run knows (``causes``: field -> (why, how to
    restore it)), and how to restore the baseline's setup. Never advice to record over the baseline."""
    short, sentence = setup
    key = short.split(" ", 1)[0]
    why, restore = causes.get(key, ("", f"run with the baseline's {key} ({recorded.get(key, '?')}) again"))
    reason = f"not judged: the setup differs from the baseline's: {sentence}" + (f"; {why}" if why else "")
    return Verdict(Outcome.NOISY, "time", reason, abstention=Abstention(f"setup: {short}", restore, cause=Cause.SETUP))


def judged_raw_too(
    verdict: Verdict, taken: Measurement, baseline: Observation, policy: VerdictPolicy, environment_moved: bool
) -> Verdict:
    """A normalised verdict that passed, judged on raw seconds as well where the environment changed since the
    recordings and the reference kernel itself now runs slower than they saw beyond the tolerance: a slowdown
    the workload shares with the reference (torch's matmul, BLAS) would cancel in the ratio. The raw verdict
    stands where it reads regressed."""
    if not environment_moved or not verdict.normalized or verdict.outcome is Outcome.REGRESSED:
        return verdict
    now, then = taken.probe_samples, baseline.probe_samples
    if not now or not then or median(now) <= median(then) * (1 + policy.tolerance):
        return verdict
    raw = judge_time(
        _observation(replace(taken, probe_samples=())), replace(baseline, probe_samples=(), run_medians=()), policy
    )
    if raw.outcome is not Outcome.REGRESSED:
        return verdict
    reference = format_percent_change(median(now) / median(then))
    said = (
        f"{raw.reason}; judged on raw time: the environment changed since the recordings and the reference kernel"
        f" runs {reference} against them, so it may share the slowdown (normalised: {verdict.reason})"
    )
    return replace(raw, reason=said)
