"""Per-kernel-name summary."""
from __future__ import annotations

import json

import pytest

from kernel_frames import MS, US, kernels
from nsys_diag.analyses.kernels import table as kmod
from nsys_diag.analyses.kernels.table import analyze_kernels
from nsys_diag.model.thresholds import Thresholds

TH = Thresholds()
GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn"
SGEMM = "volta_sgemm_128x64_nn"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"


def _frame():
    rows = []
    t = 0
    for d in (1 * MS, 3 * MS, 2 * MS):  # GEMM: total 6 ms, median 2 ms, max 3 ms
        rows.append(dict(name=GEMM, start_ns=t, end_ns=t + d))
        t += d
    for d in (5 * US, 7 * US, 9 * US, 20 * US):  # elementwise: 41 µs, three of them small
        rows.append(dict(name=ADD, short_name="vectorized_elementwise_kernel", start_ns=t,
                         end_ns=t + d))
        t += d
    rows.append(dict(name=SGEMM, start_ns=t, end_ns=t + 4 * MS))
    return kernels(rows)


def test_known_answers():
    res = analyze_kernels(_frame(), th=TH)
    t = res.table
    assert list(t["name"]) == [GEMM, SGEMM, ADD]  # sorted by total desc
    g = t.iloc[0]
    assert (g["count"], g["total_ns"], g["median_ns"], g["max_ns"], g["min_ns"]) == \
        (3, 6 * MS, 2 * MS, 3 * MS, 1 * MS)
    assert g["mean_ns"] == 2 * MS
    total = 6 * MS + 4 * MS + 41 * US
    assert res.total_ns == total and res.kernel_count == 8
    assert g["share"] == pytest.approx(6 * MS / total)
    assert t["share"].sum() == pytest.approx(1.0)
    assert g["category"] == "gemm" and bool(g["tensor_core"]) is True
    s = t.iloc[1]
    assert s["category"] == "gemm" and bool(s["tensor_core"]) is False and s["tc_basis"] == "no_tc"
    e = t.iloc[2]
    assert e["short_name"] == "vectorized_elementwise_kernel" and e["category"] == "elementwise"
    assert e["median_ns"] == 8 * US  # (7 + 9) / 2
    # small kernels (< 10 µs): 3 of 8 launches, 21 µs of kernel time
    assert res.small_count == 3
    assert res.small_fraction == pytest.approx(3 / 8)
    assert res.small_time_share == pytest.approx(21 * US / total)
    # categories
    cats = {r["category"]: r for r in res.categories.to_dict("records")}
    assert cats["gemm"]["total_ns"] == 10 * MS and cats["gemm"]["tc_ns"] == 6 * MS
    assert cats["elementwise"]["count"] == 4
    assert res.category_share("gemm") == pytest.approx(10 * MS / total)
    assert res.category_share("communication") == 0.0


def test_p10_and_p90_are_launch_durations_at_nearest_rank():
    """Per name: the sorted durations at floor(0.1·(n−1)) and ceil(0.9·(n−1)) — durations that
    occurred, so one launch of a kind is its own p10 and p90."""
    t = analyze_kernels(_frame(), th=TH).table.set_index("name")
    assert (t.loc[GEMM, "p10_ns"], t.loc[GEMM, "p90_ns"]) == (1 * MS, 3 * MS)  # n 3: ranks 0, 2
    assert (t.loc[ADD, "p10_ns"], t.loc[ADD, "p90_ns"]) == (5 * US, 20 * US)  # n 4: ranks 0, 3
    assert t.loc[SGEMM, "p10_ns"] == t.loc[SGEMM, "p90_ns"] == 4 * MS
    many = kernels([dict(name=GEMM, start_ns=10 * MS * i, end_ns=10 * MS * i + (i + 1) * US)
                    for i in range(21)])  # 1..21 µs: ranks 2 and 18
    row = analyze_kernels(many, th=TH).to_json()["kernels"][0]
    assert (row["p10_ns"], row["median_ns"], row["p90_ns"]) == (3 * US, 11 * US, 19 * US)


def test_to_json_top_rows_and_total():
    res = analyze_kernels(_frame(), th=TH, max_rows=2)
    j = res.to_json()
    json.dumps(j, allow_nan=False)
    assert [r["name"] for r in j["kernels"]] == [GEMM, SGEMM]
    assert j["kernels_total"] == 3
    row = j["kernels"][0]
    for key in ("name", "short_name", "count", "total_ns", "mean_ns", "median_ns", "max_ns",
                "share", "category", "tensor_core"):
        assert key in row
    assert isinstance(row["total_ns"], int) and isinstance(row["tensor_core"], bool)
    assert j["kernel_summary"]["small_count"] == 3
    assert {c["category"] for c in j["kernel_categories"]} == {"gemm", "elementwise"}


def test_window_keeps_overlapping_kernels_with_full_duration():
    k = kernels([dict(name="a", start_ns=0, end_ns=100), dict(name="a", start_ns=150, end_ns=300),
                 dict(name="b", start_ns=400, end_ns=500)])
    res = analyze_kernels(k, th=TH, window=(200, 450))
    assert res.kernel_count == 2
    assert dict(zip(res.table["name"], res.table["total_ns"])) == {"a": 150, "b": 100}
    assert res.to_json()["kernel_summary"]["window"] == [200, 450]


def test_empty_input():
    from nsys_diag.model.contracts import KERNELS

    res = analyze_kernels(KERNELS.empty(), th=TH)
    assert not res.available
    j = res.to_json()
    json.dumps(j, allow_nan=False)
    assert j["kernels"] == [] and j["kernels_total"] == 0
    assert j["kernel_summary"]["small_fraction"] is None
    assert analyze_kernels(_frame(), th=TH, window=(10**12, 10**12 + 1)).kernel_count == 0


def test_names_classified_once_per_unique_name(monkeypatch):
    seen = []
    real = kmod.catalogue

    def spy(names, shorts=None):
        seen.append(len(names))
        return real(names, shorts)

    monkeypatch.setattr(kmod, "catalogue", spy)
    rows = [dict(name=("a" if i % 2 else "nvjet_x"), start_ns=i * 10, end_ns=i * 10 + 5)
            for i in range(2000)]
    analyze_kernels(kernels(rows), th=TH)
    assert seen == [2]


def test_small_kernel_threshold_is_configurable():
    th = TH.with_overrides(small_kernel_ns=1 * MS + 1)
    res = analyze_kernels(_frame(), th=th)
    assert res.small_count == 5  # four elementwise + the 1 ms GEMM


def test_real_fastvideo(shared):
    from nsys_diag.loaders import load_trace

    b = load_trace(shared("nsys/fastvideo_train_2xh100_2026.2.sqlite"))
    res = analyze_kernels(b.kernels, th=TH)
    j = res.to_json()
    json.dumps(j, allow_nan=False)
    assert res.device_ids == (0, 1)
    assert res.kernel_count == len(b.kernels)
    assert j["kernels_total"] == len(res.table)
    assert sum(r["count"] for r in res.table.to_dict("records")) == len(b.kernels)
    by_short = {r["short_name"]: r for r in j["kernels"]}
    assert by_short["flash_fwd_kernel"]["tensor_core"] is True
    assert by_short["ncclDevKernel_SendRecv"]["category"] == "communication"
    assert j["kernels"][0]["short_name"] == "flash_fwd_kernel"  # largest total time


REAL_NSYS = ["nsys/fastvideo_train_2xh100_2026.2.sqlite", "nsys/nvfuser_matmul_h200_2024.6.sqlite",
             "nsys/saxpy_mpi_a100_2022.2.sqlite", "nsys/mordred_rtx6000_2021.sqlite",
             "nsys/centerformer_nvtx_only_2022.4.sqlite", "nsys/dynamicvit_no_cuda_tables.sqlite"]


@pytest.mark.parametrize("rel", REAL_NSYS)
def test_every_real_trace_through_all_kernel_level_analyses(shared, rel):
    """Each kernel-level analysis runs on every real export and its JSON is strict-JSON safe."""
    from nsys_diag.analyses.communication import analyze_communication
    from nsys_diag.analyses.gpu_metrics import analyze_gpu_metrics
    from nsys_diag.analyses.memory import analyze_memory
    from nsys_diag.analyses.kernels.tensor_cores import analyze_tensor_cores
    from nsys_diag.analyses.transfers import analyze_transfers
    from nsys_diag.loaders import load_trace

    b = load_trace(shared(rel))
    k = analyze_kernels(b.kernels, th=TH)
    tc = analyze_tensor_cores(b.kernels, b.gpu_metrics, th=TH)
    tr = analyze_transfers(b.memcpy, b.memset, b.gpus, th=TH)
    out = {
        "kernels": k.to_json(), "tensor_cores": tc.to_json(), "transfers": tr.to_json(),
        "gpu_metrics": analyze_gpu_metrics(b.gpu_metrics, th=TH).to_json(),
        "communication": analyze_communication(b.kernels, window=None, th=TH).to_json(),
        "memory": analyze_memory(b.gpu_memory, b.gpus, th=TH).to_json(),
    }
    json.dumps(out, allow_nan=False)
    assert k.kernel_count == len(b.kernels) == int(k.table["count"].sum())
    assert tc.available == (len(b.kernels) > 0)
    assert tr.available == (len(b.memcpy) + len(b.memset) > 0)
    if tr.available:
        assert sum(v.bytes for v in tr.by_kind.values()) == int(b.memcpy["bytes"].sum())
        launched_sync = b.memcpy["launch_api"].astype(str).isin(["cudaMemcpy", "cuMemcpyHtoD",
                                                                 "cuMemcpyDtoH"])
        assert tr.sync_copies >= int(launched_sync.sum())
