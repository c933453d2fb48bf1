"""Data-quality items and capture hints."""
from __future__ import annotations

import handframes as hf
from handframes import MS
from nsys_diag.analyses.diagnosis import data_quality as dq
from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.timeline.busy import Window
from nsys_diag.model.bundle import LoadWarning, TraceBundle, TraceMeta


def test_load_warnings_keep_code_and_severity():
    items = dq.from_load_warnings([LoadWarning("no_cuda_tables", "no CUDA", 0, "use -t cuda"),
                                   LoadWarning("no_gpu_info", "no GPU table", 2)])
    assert [(i.code, i.severity) for i in items] == [("no_cuda_tables", "warning"),
                                                     ("no_gpu_info", "info")]
    assert items[0].to_json() == {"code": "no_cuda_tables", "message": "no CUDA", "count": 0,
                                  "severity": "warning", "hint": "use -t cuda"}


def test_process_items_for_missing_steps_and_time_outside_the_window():
    k = hf.kernels([dict(start_ns=0, end_ns=10 * MS), dict(start_ns=50 * MS, end_ns=60 * MS)])
    items = dq.process_quality(steps=Unavailable("no NVTX", "annotate"), phases=Unavailable("x"),
                               kernels=k, window=Window(40 * MS, 100 * MS, "user"),
                               profiler_overhead_rows=3)
    codes = {i.code: i for i in items}
    assert codes["no_steps"].severity == "warning" and codes["no_steps"].hint == "annotate"
    assert codes["kernels_outside_window"].count == 1 and "50%" in codes["kernels_outside_window"].message
    assert codes["profiler_overhead"].count == 3


def test_capture_hints_name_the_missing_flags():
    empty = TraceBundle(meta=TraceMeta(path="x", format="nsys-sqlite"))
    hints = dq.capture_hints(empty)
    assert any("-t cuda" in h for h in hints) and any("nvtx" in h.lower() for h in hints)
    b = hf.bundle(kernels=hf.kernels([dict(start_ns=0, end_ns=1)]),
                  nvtx=hf.nvtx([dict(text="step", start_ns=0, end_ns=5)]))
    hints = dq.capture_hints(b)
    assert any("--gpu-metrics-devices" in h for h in hints)
    assert any("--cuda-memory-usage" in h for h in hints)
    assert not any("-t cuda" in h for h in hints)


def test_a_kernel_only_input_gets_one_capture_hint_for_a_timeline(tmp_path):
    """An ncu CSV has no CUDA timeline by nature: one hint (capture nsys, join with --ncu), not
    'the export has no CUDA kernels' and an NVTX hint."""
    from nsys_diag.loaders import load_trace
    from nsys_diag.synth.ncu import write_ncu_csv

    (hint,) = dq.capture_hints(load_trace(write_ncu_csv(tmp_path / "k.csv")))
    assert hint.startswith("nsys profile") and "--ncu kernels.csv" in hint
    assert "has no CUDA kernels" not in hint
