"""Chunk edges keep every gap whole; chunk rows mirror the SQL window read."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.engine.cuts import (FIRST_LO, LAST_HI, chunk_frames, chunk_spans, owned,
                                             safe_cut)
from tests.analyses.engine.chunking import split_process

SAMPLES = Path(__file__).resolve().parents[3] / "sample_traces"


def _kernels(rows):
    return pd.DataFrame(rows, columns=["start_ns", "end_ns", "device_id"])


def test_safe_cut_lands_inside_a_kernel_of_every_device():
    k = _kernels([(0, 10, 0), (20, 40, 0), (5, 25, 1), (30, 50, 1)])
    cut = safe_cut(k, (0, 1), 0, 45)
    assert cut is not None and cut.exact
    assert cut.at_ns == 39  # [30, 40) is the last time both devices compute; 45 is past it
    assert safe_cut(k, (0, 1), 0, 8).at_ns == 8  # inside [5, 10)


def test_safe_cut_falls_back_when_devices_never_compute_together():
    k = _kernels([(0, 10, 0), (20, 30, 1)])
    cut = safe_cut(k, (0, 1), 0, 25)
    assert cut is not None and not cut.exact and cut.at_ns == 25
    assert safe_cut(k.iloc[:0], (0,), 0, 25) is None


def test_chunk_spans_cover_everything():
    assert chunk_spans([5, 9]) == [(FIRST_LO, 5), (5, 9), (9, LAST_HI)]
    assert chunk_spans([]) == [(FIRST_LO, LAST_HI)]


def test_owned_rows_partition_the_frame():
    k = _kernels([(0, 10, 0), (9, 20, 0), (20, 30, 0)])
    spans = chunk_spans([9, 20])
    counts = [int(owned(k, lo, hi).sum()) for lo, hi in spans]
    assert counts == [1, 1, 1]


def test_chunk_frames_keep_the_kernel_starting_at_the_edge_and_the_early_launches():
    k = _kernels([(0, 10, 0), (20, 30, 0)]).assign(correlation_id=[1, 2])
    api = pd.DataFrame({"start_ns": [-5, 15], "end_ns": [-4, 16], "correlation_id": [1, 2]})
    cf = chunk_frames({"kernels": k, "api": api}, 10, 20)
    assert cf["kernels"]["start_ns"].tolist() == [20]  # starts exactly at hi: seen
    assert cf["api"]["correlation_id"].tolist() == [2]
    cf = chunk_frames({"kernels": k, "api": api}, 5, 10)
    assert cf["api"]["correlation_id"].tolist() == [1]  # its launch ran before the chunk


@pytest.mark.parametrize("name", ["worked_example", "launch_bound", "multi_gpu", "input_bound"
                                  if (SAMPLES / "input_bound.sqlite").exists() else "healthy_tc"])
def test_chunk_busy_adds_up_to_the_whole(name):
    sp = split_process(str(SAMPLES / f"{name}.sqlite"), 4)
    assert len(sp.chunks) >= 2
    for d, whole in sp.busy.items():
        total = sum(iv.total_length(c.busy[d].compute_starts, c.busy[d].compute_ends)
                    for c in sp.chunks)
        assert total == iv.total_length(whole.compute_starts, whole.compute_ends)
    owned_kernels = sum(len(c.owned("kernels")) for c in sp.chunks)
    assert owned_kernels == len(sp.frames["kernels"])


def test_exact_cuts_split_no_gap():
    sp = split_process(str(SAMPLES / "worked_example.sqlite"), 5)
    assert sp.exact
    whole = sp.busy[0]
    gs, ge = iv.find_gaps_merged(whole.compute_starts, whole.compute_ends, sp.window.start_ns,
                                 sp.window.end_ns)
    n = sum(iv.find_gaps_merged(c.busy[0].compute_starts, c.busy[0].compute_ends,
                                c.chunk_window.start_ns, c.chunk_window.end_ns)[0].size
            for c in sp.chunks)
    assert n == gs.size and np.all(ge > gs)
