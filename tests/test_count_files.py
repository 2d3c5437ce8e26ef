"""What callgrind writes, read: its output file's totals, callgrind_annotate's per-function listing, and the
``Count`` they make (--accel-count; the rule and the rest: tests/test_counts.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_accel.core.counts import INSTRUCTIONS, LL_MISSES, Count, read_annotated, read_totals
from pytest_accel.core.validation import Invalid

# --- callgrind's output file -----------------------------------------------------------------------

EVENTS = "Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw"
CALLGRIND_OUT = f"""# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  python3 -m pytest perf_tests
part: 1

desc: I1 cache: 32768 B, 64 B, 8-way associative
desc: D1 cache: 32768 B, 64 B, 8-way associative
desc: LL cache: 268435456 B, 64 B, direct-mapped

positions: line
events: {EVENTS}
summary: 9999 1 1 1 1 1 1 1 1

ob=(1) /usr/lib/x86_64-linux-gnu/libm.so.6
fl=(1) ./math/e_logf.c
fn=(1) __logf_fma
16 500 3 2 100 10 4 50 5 1
+1 300 0 0 60 2 1 20 0 0

fn=(2) sgemm_kernel
0 200 1 1 40 3 2 30 2 1

totals: 1000 4 3 200 15 7 100 7 2
"""


def test_read_totals_names_each_event_of_the_totals_line() -> None:
    assert read_totals(CALLGRIND_OUT) == {
        "Ir": 1000, "I1mr": 4, "ILmr": 3, "Dr": 200, "D1mr": 15, "DLmr": 7, "Dw": 100, "D1mw": 7, "DLmw": 2,
    }  # fmt: skip


def test_read_totals_prefers_totals_whichever_comes_first() -> None:
    totals_first = CALLGRIND_OUT.replace("summary: 9999 1 1 1 1 1 1 1 1\n", "") + "summary: 9999 1 1 1 1 1 1 1 1\n"
    assert read_totals(totals_first)["Ir"] == 1000


def test_read_totals_takes_the_summary_where_no_totals_were_written() -> None:
    without_totals = CALLGRIND_OUT.replace("totals: 1000 4 3 200 15 7 100 7 2\n", "")
    assert read_totals(without_totals) == dict.fromkeys(EVENTS.split(), 1) | {"Ir": 9999}


def test_read_totals_counts_events_past_a_short_totals_line_as_zero() -> None:
    assert read_totals("events: Ir DLmr DLmw\ntotals: 12 3\n") == {"Ir": 12, "DLmr": 3, "DLmw": 0}


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("# callgrind format\nversion: 1\nevents: Ir\nfn=(1) f\n0 5\n", id="no-totals-nor-summary"),
        pytest.param("totals: 5 6\n", id="no-events"),
        pytest.param(CALLGRIND_OUT.replace("totals:", "total:").replace("summary:", "sum:"), id="misspelt"),
    ],
)
def test_read_totals_refuses_text_without_events_and_totals(text: str) -> None:
    with pytest.raises(ValueError, match="not a callgrind output file"):
        read_totals(text)


# --- callgrind_annotate's listing ------------------------------------------------------------------

DASHES = "-" * 80
LIBTORCH = "[/usr/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so]"
LIBM = "[/usr/lib/x86_64-linux-gnu/libm.so.6]"
ANNOTATED = "\n".join(
    [
        DASHES,
        "Ir" + " " * 18,  # callgrind_annotate pads its header lines
        DASHES,
        "81,535,338 (100.0%)  PROGRAM TOTALS",
        "",
        DASHES,
        "Ir                   file:function",
        DASHES,
        f"33,495,808 (41.08%)  ???:mkl_blas_avx2_sgemm_kernel_nocopy_NN_b0 {LIBTORCH}",
        f"32,141,312 (39.42%)  ???:mkl_blas_avx2_sgemm_kernel_0_b0 {LIBTORCH}",
        f"   270,336 ( 0.33%)  ./math/../sysdeps/ieee754/flt-32/e_logf.c:__logf_fma {LIBM}",
        "",
        DASHES,
        "The following files chosen for auto-annotation could not be found:",
        "",
    ]
)

SGEMM = ("mkl_blas_avx2_sgemm_kernel_nocopy_NN_b0", 33_495_808)
SGEMM_0 = ("mkl_blas_avx2_sgemm_kernel_0_b0", 32_141_312)
LOGF = ("./math/../sysdeps/ieee754/flt-32/e_logf.c:__logf_fma", 270_336)


def test_read_annotated_names_each_function_without_its_unknown_file_and_library() -> None:
    functions = read_annotated(ANNOTATED)
    assert functions == (SGEMM, SGEMM_0, LOGF)
    assert not any(name.startswith("???") or "[" in name or name.endswith(" ") for name, _ in functions)
    assert "PROGRAM TOTALS" not in dict(functions)


def test_read_annotated_stops_at_the_blank_line_after_the_listing() -> None:
    after = "\n".join(["", "-" * 80, "Ir                   file:function", "-" * 80, "     9 ( 0.00%)  ???:later", ""])
    assert read_annotated(ANNOTATED + "     5 ( 0.00%)  ???:not_a_function\n" + after) == (SGEMM, SGEMM_0, LOGF)


def test_read_annotated_keeps_the_most() -> None:
    assert read_annotated(ANNOTATED, most=2) == (SGEMM, SGEMM_0)
    assert read_annotated(ANNOTATED, most=1) == (SGEMM,)


def test_read_annotated_reads_a_listing_without_percentages_and_nothing_without_a_listing() -> None:
    plain = "Ir  file:function\n" + "-" * 20 + "\n1,234  ???:f [/lib/a.so]\n   56  g.c:g\n\n"
    assert read_annotated(plain) == (("f", 1234), ("g.c:g", 56))
    assert read_annotated(ANNOTATED.split("\n\n")[0]) == ()


@pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None, reason="valgrind")
def test_the_readers_read_what_valgrind_here_writes(tmp_path: Path) -> None:
    """callgrind and callgrind_annotate as installed, on /bin/true with the cache simulated."""
    out = tmp_path / "callgrind.out"
    ran = subprocess.run(
        ["valgrind", "--tool=callgrind", "--cache-sim=yes", f"--callgrind-out-file={out}", "/bin/true"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    totals = read_totals(out.read_text())
    assert totals[INSTRUCTIONS] > 10_000 and all(name in totals for name in LL_MISSES)
    shown = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--show=Ir", str(out)], capture_output=True, text=True, timeout=120
    ).stdout
    functions = read_annotated(shown)
    assert 0 < len(functions) <= 30
    assert [total for _, total in functions] == sorted((total for _, total in functions), reverse=True)
    assert sum(total for _, total in functions) <= totals[INSTRUCTIONS] * 1.01
    assert not any(name.startswith("???:") or name.endswith("]") for name, _ in functions)
    measured = Count(1, totals, functions)
    assert measured.ll_misses is not None and 0 < measured.ll_misses < measured.instructions


# --- Count -----------------------------------------------------------------------------------------


def test_a_count_is_per_call() -> None:
    two = Count(2, {"Ir": 3000, "ILmr": 10, "DLmr": 30, "DLmw": 20, "Dr": 5})
    assert two.instructions == 1500.0
    assert two.ll_misses == 30.0
    assert Count(4, {"Ir": 3000, "DLmr": 30}).ll_misses is None  # no cache simulation: ILmr, DLmw missing
    assert Count(1, {"Dr": 3}).instructions == 0.0


def test_a_count_round_trips_through_json() -> None:
    events = {"Ir": 3_000_000, "Dr": 14, "ILmr": 0, "DLmr": 5000, "DLmw": 0}
    original = Count(2, events, (("gemm", 2_000_000), ("copy", 900_000)), {"isa": "avx2", "torch": "2.5.1"})
    data = json.loads(json.dumps(original.to_json()))
    assert Count.from_json(data, "here") == original
    bare = Count.from_json({"calls": 1, "events": {"Ir": 5}, "functions": []}, "here")  # no context: none
    assert bare == Count(1, {"Ir": 5})


GOOD = {"calls": 2, "events": {"Ir": 100, "DLmr": 4}, "functions": [["f", 60]], "context": {"isa": "avx2"}}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        pytest.param({"calls": 0}, "counts[0].calls", id="no-calls"),
        pytest.param({"calls": True}, "counts[0].calls", id="calls-bool"),
        pytest.param({"calls": 1.5}, "counts[0].calls", id="calls-float"),
        pytest.param({"events": {"DLmr": 4}}, "counts[0].events", id="events-without-Ir"),
        pytest.param({"events": {"Ir": 100, "DLmr": -1}}, "counts[0].events", id="negative-event"),
        pytest.param({"events": {"Ir": 1.5}}, "counts[0].events", id="float-event"),
        pytest.param({"events": [100]}, "counts[0].events", id="events-list"),
        pytest.param({"functions": [["f", 60, 1]]}, "counts[0].functions", id="triple"),
        pytest.param({"functions": [[60, "f"]]}, "counts[0].functions", id="swapped"),
        pytest.param({"functions": ["f"]}, "counts[0].functions", id="not-pairs"),
        pytest.param({"functions": {"f": 60}}, "counts[0].functions", id="object"),
        pytest.param({"context": {"isa": 2}}, "counts[0].context", id="context-number"),
    ],
)
def test_a_bad_count_is_refused_by_its_key_path(change: dict[str, object], path: str) -> None:
    with pytest.raises(Invalid) as refused:
        Count.from_json({**GOOD, **change}, "counts[0]")
    assert refused.value.path == path
    assert str(refused.value).startswith(f"{path}: ")


def test_a_count_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(Invalid) as refused:
        Count.from_json([GOOD], "counts[0]")
    assert refused.value.path == "counts[0]"
