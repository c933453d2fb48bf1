"""Roofline analysis: hand calculation on the real A100 export, known answers on generated CSVs,
missing metrics, peaks (ncu / table / architecture), Tensor Core evidence, and the GPU table."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from nsys_diag.analyses.base import Unavailable
from nsys_diag.analyses.roofline.gpu_specs import SPECS, arch_rates, lookup_gpu
from nsys_diag.analyses.roofline.analysis import (ROOFLINE_METRICS, RooflineResult, _classify,
                                         analyze_roofline)
from nsys_diag.loaders import load_trace
from nsys_diag.model import contracts as C
from nsys_diag.model.thresholds import DEFAULT_THRESHOLDS
from nsys_diag.synth.ncu import SynthKernel, write_ncu_csv

REAL = "ncu/interp_a100_details.csv"


def a100_gpus(name: str = "NVIDIA A100-SXM4-40GB", bandwidth: float = 1555.2e9) -> pd.DataFrame:
    return C.GPUS.validate(pd.DataFrame([dict(
        device_id=0, name=name, chip_name="GA100", sm_count=108, clock_hz=1_410_000_000,
        memory_bandwidth_bytes_per_s=bandwidth, total_memory_bytes=42_505_273_344, cc_major=8,
        cc_minor=0, bus_location="")]))


def roof(path, gpus=None, **kw):
    b = load_trace(path)
    return analyze_roofline(b.ncu_launches, b.ncu_metrics, b.gpus if gpus is None else gpus, **kw)


def by_name(result: RooflineResult) -> dict:
    return {k.normalized_name: k for k in result.kernels}


def assert_json_safe(obj: dict) -> None:
    json.dumps(obj, allow_nan=False)


# ------------------------------------------------------------------ real A100 export (§11.2)
def test_real_a100_launch0_by_hand(shared):
    """NCU_CSV.md §11.2, recomputed here from the file's own printed metric values."""
    r = roof(shared(REAL), gpus=a100_gpus())
    assert isinstance(r, RooflineResult)
    k = by_name(r)["ampere_sgemm"]
    t = 7_488e-9  # gpu__time_duration.sum "7,488" nsecond
    flops = 6_144 + 8_192 + 2 * 65_536  # fadd + fmul + 2·ffma; FP64/FP16 counters are 0
    assert flops == 145_408
    assert k.launches == 1 and k.time_ns == 7_488
    assert k.flops == flops
    assert k.flops_by_precision == {"fp64": 0.0, "fp32": 145_408.0, "fp16": 0.0}
    assert k.dram_bytes == 512 and k.l2_bytes == 233_856 and k.l1_bytes == 384
    assert k.ai_dram == pytest.approx(284.0)
    assert k.ai_l2 == pytest.approx(145_408 / 233_856)  # 0.622
    assert k.ai_l1 == pytest.approx(378.667, rel=1e-4)
    assert k.achieved_flop_per_s == pytest.approx(flops / t)  # 19.42 GFLOP/s
    assert k.achieved_flop_per_s == pytest.approx(19.42e9, rel=1e-3)
    assert k.achieved_dram_bytes_per_s == pytest.approx(512 / t)  # 68.4 MB/s
    assert k.achieved_l2_bytes_per_s == pytest.approx(31.23e9, rel=1e-3)
    # FP32 peak at the profiled clock: 128 FLOP × 108 SM × 1.00915 GHz = 13.95 TFLOP/s → 0.14 %
    assert k.pct_of_peak_flop == pytest.approx(100 * (flops / t) / (128 * 108 * 1_009_150_443.18))
    assert k.pct_of_peak_flop == pytest.approx(0.139, abs=0.001)
    assert k.pct_of_peak_dram == pytest.approx(100 * (512 / t) / 1555.2e9)  # 0.0044 %
    # ncu's SOLBottleneck: SM 0.25 %, Mem 1.38 % both < 60 and no waves metric → latency
    assert (k.sol_compute_pct, k.sol_memory_pct) == (0.25, 1.38)
    assert k.bound == "latency" and k.bound_source == "ncu SOL"
    assert k.tensor_core_share == 0.0  # tensor pipe count 0, hfma 0


def test_real_a100_launch1_by_hand(shared):
    r = roof(shared(REAL), gpus=a100_gpus())
    k = by_name(r)["splitKreduce_kernel"]
    assert k.time_ns == 4_224
    assert k.flops == 12 + 4  # fadd 12 + fmul 4, ffma 0
    assert k.dram_bytes == 256 and k.ai_dram == pytest.approx(16 / 256)
    assert k.ai_l2 == pytest.approx(16 / 142_208)
    assert k.bound == "latency"  # SM 0.02 %, Mem 2.58 %


def test_real_a100_everything_below_peaks_and_latency_bound(shared):
    r = roof(shared(REAL), gpus=a100_gpus())
    assert r.gpu == "NVIDIA A100-SXM4-40GB"
    assert r.above_peak == ()
    assert r.time_weighted["latency_bound"] == pytest.approx(1.0)
    assert r.total_time_ns == 7_488 + 4_224
    assert "built-in table" in r.peaks.provenance and "A100" in r.peaks.provenance
    assert r.peaks.dram_bytes_per_s == 1555.2e9  # device-reported bandwidth wins over the table
    fp32_peak_at_clock = r.peaks.flop_per_s["fp32"]
    # median profiled clock of the two launches (1.00915 and 0.95613 GHz)
    assert r.peaks.sm_clock_hz == pytest.approx((1_009_150_443.18 + 956_132_505.61) / 2)
    assert fp32_peak_at_clock == pytest.approx(128 * 108 * r.peaks.sm_clock_hz)
    for k in r.kernels:
        assert k.achieved_flop_per_s < fp32_peak_at_clock
        assert k.achieved_dram_bytes_per_s < r.peaks.dram_bytes_per_s
        assert 0 < k.pct_of_peak_flop < 1 and 0 < k.pct_of_peak_dram < 1
    assert r.peaks.ridge_point()["fp32"] == pytest.approx(fp32_peak_at_clock / 1555.2e9)
    assert r.confidence == "high"
    assert_json_safe(r.to_json())


def test_real_a100_cycle_fallback_reproduces_duration(shared):
    b = load_trace(shared(REAL))
    m = b.ncu_metrics[b.ncu_metrics["metric"] != "gpu__time_duration.sum"]
    r = analyze_roofline(b.ncu_launches, m, a100_gpus())
    k = by_name(r)["ampere_sgemm"]
    assert "sm__cycles_elapsed.avg ÷ sm__cycles_elapsed.avg.per_second" in r.duration_source
    # 7,556.52 / 1,009,150,443.18 s⁻¹ = 7,488.0 ns (NCU_CSV.md §6.1)
    assert abs(r.launch_table.loc[0, "t_s"] * 1e9 - 7488.0) < 0.01
    assert k.time_ns == 7_488


def test_real_a100_without_gpu_name_keeps_work_but_no_peaks(shared):
    r = roof(shared(REAL))  # the CSV names no GPU
    assert r.gpu is None
    assert all(v is None for v in r.peaks.flop_per_s.values())
    assert r.peaks.dram_bytes_per_s is None and "no peaks" in r.peaks.provenance
    assert by_name(r)["ampere_sgemm"].ai_dram == pytest.approx(284.0)
    assert any("GPU model unknown" in n for n in r.notes)
    assert_json_safe(r.to_json())


# ------------------------------------------------------------------ generated CSVs, known answers
TOTAL_NS = 2 * 100_000 + 3 * 10_000 + 4_000 + 20_000 + 50_000  # 304 µs

LAYOUTS = {
    "details": dict(layout="details"),
    "details-old": dict(layout="details", header="old", rules=True, ragged=True, junk=True),
    "raw": dict(layout="raw"),
    "details-decimal-comma": dict(layout="details", decimal_comma=True, junk=True),
    "raw-decimal-comma": dict(layout="raw", decimal_comma=True, grouping=True),
    "details-labels-auto-units": dict(layout="details", use_labels=True, auto_units=True),
}


@pytest.mark.parametrize("variant", sorted(LAYOUTS))
def test_known_answers_in_every_layout(tmp_path, variant):
    r = roof(write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA A100-SXM4-40GB", **LAYOUTS[variant]))
    assert isinstance(r, RooflineResult) and r.gpu == "NVIDIA A100-SXM4-40GB"
    assert r.launch_count == 8 and r.total_time_ns == TOTAL_NS
    ks = by_name(r)
    gemm = ks["gemm_kernel"]
    assert gemm.launches == 2 and gemm.time_ns == 200_000
    assert gemm.flops == pytest.approx(2e9)  # (1e8 fadd + 2·4.5e8 ffma) × 2 launches
    assert gemm.dram_bytes == pytest.approx(2e7)
    assert gemm.ai_dram == pytest.approx(100.0)
    assert gemm.ai_l2 == pytest.approx(25.0) and gemm.ai_l1 == pytest.approx(5.0)
    assert gemm.achieved_flop_per_s == pytest.approx(1e13)
    assert gemm.achieved_dram_bytes_per_s == pytest.approx(1e11)
    assert gemm.bound == "compute" and gemm.achieved_occupancy == pytest.approx(45.0)
    ew = ks["vectorized_elementwise_kernel"]
    assert ew.launches == 3 and ew.flops == pytest.approx(3e6) and ew.dram_bytes == pytest.approx(3.6e7)
    assert ew.ai_dram == pytest.approx(1 / 12) and ew.bound == "memory"
    assert ew.achieved_dram_bytes_per_s == pytest.approx(1.2e12)
    assert ks["tiny_kernel"].bound == "under_occupied"
    assert ks["reduce_kernel"].bound == "latency"
    xmma = ks["sm80_xmma_gemm_f16f16_f16f32_f32_tn_n"]
    assert xmma.bound == "compute" and xmma.tensor_core_share == 1.0
    assert xmma.flops_by_precision["tensor_fp16"] == pytest.approx(2e9)
    assert xmma.flops == pytest.approx(2e9 + 2e5)
    tw = r.time_weighted
    assert tw["compute_bound"] == pytest.approx(250_000 / TOTAL_NS)
    assert tw["memory_bound"] == pytest.approx(30_000 / TOTAL_NS)
    assert tw["latency_bound"] == pytest.approx(20_000 / TOTAL_NS)
    assert tw["under_occupied"] == pytest.approx(4_000 / TOTAL_NS)
    assert sum(tw.values()) == pytest.approx(1.0)
    assert r.tensor_core_share_by_time == pytest.approx(50_000 / TOTAL_NS)
    assert r.tensor_evidence.startswith("sm__ops_path_tensor_")
    assert r.above_peak == () and r.confidence == "high"
    assert [k.name for k in r.kernels][0].startswith("void gemm_kernel")  # sorted by time
    assert_json_safe(r.to_json())


def test_json_shape(tmp_path):
    r = roof(write_ncu_csv(tmp_path / "k.csv", gpu_name="NVIDIA H100 80GB HBM3"))
    j = r.to_json()
    assert {"gpu", "peaks", "kernels", "time_weighted"} <= set(j)
    assert {"flop_per_s", "dram_bytes_per_s", "provenance"} <= set(j["peaks"])
    assert {"fp64", "fp32", "fp16", "tensor_fp16"} <= set(j["peaks"]["flop_per_s"])
    assert {"memory_bound", "compute_bound", "latency_bound", "under_occupied"} <= set(j["time_weighted"])
    need = {"name", "launches", "time_ns", "flops", "dram_bytes", "ai_dram", "achieved_flop_per_s",
            "achieved_dram_bytes_per_s", "bound", "tensor_core_share", "ai_l2", "ai_l1",
            "achieved_occupancy", "sol_compute_pct", "sol_memory_pct"}
    assert all(need <= set(k) for k in j["kernels"])
    assert j["available"] is True
    roofs = {x["name"]: x for x in j["roofs"]}
    assert roofs["DRAM"]["value"] == 3350e9 and "FP32" in roofs and "Tensor FP16/BF16" in roofs
    assert_json_safe(j)


def test_auto_units_raw_page(tmp_path):
    r = roof(write_ncu_csv(tmp_path / "k.csv", layout="raw", auto_units=True,
                           gpu_name="NVIDIA A100-SXM4-80GB"))
    gemm = by_name(r)["gemm_kernel"]
    assert gemm.time_ns == 200_000 and gemm.ai_dram == pytest.approx(100.0, rel=1e-3)


# ------------------------------------------------------------------ missing metrics
def test_no_flop_no_bytes_no_sol_is_unavailable_with_the_ncu_command(tmp_path):
    drop = [f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum"
            for op in ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma", "hadd", "hmul", "hfma")]
    drop += ["dram__bytes.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
             "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]
    r = roof(write_ncu_csv(tmp_path / "k.csv", layout="raw", drop_metrics=drop))
    assert isinstance(r, Unavailable)
    assert r.reason.startswith("roofline not available: counters missing — need ")
    assert "sm__sass_thread_inst_executed_op_ffma_pred_on.sum" in r.reason
    assert "dram__bytes.sum" in r.reason
    assert "ncu --set roofline" in r.hint and "--metrics" in r.hint
    assert ",".join(ROOFLINE_METRICS) in r.hint
    assert r.to_json() == {"available": False, "reason": r.reason, "hint": r.hint}


def test_no_duration_is_unavailable(tmp_path):
    r = roof(write_ncu_csv(tmp_path / "k.csv", drop_metrics=[
        "gpu__time_duration.sum", "sm__cycles_elapsed.avg", "sm__cycles_elapsed.avg.per_second"]))
    assert isinstance(r, Unavailable)
    assert "gpu__time_duration.sum" in r.reason and "ncu --set roofline" in r.hint


def test_sol_only_still_classifies_and_says_what_is_missing(tmp_path):
    drop = [f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum"
            for op in ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma", "hadd", "hmul", "hfma")]
    drop += ["dram__bytes.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum",
             "sm__ops_path_tensor_src_fp16_dst_fp32.sum"]
    r = roof(write_ncu_csv(tmp_path / "k.csv", drop_metrics=drop))
    assert isinstance(r, RooflineResult) and not r.roofline_complete
    ks = by_name(r)
    assert ks["gemm_kernel"].flops is None and ks["gemm_kernel"].ai_dram is None
    assert ks["gemm_kernel"].bound == "compute" and ks["vectorized_elementwise_kernel"].bound == "memory"
    assert "dram__bytes.sum" in r.missing_metrics
    assert r.hint.startswith("roofline unavailable: need ") and "ncu --set roofline" in r.hint
    assert_json_safe(r.to_json())


def test_na_cells_do_not_invent_numbers(tmp_path):
    r = roof(write_ncu_csv(tmp_path / "k.csv", layout="raw", na_metrics=["dram__bytes.sum"],
                           gpu_name="NVIDIA A100-SXM4-40GB"))
    gemm = by_name(r)["gemm_kernel"]
    assert gemm.dram_bytes is None and gemm.ai_dram is None and gemm.achieved_dram_bytes_per_s is None
    assert gemm.flops == pytest.approx(2e9)
    assert "dram__bytes.sum" in r.missing_metrics


def test_no_launches_is_unavailable():
    r = analyze_roofline(C.NCU_LAUNCHES.empty(), C.NCU_METRICS.empty(), C.GPUS.empty())
    assert isinstance(r, Unavailable) and "ncu" in r.hint


def test_zero_dram_bytes_gives_no_intensity(tmp_path):
    k = SynthKernel("k0", counts={"fadd": 1000}, dram_bytes=0, l2_bytes=110_000, l1_bytes=0)
    r = roof(write_ncu_csv(tmp_path / "k.csv", [k]))
    kk = r.kernels[0]
    assert kk.ai_dram is None and kk.ai_l1 is None and kk.ai_l2 == pytest.approx(1000 / 110_000)


# ------------------------------------------------------------------ bound rule
@pytest.mark.parametrize("sm,mem,waves,expected", [
    (80.0, 10.0, 5.0, "compute"),   # ≥ 80 → bound
    (79.9, 85.0, 5.0, "memory"),
    (85.0, 85.0, 5.0, "compute"),   # both high: the larger (tie → compute)
    (59.9, 59.9, 5.0, "latency"),   # all < 60
    (10.0, 20.0, 0.5, "under_occupied"),  # < 60 and < 1 wave: small grid
    (10.0, 20.0, np.nan, "latency"),  # no waves metric
    (70.0, 60.0, 5.0, "compute"),   # one ≥ 60, 10 points apart
    (60.0, 71.0, 5.0, "memory"),
    (65.0, 60.0, 5.0, "balanced"),  # within 10 points
    (np.nan, 50.0, 5.0, "unknown"),
])
def test_sol_bottleneck_rule(sm, mem, waves, expected):
    got = _classify(pd.Series([sm]), pd.Series([mem]), pd.Series([waves]), DEFAULT_THRESHOLDS)
    assert got.iloc[0] == expected


def test_without_sol_the_roofline_position_decides(tmp_path):
    clock = 1.41e9
    peak32 = 128 * 108 * clock  # 19.49 TFLOP/s at 1.41 GHz
    ks = [
        # 18 TFLOP/s over 100 µs = 92 % of FP32 peak; DRAM tiny → compute
        SynthKernel("hot_gemm", duration_ns=100_000, counts={"ffma": 0.9e9}, dram_bytes=1e6),
        # 1.2 TB/s of 1.5552 → 77 % DRAM, FLOPs negligible → memory
        SynthKernel("stream_copy", duration_ns=10_000, counts={"fadd": 1e3}, dram_bytes=1.2e7),
        # both far below → latency
        SynthKernel("idle_kernel", duration_ns=10_000, counts={"fadd": 1e3}, dram_bytes=1e3),
    ]
    drop = ["sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]
    r = roof(write_ncu_csv(tmp_path / "k.csv", ks, drop_metrics=drop, gpu_name="NVIDIA A100-SXM4-40GB"),
             gpus=a100_gpus())
    got = by_name(r)
    assert got["hot_gemm"].pct_of_peak_flop == pytest.approx(100 * 18e12 / peak32)
    assert got["hot_gemm"].bound == "compute"
    assert got["stream_copy"].bound == "memory"
    assert got["idle_kernel"].bound == "latency"
    assert got["hot_gemm"].bound_source == "roofline position"
    assert r.confidence == "medium"


def test_thresholds_are_respected(tmp_path):
    k = SynthKernel("k", sm_pct=70.0, mem_pct=20.0)
    th = DEFAULT_THRESHOLDS.with_overrides(sol_bound_pct=90.0, sol_latency_pct=75.0)
    r = roof(write_ncu_csv(tmp_path / "k.csv", [k]), th=th)
    assert r.kernels[0].bound == "latency"


def test_mixed_launches_split_bound_shares(tmp_path):
    ks = [SynthKernel("flip", duration_ns=30_000, sm_pct=90, mem_pct=10),
          SynthKernel("flip", duration_ns=10_000, sm_pct=10, mem_pct=90)]
    r = roof(write_ncu_csv(tmp_path / "k.csv", ks))
    k = r.kernels[0]
    assert k.launches == 2 and k.bound == "compute"
    assert k.bound_shares == pytest.approx({"compute": 0.75, "memory": 0.25})


# ------------------------------------------------------------------ peaks
def test_ncu_peak_sustained_metrics_win(tmp_path):
    peaks = {  # per-cycle peaks as ncu exports them (inst/cycle, byte/cycle) + clocks
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": (7000.0, "inst/cycle"),
        "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained": (3500.0, "inst/cycle"),
        "dram__bytes.sum.peak_sustained": (1000.0, "byte/cycle"),
        "dram__cycles_elapsed.avg.per_second": (1.5e9, "cycle/s"),
    }
    r = roof(write_ncu_csv(tmp_path / "k.csv", peak_metrics=peaks, gpu_name="NVIDIA A100-SXM4-40GB"))
    assert r.peaks.flop_per_s["fp32"] == pytest.approx(2 * 7000 * 1.41e9)
    assert r.peaks.flop_per_s["fp64"] == pytest.approx(2 * 3500 * 1.41e9)
    assert r.peaks.dram_bytes_per_s == pytest.approx(1000 * 1.5e9)
    assert r.peaks.provenance_by_peak["fp32"].startswith("ncu")
    assert r.peaks.provenance_by_peak["dram"].startswith("ncu")
    # precisions ncu did not export still come from the table, and that is said
    assert "built-in table" in r.peaks.provenance_by_peak["tensor_fp16"]


def test_table_peaks_at_profiled_clock_h100(tmp_path):
    r = roof(write_ncu_csv(tmp_path / "k.csv", layout="raw", gpu_name="NVIDIA H100 80GB HBM3",
                           cc="9.0"))
    assert r.peaks.flop_per_s["fp32"] == pytest.approx(256 * 132 * 1.41e9)
    assert r.peaks.flop_per_s["tensor_fp16"] == pytest.approx(4096 * 132 * 1.41e9)
    assert r.peaks.dram_bytes_per_s == pytest.approx(3.35e12)
    assert "H100 SXM" in r.peaks.provenance and "1.410 GHz" in r.peaks.provenance


def test_unknown_name_falls_back_to_architecture_rates(tmp_path):
    gpus = C.GPUS.validate(pd.DataFrame([dict(
        device_id=0, name="NVIDIA Mystery 9000", chip_name="", sm_count=100, clock_hz=2_000_000_000,
        memory_bandwidth_bytes_per_s=1e12, total_memory_bytes=-1, cc_major=9, cc_minor=0,
        bus_location="")]))
    r = roof(write_ncu_csv(tmp_path / "k.csv"), gpus=gpus)
    assert r.peaks.flop_per_s["fp32"] == pytest.approx(256 * 100 * 1.41e9)  # profiled clock
    assert "architecture rate" in r.peaks.provenance_by_peak["fp32"]
    assert r.peaks.dram_bytes_per_s == 1e12


def test_above_peak_values_are_flagged(tmp_path):
    k = SynthKernel("impossible", duration_ns=1_000, counts={"ffma": 1e9})  # 2e18 FLOP/s
    r = roof(write_ncu_csv(tmp_path / "k.csv", [k], gpu_name="NVIDIA A100-SXM4-40GB"))
    assert r.above_peak == ("impossible",)
    assert any("exceed a peak" in n for n in r.notes)


# ------------------------------------------------------------------ tensor cores
def test_hfma2_mma_like_instructions_are_not_tensor_work(tmp_path):
    # A100 trap (§6.2/§6.3): hfma = 32 × tensor-pipe instructions in a non-MMA kernel
    fake = SynthKernel("direct_copy_kernel_cuda", counts={"hfma": 65_536, "fadd": 100},
                       tensor_pipe_inst=2_048)
    real = SynthKernel("fmha_fwd_loop_kernel", counts={"fadd": 100}, tensor_pipe_inst=2_048)
    r = roof(write_ncu_csv(tmp_path / "k.csv", [fake, real]))
    ks = by_name(r)
    assert ks["direct_copy_kernel_cuda"].tensor_core_share == 0.0
    assert ks["direct_copy_kernel_cuda"].flops_by_precision["fp16"] == 0.0
    assert ks["fmha_fwd_loop_kernel"].tensor_core_share == 1.0
    assert ks["fmha_fwd_loop_kernel"].tensor_mma_inst == 2_048
    # no FLOPs are invented from instruction counts
    assert "tensor_fp16" not in ks["fmha_fwd_loop_kernel"].flops_by_precision
    assert ks["fmha_fwd_loop_kernel"].flops == 100
    assert any("HFMA2.MMA" in n for n in r.notes)


def test_tensor_pipe_utilisation_as_evidence(tmp_path):
    ks = [SynthKernel("mma_kernel", tensor_pipe_inst=None, tensor_pipe_pct=61.4),
          SynthKernel("simt_kernel", tensor_pipe_inst=None, tensor_pipe_pct=0.3)]
    r = roof(write_ncu_csv(tmp_path / "k.csv", ks, layout="raw"))
    got = by_name(r)
    assert got["mma_kernel"].tensor_core_share == 1.0 and got["mma_kernel"].tensor_pipe_pct == 61.4
    assert got["simt_kernel"].tensor_core_share == 0.0
    assert r.tensor_evidence == "tensor-pipe utilisation"


def test_no_tensor_metrics_means_unknown_not_zero(tmp_path):
    k = SynthKernel("k", tensor_pipe_inst=None)
    r = roof(write_ncu_csv(tmp_path / "k.csv", [k]))
    assert r.kernels[0].tensor_core_share is None
    assert r.tensor_core_share_by_time is None and r.tensor_evidence is None


# ------------------------------------------------------------------ GPU table
@pytest.mark.parametrize("name,key", [
    ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"), ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
    ("NVIDIA A100-PCIE-40GB", "a100-40gb-pcie"), ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H100 NVL", "h100-nvl"), ("NVIDIA H200", "h200-sxm"), ("NVIDIA H200 NVL", "h200-nvl"),
    ("NVIDIA B200", "b200"), ("Tesla V100-SXM2-16GB", "v100-sxm2"), ("Tesla V100-PCIE-32GB", "v100-pcie"),
    ("Tesla V100S-PCIE-32GB", "v100s-pcie"), ("Tesla T4", "t4"), ("NVIDIA A10", "a10"),
    ("NVIDIA A30", "a30"), ("NVIDIA A40", "a40"), ("NVIDIA L4", "l4"), ("NVIDIA L40S", "l40s"),
    ("NVIDIA L40", "l40"), ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA GeForce RTX 3090", "rtx-3090"), ("NVIDIA GeForce RTX 3090 Ti", "rtx-3090-ti"),
    ("NVIDIA GeForce RTX 3080", "rtx-3080"), ("Quadro RTX 6000", "quadro-rtx-6000"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"), ("NVIDIA RTX A6000", "rtx-a6000"),
    ("NVIDIA GeForce RTX 4070 Ti", "rtx-4070-ti"), ("NVIDIA GeForce RTX 4070", "rtx-4070"),
])
def test_lookup_gpu(name, key):
    spec = lookup_gpu(name)
    assert spec is not None and spec.key == key


@pytest.mark.parametrize("name", ["NVIDIA A10G", "NVIDIA GeForce RTX 3080 Ti",
                                  "NVIDIA GeForce RTX 3090 Laptop GPU", "NVIDIA GH200 480GB", "",
                                  None, "AMD Instinct MI300X"])
def test_lookup_gpu_unknown(name):
    assert lookup_gpu(name) is None


def test_table_rates_reproduce_published_peaks():
    """rate × SMs × boost clock matches each datasheet figure (NVL parts quote tensor peaks at a
    power-limited clock, hence the 20 % band)."""
    for spec in SPECS:
        assert spec.dram_bytes_per_s and spec.sm_count > 0 and spec.source
        for prec, published in spec.datasheet.items():
            rate = spec.rate(prec)
            assert rate is not None, (spec.key, prec)
            modelled = rate * spec.sm_count * spec.boost_clock_hz
            assert 0.8 < modelled / published < 1.2, (spec.key, prec, modelled / published)


def test_a100_table_matches_ncu_csv_doc():
    s = lookup_gpu("NVIDIA A100-SXM4-40GB")
    assert s.peak_flop_per_s("fp32", 1_009_150_443.18) == pytest.approx(13.95e12, rel=1e-3)
    assert s.peak_flop_per_s("fp32") == 19.5e12  # datasheet without a profiled clock
    assert s.dram_bytes_per_s == 1555e9
    assert arch_rates(8, 0)["tensor_fp16"] == 2048
    assert arch_rates(8, 7) == arch_rates(8, 6)  # nearest known minor of the major
    assert arch_rates(6, 0) is None
