"""The memory plan (``app/memory_policy.plan_memory``): whole, middle window or streamed, decided
once per input — the file sniffed once and its memory estimated once — and the ``--max-memory``
refusal read from the plan."""
from __future__ import annotations

from pathlib import Path

import pytest

from nsys_diag.app import analyze, memory_policy
from nsys_diag.app.memory_policy import MIDDLE, STREAM, WHOLE, check_memory, plan_memory
from nsys_diag.loaders import LoadRequest, load_trace, memory_estimate
from nsys_diag.loaders.sniff import Format
from nsys_diag.model.errors import ResourceLimitError
from nsys_diag.model.options import AnalyzeOptions

SAMPLE = str(Path(__file__).resolve().parents[2] / "sample_traces" / "worked_example.sqlite")
GIB = 2**30


def _pretend(monkeypatch, nbytes: int) -> list[str]:
    """The estimate of every file is ``nbytes``; returns the paths estimated, in order."""
    calls: list[str] = []

    def estimate(path):
        calls.append(path)
        return nbytes, "pretend"
    monkeypatch.setattr(memory_estimate, "estimate_memory", estimate)
    return calls


def test_the_three_plans(monkeypatch):
    _pretend(monkeypatch, 3 * GIB)
    assert plan_memory(SAMPLE, AnalyzeOptions(memory_budget_bytes=None)).kind == WHOLE
    middle = plan_memory(SAMPLE, AnalyzeOptions(memory_budget_bytes=GIB, memory_mode="middle"))
    assert middle.kind == MIDDLE and middle.chunk_rows is None
    assert middle.fraction == pytest.approx((GIB - memory_estimate.BASE_MEMORY_BYTES) / (3 * GIB))
    streamed = plan_memory(SAMPLE, AnalyzeOptions(memory_budget_bytes=GIB))
    assert streamed.kind == STREAM and streamed.chunk_rows and streamed.fraction is None
    assert streamed.in_memory().kind == WHOLE  # nothing to stream: read it whole
    assert plan_memory(SAMPLE, AnalyzeOptions(memory_budget_bytes=GIB, window_ns=(0, 10))).kind \
        == WHOLE  # --window chose the span
    forced = plan_memory(SAMPLE, AnalyzeOptions(memory_budget_bytes=None, chunk_rows=123))
    assert forced.kind == STREAM and forced.chunk_rows == 123
    assert streamed.format is Format.NSYS_SQLITE and streamed.estimate == (3 * GIB, "pretend")


def test_an_unreadable_input_is_planned_whole_and_left_to_the_loader(tmp_path):
    plan = plan_memory(str(tmp_path / "missing.sqlite"), AnalyzeOptions())
    assert plan.kind == WHOLE and plan.format is None and plan.estimate is None


def test_one_analyze_sniffs_and_estimates_once(monkeypatch):
    calls = _pretend(monkeypatch, 1)
    sniffs: list[str] = []
    real = memory_policy.sniff_format
    monkeypatch.setattr(memory_policy, "sniff_format", lambda p: sniffs.append(p) or real(p))
    import nsys_diag.loaders as loaders
    monkeypatch.setattr(loaders, "sniff_format", lambda p: pytest.fail("sniffed again"))
    analyze.analyze_path(SAMPLE, AnalyzeOptions(), generated_at="t")
    assert calls == [SAMPLE] and sniffs == [SAMPLE]


def test_max_memory_reads_the_plan(monkeypatch):
    _pretend(monkeypatch, 3 * GIB)
    middle = plan_memory(SAMPLE, AnalyzeOptions(memory_budget_bytes=GIB, memory_mode="middle"))
    check_memory(SAMPLE, middle, 2 * GIB)  # the middle window fits
    with pytest.raises(ResourceLimitError, match="--max-memory"):
        check_memory(SAMPLE, memory_policy.MemoryPlan(WHOLE, estimate=middle.estimate), 2 * GIB)
    streamed = plan_memory(SAMPLE, AnalyzeOptions(memory_budget_bytes=GIB))
    check_memory(SAMPLE, streamed, 2 * GIB, share=0.1)  # one chunk's share
    with pytest.raises(ResourceLimitError):
        check_memory(SAMPLE, streamed, 2 * GIB, share=1.0)


def test_load_request_and_the_keyword_form_read_the_same():
    a = load_trace(SAMPLE, LoadRequest(kernel_detail=False))
    b = load_trace(SAMPLE, kernel_detail=False)
    assert len(a.kernels) == len(b.kernels) and a.meta.extra == b.meta.extra
    with pytest.raises(TypeError):
        load_trace(SAMPLE, kernel_details=False)  # misspelt: an error, never ignored
    with pytest.raises(TypeError):
        load_trace(SAMPLE, LoadRequest(), nvtx=False)
