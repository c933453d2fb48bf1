"""Interval algebra: hand cases + hypothesis invariants (busy + idle == span, disjointness)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nsys_diag.analyses import intervals as iv


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
