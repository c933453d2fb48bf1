"""Fixed 10 ms bins of the analysed window (compare's samples without steps)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses.timeline.busy import Window, device_busy
from nsys_diag.analyses.timeline.window_bins import BIN_NS, binned_sum, build_window_bins

MS = 1_000_000


def test_binned_sum_matches_a_brute_force_overlap():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 100 * MS, 300)
    e = s + rng.integers(1, 15 * MS, 300)
    edges = np.arange(0, 110 * MS + 1, BIN_NS)
    got = binned_sum(s, e, edges)
    want = [int(np.clip(np.minimum(e, hi) - np.maximum(s, lo), 0, None).sum())
            for lo, hi in zip(edges[:-1], edges[1:])]
    assert got.tolist() == want


def _kernels(rows):
    df = pd.DataFrame(rows, columns=["start_ns", "end_ns", "device_id", "name"])
    df["name"] = df["name"].astype("category")
    df["short_name"] = df["name"]
    return df


def test_window_bins_split_time_by_category_tensor_cores_and_exposed_comm():
    k = _kernels([(0, 5 * MS, 0, "gemm_a"), (12 * MS, 14 * MS, 0, "nccl_ar"),
                  (13 * MS, 15 * MS, 0, "gemm_a"), (25 * MS, 30 * MS, 0, "ew")])
    table = pd.DataFrame({"name": ["gemm_a", "nccl_ar", "ew"],
                          "category": ["gemm", "communication", "elementwise"],
                          "tensor_core": [True, False, False]})
    empty = pd.DataFrame({"start_ns": pd.Series([], dtype="int64"),
                          "end_ns": pd.Series([], dtype="int64"),
                          "device_id": pd.Series([], dtype="int64")})
    win = Window(0, 35 * MS, "test")
    busy = device_busy(k, empty, empty, win, [0])
    out = build_window_bins(k, table, busy, win)
    assert out["bin_ns"] == BIN_NS and out["count"] == 3  # the 5 ms tail is dropped
    assert out["category_ns"]["gemm"] == [5 * MS, 2 * MS, 0]
    assert out["category_ns"]["communication"] == [0, 2 * MS, 0]
    assert out["tensor_core_ns"] == [5 * MS, 2 * MS, 0]
    assert out["exposed_comm_ns"] == [0, 1 * MS, 0]  # 12–13 ms: nothing else ran
    assert out["busy"] == pytest.approx([0.5, 0.3, 0.5])
    assert set(out["kernel_ns"]) >= {"gemm_a", "ew"}
