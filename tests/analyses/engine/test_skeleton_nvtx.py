"""``driver.with_skeleton_nvtx``: a chunk read without NVTX gets, from the skeleton, the very NVTX
rows (and, through ``known_threads``, the threads and process names) its windowed read would have
held."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nsys_diag.analyses.engine.driver import with_skeleton_nvtx
from nsys_diag.loaders import load_trace

SAMPLES = Path(__file__).resolve().parents[3] / "sample_traces"


def _key(df, cols):
    return sorted(map(tuple, df[cols].astype(str).to_numpy().tolist()))


@pytest.mark.parametrize("name", ["worked_example", "multi_gpu", "inference", "healthy_tc"])
def test_chunk_nvtx_from_the_skeleton_equals_the_windowed_read(name):
    path = SAMPLES / f"{name}.sqlite"
    skeleton = load_trace(path, kernel_detail=False, skeleton=True)
    s = skeleton.nvtx["start_ns"].to_numpy(np.int64)
    lo_all, hi_all = int(s.min()), int(s.max())
    for f in (0.0, 0.3, 0.7):
        lo = lo_all + int((hi_all - lo_all) * f)
        hi = lo + (hi_all - lo_all) // 4
        read = load_trace(path, kernel_detail=False, time_window=(lo, hi), chunk=True)
        bare = load_trace(path, kernel_detail=False, time_window=(lo, hi), chunk=True,
                          nvtx=False, known_threads=skeleton.threads)
        assert not len(bare.nvtx) and not len(bare.nvtx_marks)
        got = with_skeleton_nvtx(bare, skeleton, lo, hi)
        cols = ["start_ns", "text", "domain", "global_tid", "closed"]
        assert len(got.nvtx) == len(read.nvtx) > 0
        assert _key(got.nvtx, cols) == _key(read.nvtx, cols)
        closed = read.nvtx["closed"].to_numpy(bool)
        assert _key(got.nvtx[got.nvtx["closed"]], ["start_ns", "end_ns"]) == \
            _key(read.nvtx[closed], ["start_ns", "end_ns"])
        assert _key(got.nvtx_marks, ["ts_ns", "text"]) == _key(read.nvtx_marks, ["ts_ns", "text"])
        assert _key(got.threads, ["global_tid", "name"]) == _key(read.threads, ["global_tid", "name"])
        assert _key(got.processes, ["global_pid", "name"]) == \
            _key(read.processes, ["global_pid", "name"])
        assert len(got.kernels) == len(read.kernels)
