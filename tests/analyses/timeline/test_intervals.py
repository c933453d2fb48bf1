"""Interval algebra: hand cases + hypothesis invariants (busy + idle == span, disjointness)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsys_diag.analyses.timeline import intervals as iv


def test_merge_touching_and_overlapping():
    s, e = iv.merge_intervals([0, 10, 5, 30], [10, 20, 7, 40])
    assert s.tolist() == [0, 30] and e.tolist() == [20, 40]


def test_empty_inputs():
    s, e = iv.merge_intervals([], [])
    assert s.size == 0 and e.size == 0
    gs, ge = iv.find_gaps([], [], 0, 100)
    assert gs.tolist() == [0] and ge.tolist() == [100]
    assert iv.intersect_length([], [], [0], [10]) == 0


def test_gaps_min_gap_and_touching():
    gs, ge = iv.find_gaps([0, 10, 25], [10, 20, 30], 0, 40, min_gap=6)
    assert list(zip(gs.tolist(), ge.tolist())) == [(30, 40)]


def test_intersect_and_subtract():
    assert iv.intersect_length([0, 50], [30, 60], [20], [55]) == 15
    s, e = iv.subtract([0], [100], [10, 50], [20, 60])
    assert list(zip(s.tolist(), e.tolist())) == [(0, 10), (20, 50), (60, 100)]


def test_covered_length_per_window():
    out = iv.covered_length_per_window([0, 50], [30, 60], [0, 25, 55, 70], [100, 52, 58, 80])
    assert out.tolist() == [40, 7, 3, 0]


def test_containing_interval():
    idx = iv.containing_interval([-5, 0, 9, 10, 15, 25], [0, 10, 20], [10, 15, 30])
    assert idx.tolist() == [-1, 0, 0, 1, -1, 2]


intervals = st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 200)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(intervals, intervals)
def test_invariants(a, b):
    a_s = np.array([x for x, _ in a], dtype=np.int64)
    a_e = a_s + np.array([d for _, d in a], dtype=np.int64)
    b_s = np.array([x for x, _ in b], dtype=np.int64)
    b_e = b_s + np.array([d for _, d in b], dtype=np.int64)
    s, e = iv.merge_intervals(a_s, a_e)
    assert np.all(e > s) and np.all(s[1:] > e[:-1])  # disjoint, non-touching, sorted
    covered = np.zeros(1300, bool)
    for x, y in zip(a_s, a_e):
        covered[x:y] = True
    assert iv.total_length(a_s, a_e) == covered.sum()
    gs, ge = iv.find_gaps(a_s, a_e, 0, 1300)
    assert (ge - gs).sum() + iv.total_length(a_s, a_e) == 1300
    cov_b = np.zeros(1300, bool)
    for x, y in zip(b_s, b_e):
        cov_b[x:y] = True
    assert iv.intersect_length(a_s, a_e, b_s, b_e) == (covered & cov_b).sum()
    ss, se = iv.subtract(a_s, a_e, b_s, b_e)
    assert (se - ss).sum() == (covered & ~cov_b).sum()
    w = iv.covered_length_per_window(a_s, a_e, [0, 100, 500], [1300, 400, 700])
    assert w.tolist() == [covered.sum(), covered[100:400].sum(), covered[500:700].sum()]


@settings(max_examples=200, deadline=None)
@given(intervals, intervals)
def test_merged_variants_match_the_generic_ones(a, b):
    a_s = np.array([x for x, _ in a], dtype=np.int64)
    a_e = a_s + np.array([d for _, d in a], dtype=np.int64)
    b_s = np.array([x for x, _ in b], dtype=np.int64)
    b_e = b_s + np.array([d for _, d in b], dtype=np.int64)
    am = iv.merge_intervals(a_s, a_e)
    bm = iv.merge_intervals(b_s, b_e)
    cov_a = np.zeros(1300, bool)
    cov_b = np.zeros(1300, bool)
    for x, y in zip(a_s, a_e):
        cov_a[x:y] = True
    for x, y in zip(b_s, b_e):
        cov_b[x:y] = True
    s, e = iv.intersect_merged(*am, *bm)
    assert np.all(e > s) and np.all(s[1:] >= e[:-1])
    assert (e - s).sum() == (cov_a & cov_b).sum()
    s, e = iv.subtract_merged(*am, *bm)
    assert np.all(e > s) and np.all(s[1:] >= e[:-1])
    assert (e - s).sum() == (cov_a & ~cov_b).sum()


# --------------------------------------------------- merged-input variants (perf, bench) = generic
def _arr(pairs):
    s = np.array([x for x, _ in pairs], dtype=np.int64)
    return s, s + np.array([d for _, d in pairs], dtype=np.int64)


windows = st.lists(st.tuples(st.integers(-50, 1300), st.integers(-20, 400)), max_size=12)


@settings(max_examples=200, deadline=None)
@given(intervals, intervals, st.integers(-50, 1300), st.integers(-50, 1300), st.integers(-5, 120))
def test_union_clip_and_gaps_of_merged_sets_equal_the_generic_ones(a, b, lo, hi, min_gap):
    a_s, a_e = _arr(a)
    b_s, b_e = _arr(b)
    am, bm = iv.merge_intervals(a_s, a_e), iv.merge_intervals(b_s, b_e)
    for got, want in [
        (iv.union_merged(*am, *bm), iv.merge_intervals(np.r_[a_s, b_s], np.r_[a_e, b_e])),
        (iv.clip_merged(*am, lo, hi), iv.merge_intervals(*iv.clip(a_s, a_e, lo, hi))),
        (iv.clip_merged(am[0].copy(), am[1].copy(), lo, hi, in_place=True),
         iv.merge_intervals(*iv.clip(a_s, a_e, lo, hi))),
        (iv.find_gaps_merged(*am, lo, hi, min_gap), iv.find_gaps(a_s, a_e, lo, hi, min_gap)),
    ]:
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
        assert got[0].dtype == np.int64 and got[1].dtype == np.int64
    s_in = am[0].copy()
    iv.clip_merged(*am, lo, hi)
    assert am[0].tolist() == s_in.tolist()  # not in place unless asked


@settings(max_examples=200, deadline=None)
@given(intervals, windows, st.randoms(use_true_random=False))
def test_window_queries_of_merged_sets_equal_the_generic_ones(a, w, rnd):
    a_s, a_e = _arr(a)
    ws, we = _arr(w)
    am = iv.merge_intervals(a_s, a_e)
    want = iv.covered_length_per_window(a_s, a_e, ws, we)
    assert iv.covered_length_per_window_merged(*am, ws, we).tolist() == want.tolist()
    assert iv.covered_length_per_window_merged(
        *am, ws, we, prefix=iv.covered_prefix(*am)).tolist() == want.tolist()
    lengths = (am[1] - am[0]).tolist()
    assert iv.covered_prefix(*am).tolist() == [sum(lengths[:i]) for i in range(len(lengths) + 1)]
    # overlaps_any: any interval shares time with the window; sorted or not, with a row subset
    order = list(range(a_s.size))
    rnd.shuffle(order)
    rows = np.array([rnd.random() < 0.6 for _ in order], bool)
    for s, e in [(a_s, a_e), (a_s[order], a_e[order])]:
        assert iv.overlaps_any(s, e, ws, we).tolist() == (want > 0).tolist()
        sub = iv.covered_length_per_window(s[rows], e[rows], ws, we) > 0
        assert iv.overlaps_any(s, e, ws, we, rows=rows).tolist() == sub.tolist()


@settings(max_examples=200, deadline=None)
@given(intervals, st.lists(st.integers(-50, 1400), max_size=30))
def test_containing_interval_matches_a_scan(a, points):
    s, e = iv.merge_intervals(*_arr(a))  # disjoint and sorted, as required
    got = iv.containing_interval(points, s, e)
    want = [next((i for i, (x, y) in enumerate(zip(s.tolist(), e.tolist())) if x <= p < y), -1)
            for p in points]
    assert got.tolist() == want and got.dtype == np.int64


def test_is_sorted():
    assert iv.is_sorted(np.array([], np.int64)) and iv.is_sorted(np.array([3]))
    assert iv.is_sorted(np.array([1, 1, 2])) and not iv.is_sorted(np.array([2, 1]))


def test_covered_length_per_window_merged_equals_a_brute_force_count():
    rng = np.random.default_rng(11)
    ms, me = iv.merge_intervals(*(lambda s: (s, s + rng.integers(1, 40, s.size)))(
        np.sort(rng.integers(0, 3_000, 120))))
    ws = rng.integers(-100, 3_200, 400)
    we = ws + rng.integers(-20, 300, 400)  # some empty and inverted windows too
    ws_in, we_in = ws.copy(), we.copy()

    def before(t):  # ns of the union before t, one interval at a time
        return sum(max(0, min(int(t), int(b)) - int(a)) for a, b in zip(ms, me))

    want = [before(b) - before(a) for a, b in zip(ws, we)]
    got = iv.covered_length_per_window_merged(ms, me, ws, we)
    assert got.dtype == np.int64 and got.tolist() == want
    np.testing.assert_array_equal(ws, ws_in)  # inputs untouched
    np.testing.assert_array_equal(we, we_in)


@pytest.mark.parametrize("seed", range(5))
def test_covered_length_touched_equals_the_dense_search(seed):
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 1_000_000, 4_000)
    gs, ge = iv.find_gaps(*iv.merge_intervals(b, b + rng.integers(1, 400, b.size)), 0, 1_000_000)
    u = rng.integers(0, 1_000_000, rng.integers(0, 60))
    us, ue = iv.merge_intervals(u, u + rng.integers(1, 30_000, u.size))
    idx, ns = iv.covered_length_touched(us, ue, gs, ge)
    dense = iv.covered_length_per_window_merged(us, ue, gs, ge)
    assert (np.diff(idx) > 0).all() and (ns > 0).all()
    assert idx.tolist() == np.flatnonzero(dense).tolist() and ns.tolist() == dense[idx].tolist()


def test_overlaps_merged_is_covered_length_above_zero():
    rng = np.random.default_rng(3)
    starts = np.sort(rng.integers(0, 20_000, 60))
    ms, me = iv.merge_intervals(starts, starts + rng.integers(1, 400, starts.size))
    s = rng.integers(0, 20_500, 2_000)
    e = s + rng.integers(0, 300, s.size)  # zero-length ones too
    want = iv.covered_length_per_window_merged(ms, me, s, e) > 0
    assert iv.overlaps_merged(s, e, ms, me).tolist() == want.tolist()
    assert iv.overlaps_merged([5], [9], [9], [12]).tolist() == [False]  # touching is no overlap
    assert iv.overlaps_merged([5], [9], [], []).tolist() == [False]
