"""Operator tables and their diff: the pure rules, the profiler seam, and end to end."""

from __future__ import annotations

import fnmatch
import json
import sys
from pathlib import Path

import pytest
import torch
from fakes.habana import install_fake_habana
from hypothesis import given
from hypothesis import strategies as st
from support import FAST_OPTIONS, STEADINESS_UNJUDGED

from pytest_accel.commands.cli import main
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.operator_table import STORED_OPERATORS, OperatorProfile, OperatorRow, explain, in_one_line
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.core.validation import Invalid
from pytest_accel.engine.devices import make_device
from pytest_accel.engine.profiling import profile_calls, profile_operators, trace_path
from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.verdict import VerdictRecord


def table(*events: tuple[str, int, float], calls: int = 1) -> OperatorProfile:
    return OperatorProfile.from_events("cpu", calls, [(op, count, host, None) for op, count, host in events])


# --- the table ------------------------------------------------------------------------------------


def test_events_become_rows_per_call_largest_first_with_totals() -> None:
    profile = table(("aten::mm", 10, 500.0), ("aten::add", 5, 50.0), ("aten::mm", 10, 500.0), calls=5)
    assert [r.op for r in profile.rows] == ["aten::mm", "aten::add"]
    assert profile.rows[0] == OperatorRow("aten::mm", 4.0, 200.0, None)
    assert profile.total_host_us == pytest.approx(210.0) and profile.total_device_us is None
    assert profile.complete


def test_top_keeps_the_totals_and_counts_what_it_cut() -> None:
    profile = table(*((f"op{i}", 1, float(100 - i)) for i in range(30)))
    cut = profile.top()
    assert len(cut.rows) == STORED_OPERATORS and cut.others == 10 and not cut.complete
    assert cut.total_host_us == profile.total_host_us


def test_device_tables_rank_by_device_time() -> None:
    profile = OperatorProfile.from_events("cuda", 1, [("cudaLaunchKernel", 3, 30.0, 0.0), ("aten::mm", 1, 5.0, 900.0)])
    assert profile.rows[0].op == "aten::mm" and profile.on_device and profile.total_device_us == 900.0


rows = st.lists(
    st.tuples(
        st.text(min_size=1, max_size=20).filter(str.strip),
        st.integers(1, 1000),
        st.floats(0, 1e7, allow_nan=False),
        st.floats(0, 1e7, allow_nan=False),
    ),
    max_size=40,
    unique_by=lambda row: row[0],
)


@given(rows, st.integers(1, 10), st.sampled_from(["cpu", "cuda", "hpu"]))
def test_stored_tables_read_back_as_written(events: list, calls: int, activity: str) -> None:
    profile = OperatorProfile.from_events(activity, calls, events).top()
    stored = json.loads(json.dumps(profile.to_json()))
    again = OperatorProfile.from_json(stored, "operators")
    assert again.to_json() == stored  # rounding is stable: a refresh of an unchanged table changes no byte
    assert [r.op for r in again.rows] == [r.op for r in profile.rows]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d.update(activity="tpu"), "['activity']"),
        (lambda d: d.update(calls=0), "['calls']"),
        (lambda d: d.update(total_host_us=-1), "['total_host_us']"),
        (lambda d: d.update(extra=1), "unknown key"),
        (lambda d: d["ops"][0].update(host_us=float("nan")), "['ops'][0]['host_us']"),
        (lambda d: d["ops"].append(dict(d["ops"][0])), "listed twice"),
        (lambda d: d["ops"][0].update(op=""), "['ops'][0]['op']"),
        (lambda d: d.update(ops={}), "['ops']"),
    ],
)
def test_a_corrupt_stored_table_is_named_by_its_key_path(change, named: str) -> None:
    data = table(("aten::mm", 1, 10.0), ("aten::add", 1, 1.0)).to_json()
    change(data)
    with pytest.raises(Invalid, match=named.replace("[", r"\[").replace("]", r"\]")):
        OperatorProfile.from_json(data, "entries['t']['throughput']['operators']")


# --- the diff -------------------------------------------------------------------------------------


def test_a_backend_switch_reads_gone_and_new() -> None:
    then = table(("aten::_scaled_dot_product_flash_attention_for_cpu", 1, 2100.0), ("aten::empty_like", 1, 8.0))
    now = table(("aten::bmm", 2, 3000.0), ("aten::_softmax", 1, 1300.0), ("aten::empty_like", 1, 8.0))
    lines = explain(then, now)
    assert lines[0].startswith("operators (host self time per call, 1 and 1 calls profiled): total 2.11 ms -> 4.31 ms")
    assert lines[1:4] == [
        "  aten::bmm: new 3 ms (2 calls)",
        "  aten::_scaled_dot_product_flash_attention_for_cpu: 2.1 ms (1 call) -> gone",
        "  aten::_softmax: new 1.3 ms (1 call)",
    ]


def test_a_grown_operator_shows_its_growth_and_call_count() -> None:
    then = table(("aten::mm", 1, 1000.0), ("aten::copy_", 1, 100.0))
    now = table(("aten::mm", 1, 1010.0), ("aten::copy_", 3, 400.0))
    assert explain(then, now)[1:] == ["  aten::copy_: 100 us -> 400 us (+300 us, calls 1 -> 3)"]


def test_a_profile_that_moved_the_other_way_to_the_figure_names_no_operator() -> None:
    """A figure measured +12% slower whose profile's total fell 17% (bmm -2 ms, beside a second perf
    job): the rows are the profile's noise; a profile that agrees in direction is listed as before."""
    then = table(("aten::bmm", 1, 11600.0), ("aten::_softmax", 1, 4500.0), ("aten::mul", 1, 7800.0))
    now = table(("aten::bmm", 1, 9600.0), ("aten::_softmax", 1, 3340.0), ("aten::mul", 1, 6760.0))
    lines = explain(then, now, measured=1.123)
    assert lines[1:] == [
        "  the profile moved the other way (-17.6% in all, the figure +12.3%): too few profiled calls, or too "
        "busy a machine, to name operators"
    ]
    assert explain(then, now, measured=0.85)[1] == "  aten::bmm: 11.6 ms -> 9.6 ms (-2 ms)"
    assert explain(then, now, measured=1.123)[0] == explain(then, now)[0]  # the totals are still said


def test_noise_within_an_operators_own_ten_percent_is_not_listed() -> None:
    then = table(("aten::mm", 1, 1000.0), ("aten::add", 1, 100.0))
    now = table(("aten::mm", 1, 1080.0), ("aten::add", 1, 105.0))
    lines = explain(then, now)
    assert len(lines) == 2 and "spread thin" in lines[1]


def test_an_operator_below_a_cut_baselines_floor_is_not_called_new() -> None:
    then = table(*((f"op{i}", 1, 100.0 - i) for i in range(25))).top()  # listed down to 81 us
    now = table(*((f"op{i}", 1, 100.0 - i) for i in range(25)), ("aten::hidden", 1, 50.0), ("aten::big", 1, 300.0))
    lines = "\n".join(explain(then, now))
    assert "aten::hidden" not in lines  # it may have been there at 50 us, under the baseline's cut
    assert "aten::big: new 300 us (1 call; the baseline's top 20 end at 81 us)" in lines


def test_device_time_is_compared_when_both_tables_have_it() -> None:
    then = OperatorProfile.from_events("cuda", 1, [("aten::mm", 1, 10.0, 1000.0)])
    now = OperatorProfile.from_events("cuda", 1, [("aten::mm", 1, 10.0, 2000.0)])
    lines = explain(then, now)
    assert "cuda device self time" in lines[0] and "aten::mm: 1 ms -> 2 ms (+1 ms)" in lines[1]


def test_an_entry_without_a_table_says_so_in_one_line() -> None:
    assert explain(None, table(("aten::mm", 1, 1.0))) == [
        "operators: no diff (the baseline entry has no operator table: record it again with --accel-update)"
    ]


def test_many_changes_are_cut_to_the_largest() -> None:
    then = table(("base", 1, 1.0))
    now = table(*((f"op{i}", 1, 100.0 + i) for i in range(12)))
    lines = explain(then, now)
    assert lines[1] == "  op11: new 111 us (1 call)" and lines[-1] == "  ... 4 smaller change(s)"


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        # A family's kernels share the start of their names: the end, which tells them apart, is kept.
        ("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::…product_flash_attention_for_cpu"),
        ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "aten::…flash_attention_for_cpu_backward"),
        ("aten::_scaled_dot_product_efficient_attention", "aten::…dot_product_efficient_attention"),
        ("aten::convolution_backward_overrideable", "aten::convolution_backward_overrideable"),  # fits: whole
        # One long word: the end alone would say too little, so the middle is cut.
        ("aten::averyveryveryveryveryverylongname_x", "aten::averyveryvery…yveryverylongname_x"),
    ],
)
def test_a_long_operator_name_in_one_line_keeps_what_tells_kernels_apart(name: str, shown: str) -> None:
    lines = ["operators (host self time per call): total 1 ms -> 9 ms (+8 ms)", "  aten::mm: new 9 ms",
             f"  {name}: 1 ms -> gone"]  # fmt: skip
    assert in_one_line(lines) == f"operators (+8 ms per call): aten::mm: new 9 ms; {shown}: 1 ms -> gone"


# --- where tables are kept ------------------------------------------------------------------------


def test_entries_results_and_verdicts_carry_tables_and_lines() -> None:
    profile = table(("aten::mm", 2, 10.0)).top()
    entry = BaselineEntry("t.py::t", "throughput", "calls", 1.0, (0.1, 0.1), operators=profile)
    again = BaselineEntry.from_json("t.py::t", "throughput", json.loads(json.dumps(entry.to_json())), "f")
    assert again.operators == profile
    old = entry.to_json()
    del old["operators"]  # an entry recorded before tables existed still loads
    assert BaselineEntry.from_json("t.py::t", "throughput", old, "f").operators is None
    measurement = Measurement(unit="calls", items_per_call=1.0, samples=(0.1,), operators=profile)
    assert Measurement.from_dict(json.loads(json.dumps(measurement.to_dict()))).operators == profile
    record = VerdictRecord(Verdict(Outcome.REGRESSED, "time", "slower"), operators=("operators: ...", "  a: new"))
    assert VerdictRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    with pytest.raises(ValueError, match="'operators' must be a list of strings"):
        VerdictRecord.from_dict({**record.to_dict(), "operators": "a"})


def test_trace_names_are_safe_and_distinct() -> None:
    one = trace_path(Path("t"), "perf_tests/test_a.py::test_x[a/b]", "throughput")
    two = trace_path(Path("t"), "perf_tests/test_a.py::test_x[a_b]", "throughput")
    assert one != two and one.parent == Path("t") and one.name.endswith(".trace.json")
    assert "/" not in one.name and len(trace_path(Path("t"), "x" * 400, "m").name) < 200


@pytest.mark.parametrize(("seconds", "calls"), [(1e-5, 10), (0.05, 10), (0.1, 5), (2.0, 1), (float("nan"), 1)])
def test_a_profile_takes_about_half_a_second_of_calls(seconds: float, calls: int) -> None:
    assert profile_calls(seconds) == calls


def test_the_profiler_sees_an_added_contiguous_copy() -> None:
    """The issue's second story, through the real profiler: a copy appears."""
    x = torch.randn(1024, 1024)
    device = make_device("cpu")

    def before() -> torch.Tensor:
        return x.t().sum(dim=0)

    def after() -> torch.Tensor:  # the strided 4 MB copy costs more than the sum: listed whatever the load
        return x.t().contiguous().sum(dim=0)

    then = profile_operators(before, device, 0.05).top()
    now = profile_operators(after, device, 0.05)
    assert then.get("aten::copy_") is None and now.get("aten::copy_") is not None
    assert any("aten::copy_: new" in line or "aten::clone: new" in line for line in explain(then, now))


# --- end to end -----------------------------------------------------------------------------------

# An SDPA forward (flash kernel) that a file makes the workload call N times: a change that calls a
# kernel three times where it called it once (a recompute, a graph break that re-runs a region): the
# same operator grows and its call count moves. This test also carries the outputs (trace, JSON,
# job-page summary, HTML report) and the entries without a table; the switched implementations
# (flash -> math, an added copy) are the test after it.
ATTENTION = """
import pathlib, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

q, k, v = (torch.randn(2, 8, 256, 64) for _ in range(3))

def test_attention(throughput):
    repeat = int(pathlib.Path("repeat.txt").read_text())
    def attend():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            for _ in range(repeat):
                out = F.scaled_dot_product_attention(q, k, v)
        return out
    throughput(attend, items=2, unit="sequences")
"""
OPTIONS = (
    "--device", "cpu", "--accel-baselines", "bl", "-o", "accel_state_noise_floor=1.0",
    "-o", "accel_foreign_cpu_margin=1.0", "-o", "accel_fresh_process_confirmation=false", *FAST_OPTIONS,
)  # fmt: skip
FLASH = "aten::_scaled_dot_product_flash_attention_for_cpu"


@pytest.mark.slow
def test_a_kernel_run_three_times_fails_naming_the_operator_that_grew(
    perf_pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    perf_pytester.makepyfile(test_attn=ATTENTION)
    (perf_pytester.path / "repeat.txt").write_text("1")
    recording = perf_pytester.runpytest(
        *OPTIONS, "--accel-update", "--accel-trace", "traces", "--accel-json", "recorded.json"
    )
    recording.assert_outcomes(passed=1)
    assert not (perf_pytester.path / "traces").exists()  # a trace per regression, not per recording
    (stored,) = (perf_pytester.path / "bl").glob("*/smoke.json")
    entry = json.loads(stored.read_text())["entries"]["test_attn.py::test_attention"]["throughput"]
    operators = entry["operators"]
    assert operators["activity"] == "cpu" and operators["ops"][0]["op"] == FLASH
    assert len(operators["ops"]) <= STORED_OPERATORS and operators["calls"] >= 1

    (perf_pytester.path / "repeat.txt").write_text("3")
    result = perf_pytester.runpytest(
        *OPTIONS,
        *STEADINESS_UNJUDGED,
        "--accel-trace",
        "traces",
        "--accel-json",
        "out.json",
        "--accel-markdown",
        "summary.md",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*perf regressed: test_attention: time +*",
            "*operators (+* per call): aten::*flash_attention_for_cpu: * -> * (+*, calls 1 -> 3)*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*trace: traces*test_attention*.trace.json",
            "*if intended, accept it: *",
            "accel: wrote 1 operator trace(s)*",
        ]
    )
    (trace,) = (perf_pytester.path / "traces").iterdir()
    assert "traceEvents" in json.loads(trace.read_text())
    (written,) = json.loads((perf_pytester.path / "out.json").read_text())["results"]
    assert any(FLASH in line and "calls 1 -> 3" in line for line in written["verdict"]["operators"])
    assert written["operators"]["ops"][0] == {**written["operators"]["ops"][0], "op": FLASH, "calls": 3.0}
    assert f"  {FLASH}: " in (perf_pytester.path / "summary.md").read_text()  # the job page's summary
    page = perf_pytester.path / "page.html"
    assert main(["report", str(perf_pytester.path / "out.json"), "--html", str(page)]) == 0
    text = page.read_text()  # the diff sits under the regressed test's own heading, above its plot
    under = text.index("<h2>test_attn.py::test_attention</h2>")
    assert under < text.index("Why test_attn.py::test_attention regressed") < text.index(FLASH) < text.index("<img")
    capsys.readouterr()
    recorded, judged = (str(perf_pytester.path / name) for name in ("recorded.json", "out.json"))
    assert main(["compare", recorded, judged]) == 1  # the recording against the regressed run, tables and all
    compared = capsys.readouterr().out
    assert "test_attn.py::test_attention:" in compared and f"  {FLASH}: " in compared and "calls 1 -> 3" in compared

    document = json.loads(stored.read_text())  # an entry recorded before tables existed
    del document["entries"]["test_attn.py::test_attention"]["throughput"]["operators"]
    stored.write_text(json.dumps(document))
    result = perf_pytester.runpytest(*OPTIONS, *STEADINESS_UNJUDGED)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*operators: no diff (the baseline entry has no operator table: record it again*"])

    result = perf_pytester.runpytest(*OPTIONS, *STEADINESS_UNJUDGED, "--accel-operators", "off")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*operators: no diff (operator profiles are off in this run*"])


# A workload whose implementation a file picks, as a kernel developer's change would: the SDPA
# backend (flash -> math, a lost backend selection) or an added .contiguous() copy before a sum.
SWITCHED = """
import pathlib, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

q, k, v = (torch.randn(2, 8, 256, 64) for _ in range(3))
x = torch.randn(1024, 1024)

def test_switched(throughput):
    variant = pathlib.Path("variant.txt").read_text()
    def attend():
        with sdpa_kernel(SDPBackend.MATH if variant == "math" else SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v)
    def reduce():  # the strided 4 MB copy costs more than the sum: it dominates whatever the load
        return (x.t().contiguous() if variant == "copy" else x.t()).sum(dim=0)
    throughput(reduce if variant in ("strided", "copy") else attend, items=1, unit="calls")
"""


@pytest.mark.slow  # a real timing verdict on a planted change: measures for real
@pytest.mark.parametrize(
    ("before", "after", "changed"),
    [
        ("flash", "math", ["aten::*flash_attention_for_cpu: * -> gone*", "aten::bmm: new *"]),
        ("strided", "copy", ["aten::copy_: new * (1 call)*"]),
    ],
    ids=["sdpa-flash-to-math", "added-contiguous-copy"],
)
def test_a_switched_implementation_fails_naming_the_operators_that_changed(
    perf_pytester: pytest.Pytester, before: str, after: str, changed: list[str]
) -> None:
    """The issue's "done when": record, switch the implementation, and the failure names what changed."""
    perf_pytester.makepyfile(test_switched=SWITCHED)
    (perf_pytester.path / "variant.txt").write_text(before)
    perf_pytester.runpytest(*OPTIONS, "--accel-update").assert_outcomes(passed=1)
    (perf_pytester.path / "variant.txt").write_text(after)
    result = perf_pytester.runpytest(*OPTIONS, *STEADINESS_UNJUDGED, "--accel-json", "out.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*perf regressed: test_switched: time +*"])
    # The block's one operator line leads with the largest change; which of the changed operators
    # is largest depends on the load of the moment, so it must be one of them. The result file lists them all.
    # The failure block and the short summary both print it: one line, however often shown.
    (line,) = {line.strip() for line in result.stdout.lines if "operators (+" in line}
    leading = line.split(" per call): ", 1)[1]
    assert any(fnmatch.fnmatch(leading, pattern) for pattern in changed), line
    (entry,) = json.loads((perf_pytester.path / "out.json").read_text())["results"]
    listed = [line.strip() for line in entry["verdict"]["operators"]]
    for pattern in changed:
        assert any(fnmatch.fnmatch(item, pattern) for item in listed), (pattern, listed)


def test_a_trace_folder_that_is_a_file_is_refused_before_measuring(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_attn=ATTENTION)
    (perf_pytester.path / "taken").write_text("")
    result = perf_pytester.runpytest(*OPTIONS, "--accel-trace", "taken/traces")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'taken' is a file; --accel-trace needs a folder*"])


def test_an_operator_missing_from_a_cut_table_now_is_not_called_gone() -> None:
    then = table(("aten::slow", 1, 500.0), *((f"op{i}", 1, 100.0 - i) for i in range(25))).top()
    now = table(*((f"op{i}", 1, 100.0 - i) for i in range(25)), ("aten::slow", 1, 10.0)).top()
    lines = "\n".join(explain(then, now))
    assert "aten::slow: 500 us -> gone or under 81 us (not in the top 20 now)" in lines


def test_each_device_names_its_profiler_activities(monkeypatch: pytest.MonkeyPatch) -> None:
    """The device seam: the host always; CUDA's kernels; on Gaudi the HPU activity, bridge imported first."""
    from torch.profiler import ProfilerActivity

    from pytest_accel.engine.devices.cuda import CudaDevice
    from pytest_accel.engine.devices.hpu import HpuDevice

    assert make_device("cpu").profiler_activities() == [ProfilerActivity.CPU]
    assert CudaDevice().profiler_activities() == [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    install_fake_habana(monkeypatch)
    bridges = torch.profiler.ProfilerActivity  # the bridge's own enum, once it is imported
    assert HpuDevice().profiler_activities() == [bridges.CPU, bridges.HPU]


def test_hpu_device_time_that_the_profiler_cannot_see_is_unknown_not_zero(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Habana's profiler puts HPU events in the exported trace only: the table's device times are unknown (its
    diff reads host times), not zeros compared with zeros, and the trace keeps the device's events."""
    from pytest_accel.engine.devices.hpu import HpuDevice

    fake = install_fake_habana(monkeypatch)
    a = torch.randn(64, 64)
    trace = tmp_path / "t.trace.json"
    table = profile_operators(lambda: a @ a, HpuDevice(), 0.01, trace=trace)
    assert table.activity == "hpu" and table.total_device_us is None and not table.on_device
    assert all(row.device_us is None for row in table.rows) and table.get("aten::mm") is not None
    assert "activity_profiler.start" in fake.calls
    assert any(event.get("pid") == "HPU" for event in json.loads(trace.read_text())["traceEvents"])


def test_a_device_whose_profiler_activity_is_missing_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch whose profiler has no HPU activity: the profile's error names it, and the verdict stands."""
    from torch.profiler import ProfilerActivity

    from pytest_accel.engine import profiling
    from pytest_accel.engine.devices.hpu import HpuDevice

    install_fake_habana(monkeypatch, profiler=False)  # torch's own enum: the bridge's always has HPU
    monkeypatch.delattr(ProfilerActivity, "HPU", raising=False)
    with pytest.raises(profiling.OperatorProfileError, match=r"no torch.profiler.ProfilerActivity.HPU.*Habana"):
        profile_operators(lambda: None, HpuDevice(), 0.01)


def test_the_hpu_activities_import_the_bridge_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_accel.engine.devices.hpu import HpuDevice

    monkeypatch.setitem(sys.modules, "habana_frameworks", None)  # an import of it raises ImportError
    with pytest.raises(ImportError):
        HpuDevice().profiler_activities()


def test_launches_that_multiplied_show_on_a_device_table() -> None:
    """A graph break: the kernels' device time barely moves, the launches (host-only rows) multiply."""
    then = OperatorProfile.from_events("cuda", 1, [("aten::mm", 4, 40.0, 1000.0), ("cudaLaunchKernel", 4, 20.0, 0.0)])
    now = OperatorProfile.from_events(
        "cuda", 1, [("aten::mm", 40, 400.0, 1010.0), ("cudaLaunchKernel", 40, 200.0, 0.0)]
    )
    lines = explain(then, now)
    assert "  aten::mm: host 40 us -> 400 us (+360 us, calls 4 -> 40)" in lines
    assert "  cudaLaunchKernel: host 20 us -> 200 us (+180 us, calls 4 -> 40)" in lines


WRITES_TO_STDERR = """
import os

import torch


def test_kernel(throughput):
    x = torch.ones(64, 64)

    def work():
        os.write(2, b"the workload's own line\\n")  # as a C++ library's warning would
        return x @ x

    throughput(work, items=1, unit="matmuls")
    raise AssertionError("show the captured output")
"""


def test_the_plugins_own_profiling_leaves_no_line_in_the_captured_output(perf_pytester: pytest.Pytester) -> None:
    """kineto's "USDT: ... profiler_start/stop" lines come from the plugin's profiled blocks (operator
    tables, the structural record), not from the test: they stay out of its captured stderr, while a line
    the workload writes to file descriptor 2 during those blocks is kept."""
    perf_pytester.makepyfile(test_noisy=WRITES_TO_STDERR)
    result = perf_pytester.runpytest("--device", "cpu", "--accel-operators", "always", *FAST_OPTIONS)
    result.assert_outcomes(failed=1)
    assert "USDT" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*Captured stderr call*", "the workload's own line"])
