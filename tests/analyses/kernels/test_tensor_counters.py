"""Tensor Active readings: the subset-union membership and the name-row lookup (perf shortcuts)
give exactly what merging the subset and a per-row name array give."""
from __future__ import annotations

import numpy as np
import pytest

from nsys_diag.analyses.kernels import tensor_counters as tc


def _intervals(rng, n, n_dev, shuffle):
    s = np.sort(rng.integers(0, 1_000_000, n))
    e = s + rng.integers(-30, 20_000, n)  # empty and inverted intervals too
    dev = rng.integers(0, n_dev, n)
    if shuffle:
        p = rng.permutation(n)
        s, e, dev = s[p], e[p], dev[p]
    return dev.astype(np.int64), s.astype(np.int64), e.astype(np.int64)


def _samples(rng, n, n_dev):
    ts = rng.integers(-5_000, 1_030_000, n).astype(np.int64)
    return tc.Samples(ts, rng.integers(0, n_dev + 1, n).astype(np.int64), rng.random(n))


@pytest.mark.parametrize("seed,n_dev,shuffle", [(0, 1, False), (1, 1, True), (2, 3, False),
                                                (3, 2, True)])
def test_running_ends_membership_equals_the_merged_subset(seed, n_dev, shuffle):
    rng = np.random.default_rng(seed)
    dev, s, e = _intervals(rng, 3_000, n_dev, shuffle)
    pick = rng.random(s.size) < 0.4
    samples = _samples(rng, 2_000, n_dev)  # a device without intervals too
    want = tc.inside_merged(samples, tc.merged_by_device(np.unique(samples.dev), dev[pick],
                                                         s[pick], e[pick]))
    runs = tc.running_ends_by_device(np.unique(samples.dev), dev, s, e, pick)
    got = tc.inside_running(samples, runs)
    np.testing.assert_array_equal(got, want)
    assert want.any() and not want.all()
    # sample timestamps on interval edges: start inside, end outside (half-open)
    edge = tc.Samples(np.concatenate([s[pick], e[pick]]), np.concatenate([dev[pick], dev[pick]]),
                      np.zeros(2 * int(pick.sum())))
    np.testing.assert_array_equal(
        tc.inside_running(edge, tc.running_ends_by_device(np.unique(dev), dev, s, e, pick)),
        tc.inside_merged(edge, tc.merged_by_device(np.unique(dev), dev[pick], s[pick], e[pick])))


def test_row_names_lookup_equals_the_per_row_array():
    rng = np.random.default_rng(4)
    codes = rng.integers(-1, 6, 500).astype(np.int8)  # -1: a kernel without a name
    lut = np.array([3, -1, 0, 2, 1, 4, 5], np.int64)  # code 1 not in the table; -1 → row 5
    rows = lut[codes]
    names = tc.RowNames(codes, lut)
    per_name = np.array([True, False, True, False, True, True])
    want = (rows >= 0) & per_name[np.maximum(rows, 0)]
    np.testing.assert_array_equal(names.mask(per_name), want)
    idx = rng.integers(0, 500, 50)
    np.testing.assert_array_equal(names.take(idx), rows[idx])
    plain = tc.RowNames.of(rows, per_name.size)
    np.testing.assert_array_equal(plain.mask(per_name), want)
    np.testing.assert_array_equal(plain.take(idx), rows[idx])


def _metrics(rng, n_dev, period):
    from kernel_frames import gpu_metrics

    rows = []
    for t in range(0, 1_000_000, period):
        for d in range(n_dev):
            rows.append((t, d, "Tensor Active [Throughput %]", float(rng.integers(0, 80))))
            rows.append((t, d, "SM Active [Throughput %]", float(rng.integers(0, 100))))
    return gpu_metrics(rows)


@pytest.mark.parametrize("long_kernels", [False, True])
def test_tensor_levels_same_with_a_lookup_and_the_longest_kernel_given(long_kernels):
    from kernel_frames import kernels

    rng = np.random.default_rng(7)
    n = 60
    dur = rng.integers(1_000, 40_000 if long_kernels else 4_000, n)
    start = np.cumsum(dur + rng.integers(0, 3_000, n)) - dur  # one after another, some touching
    k = kernels([dict(name=f"k{int(i)}", start_ns=int(a), end_ns=int(a + d), device_id=int(v))
                 for i, a, d, v in zip(rng.integers(0, 4, n), start, dur, rng.integers(0, 2, n))])
    g = _metrics(rng, 2, 10_000)
    codes = k["name"].cat.codes.to_numpy()
    lut = np.array([2, 0, 3, 1, -1], np.int64)  # four names; a missing name has no row
    gemm = np.array([True, False, True, True])
    want = tc.tensor_levels(k, lut[codes], gemm, g)
    got = tc.tensor_levels(k, tc.RowNames(codes, lut), gemm, g,
                           longest_ns=int(dur.max()))
    assert want is not None and got is not None
    assert want.gemm_samples > 0
    assert (want.name_samples.sum() > 0) == long_kernels
    for f in ("kernel_level", "kernel_share_positive", "kernel_samples", "level_during_gemm",
              "sm_during_gemm", "gemm_samples", "period_ns"):
        assert getattr(got, f) == getattr(want, f), f
    for f in ("name_level", "name_sm", "name_samples"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
    # the level during GEMMs: samples inside the merged union of the GEMM-family kernels
    ta = tc.metric_samples(g, "tensor_active")
    rows = lut[codes]
    pick = (rows >= 0) & gemm[np.maximum(rows, 0)]
    dev, s, e = (k[c].to_numpy(np.int64) for c in ("device_id", "start_ns", "end_ns"))
    in_gemm = tc.inside_merged(ta, tc.merged_by_device(np.unique(ta.dev), dev[pick], s[pick],
                                                       e[pick]))
    assert got.gemm_samples == int(in_gemm.sum())
    assert got.level_during_gemm == float(ta.val[in_gemm].mean())
