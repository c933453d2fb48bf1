"""GPU time projected onto NVTX ranges (analyses/steps/nvtx_ranges.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.steps.nvtx_ranges import (analyze_nvtx_ranges, group_name, merge_nvtx_ranges,
                                                  window_sums)
from nsys_diag.analyses.timeline.busy import Window

MAIN, AUTOGRAD = 1, 2


def _nvtx(rows):
    return pd.DataFrame(rows, columns=["start_ns", "end_ns", "text", "domain", "global_tid"])


def _kernels(rows):
    return pd.DataFrame(rows, columns=["start_ns", "end_ns", "device_id", "launch_start_ns",
                                       "launch_global_tid"])


NVTX = _nvtx([(0, 100, "ProfilerStep#1", "", MAIN), (10, 40, "forward", "", MAIN),
              (15, 25, "aten::linear, op_id = 7", "", MAIN),
              (100, 200, "ProfilerStep#2", "", MAIN), (110, 140, "forward", "", MAIN)])
KERNELS = _kernels([
    (20, 30, 0, 16, MAIN),       # in linear ⊂ forward ⊂ step 1
    (25, 35, 0, 30, MAIN),       # in forward, overlapping the first: the union counts 15 ns
    (50, 60, 0, 50, AUTOGRAD),   # launched on a thread without ranges: the main thread's step 1
    (120, 130, 1, 120, MAIN),    # step 2's forward, on GPU 1
    (150, 160, 0, -1, -1),       # no launch call: not attributed
])


def _by_name(result):
    return {r["name"]: r for r in result.to_json()["ranges"]}


def test_group_names_collapse_counters():
    assert group_name("ProfilerStep#12") == "ProfilerStep#*"
    assert group_name("layer_3") == "layer_*"
    assert group_name("forward") == "forward"
    assert group_name("conv2d") == "conv2d"  # a digit inside a name is not a counter


def test_projection_unions_nesting_and_cross_thread_attribution():
    res = analyze_nvtx_ranges(NVTX, KERNELS, None, Window(0, 200, "steps"))
    rows = _by_name(res)
    assert list(rows) == ["ProfilerStep#*", "forward", "aten::linear"]  # longest GPU time first
    step, fwd, lin = rows["ProfilerStep#*"], rows["forward"], rows["aten::linear"]
    assert (step["count"], step["cpu_ms"]) == (2, 200 / 1e6)
    assert step["gpu_ms"] == pytest.approx(35 / 1e6)  # GPU 0: [20,35) + [50,60); GPU 1: 10
    assert step["gpu_self_ms"] == pytest.approx(10 / 1e6)  # only the autograd thread's kernel
    assert (fwd["count"], fwd["cpu_ms"]) == (2, 60 / 1e6)
    assert fwd["gpu_ms"] == pytest.approx(25 / 1e6) and fwd["gpu_self_ms"] == pytest.approx(20 / 1e6)
    assert lin["gpu_ms"] == lin["gpu_self_ms"] == pytest.approx(10 / 1e6)
    j = res.to_json()
    assert j["kernel_ms"] == pytest.approx(45 / 1e6) and j["unattributed_kernels"] == 1
    assert step["share"] == pytest.approx(35 / 45)


def test_window_clips_ranges_and_kernels():
    res = analyze_nvtx_ranges(NVTX, KERNELS, None, Window(0, 27, "user"))
    rows = _by_name(res)
    assert set(rows) == {"ProfilerStep#*", "forward", "aten::linear"}
    assert rows["ProfilerStep#*"]["count"] == 1 and rows["ProfilerStep#*"]["cpu_ms"] == 27 / 1e6
    assert rows["forward"]["gpu_ms"] == pytest.approx(7 / 1e6)  # [20,27) of the two kernels


@pytest.mark.parametrize("cuts", [(100,), (27,), (22, 57, 125, 155)])
def test_chunk_sums_merge_to_the_whole(cuts):
    whole = analyze_nvtx_ranges(NVTX, KERNELS, None, Window(0, 200, "steps")).to_json()
    edges = (0, *cuts, 200)
    parts = [window_sums(NVTX, KERNELS, None, (0, 200), (lo, hi), count_ranges=(i == 0))
             for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]))]
    assert merge_nvtx_ranges(parts).to_json() == whole


def test_no_ranges_is_unavailable():
    res = analyze_nvtx_ranges(NVTX.iloc[:0], KERNELS, None, Window(0, 200, "steps"))
    assert isinstance(res, Unavailable) and "NVTX" in res.reason


# ----------------------------------------------------------------- against a brute-force projection
def _nested(rng, lo, hi, depth, tid, rows):
    """Properly nested ranges on one thread: children cut out of their parent, recursively."""
    t = lo
    while depth and t < hi:
        a = int(rng.integers(t, hi))
        b = int(rng.integers(a, hi)) + 1
        rows.append((a, min(b, hi), ["forward", "layer_1", "layer_2", "backward"][rng.integers(4)],
                     ["", "d"][rng.integers(2)], tid))
        _nested(rng, a, min(b, hi), depth - 1, tid, rows)
        t = b + int(rng.integers(0, 20))


def _case(rng):
    rows: list = []
    for tid in (MAIN, AUTOGRAD)[: rng.integers(1, 3)]:
        _nested(rng, 0, 1000, int(rng.integers(1, 5)), tid, rows)
    k = []
    for _ in range(int(rng.integers(1, 150))):
        s = int(rng.integers(0, 1100))
        tid = int(rng.choice([MAIN, AUTOGRAD, 9, -1]))
        k.append((s, s + int(rng.integers(0, 60)), int(rng.integers(0, 3)),
                  -1 if tid == -1 else int(rng.integers(0, 1000)), tid))
    kernels = _kernels(k)
    if rng.integers(2):
        kernels = kernels.sort_values("start_ns", kind="stable").reset_index(drop=True)
    return _nvtx(rows), kernels


def _union(iv):
    total, reach = 0, None
    for s, e in sorted(iv):
        if reach is None or s > reach:
            total, reach = total + e - s, e
        elif e > reach:
            total, reach = total + e - reach, e
    return total


def _brute(nvtx, kernels, lo, hi):
    """{(domain, name): (gpu ns, self ns)} and the kernels' union, one kernel at a time."""
    r = [row for row in nvtx.itertuples() if row.start_ns < hi and row.end_ns > lo]
    main = max({x.global_tid for x in r}, key=lambda t: sum(x.global_tid == t for x in r)) if r else None
    gpu: dict = {}
    own: dict = {}
    every = []
    for k in kernels.itertuples():
        if not (k.start_ns < hi and k.end_ns > lo):
            continue
        piece = (k.device_id, max(k.start_ns, lo), min(k.end_ns, hi))
        every.append(piece)
        if k.launch_start_ns == -1:
            continue
        on = [x for x in r if x.global_tid == k.launch_global_tid and x.start_ns <= k.launch_start_ns < x.end_ns]
        if not on:
            on = [x for x in r if x.global_tid == main and x.start_ns <= k.launch_start_ns < x.end_ns]
        for key in {(x.domain, group_name(x.text)) for x in on}:
            gpu.setdefault(key, []).append(piece)
        if on:
            inner = max(on, key=lambda x: (x.start_ns, -x.end_ns, x.Index))  # same extent: the later
            own.setdefault((inner.domain, group_name(inner.text)), []).append(piece)

    def per_device(pieces):
        return sum(_union([(s, e) for d, s, e in pieces if d == dev]) for dev in {p[0] for p in pieces})
    return ({key: (per_device(v), per_device(own.get(key, []))) for key, v in gpu.items()}, per_device(every))


@pytest.mark.parametrize("seed", range(40))
def test_projection_matches_a_kernel_by_kernel_count(seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    nvtx, kernels = _case(rng)
    lo, hi = sorted(int(x) for x in rng.integers(0, 1100, 2))
    hi += 1
    part = window_sums(nvtx, kernels, None, (lo, hi), (lo, hi))
    want, kernel_ns = _brute(nvtx, kernels, lo, hi)
    got = {key: (v[2], v[3]) for key, v in part.sums.items() if v[2] or v[3]}
    assert got == {key: v for key, v in want.items() if v[0] or v[1]}
    assert part.kernel_ns == kernel_ns


def test_segmented_running_max_spanning_centuries():
    import numpy as np
    from nsys_diag.analyses.steps.nvtx_ranges import _prev_max
    first = np.array([True, False, False, True, False])
    small = np.array([5, 3, 9, 1, 2], np.int64)
    none = np.iinfo(np.int64).min
    assert _prev_max(first, small).tolist() == [none, 5, 5, none, 1]
    big = small * 2 ** 60 // 4  # segments too wide to shift apart: one segment at a time
    assert _prev_max(first, big).tolist() == [none, big[0], big[0], none, big[3]]


def test_search_from_the_small_side_equals_searchsorted():
    """``_search_right`` (sorted points: the bounds placed among the points, then a running count)
    gives ``np.searchsorted(bounds, points, "right")`` exactly — ties, points before and after
    every bound, and unsorted points (the plain search)."""
    from nsys_diag.analyses.steps.nvtx_ranges import _search_right

    rng = np.random.default_rng(7)
    bounds = np.unique(rng.integers(0, 1_000, 40))
    for points in (np.sort(rng.integers(-50, 1_050, 5_000)),  # sorted, with ties on the bounds
                   np.sort(np.concatenate([bounds, bounds, [-1, 2_000]])),
                   rng.integers(-50, 1_050, 5_000)):  # unsorted: the plain search
        got = _search_right(bounds, points)
        assert got.dtype == np.int64
        assert np.array_equal(got, np.searchsorted(bounds, points, side="right"))
    assert _search_right(bounds, np.zeros(0, np.int64)).size == 0


def test_run_keys_are_equal_exactly_when_the_group_rows_are():
    """Two kernels share a run key exactly when their rows of the group table hold the same
    groups (distinct table rows with equal contents share a key)."""
    from nsys_diag.analyses.steps.nvtx_ranges import _run_keys

    table = np.array([[-1, -1], [3, -1], [3, 5], [3, -1], [4, 5]], np.int32)
    row = np.array([0, 1, 3, 2, 2, 4, 0, 3])
    keys = _run_keys(table, row)
    rows = [tuple(r) for r in table[row]]
    for i in range(row.size):
        for j in range(row.size):
            assert (keys[i] == keys[j]) == (rows[i] == rows[j])
