"""Interval algebra on integer-nanosecond half-open intervals ``[start, end)``.

All functions are vectorised numpy (O(n log n) for the sort, O(n) otherwise) and never mutate
their inputs (except ``clip_merged(in_place=True)``, on request). "Busy" is always an interval
**union**, never a sum of durations. Touching intervals (``a.end == b.start``) merge and leave no
gap. The ``*_merged`` variants take sets that are already merged (sorted, disjoint) and skip the
re-sort / re-merge (perf, bench: the busy intervals of a 2M-kernel trace are merged once and
reused).
"""
from __future__ import annotations

import numpy as np

IntArray = np.ndarray


def _as_i64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.int64)


def merge_intervals(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals → sorted, disjoint, non-touching ``(starts, ends)``.

    Empty or inverted intervals (end <= start) are ignored.
    """
    s = _as_i64(starts)
    e = _as_i64(ends)
    keep = e > s
    if not keep.all():  # perf (bench): no copy when every interval is valid
        s, e = s[keep], e[keep]
    del keep
    if s.size == 0:
        return s.copy(), e.copy()
    if not is_sorted(s):  # perf: GPU rows usually come sorted already
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    return _merge_sorted_valid(s, e)


def is_sorted(a: np.ndarray) -> bool:
    """``a`` is non-decreasing (O(n), one boolean temporary)."""
    return a.size < 2 or bool((a[1:] >= a[:-1]).all())


def _merge_sorted_valid(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``merge_intervals`` of non-empty intervals already sorted by start (at least one)."""
    run_end = np.maximum.accumulate(e)
    # a new group starts where the interval begins after everything before it has ended
    new_group = np.empty(s.size, dtype=bool)
    new_group[0] = True
    np.greater(s[1:], run_end[:-1], out=new_group[1:])
    # perf (bench): boolean masks, not int64 index arrays (-48 MB of temporaries on 2M rows)
    last_of_group = np.empty(s.size, dtype=bool)
    last_of_group[:-1] = new_group[1:]
    last_of_group[-1] = True
    return s[new_group], run_end[last_of_group]


def union_merged(as_, ae, bs, be) -> tuple[np.ndarray, np.ndarray]:
    """Union of two **already merged** sets (sorted, disjoint, e.g. ``merge_intervals`` output),
    equal to ``merge_intervals`` of their concatenation, in O(n + m log n): the smaller set is
    slotted into the larger by binary search instead of re-sorting both (ns in, ns out).

    When one set is empty the other is returned as is (not copied).
    """
    as_, ae, bs, be = _as_i64(as_), _as_i64(ae), _as_i64(bs), _as_i64(be)
    if bs.size == 0:
        return as_, ae
    if as_.size == 0:
        return bs, be
    if bs.size > as_.size:
        as_, ae, bs, be = bs, be, as_, ae
    n, m = as_.size, bs.size
    pos = np.searchsorted(as_, bs, side="right") + np.arange(m)  # where each B lands
    from_b = np.zeros(n + m, bool)
    from_b[pos] = True
    s = np.empty(n + m, np.int64)
    e = np.empty(n + m, np.int64)
    s[pos], e[pos] = bs, be
    np.logical_not(from_b, out=from_b)
    s[from_b], e[from_b] = as_, ae
    del from_b, pos
    return _merge_sorted_valid(s, e)


def clip_merged(starts, ends, lo: int, hi: int, *, in_place: bool = False
                ) -> tuple[np.ndarray, np.ndarray]:
    """``clip`` for an **already merged** set: the intervals overlapping ``[lo, hi)`` are one
    contiguous run, found by binary search, with only its two ends cut (ns).

    Returns new arrays; with ``in_place`` (perf: for arrays the caller owns) views of the input
    whose first start / last end are cut in place.
    """
    s, e = _as_i64(starts), _as_i64(ends)
    i0 = int(np.searchsorted(e, lo, side="right"))  # first interval ending after lo
    i1 = int(np.searchsorted(s, hi, side="left"))  # first interval starting at/after hi
    if hi <= lo or i1 <= i0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    s, e = s[i0:i1], e[i0:i1]
    if not in_place:
        s, e = s.copy(), e.copy()
    s[0] = max(int(s[0]), lo)
    e[-1] = min(int(e[-1]), hi)
    return s, e


def total_length(starts, ends) -> int:
    """Length of the union of the intervals, ns."""
    s, e = merge_intervals(starts, ends)
    return int((e - s).sum())


def clip(starts, ends, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Clip intervals to ``[lo, hi)``, dropping those entirely outside."""
    s = np.clip(_as_i64(starts), lo, hi)
    e = np.clip(_as_i64(ends), lo, hi)
    keep = e > s
    return s[keep], e[keep]


def find_gaps(starts, ends, lo: int, hi: int, min_gap: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Idle intervals inside ``[lo, hi)`` not covered by the union of the intervals.

    Gaps shorter than ``min_gap`` ns are dropped. Leading/trailing idle time counts as a gap.
    """
    s, e = merge_intervals(*clip(starts, ends, lo, hi))
    gap_s = np.concatenate(([lo], e)).astype(np.int64)
    gap_e = np.concatenate((s, [hi])).astype(np.int64)
    keep = (gap_e - gap_s) > max(min_gap, 0)
    if min_gap <= 0:
        keep = gap_e > gap_s
    return gap_s[keep], gap_e[keep]


def find_gaps_merged(starts, ends, lo: int, hi: int, min_gap: int = 0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``find_gaps`` for an **already merged** set (sorted, disjoint), without clipping or
    re-merging it: idle intervals inside ``[lo, hi)`` longer than ``min_gap`` ns (ns)."""
    s, e = _as_i64(starts), _as_i64(ends)
    if hi <= lo:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    i0 = int(np.searchsorted(e, lo, side="right"))
    i1 = int(np.searchsorted(s, hi, side="left"))
    thr = max(min_gap, 0)
    if i1 <= i0:
        keep = hi - lo > thr
        return np.array([lo] * keep, np.int64), np.array([hi] * keep, np.int64)
    first_s, last_e = max(int(s[i0]), lo), min(int(e[i1 - 1]), hi)
    inner_s, inner_e = e[i0:i1 - 1], s[i0 + 1:i1]  # views: between consecutive intervals
    width = inner_e - inner_s
    keep = width > thr
    del width
    lead = first_s - lo > thr
    trail = hi - last_e > thr
    gs = np.concatenate(([lo] * lead, inner_s[keep], [last_e] * trail)).astype(np.int64)
    ge = np.concatenate(([first_s] * lead, inner_e[keep], [hi] * trail)).astype(np.int64)
    return gs, ge


def intersect(a_starts, a_ends, b_starts, b_ends) -> tuple[np.ndarray, np.ndarray]:
    """Intersection of two interval sets (each is unioned first) → disjoint sorted intervals."""
    as_, ae = merge_intervals(a_starts, a_ends)
    bs, be = merge_intervals(b_starts, b_ends)
    return intersect_merged(as_, ae, bs, be)


def intersect_merged(as_, ae, bs, be) -> tuple[np.ndarray, np.ndarray]:
    """Intersection of two **already merged** sets (sorted, disjoint, e.g. ``merge_intervals``
    output) in O((n + m) log m) without re-sorting: each A interval meets the contiguous run of B
    intervals that overlap it, found with two binary searches."""
    as_, ae, bs, be = _as_i64(as_), _as_i64(ae), _as_i64(bs), _as_i64(be)
    if as_.size == 0 or bs.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    lo = np.searchsorted(be, as_, side="right")  # first B ending after A starts
    hi = np.searchsorted(bs, ae, side="left")  # first B starting at/after A ends
    cnt = np.maximum(hi - lo, 0)
    total = int(cnt.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    ai = np.repeat(np.arange(as_.size), cnt)
    offset = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    bi = np.repeat(lo, cnt) + offset
    s = np.maximum(as_[ai], bs[bi])
    e = np.minimum(ae[ai], be[bi])
    keep = e > s
    return s[keep], e[keep]


def subtract_merged(as_, ae, bs, be) -> tuple[np.ndarray, np.ndarray]:
    """Parts of A not covered by B, both **already merged** (see ``intersect_merged``)."""
    as_, ae, bs, be = _as_i64(as_), _as_i64(ae), _as_i64(bs), _as_i64(be)
    if as_.size == 0 or bs.size == 0:
        return as_.copy(), ae.copy()
    lo = min(int(as_[0]), int(bs[0])) - 1
    hi = max(int(ae[-1]), int(be[-1])) + 1
    comp_s = np.concatenate(([lo], be))
    comp_e = np.concatenate((bs, [hi]))
    keep = comp_e > comp_s
    return intersect_merged(as_, ae, comp_s[keep], comp_e[keep])


def intersect_length(a_starts, a_ends, b_starts, b_ends) -> int:
    """Length (ns) of the intersection of two interval unions."""
    s, e = intersect(a_starts, a_ends, b_starts, b_ends)
    return int((e - s).sum())


def subtract(a_starts, a_ends, b_starts, b_ends) -> tuple[np.ndarray, np.ndarray]:
    """Parts of union(A) not covered by union(B)."""
    as_, ae = merge_intervals(a_starts, a_ends)
    bs, be = merge_intervals(b_starts, b_ends)
    return subtract_merged(as_, ae, bs, be)


def covered_length_per_window(starts, ends, win_starts, win_ends) -> np.ndarray:
    """For each window ``[win_starts[i], win_ends[i])`` the length covered by union(intervals).

    Windows may overlap each other. O((n + w) log n) via prefix sums over the merged union.
    """
    s, e = merge_intervals(starts, ends)
    return covered_length_per_window_merged(s, e, win_starts, win_ends)


def covered_prefix(starts, ends) -> np.ndarray:
    """Prefix sums of the interval lengths: ``out[i]`` = total length (ns) of intervals
    ``0..i-1`` (``n + 1`` values, int64) — for **disjoint sorted** intervals, the ns they cover,
    reusable by ``covered_length_per_window_merged(..., prefix=)``."""
    s, e = _as_i64(starts), _as_i64(ends)
    cum = np.empty(s.size + 1, np.int64)
    cum[0] = 0
    np.subtract(e, s, out=cum[1:])  # perf (bench): one n-sized array, no temporaries
    np.cumsum(cum[1:], out=cum[1:])
    return cum


def covered_length_per_window_merged(starts, ends, win_starts, win_ends, *,
                                     prefix: np.ndarray | None = None) -> np.ndarray:
    """``covered_length_per_window`` for intervals that are **already disjoint and sorted** (e.g.
    ``merge_intervals``, ``intersect_merged`` or ``subtract_merged`` output): no re-merge.
    ``prefix``: ``covered_prefix`` of the same intervals, when the caller keeps it. ns per window.
    """
    s, e = _as_i64(starts), _as_i64(ends)
    ws = _as_i64(win_starts)
    we = _as_i64(win_ends)
    if s.size == 0 or ws.size == 0:
        return np.zeros(ws.size, dtype=np.int64)
    cum = covered_prefix(s, e) if prefix is None else prefix

    def covered_before(t: np.ndarray) -> np.ndarray:
        # j: the last merged interval starting at or before t (0 when none: its part is then
        # cut to 0 and cum[0] is 0); covered = the intervals before j + the part of j before t.
        # perf (bench): in place, five arrays of len(t) instead of ten
        j = np.searchsorted(s, t, side="right").astype(np.int64, copy=False)
        j -= 1
        np.maximum(j, 0, out=j)
        out = np.minimum(t, e[j])
        out -= s[j]
        np.maximum(out, 0, out=out)
        out += cum[j]
        return out

    covered = covered_before(we)
    covered -= covered_before(ws)
    return covered


def covered_length_touched(starts, ends, win_starts, win_ends) -> tuple[np.ndarray, np.ndarray]:
    """(indices, ns) of the windows that the **merged** intervals cover at all, with the ns they
    cover of each: ``covered_length_per_window_merged`` searched from the small side. The
    windows must be disjoint and sorted (gaps); each interval meets the contiguous run of
    windows it overlaps (two binary searches of the intervals into the windows), so a few
    hundred intervals against millions of windows touch only the windows they overlap."""
    s, e = _as_i64(starts), _as_i64(ends)
    ws, we = _as_i64(win_starts), _as_i64(win_ends)
    if s.size == 0 or ws.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo = np.searchsorted(we, s, side="right")  # first window ending after the interval starts
    hi = np.searchsorted(ws, e, side="left")  # first window starting at/after it ends
    cnt = np.maximum(hi - lo, 0)
    total = int(cnt.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    idx = np.repeat(lo, cnt) + (np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    if idx.size > 1:  # runs are non-decreasing; a window two intervals meet appears twice
        keep = np.ones(idx.size, bool)
        keep[1:] = idx[1:] != idx[:-1]
        idx = idx[keep]
    return idx, covered_length_per_window_merged(s, e, ws[idx], we[idx])


def overlaps_any(starts, ends, win_starts, win_ends, *, rows: np.ndarray | None = None
                 ) -> np.ndarray:
    """Per window ``[ws, we)``: does any non-empty interval overlap it? (equals
    ``covered_length_per_window(...) > 0``, without merging the intervals).

    ``rows``: optional boolean mask of the intervals to consider (perf: no copy of the
    selected rows). Intervals in any order; O(n) when sorted by start, else a sort.
    """
    s, e = _as_i64(starts), _as_i64(ends)
    ws, we = _as_i64(win_starts), _as_i64(win_ends)
    if s.size == 0:
        return np.zeros(ws.size, bool)
    live = e > s
    if rows is not None:
        live &= rows
    if not is_sorted(s):
        order = np.argsort(s, kind="stable")
        s, e, live = s[order], e[order], live[order]
    # running max of the ends of the live intervals so far (INT64 min where none yet)
    run_end = np.where(live, e, np.iinfo(np.int64).min)
    del live
    np.maximum.accumulate(run_end, out=run_end)
    i = np.searchsorted(s, we, side="left")  # intervals starting before the window ends
    hit = run_end[np.maximum(i - 1, 0)] > ws
    return (i > 0) & hit & (we > ws)


def overlaps_merged(starts, ends, merged_starts, merged_ends) -> np.ndarray:
    """Per interval ``[s, e)``: does it overlap (for a positive length) one of the **disjoint,
    sorted** intervals ``merged_*``? The reverse question of ``overlaps_any`` (equals
    ``covered_length_per_window_merged(merged…, starts, ends) > 0``). perf (bench: 2M launch calls
    against the long gaps): one ``searchsorted`` per interval — the last merged interval
    starting before its end is the only one that can overlap it."""
    s, e = _as_i64(starts), _as_i64(ends)
    ms, me = _as_i64(merged_starts), _as_i64(merged_ends)
    if ms.size == 0 or s.size == 0:
        return np.zeros(s.size, bool)
    j = np.searchsorted(ms, e, side="left") - 1
    return (j >= 0) & (me[np.maximum(j, 0)] > s) & (e > s)


def containing_interval(points, starts, ends) -> np.ndarray:
    """Index of the interval containing each point, for **disjoint** sorted intervals; -1 if none.

    ``starts`` must be sorted ascending and the intervals disjoint (e.g. steps, or merged phases).
    """
    p = _as_i64(points)
    s = _as_i64(starts)
    e = _as_i64(ends)
    if s.size == 0:
        return np.full(p.size, -1, dtype=np.int64)
    # perf (bench): in-place steps, one n-sized int64 array plus boolean masks (2M points)
    i = np.searchsorted(s, p, side="right").astype(np.int64, copy=False)
    i -= 1
    before = i < 0
    i[before] = 0
    outside = p >= e[i]
    outside |= before
    i[outside] = -1
    return i
