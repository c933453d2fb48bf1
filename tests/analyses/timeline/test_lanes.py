"""The whole window per device/stream lane (analyses/timeline/lanes.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.timeline import lanes as L
from nsys_diag.analyses.timeline.busy import Window

US = 1_000
TABLE = pd.DataFrame({"name": ["gemm_a", "nccl_ar", "ew"],
                      "category": ["gemm", "communication", "elementwise"],
                      "tensor_core": [True, False, False]})


def _kernels(rows):
    df = pd.DataFrame(rows, columns=["start_ns", "end_ns", "device_id", "stream_id", "name"])
    df["name"] = df["name"].astype("category")
    df["short_name"] = df["name"]
    return df


def _copies(rows):
    return pd.DataFrame(rows, columns=["start_ns", "end_ns", "device_id", "stream_id"])


def _lanes(res):
    return {(ln["device_id"], ln["stream_id"]): ln for ln in res.to_json()["lanes"]}


WINDOW = Window(0, 1200 * US, "user")  # 1,200 columns of 1 µs


def test_columns_keep_the_dominant_class_and_the_occupancy():
    k = _kernels([(0, 100 * US, 0, 7, "gemm_a"),            # columns 0..99: GEMM, full
                  (100 * US, 300 * US, 0, 7, "ew"),         # 100..299: element-wise
                  (400 * US + 500, 401 * US, 0, 7, "ew"),   # half a column: occupancy 2 of 4
                  (0, 50 * US, 0, 9, "nccl_ar")])           # another stream: its own lane
    c = _copies([(600 * US, 610 * US, 0, 7)])
    res = L.analyze_lanes(k, c, c.iloc[:0], TABLE, WINDOW, None)
    j = res.to_json()
    assert (j["bin_ns"], j["columns"]) == (US, 1200)
    gemm, ew, comm, copy = (j["classes"].index(c) for c in ("gemm", "elementwise", "communication", "copy"))
    lanes = _lanes(res)
    assert list(lanes) == [(0, 7), (0, 9)]  # the busiest lane first
    assert lanes[(0, 7)]["runs"] == [[0, 100, gemm, 4], [100, 200, ew, 4], [400, 1, ew, 2],
                                     [600, 10, copy, 4]]  # idle columns left out
    assert lanes[(0, 9)]["runs"] == [[0, 50, comm, 4]]
    assert lanes[(0, 7)]["busy_ms"] == pytest.approx(310.5 * US / 1e6)
    assert lanes[(0, 7)]["class_ms"]["copy"] == pytest.approx(10 * US / 1e6)
    assert lanes[(0, 7)]["ops"] == 4


def test_ops_outside_the_window_are_cut_and_an_empty_window_is_unavailable():
    k = _kernels([(-50 * US, 10 * US, 0, 1, "gemm_a"), (1190 * US, 1300 * US, 0, 1, "gemm_a")])
    empty = _copies([])
    lanes = _lanes(L.analyze_lanes(k, empty, empty, TABLE, WINDOW, None))
    assert lanes[(0, 1)]["busy_ms"] == pytest.approx(20 * US / 1e6)
    assert isinstance(L.analyze_lanes(k, empty, empty, TABLE, Window(5, 5, "user"), None), Unavailable)


def test_the_quietest_streams_fold_into_one_lane_per_device():
    rows = [(s * US, (s + 1 + s) * US, s % 2, s, "ew") for s in range(L.MAX_LANES + 4)]
    empty = _copies([])
    j = L.analyze_lanes(_kernels(rows), empty, empty, TABLE, WINDOW, None).to_json()
    assert len(j["lanes"]) == L.MAX_LANES + 2
    folded = [ln for ln in j["lanes"] if ln["stream_id"] is None]
    assert [(ln["device_id"], ln["streams"]) for ln in folded] == [(0, 2), (1, 2)]
    assert {ln["stream_id"] for ln in j["lanes"][:L.MAX_LANES]} == set(range(4, L.MAX_LANES + 4))


def test_long_windows_stay_within_the_column_budget():
    rng = np.random.default_rng(3)
    s = np.sort(rng.integers(0, 10**10, 20_000))
    k = _kernels([(int(a), int(a) + 40_000, 0, 1, "gemm_a") for a in s])
    empty = _copies([])
    j = L.analyze_lanes(k, empty, empty, TABLE, Window(0, 10**10, "user"), None).to_json()
    assert j["columns"] <= L.MAX_COLUMNS
    runs = j["lanes"][0]["runs"]
    assert len(runs) <= L.MAX_COLUMNS and sum(r[1] for r in runs) <= j["columns"]


@pytest.mark.parametrize("cuts", [(300 * US,), (50 * US, 101 * US, 700 * US)])
def test_chunk_sums_merge_to_the_whole(cuts):
    k = _kernels([(0, 100 * US, 0, 7, "gemm_a"), (90 * US, 300 * US, 0, 7, "ew"),
                  (250 * US, 800 * US, 1, 3, "nccl_ar")])
    c = _copies([(600 * US, 610 * US, 0, 7)])
    whole = L.analyze_lanes(k, c, c.iloc[:0], TABLE, WINDOW, None).to_json()
    edges = (0, *cuts, 10**9)
    parts = []
    for lo, hi in zip(edges[:-1], edges[1:]):  # each chunk owns the ops starting in it
        own_k = k[(k["start_ns"] >= lo) & (k["start_ns"] < hi)]
        own_c = c[(c["start_ns"] >= lo) & (c["start_ns"] < hi)]
        parts.append(L.lane_sums(own_k, [own_c], TABLE, WINDOW))
    assert L.finish_lanes(L.merge_parts(parts), WINDOW, None).to_json() == whole


def test_column_sums_match_the_overlap_of_every_interval():
    from nsys_diag.analyses.timeline.window_bins import binned_sum
    rng = np.random.default_rng(5)
    edges = L.column_edges(Window(1_000, 1_000 + 997 * 53, "user"))  # a narrower last column
    s = rng.integers(edges[0], edges[-1], 400)
    e = np.minimum(s + rng.choice([7, 40, 300, 9_000], 400), edges[-1])
    g = rng.integers(0, 3, 400)
    got = L._columns_ns(g, s, e, edges, 3)
    for k in range(3):
        assert got[k].tolist() == binned_sum(s[g == k], e[g == k], edges).tolist()


def test_slices_of_ops_add_up_to_the_whole(monkeypatch):
    rng = np.random.default_rng(9)
    s = rng.integers(0, 1100 * US, 300)
    k = _kernels([(int(a), int(a) + int(d), int(a) % 2, int(a) % 5, ["gemm_a", "ew", "nccl_ar"][int(a) % 3])
                  for a, d in zip(s, rng.integers(1, 90 * US, 300))])
    empty = _copies([])
    whole = L.analyze_lanes(k, empty, empty, TABLE, WINDOW, None).to_json()
    monkeypatch.setattr(L, "SLICE_ROWS", 7)
    assert L.analyze_lanes(k, empty, empty, TABLE, WINDOW, None).to_json() == whole
