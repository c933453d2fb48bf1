"""The analyses' performance shortcuts (made for `make bench`) give exactly the slow paths' result."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses import intervals as iv
from nsys_diag.analyses.gaps import _next_kernel_launched_late
from nsys_diag.analyses.gpu_metrics import canonical_samples
from nsys_diag.analyses.suite import _take_rows


def _slow_merge(s, e):
    """Reference union: sort, then sweep (plain Python)."""
    pairs = sorted((a, b) for a, b in zip(s.tolist(), e.tolist()) if b > a)
    out = []
    for a, b in pairs:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [tuple(x) for x in out]


@pytest.mark.parametrize("shuffle", [False, True])
def test_merge_intervals_sorted_and_unsorted_input(shuffle):
    rng = np.random.default_rng(3)
    s = np.sort(rng.integers(0, 10_000, 500))
    e = s + rng.integers(-5, 60, 500)  # some empty/inverted intervals too
    if shuffle:
        p = rng.permutation(500)
        s, e = s[p], e[p]
    s_in, e_in = s.copy(), e.copy()
    ms, me = iv.merge_intervals(s, e)
    assert list(zip(ms.tolist(), me.tolist())) == _slow_merge(s, e)
    np.testing.assert_array_equal(s, s_in)  # inputs untouched
    np.testing.assert_array_equal(e, e_in)
    ms[:] = -1  # outputs never alias the inputs
    np.testing.assert_array_equal(s, s_in)


@pytest.mark.parametrize("keep_kind", ["all", "contiguous", "scattered", "none"])
@pytest.mark.parametrize("index", ["range", "shifted"])
def test_take_rows_equals_loc_reset_index(keep_kind, index):
    n = 50
    df = pd.DataFrame({"a": np.arange(n), "b": pd.Categorical(np.arange(n) % 3),
                       "c": np.arange(n) * 1.5})
    if index == "shifted":
        df.index = np.arange(n) + 100
    keep = {"all": np.ones(n, bool), "contiguous": (np.arange(n) >= 10) & (np.arange(n) < 30),
            "scattered": np.arange(n) % 4 == 0, "none": np.zeros(n, bool)}[keep_kind]
    got = _take_rows(df, keep)
    pd.testing.assert_frame_equal(got, df.loc[keep].reset_index(drop=True))


@pytest.mark.parametrize("ties", [False, True])
def test_next_kernel_launched_late_with_and_without_ties(ties):
    rng = np.random.default_rng(5)
    ks = np.cumsum(rng.integers(1, 50, 300))
    if ties:
        ks[10] = ks[11]  # two kernels start at the same ns: the lexsort path decides
    le = ks - rng.integers(-20, 20, 300)
    le[::7] = -1
    k = pd.DataFrame({"start_ns": ks, "launch_end_ns": le})
    gap_e = np.concatenate([ks[::3], [ks[-1] + 5]])
    gap_s = gap_e - 10
    got = _next_kernel_launched_late(k, gap_s, gap_e)
    want = []
    for gs, ge in zip(gap_s.tolist(), gap_e.tolist()):  # reference: smallest launch end wins
        at = sorted(x for x, t in zip(le.tolist(), ks.tolist()) if t == ge)
        want.append(bool(at) and at[0] != -1 and at[0] >= gs)
    assert got.tolist() == want


def test_canonical_samples_key_is_categorical_with_the_same_values():
    metric = pd.Categorical(["SMs Active [Throughput %]", "GPC Clock Frequency [MHz]",
                             "Tensor Active [Throughput %]"] * 4)
    g = pd.DataFrame({"ts_ns": np.repeat(np.arange(4), 3).astype(np.int64),
                      "device_id": np.zeros(12, np.int64), "metric": metric,
                      "value": np.arange(12, dtype=float)})
    s = canonical_samples(g)
    assert isinstance(s["key"].dtype, pd.CategoricalDtype)
    assert s["key"].astype(str).tolist() == ["sm_active", "tensor_active"] * 4
    np.testing.assert_allclose(s["value"].to_numpy(), [0.0, 0.02, 0.03, 0.05, 0.06, 0.08,
                                                       0.09, 0.11])


def test_canonical_samples_sums_nvlink_metrics_per_sample():
    names = ["NVLink RX User Data [Throughput %]", "NVLink RX User Nonposted [Throughput %]",
             "SMs Active [Throughput %]"]
    g = pd.DataFrame({"ts_ns": np.repeat(np.arange(2), 3).astype(np.int64),
                      "device_id": np.zeros(6, np.int64),
                      "metric": pd.Categorical(names * 2),
                      "value": np.array([10.0, 20.0, 50.0, 70.0, 60.0, 40.0])})
    s = canonical_samples(g)
    got = sorted(zip(s["ts_ns"].tolist(), s["key"].astype(str).tolist(),
                     np.round(s["value"].to_numpy(), 6).tolist()))
    assert got == [(0, "nvlink_rx", 0.3), (0, "sm_active", 0.5),
                   (1, "nvlink_rx", 1.0), (1, "sm_active", 0.4)]  # 70 + 60 % capped at 100 %


def test_tensor_cores_with_the_kernels_name_table_equals_without():
    from kernel_frames import MS, kernels

    from nsys_diag.analyses.kernels import analyze_kernels
    from nsys_diag.analyses.tensor_cores import analyze_tensor_cores
    from nsys_diag.model.thresholds import Thresholds

    th = Thresholds()
    k = kernels([{"name": n, "start_ns": i * MS, "end_ns": i * MS + (i % 5 + 1) * 100_000}
                 for i, n in enumerate(["sm90_xmma_gemm_bf16bf16_bf16f32", "ampere_sgemm_128x64_nn",
                                        "void at::native::vectorized_elementwise_kernel<4>",
                                        "flash_fwd_kernel"] * 7)])
    table = analyze_kernels(k, th=th).table
    shared = analyze_tensor_cores(k, None, th=th, name_table=table)
    alone = analyze_tensor_cores(k, None, th=th)
    assert shared.to_json() == alone.to_json()
    assert shared.to_json()["share_of_kernel_time"] == alone.to_json()["share_of_kernel_time"]
