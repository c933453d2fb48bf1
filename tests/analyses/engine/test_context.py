"""A span's inputs (engine/context.py): the whole process as one span, and a declaration's
in-memory result as its partial → merge → finish over that span (``over_one_span``), identical
to the analysis over the whole process's frames."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from nsys_diag.analyses.timeline.arrays import process_rows
from nsys_diag.analyses.engine.context import whole_span
from nsys_diag.analyses.engine.cuts import FIRST_LO, LAST_HI, chunk_frames
from nsys_diag.analyses.engine.declaration import WholeProcess
from nsys_diag.analyses.steps.nvtx_ranges import NVTX_RANGES, analyze_nvtx_ranges
from nsys_diag.analyses.suite import _process_ids, analyze_process
from nsys_diag.analyses.timeline.busy import Window
from nsys_diag.analyses.transfers import TRANSFERS, analyze_transfers
from nsys_diag.loaders import load_trace
from nsys_diag.model.options import AnalyzeOptions
from nsys_diag.model.thresholds import Thresholds

ROOT = Path(__file__).resolve().parents[3]
TRACES = sorted([*(ROOT / "sample_traces").glob("*.sqlite"),
                 *(ROOT.parent / "shared" / "traces" / "nsys").glob("*.sqlite")])
TH = Thresholds()


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_transfers_in_memory_over_one_span_equal_the_whole_process_analysis(path):
    """The in-memory run's transfers (partial → merge → finish over one span) are exactly what
    ``analyze_transfers`` gives over the process's copies and memsets: same keys, same order,
    same values (the JSON text compared)."""
    bundle = load_trace(str(path))
    assert TRANSFERS.whole is not None and TRANSFERS.whole_reads == ("busy", "phases")
    for gpid in _process_ids(bundle):
        proc = analyze_process(bundle, gpid, AnalyzeOptions(), TH)
        w = proc.window
        whole = analyze_transfers(process_rows(bundle.memcpy, gpid), process_rows(bundle.memset, gpid),
                                  bundle.gpus, th=TH, window=(w.start_ns, w.end_ns))
        # the per-step and per-window rates are the process's ending's (finish_process), not
        # the analysis's: carried over, everything else compared
        t = proc.transfers
        whole = dataclasses.replace(whole, pageable_bytes_per_step=t.pageable_bytes_per_step,
                                    pageable_bytes_per_s=t.pageable_bytes_per_s,
                                    pageable_window_share=t.pageable_window_share)
        assert json.dumps(t.to_json()) == json.dumps(whole.to_json()), (path.name, gpid)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_nvtx_ranges_in_memory_over_one_span_equal_the_whole_process_analysis(path):
    bundle = load_trace(str(path))
    assert NVTX_RANGES.partial is not None  # its streamed form (one span: the same rows)
    for gpid in _process_ids(bundle):
        proc = analyze_process(bundle, gpid, AnalyzeOptions(), TH)
        whole = analyze_nvtx_ranges(process_rows(bundle.nvtx, gpid), process_rows(bundle.kernels, gpid),
                                    proc.steps, proc.window)
        assert json.dumps(proc.nvtx_ranges.to_json()) == json.dumps(whole.to_json()), (path.name, gpid)


def test_nvtx_ranges_over_one_span_equal_the_in_memory_analysis():
    """NVTX ranges run their whole-process analysis in memory (first on a worker: it waits for
    no other result); its partial → merge → finish over one span gives the same JSON."""
    from nsys_diag.analyses.engine.context import over_one_span

    bundle = load_trace(str(ROOT / "sample_traces" / "worked_example.sqlite"))
    for gpid in _process_ids(bundle):
        p = analyze_process(bundle, gpid, AnalyzeOptions(), TH)
        f = {n: process_rows(getattr(bundle, n), gpid)
             for n in ("kernels", "memcpy", "memset", "sync", "api", "nvtx")}
        proc = WholeProcess(bundle=bundle, frames=f, pid=gpid, devices=p.devices, steps=p.steps,
                            window=p.window, options=AnalyzeOptions(), th=TH, roofline=None,
                            metrics=None, memory=None)
        span = over_one_span(NVTX_RANGES, proc, busy={}, phases=p.phases)
        assert json.dumps(span.to_json()) == json.dumps(p.nvtx_ranges.to_json())


def test_the_whole_span_owns_every_row_and_sees_what_a_chunk_over_everything_sees():
    bundle = load_trace(str(ROOT / "sample_traces" / "multi_gpu.sqlite"))
    frames = {n: getattr(bundle, n) for n in ("kernels", "memcpy", "memset", "sync", "api", "nvtx")}
    window = Window(0, int(bundle.meta.capture_end_ns), "capture")
    proc = WholeProcess(bundle=bundle, frames=frames, pid=-1, devices=(0, 1), steps=None,
                        window=window, options=AnalyzeOptions(), th=TH, roofline=None, metrics=None,
                        memory=None)
    span = whole_span(proc, busy={}, phases=None)
    assert (span.lo_ns, span.hi_ns) == (FIRST_LO, LAST_HI) and span.is_first and span.is_last
    assert span.chunk_window == window
    seen = chunk_frames(frames, FIRST_LO, LAST_HI)
    for name, f in frames.items():
        assert len(span.owned(name)) == len(f) == len(seen[name]), name
