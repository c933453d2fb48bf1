"""Tensor Cores merged from chunks equal the in-memory result."""
from __future__ import annotations

import numpy as np
import pytest

from nsys_diag.analyses.kernels.table import merge_kernels, partial_kernels
from nsys_diag.analyses.kernels.tensor_spans import (merge_tensor_cores, merge_tensor_sampling,
                                                     partial_tensor_cores, partial_tensor_sampling)
from nsys_diag.analyses.kernels.tensor_counters import metric_samples, sample_period_ns
from nsys_diag.model.thresholds import Thresholds
from tests.analyses.engine.cases import (CHUNKS, GENERATED, SAMPLE_NAMES, SAMPLES,
                                          assert_json_equal, cases_dir, generated_path,
                                          multi_gpu_split,
                                          split_process, whole)

TH = Thresholds()


def _merge(sp, counters=None):
    sampling = merge_tensor_sampling([partial_tensor_sampling(c) for c in sp.chunks])
    table = merge_kernels([partial_kernels(c) for c in sp.chunks], th=TH).table
    parts = [partial_tensor_cores(c, sampling=sampling) for c in sp.chunks]
    return merge_tensor_cores(parts, table=table, th=TH, sampling=sampling,
                              counters=counters), sampling, parts


def _check(sp):
    w = whole(sp, TH)
    merged, sampling, parts = _merge(sp)
    assert_json_equal(w.tensor_cores.to_json(), merged.to_json())
    ta = metric_samples(w.metrics, "tensor_active")
    assert sampling.period_ns == (None if ta is None else sample_period_ns(ta))
    return w, merged, parts


@pytest.mark.parametrize("n", CHUNKS)
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_samples(name, n):
    _check(split_process(str(SAMPLES / f"{name}.sqlite"), n))


@pytest.mark.parametrize("n", CHUNKS)
@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated(name, n, tmp_path_factory):
    _check(split_process(str(generated_path(cases_dir(tmp_path_factory), name)), n))


@pytest.mark.parametrize("n", (2, 3, 12))
def test_per_kernel_levels_across_edges(n, tmp_path_factory):
    """Long kernels resolved one by one by 100 µs samples, chunk edges inside them."""
    sp = split_process(str(generated_path(cases_dir(tmp_path_factory), "triton_tc_fine")), n)
    w, merged, parts = _check(sp)
    assert w.tensor_cores.tensor_active_gemm_samples > 0
    heads = sum(len(p.head_items) + sum(len(h) for h in p.head.values()) for p in parts)
    assert heads > 0  # hits after an edge that needed the previous chunks' kernels


@pytest.mark.parametrize("n", CHUNKS)
def test_multi_gpu_process(n, tmp_path_factory):
    sp = multi_gpu_split(generated_path(cases_dir(tmp_path_factory), "allreduce_fine_metrics"), n)
    _check(sp)


def test_ncu_counters_win_in_the_merge_too():
    sp = split_process(str(SAMPLES / "inference.sqlite"), 3)
    merged, _, _ = _merge(sp, counters={"tensor_core_share_by_time": 0.25, "source": "ncu"})
    assert merged.source == "ncu" and np.isclose(merged.share_of_kernel_time, 0.25)


_NAMES = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel",
          "triton_mm_1", "void at::native::vectorized_elementwise_kernel<4>(int)",
          "volta_sgemm_128x64_nn")
_METRICS = ("Tensor Active [Throughput %]", "SMs Active [Throughput %]")


def _random_process(seed: int):
    """Two GPUs, two streams each, overlapping short and long kernels, 100 µs samples (some
    NaN), and chunk edges at random times (not only where every device computes)."""
    from nsys_diag.analyses.base import Unavailable
    from nsys_diag.analyses.timeline.busy import Window
    from nsys_diag.analyses.engine.context import chunk_inputs
    from nsys_diag.analyses.engine.cuts import chunk_spans
    import pandas as pd

    rng = np.random.default_rng(seed)
    base = split_process(str(SAMPLES / "inference.sqlite"), 1)
    t0, span, n = 1_000_000_000, 60_000_000, 400
    s = np.sort(rng.integers(t0, t0 + span, n))
    long = rng.random(n) < 0.3
    dur = np.where(long, rng.integers(150_000, 3_000_000, n), rng.integers(2_000, 150_000, n))
    names = pd.Categorical(np.array(_NAMES, dtype=object)[rng.integers(0, len(_NAMES), n)],
                           categories=list(_NAMES))
    k = pd.DataFrame({"start_ns": s, "end_ns": s + dur, "device_id": rng.integers(0, 2, n),
                      "stream_id": rng.integers(0, 2, n), "correlation_id": np.arange(n) + 1,
                      "name": names, "short_name": names})
    ts = np.arange(t0 - 5_000_000, t0 + span + 5_000_000, 100_000)
    rows = [(t + int(d) * 7, d, m, v) for t in ts for d in (0, 1) for m in _METRICS
            for v in [float(rng.uniform(0, 100))]]
    m = pd.DataFrame(rows, columns=["ts_ns", "device_id", "metric", "value"])
    m.loc[rng.random(len(m)) < 0.02, "value"] = np.nan
    m["metric"] = m["metric"].astype("category")
    f = dict(base.frames, kernels=k, memcpy=base.frames["memcpy"].iloc[:0],
             memset=base.frames["memset"].iloc[:0], sync=base.frames["sync"].iloc[:0],
             gpu_metrics=m)
    f.pop("api", None)
    window = Window(t0 + 2_000_000, t0 + span - 2_000_000, "test")
    cuts = np.sort(rng.integers(t0, t0 + span, int(rng.integers(3, 12)))).tolist()
    steps = Unavailable("no steps")
    chunks = [chunk_inputs(i, f, a, b, window=window, devices=(0, 1), steps=steps)
              for i, (a, b) in enumerate(chunk_spans(cuts))]
    return f, window, chunks


@pytest.mark.parametrize("seed", range(8))
def test_random_concurrent_kernels_and_edges(seed):
    from nsys_diag.analyses.timeline.busy import device_busy
    from nsys_diag.analyses.kernels.tensor_spans import merge_tensor_levels
    from nsys_diag.analyses.kernels.table import kernel_name_stats
    from nsys_diag.analyses.suite import _in_window
    from nsys_diag.analyses.kernels.tensor_cores import kernel_row_names, analyze_tensor_cores, gemm_family
    from nsys_diag.analyses.kernels.tensor_counters import tensor_levels

    f, window, chunks = _random_process(seed)
    wt = (window.start_ns, window.end_ns)
    k_win = _in_window(f["kernels"], window)
    table = kernel_name_stats(k_win)
    busy = device_busy(f["kernels"], f["memcpy"], f["memset"], window, [0, 1])
    whole_tc = analyze_tensor_cores(k_win, f["gpu_metrics"], th=TH, name_table=table, busy=busy,
                                    busy_window=wt)
    family = gemm_family(table["category"].to_numpy(dtype=object),
                         table["tc_basis"].to_numpy(dtype=object))
    lv = tensor_levels(k_win, kernel_row_names(k_win, table), family, f["gpu_metrics"])
    sampling = merge_tensor_sampling([partial_tensor_sampling(c) for c in chunks])
    assert sampling.period_ns == lv.period_ns
    mtable = merge_kernels([partial_kernels(c) for c in chunks], th=TH).table
    assert mtable.equals(table)
    parts = [partial_tensor_cores(c, sampling=sampling) for c in chunks]
    mlv = merge_tensor_levels(parts, table=mtable, sampling=sampling)
    assert lv.name_samples.sum() > 0
    assert np.array_equal(mlv.name_samples, lv.name_samples)
    assert np.allclose(mlv.name_level, lv.name_level, rtol=1e-9, equal_nan=True)
    assert np.allclose(mlv.name_sm, lv.name_sm, rtol=1e-9, equal_nan=True)
    assert (mlv.kernel_samples, mlv.gemm_samples) == (lv.kernel_samples, lv.gemm_samples)
    assert np.isclose(mlv.level_during_gemm, lv.level_during_gemm, rtol=1e-9)
    assert np.isclose(mlv.sm_during_gemm, lv.sm_during_gemm, rtol=1e-9)
    merged = merge_tensor_cores(parts, table=mtable, th=TH, sampling=sampling)
    assert_json_equal(whole_tc.to_json(), merged.to_json())
