"""The table of options (``options.SETTINGS``): each option declared once, read and handed on from there."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from pytest_accel.engine.sampling import MeasureConfig
from pytest_accel.judgement.gate import GateMode
from pytest_accel.judgement.policy import VerdictPolicy
from pytest_accel.plugin.options import SETTINGS, Setting, parse_output_folder, parse_output_path


def test_every_option_is_declared_with_its_help_and_default() -> None:
    for name, setting in SETTINGS.items():
        assert setting.flag or setting.ini, name
        assert setting.flag is None or setting.flag_help, name
        assert setting.ini is None or (setting.ini_help and setting.default is not None), name
        assert setting.implied_by is None or SETTINGS[setting.implied_by].read is None, name  # switches only
    flags = [s.flag for s in SETTINGS.values() if s.flag]
    inis = [s.ini for s in SETTINGS.values() if s.ini]
    assert len(set(flags)) == len(flags) and len(set(inis)) == len(inis)


def test_a_child_gets_every_setting_that_decides_a_figure_or_a_verdict() -> None:
    child = {s.ini for s in SETTINGS.values() if s.child}
    assert child == {
        "accel_measure_seconds", "accel_warmup_max_seconds", "accel_min_rounds", "accel_tolerance",
        "accel_memory_tolerance", "accel_noisy_spread_floor", "accel_probe_drift_limit", "accel_state_noise_floor",
        "accel_state_probes", "accel_energy_seconds", "accel_energy_tolerance",
        "accel_foreign_cpu_margin", "accel_confirmations",
        "accel_host_allocator", "accel_history",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("measure_seconds", "fast", "'fast' is not a number"),
        ("tolerance", "-1", "'-1' must be a finite number greater than 0"),
        ("foreign_cpu_margin", "inf", "'inf' must be a finite number greater than 0"),
        ("min_rounds", "0", "'0' must be at least 1"),
        ("min_rounds", "1.5", "'1.5' is not an integer"),
        ("confirmations", "-1", "'-1' must be at least 0"),
        ("probe_drift_limit", "1", "'1' must be greater than 1"),
        ("fresh_confirmation", " Maybe", "'maybe'; use true or false"),
        ("device", "tpu", "'tpu'; choose one of auto, cpu, cuda, hpu"),
        ("structure", "sometimes", "'sometimes'; choose one of fail, warn, off"),
    ],
)
def test_a_bad_ini_value_is_refused_quoting_it(name: str, text: str, message: str) -> None:
    read = SETTINGS[name].read
    assert read is not None
    with pytest.raises(ValueError) as error:
        read(text)
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [("cpu_threads", "0", None), ("cpu_threads", "3", 3), ("fresh_confirmation", "No", False), ("min_rounds", 5, 5)],
)
def test_ini_values_read(name: str, text: object, value: object) -> None:
    read = SETTINGS[name].read
    assert read is not None and read(text) == value


def test_a_flag_with_a_reader_gets_argparse_s_message() -> None:
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument(SETTINGS["cpu_threads"].flag or "", **SETTINGS["cpu_threads"].flag_arguments())
    assert parser.parse_args(["--accel-cpu-threads", "4"]).accel_cpu_threads == 4
    with pytest.raises(argparse.ArgumentError, match="'0' must be at least 1"):
        parser.parse_args(["--accel-cpu-threads", "0"])  # the ini's 0 (half the cores) is no flag value


def test_switches_are_store_true_and_choices_are_listed() -> None:
    assert SETTINGS["strict"].flag_arguments()["action"] == "store_true"
    assert SETTINGS["operators"].flag_arguments()["choices"] == ("auto", "always", "off")
    assert Setting(flag="--accel-x", flag_help="x").dest == "accel_x"


def test_output_paths_are_checked_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        parse_output_path("no/such/folder/out.json")
    with pytest.raises(ValueError, match="is a directory"):
        parse_output_path(str(tmp_path))
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match="is a file; --accel-trace needs a folder"):
        parse_output_folder(str(tmp_path / "f" / "traces"))


GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide.md"


def _guide_rows() -> dict[str, str]:
    """ini name -> its row of the guide's options table."""
    table = GUIDE.read_text().split("## Options", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for row in table.splitlines():
        cells = row.split(" | ")
        if len(cells) >= 3:
            for ini in re.findall(r"`(accel_\w+)`", cells[1]):
                rows[ini] = row
    return rows


def test_the_guide_options_table_the_ini_and_the_rules_give_one_default() -> None:
    """Each ini setting has its row in the guide, which states the default the ini declares; the ini's
    defaults of the verdict's thresholds and the measuring loop are those of their rules."""
    rows = _guide_rows()
    for setting in SETTINGS.values():
        if setting.ini is None:
            continue
        row = rows.get(setting.ini)
        assert row is not None, f"{setting.ini} has no row in the guide's options table"
        stated = re.search(r"default:? `?([\w.]+)`?|`([\w.]+)` \(default", row)
        assert stated is not None, f"{setting.ini}: its row states no default"
        said = stated.group(1) or stated.group(2)
        default = setting.default or "none"
        same = float(said) == float(default) if re.fullmatch(r"[\d.]+", default) else said == default
        assert same, f"{setting.ini}: the guide says {said}, the ini {default}"
    policy, measure, gate = VerdictPolicy(), MeasureConfig(), GateMode()
    for ini, rule in [
        ("accel_tolerance", policy.tolerance), ("accel_memory_tolerance", policy.memory_tolerance),
        ("accel_noisy_spread_floor", policy.noisy_spread_floor), ("accel_probe_drift_limit", policy.probe_drift_limit),
        ("accel_state_noise_floor", policy.state_noise_floor), ("accel_foreign_cpu_margin", policy.foreign_cpu_margin),
        ("accel_measure_seconds", measure.measure_seconds), ("accel_min_rounds", measure.min_rounds),
        ("accel_warmup_max_seconds", measure.warmup_max_seconds), ("accel_confirmations", gate.confirmations),
    ]:  # fmt: skip
        (setting,) = (s for s in SETTINGS.values() if s.ini == ini)
        assert setting.read is not None and setting.default is not None
        assert setting.read(setting.default) == rule, ini
