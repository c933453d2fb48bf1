"""The skeleton's NVTX read in rowid batches (``nsys_nvtx.READ_BATCH_ROWS``) gives the frames of
one read."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nsys_diag.loaders import load_trace, nsys_sqlite
from nsys_diag.loaders.nsys_db import NsysDb

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_traces").glob("*.sqlite"))
SHARED = ROOT.parent / "shared" / "traces" / "nsys"
REAL = sorted(SHARED.glob("*.sqlite")) if SHARED.is_dir() else []


@pytest.mark.parametrize("path", SAMPLES + REAL, ids=lambda p: p.name)
def test_batched_nvtx_frames_equal_one_read(path, monkeypatch):
    one = load_trace(path, kernel_detail=False, skeleton=True)
    monkeypatch.setattr(nsys_sqlite, "READ_BATCH_ROWS", 7)
    calls = []
    real = NsysDb._read_batched

    def spy(self, *a, **k):
        calls.append(a[0])
        return real(self, *a, **k)
    monkeypatch.setattr(NsysDb, "_read_batched", spy)
    batched = load_trace(path, kernel_detail=False, skeleton=True)
    if len(one.nvtx) > 7:
        assert calls == ["NVTX_EVENTS"]  # the skeleton's NVTX was read in batches
    for name in ("nvtx", "nvtx_marks", "threads", "processes"):
        pd.testing.assert_frame_equal(getattr(batched, name), getattr(one, name))
    assert [w.code for w in batched.warnings] == [w.code for w in one.warnings]
