"""The accelerator check's plan and files (benchmarks/device_sections.py): pure parts, no device."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _sections() -> ModuleType:
    spec = importlib.util.spec_from_file_location("device_sections", BENCHMARKS / "device_sections.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("device_sections", module)
    spec.loader.exec_module(module)
    return module


sections = _sections()


def test_each_check_fits_ten_minutes_of_device_time_in_calls_under_five() -> None:
    """Both checks, start and installs counted, fit 10 of a lend's 15 minutes (room to rerun a call); every
    section is in exactly one call, and none is skipped by a call budgeted at its share."""
    planned = [name for check in sections.CHECKS for call in sections.check_calls(check) for name in call]
    assert sorted(planned) == sorted(sections.SECTION_SECONDS)
    for check in sections.CHECKS:
        assert sections.check_seconds(check) <= sections.CHECK_SECONDS == 600
        assert all(sections.call_seconds(call) <= sections.CALL_SECONDS for call in sections.check_calls(check))
    for name, minimum in sections.SECTION_MINIMUM_SECONDS.items():
        assert minimum <= sections.SECTION_SECONDS[name], name


def test_what_has_never_run_on_a_gpu_is_in_the_first_check() -> None:
    first = {name for call in sections.check_calls("first") for name in call}
    assert {"graph", "cold", "throttle", "operators"} <= first
    assert {"full_profile", "matrix", "compile"}.isdisjoint(first)
    assert sections.check_calls("third") == (("compile",),)  # two 2B compiles: a call, and a check, of their own


def test_the_plan_prints_each_call_with_its_share(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "device_check.py"), "--plan", "--device", "cuda", "--out", str(tmp_path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0].startswith("device_check: the first check: ~10.0 min of device time on an H100 or an H200")
    assert "  call 2: ~240 s: --check first --call 2  (--sections suite,sensitivity,workers)" in lines
    assert any(line.startswith("device_check: the second check: ~") for line in lines)
    assert not any(tmp_path.iterdir())  # a plan runs nothing


def test_junit_outcomes_read_passed_failed_and_skipped_with_their_reason(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="perf_tests.test_mmdit" name="test_train_step[16-sdpa]" time="31.5"/>'
        '<testcase classname="perf_tests.test_llm" name="test_llm_generation[1]" time="46.0">'
        '<failure message="Failed: Timeout (&gt;45.0s)">...</failure></testcase>'
        '<testcase classname="perf_tests.test_attention" name="test_attention_forward[xformers-sd3-1024px-b16]" '
        'time="0.01"><skipped message="xformers is not installed"/></testcase>'
        "</testsuite></testsuites>"
    )
    found = sections.junit_outcomes(junit)
    assert found["perf_tests/test_mmdit.py::test_train_step[16-sdpa]"] == {
        "outcome": "passed",
        "seconds": 31.5,
        "message": "",
    }
    assert found["perf_tests/test_llm.py::test_llm_generation[1]"]["outcome"] == "failed"
    skipped = found["perf_tests/test_attention.py::test_attention_forward[xformers-sd3-1024px-b16]"]
    assert skipped["outcome"] == "skipped" and "not installed" in skipped["message"]
    assert sections.junit_outcomes(tmp_path / "missing.xml") == {}


def test_a_later_call_extends_what_an_earlier_call_of_the_same_device_found(tmp_path: Path) -> None:
    (tmp_path / "device_check.json").write_text(json.dumps({"device": "cuda", "timing": {"kernels": {}}}))
    assert sections.merged_report(tmp_path, "cuda")["timing"] == {"kernels": {}}
    assert sections.merged_report(tmp_path, "cpu") == {}  # another device's findings are not mixed in
    sections.save_section(tmp_path, "graph", {"fixture_graph_seconds": 5.9e-6})
    assert json.loads((tmp_path / "sections" / "graph.json").read_text()) == {"fixture_graph_seconds": 5.9e-6}


def test_a_run_cut_short_still_names_the_tests_that_finished() -> None:
    printed = "\n".join(
        [
            "perf_tests/test_mmdit.py::test_train_step[16-sdpa] PASSED                [ 50%]",
            "perf_tests/test_llm.py::test_llm_generation[1] SKIPPED (needs CUDA)      [100%]",
            "accel: device cuda (key cuda-nvidia-h200), profile full",
        ]
    )
    found = sections.verbose_outcomes(printed)
    assert {test: row["outcome"] for test, row in found.items()} == {
        "perf_tests/test_mmdit.py::test_train_step[16-sdpa]": "passed",
        "perf_tests/test_llm.py::test_llm_generation[1]": "skipped",
    }


def test_the_heated_pytest_is_read_as_it_writes_and_ended_past_its_time(tmp_path: Path) -> None:
    """Its output went to a pipe read only at its end: past 64 KiB the child stalled, and nothing ended it."""
    chatty = [
        sys.executable,
        "-c",
        "import sys\nfor _ in range(40): sys.stdout.write('x' * 4096 + '\\n')\nprint('end')",
    ]
    trace, tail = sections._watched(chatty, tmp_path, dict, timeout=60)
    assert tail.endswith("end")
    stuck = [sys.executable, "-c", "import time; time.sleep(600)"]
    trace, tail = sections._watched(stuck, tmp_path, lambda: {"sm_clock_mhz": 1980.0}, timeout=1.5)
    assert tail.endswith("killed after 1.5 s") and trace and trace[0] == {"sm_clock_mhz": 1980.0}


def test_the_warm_working_set_fits_the_last_level_cache_with_room() -> None:
    """Source and destination together were the whole L2: not held warm, so "cold is slower" read about 1.0x."""
    from types import SimpleNamespace

    import torch

    device = SimpleNamespace(kind="cpu", torch_device=lambda: torch.device("cpu"))
    _, moved = sections.build_working_set("llc", device)
    cache = min(sections.last_level_cache_bytes(device), sections.DRY_WORKING_SET_BYTES)
    assert moved == int(cache * sections.LLC_SHARE) <= cache // 2
    _, beyond = sections.build_working_set("4x-llc", device)
    assert beyond == 4 * cache
