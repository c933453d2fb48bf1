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


def test_the_memory_budget_counts_the_ncu_csv(monkeypatch, tmp_path):
    """The export alone fits the budget; with a big ``--ncu`` CSV held beside it, it streams,
    in smaller chunks the bigger the CSV."""
    csv = tmp_path / "k.csv"
    csv.write_text("x")
    sizes = {SAMPLE: 200 * 2**20}

    def estimate(path):
        return sizes.get(path, sizes["csv"]), "pretend"
    monkeypatch.setattr(memory_estimate, "estimate_memory", estimate)
    budget = 600 * 2**20
    sizes["csv"] = 1
    assert plan_memory(SAMPLE, AnalyzeOptions(memory_budget_bytes=budget,
                                              ncu_path=str(csv))).kind == WHOLE
    rows = []
    for ncu in (400 * 2**20, 450 * 2**20):
        sizes["csv"] = ncu
        plan = plan_memory(SAMPLE, AnalyzeOptions(memory_budget_bytes=budget, ncu_path=str(csv)))
        assert plan.kind == STREAM and plan.ncu_estimate == (ncu, "pretend")
        rows.append(plan.chunk_rows)
    assert rows[0] >= rows[1]


def test_an_ncu_csv_of_long_cells_is_estimated_by_its_bytes(tmp_path):
    """Few cells but long ones (kernel names of thousands of characters): the per-byte figure."""
    from nsys_diag.synth import ncu as synth_ncu

    plain = synth_ncu.write_ncu_csv(tmp_path / "plain.csv")
    long = tmp_path / "long.csv"
    lines = plain.read_text().splitlines(keepends=True)
    long.write_text("".join(lines[:1] + [ln.replace('"', '"' + "n" * 5000, 1) if i % 2 else ln
                                          for i, ln in enumerate(lines[1:])]))
    for p in (plain, long):
        n, how = memory_estimate.estimate_memory(str(p))
        factor = memory_estimate.CSV_BYTES_FACTOR["details"]
        assert n >= p.stat().st_size * factor
    assert "CSV cells" in memory_estimate.estimate_memory(str(plain))[1]
    assert "CSV file (long cells" in memory_estimate.estimate_memory(str(long))[1]
