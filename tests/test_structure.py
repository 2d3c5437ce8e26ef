"""Structural records and verdicts: the pure diff, the store, the profiler seam, and end to end."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from fakes.habana import install_fake_habana
from hypothesis import given
from hypothesis import strategies as st

from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.core.structure import SYNC_OPERATORS, Structure, changes, stable_counts
from pytest_accel.core.validation import Invalid
from pytest_accel.engine.devices import make_device
from pytest_accel.engine.structure import CHECK_BLOCKS, CompileWatch, block_calls, structure_key, take_structure
from pytest_accel.judgement.structures import (
    StructureGate,
    StructureStore,
    StructureVerdict,
    judge_structure,
)
from pytest_accel.judgement.verdict import VerdictRecord
from pytest_accel.storage.files import StoreError

FLASH = "aten::_scaled_dot_product_flash_attention_for_cpu"


def record(**operators: float) -> Structure:
    return Structure(operators={name.replace("__", "::"): n for name, n in operators.items()}, key="cpu-test")


# --- the pure diff ---------------------------------------------------------------------------------


def test_an_unchanged_record_has_no_changes() -> None:
    then = record(aten__mm=2, aten__add=1)
    assert changes(then, then) == []


def test_a_fallback_names_the_kernel_gone_first_and_what_replaced_it() -> None:
    then = Structure({FLASH: 1, "aten::empty": 3, "aten::transpose": 6}, key="k")
    now = Structure({"aten::bmm": 2, "aten::softmax": 1, "aten::transpose": 6, "aten::empty": 1}, key="k")
    lines = changes(then, now)
    assert lines[0] == f"{FLASH} gone (was 1 call(s) per call)"
    assert "aten::bmm new (2 call(s) per call)" in lines
    assert "aten::empty calls per call 3 -> 1" in lines
    assert not any("transpose" in line for line in lines)


def test_a_host_sync_is_a_headline_line() -> None:
    then = record(aten__sum=0)
    now = Structure({"aten::item": 1, "aten::_local_scalar_dense": 1}, key="k")
    lines = changes(then, now)
    assert lines[0] == "host syncs per call 0 -> 1 (aten::_local_scalar_dense 0 -> 1)"
    assert "aten::_local_scalar_dense new (1 call(s) per call)" not in lines  # said once, as a sync


def test_compiled_graph_changes_are_named() -> None:
    then = Structure({}, graphs=1, compiles=1, key="k")
    now = Structure({}, graphs=2, compiles=2, recompilations=1, breaks=("Unsupported Tensor.item() at m.py:9",))
    assert changes(then, now) == [
        "compiled graphs run per call 1 -> 2",
        "graph breaks 0 -> 1: Unsupported Tensor.item() at m.py:9",
        "graphs compiled 1 -> 2",
        "recompilations 0 -> 1",
    ]


def test_unstable_operators_are_never_compared() -> None:
    then = Structure({"aten::set_": 3, "aten::mm": 1}, unstable=("aten::set_",))
    now = Structure({"aten::set_": 5, "aten::mm": 1})
    assert changes(then, now) == []


def test_many_changes_are_cut_with_a_count() -> None:
    then = Structure({f"op{i}": 1 for i in range(20)})
    lines = changes(then, Structure({}), limit=5)
    assert len(lines) == 5 and lines[-1] == "... and 16 more change(s)"


def test_counts_that_differ_between_blocks_are_unstable() -> None:
    counts, unstable = stable_counts([{"a": 4, "b": 2}, {"a": 4, "b": 3, "c": 1}], calls=2)
    assert counts == {"a": 2, "b": 1.5, "c": 0.5}
    assert unstable == ("b", "c")


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_:", min_size=1, max_size=12)
counts = st.dictionaries(names, st.integers(0, 50).map(float), max_size=8)
structures = st.builds(
    Structure,
    operators=counts,
    graphs=st.integers(0, 4).map(float),
    compiles=st.integers(0, 4),
    recompilations=st.integers(0, 4),
    breaks=st.lists(names, max_size=3).map(tuple),
    unstable=st.lists(names, max_size=3).map(tuple),
    key=names,
    calls=st.integers(1, 5),
)


@given(structures)
def test_records_read_back_as_written_and_equal_themselves(structure: Structure) -> None:
    again = Structure.from_json(json.loads(json.dumps(structure.to_json())), "s")
    assert changes(structure, again) == [] and again.to_json() == structure.to_json()


@given(structures, structures)
def test_a_change_is_seen_from_both_sides(first: Structure, second: Structure) -> None:
    assert bool(changes(first, second)) == bool(changes(second, first))


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"operators": {"aten::mm": -1}}, "s.operators['aten::mm']"),
        ({"graphs": "two"}, "s.graphs"),
        ({"recompilations": 1.5}, "s.recompilations"),
        ({"breaks": "x"}, "s.breaks"),
        ({"surprise": 1}, "s.surprise"),
    ],
)
def test_a_corrupt_record_is_named_by_its_key(change: dict, named: str) -> None:
    data = {**Structure({"aten::mm": 1}).to_json(), **change}
    with pytest.raises(Invalid, match=named.replace("[", r"\[").replace("]", r"\]")):
        Structure.from_json(data, "s")


# --- verdicts and the store -----------------------------------------------------------------------


def test_verdicts_new_unchanged_changed() -> None:
    now = record(aten__mm=1)
    assert judge_structure(None, now, True).outcome == Outcome.NEW
    assert judge_structure(now, now, True).outcome == Outcome.UNCHANGED
    changed = judge_structure(record(aten__mm=2), now, enforced=False)
    assert changed.outcome == Outcome.CHANGED and not changed.fails
    assert changed.lines == ("aten::mm calls per call 2 -> 1",)


def test_a_failing_change_makes_the_whole_verdict_regressed_and_round_trips() -> None:
    time = Verdict(Outcome.UNCHANGED, "time", "within")
    failing = VerdictRecord(time, structure=StructureVerdict(Outcome.CHANGED, ("aten::mm new",), True))
    warned = VerdictRecord(time, structure=StructureVerdict(Outcome.CHANGED, ("aten::mm new",), False))
    assert failing.outcome is Outcome.REGRESSED and warned.outcome is Outcome.UNCHANGED
    assert VerdictRecord.from_dict(json.loads(json.dumps(failing.to_dict()))) == failing
    with pytest.raises(ValueError, match="unknown outcome"):
        StructureVerdict.from_dict({"outcome": "worse"})


def test_the_store_merges_and_reads_back(tmp_path: Path) -> None:
    store = StructureStore(tmp_path)
    path = store.update("cpu-avx2-torch2", "smoke", 1, [("t.py::a", "throughput", record(aten__mm=1))])
    store.update("cpu-avx2-torch2", "smoke", 1, [("t.py::b", "throughput", record(aten__add=2))])
    assert path == tmp_path / "structure" / "cpu-avx2-torch2" / "smoke.json"
    loaded = store.load("cpu-avx2-torch2", "smoke")
    assert set(loaded) == {("t.py::a", "throughput"), ("t.py::b", "throughput")}
    assert loaded[("t.py::b", "throughput")].operators == {"aten::add": 2}
    assert store.load("cuda-sm90-torch2", "smoke") == {}  # another key: nothing, so "new"


def test_a_corrupt_store_file_is_named_and_left_alone(tmp_path: Path) -> None:
    store = StructureStore(tmp_path)
    path = store.update("k", "smoke", 1, [("t.py::a", "throughput", record(aten__mm=1))])
    text = path.read_text().replace('"aten::mm": 1', '"aten::mm": -1')
    path.write_text(text)
    with pytest.raises(StoreError, match=r"smoke.json.*aten::mm"):
        store.load("k", "smoke")
    with pytest.raises(StoreError):
        store.update("k", "smoke", 1, [("t.py::b", "throughput", record(aten__add=1))])
    assert path.read_text() == text  # nothing lost, nothing overwritten


def test_the_gate_keeps_records_and_fails_only_an_enforced_change() -> None:
    stored = {("t", "throughput"): record(aten__mm=1)}
    gate = StructureGate(lambda: stored, update=False)
    verdict, failure = gate.judge("t", "throughput", record(aten__mm=2), "fail")
    assert verdict.fails and failure is not None and "aten::mm calls per call 1 -> 2" in failure
    assert gate.judge("t", "throughput", record(aten__mm=2), "warn")[1] is None
    assert StructureGate(lambda: stored, update=True).judge("t", "throughput", record(aten__mm=2), "fail")[1] is None
    assert len(gate.taken) == 2


# --- the profiler seam ----------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "calls"), [(1.0, 1), (0.05, 2), (0.001, 5), (float("nan"), 1)])
def test_a_block_takes_about_a_tenth_of_a_second_of_calls(seconds: float, calls: int) -> None:
    assert block_calls(seconds) == calls


def test_the_record_counts_what_each_call_runs() -> None:
    device = make_device("cpu")
    q = torch.randn(1, 2, 16, 8)
    structure = take_structure(
        lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q), device, 0.05, CompileWatch(), "k"
    )
    assert structure.operators[FLASH] == 1.0 and structure.unstable == () and structure.calls == 2
    assert structure_key(device).startswith("cpu-") and "torch" in structure_key(device)


def test_an_operator_that_runs_every_other_call_is_unstable() -> None:
    state = {"calls": 0}
    a = torch.ones(4)

    def sometimes() -> torch.Tensor:
        state["calls"] += 1
        return a.sum() if state["calls"] % 3 == 0 else a + 1

    structure = take_structure(sometimes, make_device("cpu"), 0.05, CompileWatch(), "k")
    assert "aten::sum" in structure.unstable


def test_a_record_equal_to_the_stored_one_takes_one_block_a_recording_and_a_change_all() -> None:
    device, q = make_device("cpu"), torch.randn(1, 2, 16, 8)
    calls = {"n": 0}

    def attention() -> torch.Tensor:
        calls["n"] += 1
        return torch.nn.functional.scaled_dot_product_attention(q, q, q)

    stored = take_structure(attention, device, 0.05, CompileWatch(), "k")
    assert calls["n"] == 2 * CHECK_BLOCKS  # a recording: CHECK_BLOCKS blocks of two calls
    calls["n"] = 0
    same = take_structure(attention, device, 0.05, CompileWatch(), "k", expected=stored)
    assert calls["n"] == 2 and changes(stored, same) == []
    calls["n"] = 0
    other = Structure(operators={**stored.operators, FLASH: 2.0}, key="k", unstable=("aten::empty",))
    changed = take_structure(attention, device, 0.05, CompileWatch(), "k", expected=other)
    assert calls["n"] == 2 * CHECK_BLOCKS and changes(other, changed) == [f"{FLASH} calls per call 2 -> 1"]


def delivered(counts: list[int]) -> tuple[Callable[[], None], list[int]]:
    """A call that runs ``aten::ones`` as many times as the next count says (a DataLoader's main process
    rebuilding the batches it received in that call: 0 when it hands out one received earlier, 2 when one
    came early), and the counts it has run."""
    ran: list[int] = []

    def call() -> None:
        ran.append(counts[len(ran)])
        for _ in range(ran[-1]):
            torch.ones(2)

    return call, ran


ONES = "aten::ones"


def once_per_call() -> Structure:
    """The stored record: each call rebuilds one batch."""
    call, _ = delivered([1] * CHECK_BLOCKS)
    return take_structure(call, make_device("cpu"), 0.1, CompileWatch(), "k")


@pytest.mark.parametrize(
    ("counts", "blocks"),
    [
        ([0, 0, 2, 1, 1, 1], 3),  # two blocks in a row read the same wrong count; the third tells
        ([0, 0, 0, 2, 2, 2], 4),
        ([2, 1, 1, 1, 1, 1], 2),  # the usual case: the second block differs from the first
    ],
)
def test_a_count_that_follows_the_delivery_order_is_unstable_not_a_change(counts: list[int], blocks: int) -> None:
    stored = once_per_call()
    call, ran = delivered(counts)
    now = take_structure(call, make_device("cpu"), 0.1, CompileWatch(), "k", expected=stored)
    assert now.calls == 1 and ONES in now.unstable and changes(stored, now) == []
    assert len(ran) == blocks  # blocks of one call, taken until the count moved


def test_a_changed_count_is_a_change_only_when_every_block_agrees() -> None:
    stored = once_per_call()
    assert stored.operators[ONES] == 1.0 and stored.unstable == ()
    call, ran = delivered([2] * CHECK_BLOCKS)
    now = take_structure(call, make_device("cpu"), 0.1, CompileWatch(), "k", expected=stored)
    assert f"{ONES} calls per call 1 -> 2" in changes(stored, now) and len(ran) == CHECK_BLOCKS


def test_a_record_only_shown_takes_two_blocks() -> None:
    """No stored record and no recording ("new", on a host of another ISA or torch): nothing is judged
    or kept, so the cost of a recording's six blocks is not paid."""
    call, ran = delivered([1] * CHECK_BLOCKS)
    shown = take_structure(call, make_device("cpu"), 0.1, CompileWatch(), "k", kept=False)
    assert len(ran) == 2 and shown.operators[ONES] == 1.0


def test_a_recording_marks_a_count_unstable_that_two_blocks_would_have_kept() -> None:
    call, _ = delivered([1] * (CHECK_BLOCKS - 1) + [0])
    recorded = take_structure(call, make_device("cpu"), 0.1, CompileWatch(), "k")
    assert ONES in recorded.unstable


def test_raw_event_counts_match_the_profilers_averages() -> None:
    """The fast count reads what key_averages() counts, except that an operator calling itself (``sum``
    calls its ``dim`` overload) is two calls, where the averages fold the inner one into the outer."""
    from pytest_accel.engine.profiling import event_counts, profiled

    device, lin, x = make_device("cpu"), torch.nn.Linear(8, 8), torch.randn(4, 8)
    prof = profiled(lambda: torch.relu(lin(x)).sum(), device, 3, device.profiler_activities())
    averages = {(event.key, "CPU"): int(event.count) for event in prof.key_averages()}
    assert event_counts(prof) == {**averages, ("aten::sum", "CPU"): 6} and averages[("aten::sum", "CPU")] == 3


def test_a_graph_break_is_seen_with_its_reason_and_place() -> None:
    def body(x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        if y.sum().item() > 0:  # a graph break: .item() in a compiled region
            y = y + 1
        return y

    watch = CompileWatch()
    watch.start()
    step = torch.compile(body, backend="eager")
    x = torch.ones(4)
    for _ in range(2):
        step(x)
    structure = take_structure(lambda: step(x), make_device("cpu"), 0.05, watch, "k")
    assert structure.graphs == 2.0 and structure.compiles == 2
    assert len(structure.breaks) == 1 and "test_structure.py:" in structure.breaks[0]
    assert structure.syncs == {"aten::_local_scalar_dense": 1.0}


def test_the_gaudi_counters_come_from_the_bridges_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_habana(monkeypatch)
    from pytest_accel.engine.devices.hpu import HpuDevice

    fake.metrics["graph_compilation"] = 7
    assert HpuDevice().structure_counters() == {"HPU graph compilations": 7.0, "HPU CPU fallbacks": 0.0}
    assert "metrics.metric_global" in fake.calls
    assert all(name in SYNC_OPERATORS for name in ("cudaStreamSynchronize", "aten::_local_scalar_dense"))


# --- end to end -----------------------------------------------------------------------------------

PLANTED = """
import pathlib, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

q = torch.randn(1, 2, 64, 16)

def test_attention(throughput):
    plant = pathlib.Path("plant.txt").read_text().strip()
    def attend():
        if plant == "math":
            with sdpa_kernel(SDPBackend.MATH):
                return F.scaled_dot_product_attention(q, q, q)
        out = F.scaled_dot_product_attention(q, q, q)
        if plant == "sync":
            out.sum().item()
        return out
    throughput(attend, items=1, unit="sequences")
"""
OPTIONS = ("--device", "cpu", "--accel-baselines", "bl", "-p", "no:cacheprovider", "--accel-structure-only")


def planted(pytester: pytest.Pytester, plant: str) -> None:
    (pytester.path / "plant.txt").write_text(plant)


def test_a_fallback_fails_untimed_naming_the_kernel(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_attn=PLANTED)
    planted(perf_pytester, "none")
    perf_pytester.runpytest(*OPTIONS, "--accel-update").assert_outcomes(passed=1)
    assert list((perf_pytester.path / "bl" / "structure").glob("*/smoke.json"))
    same = perf_pytester.runpytest(*OPTIONS)
    same.assert_outcomes(passed=1)
    same.stdout.fnmatch_lines(["*structure unchanged*", "accel: what ran: 1 unchanged"])
    planted(perf_pytester, "math")
    fallback = perf_pytester.runpytest(*OPTIONS)
    assert fallback.ret == pytest.ExitCode.TESTS_FAILED
    fallback.stdout.fnmatch_lines(
        [
            "perf structure changed: test_attention (under cpu-*)",
            f"  {FLASH} gone (was 1 call(s) per call)",
            "*aten::bmm new*",
        ]
    )
    # The accept command pastes as printed: it records the change, and the same run then passes.
    # (The first line that says it: under CI=true pytest's short summary repeats the whole message.)
    accept = next(line.split("accept it: ", 1)[1] for line in fallback.outlines if "accept it: pytest " in line)
    assert accept.startswith("pytest test_attn.py::test_attention ") and accept.endswith(" --accel-update")
    perf_pytester.run(*shlex.split(accept)).assert_outcomes(passed=1)
    perf_pytester.runpytest(*OPTIONS).assert_outcomes(passed=1)


def test_a_warned_change_passes_and_is_counted(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_attn=PLANTED)
    planted(perf_pytester, "none")
    perf_pytester.runpytest(*OPTIONS, "--accel-update").assert_outcomes(passed=1)
    planted(perf_pytester, "sync")
    warned = perf_pytester.runpytest(*OPTIONS, "--accel-structure=warn", "--accel-json", "out.json")
    warned.assert_outcomes(passed=1)
    warned.stdout.fnmatch_lines(["*structure changed*", "accel: what ran: 1 changed*"])
    (entry,) = json.loads((perf_pytester.path / "out.json").read_text())["results"]
    assert entry["verdict"]["structure"]["lines"][0] == "host syncs per call 0 -> 1 (aten::_local_scalar_dense 0 -> 1)"
    assert not entry["verdict"]["structure"]["enforced"]


def test_a_timed_regression_says_whether_what_ran_changed(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_attn=PLANTED)
    planted(perf_pytester, "none")
    perf_pytester.runpytest(*OPTIONS, "--accel-update").assert_outcomes(passed=1)
    planted(perf_pytester, "math")
    # A timed run: the structural verdict follows the (new: unrecorded) time verdict.
    timed = perf_pytester.runpytest("--device", "cpu", "--accel-baselines", "bl", "-p", "no:cacheprovider",
                                    "--accel-measure-seconds", "0.05")  # fmt: skip
    assert timed.ret == pytest.ExitCode.TESTS_FAILED
    timed.stdout.fnmatch_lines(["perf structure changed:*", f"  {FLASH} gone*"])


def test_structure_off_takes_no_record_and_a_marker_may_warn(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(
        test_attn=PLANTED.replace(
            "def test_attention", "import pytest\n@pytest.mark.perf(structure='warn')\ndef test_attention"
        )
    )
    planted(perf_pytester, "none")
    perf_pytester.runpytest(*OPTIONS, "--accel-update").assert_outcomes(passed=1)
    planted(perf_pytester, "math")
    perf_pytester.runpytest(*OPTIONS).assert_outcomes(passed=1)  # the marker's warn
    off = perf_pytester.runpytest("--device", "cpu", "--accel-baselines", "bl2", "-p", "no:cacheprovider",
                                  "--accel-measure-seconds", "0.05", "--accel-structure=off",
                                  "--accel-update")  # fmt: skip
    off.assert_outcomes(passed=1)
    assert not (perf_pytester.path / "bl2" / "structure").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--accel-structure-only", "--accel-structure=off"), "*--accel-structure-only judges only what ran*"),
        (("--accel-structure=sometimes",), "*invalid choice: 'sometimes'*"),
    ],
)
def test_bad_structure_options_are_usage_errors(perf_pytester: pytest.Pytester, args: tuple, message: str) -> None:
    perf_pytester.makepyfile(test_attn=PLANTED)
    result = perf_pytester.runpytest("--device", "cpu", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_bad_marker_policy_and_a_corrupt_record_stop_the_run(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(
        test_attn=PLANTED.replace(
            "def test_attention", "import pytest\n@pytest.mark.perf(structure='maybe')\ndef test_attention"
        )
    )
    planted(perf_pytester, "none")
    bad_marker = perf_pytester.runpytest(*OPTIONS)
    assert bad_marker.ret == pytest.ExitCode.USAGE_ERROR
    bad_marker.stderr.fnmatch_lines(["*structure='maybe'*"])
    perf_pytester.makepyfile(test_attn=PLANTED)
    perf_pytester.runpytest(*OPTIONS, "--accel-update").assert_outcomes(passed=1)
    (path,) = (perf_pytester.path / "bl" / "structure").glob("*/smoke.json")
    path.write_text("{not json")
    corrupt = perf_pytester.runpytest(*OPTIONS)
    assert corrupt.ret == pytest.ExitCode.USAGE_ERROR
    corrupt.stderr.fnmatch_lines(["*cannot read the structural records*smoke.json*"])
    assert path.read_text() == "{not json"


@pytest.mark.slow
def test_the_record_is_the_same_in_a_fresh_process() -> None:
    """Counts, not times: two processes take equal records of one workload."""
    script = (
        "import json, torch\n"
        "from pytest_accel.engine.devices import make_device\n"
        "from pytest_accel.engine.structure import CompileWatch, take_structure\n"
        "q = torch.randn(1, 2, 64, 16)\n"
        "s = take_structure(lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q), make_device('cpu'),"
        " 0.01, CompileWatch(), 'k')\n"
        "print(json.dumps(s.to_json()))\n"
    )
    import subprocess

    outputs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.splitlines()[
            -1
        ]
        for _ in range(2)
    ]
    assert outputs[0] == outputs[1]


def test_the_blocks_own_device_sync_is_not_counted_as_the_workloads() -> None:
    """On CUDA the profiled block ends with one ``torch.cuda.synchronize``: a fake device stands in for its event."""
    from torch.profiler import ProfilerActivity, record_function

    class FakeCuda:
        kind = "cuda"

        def synchronize(self) -> None:
            with record_function("cudaDeviceSynchronize"):
                pass

        def mark_step(self) -> None:
            pass

        def profiler_activities(self) -> list:
            return [ProfilerActivity.CPU]

        def structure_counters(self) -> dict:
            return {}

    device = FakeCuda()
    a = torch.ones(4)
    quiet = take_structure(lambda: a + 1, device, 0.05, CompileWatch(), "k")  # type: ignore[arg-type]
    assert quiet.syncs == {}

    def waits() -> torch.Tensor:
        device.synchronize()  # a sync in the loop, once per call
        return a + 1

    synced = take_structure(waits, device, 0.05, CompileWatch(), "k")  # type: ignore[arg-type]
    assert synced.syncs == {"cudaDeviceSynchronize": 1.0}
    assert changes(quiet, synced)[0] == "host syncs per call 0 -> 1 (cudaDeviceSynchronize 0 -> 1)"


def test_a_sync_unstable_on_one_side_is_compared_on_neither() -> None:
    """A scalar read whose count varied between the two blocks of one run is not "141 -> 0" against a stable one."""
    stable = Structure({"aten::item": 141, "aten::_local_scalar_dense": 141})
    varied = Structure({"aten::item": 141, "aten::_local_scalar_dense": 141}, unstable=("aten::_local_scalar_dense",))
    assert changes(stable, varied) == [] and changes(varied, stable) == []


def test_a_devices_copy_of_a_compiled_graph_call_is_neither_counted_nor_keyed_by_its_hash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a GPU the profiler copies ``## Call CompiledFxGraph <hash> ##`` onto the device's timeline; keyed by its
    hash, a rebuilt inductor graph read as a structural change."""
    from pytest_accel.engine import structure as structure_module

    def events(hash_: str) -> dict[tuple[str, str], int]:
        return {(f"## Call CompiledFxGraph {hash_} ##", "CPU"): 2, (f"## Call CompiledFxGraph {hash_} ##", "CUDA"): 2,
                ("triton_poi_fused_add_0", "CUDA"): 2}  # fmt: skip

    class Device:
        kind = "cpu"

    blocks = []
    for hash_ in ("f3a9c1", "0b7d2e"):
        monkeypatch.setattr(structure_module, "profiled", lambda *args, **kwargs: None)
        monkeypatch.setattr(structure_module, "event_counts", lambda profile, h=hash_: events(h))
        blocks.append(structure_module._block(lambda: None, Device(), 2, []))  # type: ignore[arg-type]
    assert (
        blocks[0] == blocks[1] == ({"## Call CompiledFxGraph ##": 2.0, "[cuda kernel] triton_poi_fused_add_0": 2.0}, 0)
    )
