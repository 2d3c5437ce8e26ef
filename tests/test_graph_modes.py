"""The suite's graph modes for MMDiT inference: which device runs which, and what each asks of it.

``compile`` runs for real on the CPU in the suite; ``cuda-graphs`` and ``hpu-graphs`` need their
hardware, so here their availability rules are checked, and HPU graphs through the Habana fake.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
import torch
from fakes.habana import install_fake_habana
from fakes.optimum_habana import install_fake_optimum_habana
from workloads import mmdit

LAZY, EAGER = "1", "0"


@pytest.mark.parametrize(
    ("mode", "kind", "lazy", "reason"),
    [
        ("eager", "cpu", LAZY, None),
        ("compile", "cuda", LAZY, None),
        ("compile", "hpu", EAGER, None),
        ("compile", "hpu", LAZY, "needs the bridge's eager mode (PT_HPU_LAZY_MODE=0)"),
        ("cuda-graphs", "cuda", LAZY, None),
        ("cuda-graphs", "cpu", LAZY, "need CUDA, not cpu"),
        ("cuda-graphs", "hpu", LAZY, "need CUDA, not hpu"),
        ("hpu-graphs", "hpu", LAZY, None),
        ("hpu-graphs", "hpu", EAGER, "exist in the bridge's lazy mode only"),
        ("hpu-graphs", "cuda", LAZY, "need Gaudi, not cuda"),
    ],
)
def test_which_device_runs_which_mode(
    monkeypatch: pytest.MonkeyPatch, mode: str, kind: str, lazy: str, reason: str | None
) -> None:
    monkeypatch.setenv("PT_HPU_LAZY_MODE", lazy)
    install_fake_habana(monkeypatch)
    found = mmdit.graph_mode_unavailable(mode, SimpleNamespace(kind=kind))  # type: ignore[arg-type]
    assert found is None if reason is None else (found is not None and reason in found), found


@pytest.mark.parametrize(("release", "compiles", "graphs"), [("1.19", False, True), ("eager-default", True, False)])
def test_an_unset_lazy_mode_is_what_the_bridge_release_makes_it(
    monkeypatch: pytest.MonkeyPatch, release: str, compiles: bool, graphs: bool
) -> None:
    """Unset, ``PT_HPU_LAZY_MODE`` means lazy in bridge 1.19 and eager + torch.compile after it: the bridge is
    asked, so compile runs and HPU graphs (absent from an eager bridge) are a skip with its reason, not an
    ``AttributeError``."""
    monkeypatch.delenv("PT_HPU_LAZY_MODE", raising=False)
    install_fake_habana(monkeypatch, release=release)
    hpu = SimpleNamespace(kind="hpu")
    assert (mmdit.graph_mode_unavailable("compile", hpu) is None) is compiles  # type: ignore[arg-type]
    assert (mmdit.graph_mode_unavailable("hpu-graphs", hpu) is None) is graphs  # type: ignore[arg-type]


def test_cpu_compile_without_a_compiler_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    reason = mmdit.graph_mode_unavailable("compile", SimpleNamespace(kind="cpu"))  # type: ignore[arg-type]
    assert reason is not None and "needs a C++ compiler" in reason


def test_unknown_modes_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown graph mode 'graphs'; choose one of eager, compile"):
        mmdit.graph_mode_unavailable("graphs", SimpleNamespace(kind="cpu"))  # type: ignore[arg-type]


def test_hpu_graphs_wrap_the_model_through_habana(monkeypatch: pytest.MonkeyPatch) -> None:
    """``wrap_in_hpu_graph`` is called once, on the model, and the wrapped model computes the same."""
    fake = install_fake_habana(monkeypatch)
    model = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    expected = model(x)
    wrapped = mmdit.with_graphs(model, "hpu-graphs", SimpleNamespace(kind="hpu"))  # type: ignore[arg-type]
    assert torch.equal(wrapped(x), expected)
    assert fake.calls == ["hpu.wrap_in_hpu_graph", "hpu_graph.replay"]


def test_eager_is_the_model_itself() -> None:
    model = torch.nn.Linear(4, 2)
    assert mmdit.with_graphs(model, "eager", SimpleNamespace(kind="cpu")) is model  # type: ignore[arg-type]


def test_a_missing_optimum_habana_is_a_skip_reason_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """``find_spec("optimum.habana")`` raises when ``optimum`` itself is absent; the suite must skip instead."""
    monkeypatch.setitem(sys.modules, "optimum", None)  # as on a Gaudi image without optimum installed
    reason = mmdit.processor_unavailable("gaudi-fused-sdpa", SimpleNamespace(kind="hpu"))  # type: ignore[arg-type]
    assert reason is not None and "optimum-habana is not installed" in reason


@pytest.mark.parametrize("layout", ["models", "pipeline"])
@pytest.mark.parametrize("training", [False, True])
def test_the_gaudi_processor_runs_the_softmax_its_step_allows(
    monkeypatch: pytest.MonkeyPatch, layout: str, training: bool
) -> None:
    """optimum-habana 1.18+ is told a training step is one (FusedSDPA's "fast" softmax is for inference only);
    1.16-1.17's processor, under the SD3 pipeline and always "fast", times inference and skips training."""
    fake = install_fake_optimum_habana(monkeypatch, layout)
    hpu = SimpleNamespace(kind="hpu")
    reason = mmdit.processor_unavailable("gaudi-fused-sdpa", hpu, training)  # type: ignore[arg-type]
    if layout == "pipeline" and training:
        assert reason is not None and "before 1.18" in reason and "not support in training" in reason, reason
        return
    assert reason is None
    block = torch.nn.Module()
    block.attn = SimpleNamespace(set_processor=lambda processor: None)
    with mmdit.attention_processor(block, "gaudi-fused-sdpa", training=training):
        pass
    assert fake.modes == ["None" if training else "fast"]
