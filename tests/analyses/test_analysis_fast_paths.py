"""The analyses' performance shortcuts (made for `make bench`) give exactly the slow paths' result."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses.timeline import intervals as iv
from nsys_diag.analyses.gaps.causes import _launched_late
from nsys_diag.analyses.gpu_metrics import canonical_samples
from nsys_diag.analyses.timeline.arrays import take_rows


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
    got = take_rows(df, keep)
    pd.testing.assert_frame_equal(got, df.loc[keep].reset_index(drop=True))


@pytest.mark.parametrize("ties", [False, True])
def test_launched_late_with_and_without_ties(ties):
    rng = np.random.default_rng(5)
    ks = np.cumsum(rng.integers(1, 50, 300))
    if ties:
        ks[10] = ks[11]  # two kernels start at the same ns: the lexsort path decides
    le = ks - rng.integers(-20, 20, 300)
    le[::7] = -1
    gap_e = np.concatenate([ks[::3], [ks[-1] + 5]])
    gap_s = gap_e - 10
    got = _launched_late(ks, le, gap_s, gap_e)
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

    from nsys_diag.analyses.kernels.table import analyze_kernels
    from nsys_diag.analyses.kernels.tensor_cores import analyze_tensor_cores
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


# ------------------------------------------------------------------ run_suite speed-up (bench)
def _rand_kernels(rng, n, n_dev=1, shuffle=False, missing_launch=False):
    from kernel_frames import kernels

    start = np.sort(rng.integers(0, 5_000_000, n))
    end = start + rng.integers(-50, 40_000, n)
    launch = start - rng.integers(0, 20_000, n)
    if missing_launch:
        launch[rng.random(n) < 0.1] = -1
    rows = [dict(name=f"k{int(i) % 5}", start_ns=int(s), end_ns=int(e), device_id=int(d),
                 launch_start_ns=int(ls), launch_end_ns=int(ls) + 500)
            for i, s, e, d, ls in zip(rng.integers(0, 99, n), start, end,
                                      rng.integers(0, n_dev, n), launch)]
    k = kernels(rows)
    return k.sample(frac=1, random_state=1).reset_index(drop=True) if shuffle else k


def _copies(rng, n, n_dev):
    from kernel_frames import memcpy

    s = np.sort(rng.integers(0, 5_000_000, n))
    return memcpy([dict(start_ns=int(a), end_ns=int(a) + int(d), device_id=int(v))
                   for a, d, v in zip(s, rng.integers(1, 60_000, n), rng.integers(0, n_dev, n))])


@pytest.mark.parametrize("seed,n_dev,shuffle", [(0, 1, False), (1, 1, True), (2, 3, False),
                                                (3, 2, True)])
@pytest.mark.parametrize("window", [(0, 6_000_000), (1_000_000, 3_000_000), (2_000_000, 2_000_000)])
def test_device_busy_equals_the_masked_clip_then_merge(seed, n_dev, shuffle, window):
    from kernel_frames import memset

    from nsys_diag.analyses.timeline.busy import Window, device_busy

    rng = np.random.default_rng(seed)
    k = _rand_kernels(rng, 400, n_dev, shuffle)
    m = _copies(rng, 40, n_dev)
    lo, hi = window
    before = k.copy(deep=True)
    busy = device_busy(k, m, memset([]), Window(lo, hi, "user"), [0, 5])
    pd.testing.assert_frame_equal(k, before)  # the in-place clip touches only its own arrays
    assert sorted(busy) == sorted({0, 5} | set(range(n_dev)))
    ks, ke, kd = (k[c].to_numpy(np.int64) for c in ("start_ns", "end_ns", "device_id"))
    cs, ce, cd = (m[c].to_numpy(np.int64) for c in ("start_ns", "end_ns", "device_id"))
    for d, b in busy.items():  # reference: the pre-bench algorithm
        sel = (kd == d) & (ke > lo) & (ks < hi)
        k_s, k_e = iv.merge_intervals(np.clip(ks[sel], lo, hi), np.clip(ke[sel], lo, hi))
        c_s, c_e = iv.merge_intervals(*iv.clip(cs[cd == d], ce[cd == d], lo, hi))
        b_s, b_e = iv.merge_intervals(np.r_[k_s, c_s], np.r_[k_e, c_e])
        assert b.compute_starts.tolist() == k_s.tolist() and b.compute_ends.tolist() == k_e.tolist()
        assert b.copy_starts.tolist() == c_s.tolist() and b.copy_ends.tolist() == c_e.tolist()
        assert b.busy_starts.tolist() == b_s.tolist() and b.busy_ends.tolist() == b_e.tolist()
        assert b.busy_ns == int((b_e - b_s).sum())
        o_s, o_e = iv.subtract_merged(c_s, c_e, k_s, k_e)
        assert b.copy_only_ns == int((o_e - o_s).sum())
        ws, we = np.array([lo, lo + 7, hi - 100]), np.array([hi, hi - 3, hi + 50])
        assert b.covered_per_window("compute", ws, we).tolist() == \
            iv.covered_length_per_window(k_s, k_e, ws, we).tolist()


def _cascade(gs, ge, evidence, launch):
    """Reference: the pre-bench cause attribution (intersect, then subtract, cause by cause)."""
    from nsys_diag.model.vocabulary import GAP_CAUSES

    rem_s, rem_e = gs, ge
    mat = np.zeros((gs.size, len(GAP_CAUSES)), np.int64)
    sets = list(evidence) + [(gs[launch], ge[launch])]
    for ci in range(len(GAP_CAUSES)):
        c_s, c_e = (rem_s, rem_e) if ci == len(sets) else iv.intersect_merged(rem_s, rem_e, *sets[ci])
        mat[:, ci] = iv.covered_length_per_window(c_s, c_e, gs, ge)
        rem_s, rem_e = iv.subtract_merged(rem_s, rem_e, c_s, c_e)
    return mat


@pytest.mark.parametrize("seed", range(6))
def test_gap_causes_equal_the_intersect_subtract_cascade(seed):
    from nsys_diag.analyses.gaps.causes import _cause_ns

    rng = np.random.default_rng(seed)

    def merged(n, span=100_000, dur=3_000):
        s = rng.integers(0, span, n)
        return iv.merge_intervals(s, s + rng.integers(1, dur, n))

    busy_s, busy_e = merged(300)
    gs, ge = iv.find_gaps(busy_s, busy_e, 500, 99_000, min_gap=10)
    from nsys_diag.model.vocabulary import GAP_CAUSES

    # one evidence set per cause before launch (launch and other are not interval evidence)
    evidence = [merged(rng.integers(0, 30)) for _ in range(len(GAP_CAUSES) - 2)]
    launch = rng.random(gs.size) < 0.3
    assert _cause_ns(gs, ge, evidence, launch).tolist() == _cascade(gs, ge, evidence, launch).tolist()


@pytest.mark.parametrize("sort", [True, False])
def test_cpu_description_of_a_gap_equals_the_full_scan(sort):
    import handframes as hf

    from nsys_diag.analyses.gaps.activity import NO_API_CALL, cpu_overlap as _cpu_overlap

    rng = np.random.default_rng(7)
    s = rng.integers(0, 1_000_000, 300)
    s = np.sort(s) if sort else s
    e = s + np.where(rng.random(300) < 0.02, 200_000, rng.integers(0, 900, 300))  # a few long calls
    names = rng.choice(["cudaLaunchKernel", "cudaStreamSynchronize", "cudaMemcpyAsync"], 300)
    api = hf.api([dict(start_ns=int(a), end_ns=int(b), name=str(n)) for a, b, n in zip(s, e, names)])

    def full_scan(gs, ge):  # reference: every call scanned, the names' overlaps summed in Python
        ov = np.minimum(e, ge) - np.maximum(s, gs)
        if ov.max() <= 0:
            return NO_API_CALL
        hit = np.flatnonzero(ov > 0)
        by_name: dict[str, list[int]] = {}
        for j in hit:
            by_name.setdefault(str(names[j]), []).append(int(ov[j]))
        name = max(sorted(by_name), key=lambda n: sum(by_name[n]))  # ties: the first name
        ns, n = min(sum(by_name[name]), ge - gs), len(by_name[name])
        frac = ns / max(ge - gs, 1)
        times = f" ×{n}" if n > 1 else ""
        more = f" (+{hit.size - n} other calls)" if hit.size > n else ""
        return (f"in {name}{times} for {f'{frac:.0%}' if frac >= 0.01 else '<1%'} of the "
                f"gap{more}")

    overlap = _cpu_overlap(api)
    describe = lambda gs, ge: overlap(gs, ge)[1]  # noqa: E731 - its text
    for gs in rng.integers(-1000, 1_200_000, 60).tolist():
        for width in (1, 50, 5_000, 300_000):
            assert describe(gs, gs + width) == full_scan(gs, gs + width)


def test_longest_gaps_first_equals_a_stable_sort():
    from nsys_diag.analyses.gaps.causes import _longest_first

    rng = np.random.default_rng(4)
    for n in (0, 3, 10, 11, 500):
        dur = rng.integers(0, 8, n)  # many ties
        assert _longest_first(dur, 10).tolist() == np.argsort(-dur, kind="stable")[:10].tolist()


@pytest.mark.parametrize("n_names", [1, 5, 40])
def test_name_group_stats_equal_pandas_groupby(n_names):
    from nsys_diag.analyses.kernels.table import group_stats

    rng = np.random.default_rng(n_names)
    codes = rng.integers(-1, n_names, 3000).astype(np.int8)
    dur = rng.integers(0, 10_000, 3000).astype(np.int64)
    got = group_stats(codes, dur.copy())
    want = (pd.DataFrame({"code": codes, "dur": dur}).groupby("code", sort=False)["dur"]
            .agg(["count", "sum", "median", "min", "max"]))
    assert got["code"].tolist() == want.index.tolist()  # order of first appearance
    for col in ("count", "sum", "min", "max"):
        assert got[col].tolist() == want[col].tolist()
    assert got["median"].tolist() == want["median"].tolist()  # exact, not approx
    assert got["first_row"].tolist() == [int(np.argmax(codes == c)) for c in want.index]


def _catalogue_cases() -> list:
    """The kernel-catalogue cases of ``kernels/test_kernel_catalog.py``, loaded by path (that
    folder is on ``sys.path`` only when pytest collected it first)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_kernel_catalog_cases", Path(__file__).parent / "kernels" / "test_kernel_catalog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


def test_catalogue_of_a_few_names_equals_the_vectorised_match(monkeypatch):
    CASES = _catalogue_cases()
    from nsys_diag.analyses.kernels import catalog as kc

    names = [c[0] for c in CASES]
    shorts = [c[1] for c in CASES]
    few = [kc.catalogue(names[i:i + 20], shorts[i:i + 20]) for i in range(0, len(names), 20)]
    monkeypatch.setattr(kc, "FEW_TEXTS", -1)  # force pandas str.contains for every rule
    many = [kc.catalogue(names[i:i + 20], shorts[i:i + 20]) for i in range(0, len(names), 20)]
    for a, b in zip(few, many):
        pd.testing.assert_frame_equal(a, b)


def _metric_frame(rng, n_ts, devices):
    from kernel_frames import gpu_metrics

    names = ["SMs Active [Throughput %]", "Tensor Active [Throughput %]", "GPC Clock Frequency [MHz]",
             "DRAM Read Bandwidth [Throughput %]"]
    rows = [(int(t) * 1000, d, n, float(rng.integers(0, 101)))
            for t in range(n_ts) for d in devices for n in names]
    return gpu_metrics(rows)


@pytest.mark.parametrize("overlap", [False, True])
def test_gpu_metric_means_per_device_and_phase_equal_per_subset_means(overlap):
    from nsys_diag.analyses.gpu_metrics import _means, analyze_gpu_metrics, canonical_samples
    from nsys_diag.model.thresholds import Thresholds

    rng = np.random.default_rng(11)
    g = _metric_frame(rng, 400, [0, 2])
    s = np.sort(rng.integers(0, 400_000, 30))
    pw = pd.DataFrame({"phase": rng.choice(["fwd", "bwd", "data"], 30), "start_ns": s,
                       "end_ns": s + (rng.integers(1, 40_000, 30) if overlap else 0)})
    if not overlap:  # disjoint windows (exclusive phase instances)
        pw["end_ns"] = np.minimum(np.r_[s[1:], 500_000], s + 9_000)
    r = analyze_gpu_metrics(g, pw, th=Thresholds(), window=(20_000, 380_000))
    samples = canonical_samples(g.loc[(g["ts_ns"] >= 20_000) & (g["ts_ns"] < 380_000)])
    assert r.overall == _means(samples)
    assert dict(r.per_device) == {d: _means(samples.loc[samples["device_id"] == d]) for d in (0, 2)}
    ts = samples["ts_ns"].to_numpy()
    want = []
    for phase, w in pw.groupby("phase", sort=False):
        ms, me = iv.merge_intervals(w["start_ns"].to_numpy(), w["end_ns"].to_numpy())
        want.append((phase, _means(samples.loc[iv.containing_interval(ts, ms, me) >= 0])))
    assert list(r.per_phase) == want  # exact float equality


def test_tensor_active_with_the_busy_intervals_equals_merging_the_kernels():
    from kernel_frames import gpu_metrics, memcpy, memset

    from nsys_diag.analyses.timeline.busy import Window, device_busy
    from nsys_diag.analyses.suite import _in_window
    from nsys_diag.analyses.kernels.tensor_counters import (inside_union, kernel_union_membership,
                                                    metric_samples)

    rng = np.random.default_rng(3)
    k = _rand_kernels(rng, 300, n_dev=2)
    g = gpu_metrics([(int(t), int(d), "Tensor Active [Throughput %]", float(rng.integers(0, 3)))
                     for t in rng.integers(-10_000, 5_100_000, 400) for d in (0, 1)])
    for lo, hi in [(1_000_000, 4_000_000), (0, 6_000_000), (2_500_000, 2_500_000)]:
        w = Window(lo, hi, "user")
        busy = device_busy(k, memcpy([]), memset([]), w)
        k_win = _in_window(k, w)
        ta = metric_samples(g, "tensor_active")
        want = inside_union(ta, k_win["device_id"].to_numpy(), k_win["start_ns"].to_numpy(),
                            k_win["end_ns"].to_numpy())
        assert (kernel_union_membership(g, busy, (lo, hi), k_win) == want).all()


@pytest.mark.parametrize("missing", [False, True])
def test_steps_and_phases_are_the_same_with_kernels_in_or_out_of_launch_order(missing):
    import handframes as hf

    from nsys_diag.analyses.timeline.busy import choose_window, device_busy
    from nsys_diag.analyses.steps.phases import analyze_phases
    from nsys_diag.analyses.steps.detection import analyze_steps
    from nsys_diag.model import contracts as C

    rng = np.random.default_rng(5)
    rows = []
    for i in range(8):  # 8 steps of 600 µs: data, forward, backward
        t = 100_000 + i * 600_000
        rows += [dict(text=f"step_{i}", start_ns=t, end_ns=t + 600_000),
                 dict(text="data", start_ns=t + 1_000, end_ns=t + 100_000),
                 dict(text="forward", start_ns=t + 100_000, end_ns=t + 300_000),
                 dict(text="backward", start_ns=t + 300_000, end_ns=t + 590_000)]
    nv = hf.nvtx(rows)
    from kernel_frames import kernels

    edges = sorted({r[k] for r in rows for k in ("start_ns", "end_ns")})  # launches on boundaries
    at_edges = kernels([dict(name="edge", start_ns=t + 10, end_ns=t + 2_000, launch_start_ns=t)
                        for t in edges])
    in_order = pd.concat([_rand_kernels(rng, 500, missing_launch=missing), at_edges],
                         ignore_index=True)
    in_order = in_order.sort_values("launch_start_ns", kind="stable").reset_index(drop=True)
    shuffled = in_order.sample(frac=1, random_state=3).reset_index(drop=True)
    out = []
    for k in (in_order, shuffled):
        steps = analyze_steps(nv, k)
        w = choose_window(steps, k, C.MEMCPY.empty(), C.MEMSET.empty())
        busy = device_busy(k, C.MEMCPY.empty(), C.MEMSET.empty(), w, [0])
        ph = analyze_phases(nv, steps, k, busy)
        out.append((steps.kernel_counts.tolist(), steps.to_json(), ph.to_json(),
                    ph.unattributed_kernels))
    assert out[0] == out[1]
    assert sum(out[0][0]) > 0 and any(r["gpu_work_ms"] for r in out[0][2])


def test_suite_with_analyses_in_worker_threads_equals_sequential(monkeypatch):
    """Kernel table, gaps and GPU metrics on worker threads (large processes) give the same
    results as run one after another."""
    from nsys_diag.analyses import suite
    from nsys_diag.loaders import load_trace

    path = Path(__file__).resolve().parents[2] / "sample_traces" / "multi_gpu.sqlite"
    if not path.exists():
        pytest.skip("sample trace missing")
    bundle = load_trace(path)
    runs = []
    for rows in (10**12, 0):  # sequential, then threaded
        monkeypatch.setattr(suite, "PARALLEL_MIN_ROWS", rows)
        s = suite.run_suite(bundle)
        runs.append([(p.gaps.to_json(), p.kernels.to_json(), p.gpu_metrics.to_json(),
                      p.tensor_cores.to_json(), p.phases.to_json(), p.verdict.code)
                     for p in s.processes])
    assert runs[0] == runs[1] and runs[0][0][0]["count"] > 0
