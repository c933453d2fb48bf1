"""GPU time projected onto NVTX ranges (analyses/steps/nvtx_ranges.py)."""
from __future__ import annotations

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
