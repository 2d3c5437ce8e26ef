"""What a test's fixture takes beside its timed figure, decided from the run's options: its operator
tables (``OperatorPlan``) and its structural record (``StructurePlan``), or why it takes none.

Neither is taken under torchrun (a profile per rank would need every rank to take it in step), and a
confirmation child leaves them to the run that spawned it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_accel.engine.counting import count_calls, counting_into
from pytest_accel.engine.profiling import trace_path
from pytest_accel.judgement.confirm import in_fresh_process
from pytest_accel.judgement.counts import CountGate, CountPlan
from pytest_accel.judgement.structures import StructureGate
from pytest_accel.plugin.fixture import OperatorPlan, StructurePlan
from pytest_accel.plugin.options import AccelOptions

__all__ = ["count_plan", "counts", "operator_plan", "structure_plan", "takes_structures"]


def operator_plan(
    options: AccelOptions, test: str, alone: bool, on_trace: Callable[[Path], None], verbose: bool = False
) -> OperatorPlan:
    """When ``test``'s operator tables are taken; ``alone``: not under torchrun; ``on_trace``: told of each trace;
    ``verbose`` (-v): a regression lists every operator that moved."""
    if options.operators == "off":
        return OperatorPlan(off="operator profiles are off in this run (--accel-operators=off)")
    if not alone:
        return OperatorPlan(off="operator profiles are not taken under torchrun")
    if in_fresh_process():  # a confirmation child: the parent profiles once it has the answer
        return OperatorPlan(off="operator profiles are taken by the run that spawned this confirmation")
    folder = options.trace_dir
    return OperatorPlan(
        update=options.update,
        always=options.operators == "always",
        trace=None if folder is None else (lambda metric: trace_path(folder, test, metric)),
        on_trace=on_trace,
        verbose=verbose,
    )


def takes_structures(options: AccelOptions, alone: bool) -> bool:
    """Whether this run takes structural records at all (its stored ones are then read before it measures)."""
    return options.structure != "off" and alone and not in_fresh_process()


def structure_plan(
    options: AccelOptions,
    test: str,
    marker: dict[str, Any],
    alone: bool,
    gate: Callable[[], tuple[StructureGate, str]],
) -> StructurePlan:
    """Whether ``test``'s structural record is taken, and how its change is judged; ``gate``: the run's
    structural gate and the device's structure key, built when first needed."""
    policy = options.structure_for(marker)
    if policy == "off":
        return StructurePlan(off="structural records are off in this run (--accel-structure=off)")
    if not alone:
        return StructurePlan(off="structural records are not taken under torchrun")
    if options.calibrate or in_fresh_process():
        return StructurePlan(off="structural records are taken by runs that judge or record")
    judge, key = gate()
    return StructurePlan(
        judge=lambda metric, now: judge.judge(test, metric, now, policy),
        expected=lambda metric: judge.expected(test, metric),
        key=key,
        only=options.structure_only,
        kept=options.update,
    )


def counts(options: AccelOptions, marker: dict[str, Any], alone: bool) -> bool:
    """Whether this run counts a test's work: asked for (``--accel-count``, ``count=True``), not under torchrun,
    not in a child (the counting process counts what its parent asks; a confirmation times)."""
    return options.count_for(marker) and alone and not in_fresh_process() and not options.calibrate


def count_plan(
    options: AccelOptions, test: str, marker: dict[str, Any], alone: bool, gate: CountGate | None, key: str,
    accept: Callable[[str], str],
) -> CountPlan | None:  # fmt: skip
    """How ``test``'s work is counted: in the counting process, counted here; else judged from the run's counts."""
    if (into := counting_into()) is not None:
        return CountPlan(test=test, count=lambda fn, settle, metric: count_calls(fn, settle, into, test, metric))
    if gate is None or not counts(options, marker, alone):
        return None
    strict = options.unjudged_fails()
    return CountPlan(test=test, judge=lambda metric: gate.judge(test, metric, options.policy_for(marker)), key=key,
                     accept=accept(test), strict=strict, recording=options.update)  # fmt: skip
