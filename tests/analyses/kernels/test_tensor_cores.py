"""Tensor Core evidence fusion: names, GPU metrics, ncu counters."""
from __future__ import annotations

import json

import numpy as np
import pytest

from kernel_frames import MS, US, gpu_metrics, kernels
from nsys_diag.analyses.kernels.tensor_cores import analyze_tensor_cores
from nsys_diag.model.contracts import GPU_METRICS, KERNELS
from nsys_diag.model.thresholds import Thresholds

TH = Thresholds()
TC_GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn"
SGEMM = "volta_sgemm_128x64_nn"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"
TA = "Tensor Active [Throughput %]"


def _k(spec):
    """spec: [(name, duration_ns)] laid back to back on device 0 from t=0."""
    rows, t = [], 0
    for name, d in spec:
        rows.append(dict(name=name, start_ns=t, end_ns=t + d))
        t += d
    return kernels(rows)


def test_names_only_known_answer():
    k = _k([(TC_GEMM, 6 * MS), (SGEMM, 3 * MS), (ADD, 1 * MS)])
    r = analyze_tensor_cores(k, GPU_METRICS.empty(), th=TH)
    assert r.available and r.source == "kernel_names" and r.confidence == "medium"
    assert r.share_of_kernel_time == pytest.approx(0.6)
    assert r.gemm_share == pytest.approx(0.9)
    assert r.tc_share_of_gemm == pytest.approx(6 / 9)
    assert r.non_tc_gemm_share == pytest.approx(0.3)
    assert [x["name"] for x in r.non_tc_gemm_kernels] == [SGEMM]
    assert "sgemm" in r.non_tc_gemm_kernels[0]["evidence"]
    assert r.non_tc_gemm_kernels[0]["share"] == pytest.approx(0.3)
    assert "dtype" in r.advice
    assert r.tensor_active_mean is None and r.metrics_share_of_kernel_time is None
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    assert "name heuristic" in j["evidence"]
    assert j["non_tc_gemm_share"] == pytest.approx(0.3)


def test_unknown_generated_kernels_lower_confidence_and_are_not_called_non_tc():
    k = _k([("triton_tem_fused_mm_0", 8 * MS), (TC_GEMM, 1 * MS), (ADD, 1 * MS)])
    r = analyze_tensor_cores(k, None, th=TH)
    assert r.confidence == "low"
    assert r.unknown_tc_share == pytest.approx(0.8)
    assert r.non_tc_gemm_share == 0.0 and r.non_tc_gemm_kernels == ()
    assert [x["name"] for x in r.unknown_tc_kernels] == ["triton_tem_fused_mm_0"]
    assert r.advice == ""


def test_decode_attention_is_not_a_missed_tensor_core_gemm():
    k = _k([("void vllm::paged_attention_v1_kernel<unsigned short>(int)", 5 * MS), (TC_GEMM, 5 * MS)])
    r = analyze_tensor_cores(k, None, th=TH)
    assert r.non_tc_gemm_share == 0.0
    assert r.non_tc_attention_share == pytest.approx(0.5)
    assert r.share_of_kernel_time == pytest.approx(0.5)


def test_gemv_is_not_a_missed_tensor_core_gemm():
    gemv = "void gemvx::kernel<int, int, float, float, float, float, false, true>(cublasGemvParamsEx)"
    r = analyze_tensor_cores(_k([(gemv, 4 * MS), (SGEMM, 1 * MS)]), None, th=TH)
    assert r.non_tc_gemm_share == pytest.approx(0.2)
    assert [x["name"] for x in r.non_tc_gemm_kernels] == [SGEMM]
    assert r.gemm_share == pytest.approx(1.0) and r.tc_share_of_gemm == 0.0


def _tensor_samples(values_in_kernels):
    """1 sample/ms on device 0 for t = 0..19 ms (kernels cover 0..10 ms) + device 1 noise."""
    rows = []
    for i in range(20):
        v = values_in_kernels[i] if i < len(values_in_kernels) else 0.0
        rows.append((i * MS + 500 * US, 0, TA, v))
        rows.append((i * MS + 500 * US, 0, "SMs Active [Throughput %]", 80.0))
        rows.append((i * MS + 500 * US, 1, TA, 100.0))  # no kernels on device 1: ignored
    return gpu_metrics(rows)


def test_gpu_metrics_win_over_names():
    # level, not "any sample > 0": the Tensor Core GEMM runs at 30% of cycles (TC), the SIMT GEMM
    # and the pointwise kernel never count
    k = _k([(TC_GEMM, 6 * MS), (SGEMM, 3 * MS), (ADD, 1 * MS)])
    m = _tensor_samples([50.0] * 4 + [0.0] * 6)
    r = analyze_tensor_cores(k, m, th=TH)
    assert r.source == "gpu_metrics" and r.confidence == "high"
    assert r.tensor_active_samples == 10
    assert r.metrics_share_of_kernel_time == pytest.approx(0.6)
    assert r.share_of_kernel_time == pytest.approx(0.6)
    assert r.tensor_active_mean == pytest.approx(0.2)
    assert r.tensor_active_during_gemm == pytest.approx(200 / 9 / 100)  # 9 samples during GEMMs
    assert r.engaged is True
    assert r.name_share_of_kernel_time == pytest.approx(0.6)
    assert "metrics win" in r.evidence[0]
    assert r.basis.startswith("Tensor pipes active 22% of cycles while GEMMs ran")


def test_metrics_disagreeing_with_names_is_said():
    k = _k([(TC_GEMM, 10 * MS)])
    r = analyze_tensor_cores(k, _tensor_samples([0.0] * 10), th=TH)
    assert r.share_of_kernel_time == 0.0 and r.name_share_of_kernel_time == pytest.approx(1.0)
    assert any("disagree" in e for e in r.evidence)


def test_counters_win_over_everything():
    k = _k([(TC_GEMM, 6 * MS), (ADD, 4 * MS)])
    r = analyze_tensor_cores(k, _tensor_samples([50.0] * 10), th=TH,
                             counters={"tensor_core_share_by_time": 0.9, "source": "ncu"})
    assert r.source == "ncu" and r.confidence == "high"
    assert r.share_of_kernel_time == pytest.approx(0.9)
    assert r.counters_share_of_kernel_time == pytest.approx(0.9)
    assert r.metrics_share_of_kernel_time == pytest.approx(0.6)  # the adds never count
    assert "counters win" in r.evidence[0] and r.basis.startswith("ncu tensor-pipe counters")


def test_window_filters_kernels():
    k = _k([(SGEMM, 5 * MS), (TC_GEMM, 5 * MS)])
    r = analyze_tensor_cores(k, None, th=TH, window=(6 * MS, 10 * MS))
    assert r.share_of_kernel_time == pytest.approx(1.0) and r.non_tc_gemm_share == 0.0


def test_empty_inputs():
    r = analyze_tensor_cores(KERNELS.empty(), GPU_METRICS.empty(), th=TH)
    assert not r.available
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    assert j["available"] is False and j["reason"] and j["share_of_kernel_time"] is None
    # metrics without kernels, kernels without metrics
    assert not analyze_tensor_cores(KERNELS.empty(), _tensor_samples([1.0]), th=TH).available
    assert analyze_tensor_cores(_k([(ADD, 1 * MS)]), GPU_METRICS.empty(), th=TH).share_of_kernel_time == 0.0


def test_real_fastvideo(shared):
    from nsys_diag.loaders import load_trace

    b = load_trace(shared("nsys/fastvideo_train_2xh100_2026.2.sqlite"))
    r = analyze_tensor_cores(b.kernels, b.gpu_metrics, th=TH)
    json.dumps(r.to_json(), allow_nan=False)
    short = b.kernels["short_name"].astype(str)
    dur = (b.kernels["end_ns"] - b.kernels["start_ns"]).to_numpy()
    expected = dur[(short.str.startswith("flash_fwd") | short.str.startswith("nvjet")).to_numpy()]
    assert r.share_of_kernel_time == pytest.approx(expected.sum() / dur.sum())
    assert r.share_of_kernel_time > 0.5
    assert r.non_tc_gemm_share == 0.0 and r.unknown_tc_share == 0.0
    assert r.confidence == "medium" and r.source == "kernel_names"
    assert {x["short_name"] for x in r.tc_kernels} >= {"flash_fwd_kernel"}
    assert np.isclose(r.tc_share_of_gemm, 1.0)


# ---- Tensor Active level (issue 15) ---------------------------------------------------------
TRITON_MM = "triton_tem_fused_mm_0"
TRITON_MM2 = "triton_tem_fused_addmm_1"
POINTWISE = "triton_poi_fused_add_mul_0"
SM = "SMs Active [Throughput %]"


def _levels(spans, period=MS, device=0, sm=None):
    """Samples every ``period`` (a sample at t covers (t - period, t]) from 0 to the last span's
    end: spans = [(start, end, tensor_active %, sm_active %)]; idle time reads 0."""
    end = max(e for _, e, _, _ in spans)
    rows = []
    for t in range(period, end + period, period):
        ta = sa = 0.0
        for s, e, a, b in spans:
            if s < t <= e:
                ta, sa = a, b if sm is None else sm
        rows += [(t, device, TA, ta), (t, device, SM, sa)]
    return gpu_metrics(rows)


def test_triton_gemms_at_one_percent_are_not_tensor_core_time():
    # names cannot tell; Tensor Active 1% with busy SMs → CUDA-core GEMMs by counters
    k = _k([(TRITON_MM, 8 * MS), (POINTWISE, 2 * MS)])
    m = _levels([(0, 8 * MS, 1.0, 92.0), (8 * MS, 10 * MS, 0.0, 95.0)])
    r = analyze_tensor_cores(k, m, th=TH)
    assert r.source == "gpu_metrics"
    assert r.share_of_kernel_time == 0.0  # the old estimator said 80% (samples > 0)
    assert r.tensor_active_during_gemm == pytest.approx(0.01)
    assert r.engaged is False
    assert r.non_tc_gemm_share == pytest.approx(0.8) and r.non_tc_gemm_source == "gpu_metrics"
    [row] = r.non_tc_gemm_kernels
    assert row["name"] == TRITON_MM and row["evidence"].startswith("Tensor Active 1.0% while it ran")
    assert "dtype" in r.advice
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    assert j["engaged"] is False and j["tensor_active_during_gemm"] == pytest.approx(0.01)
    assert "Tensor pipes active 1.0% of cycles while GEMMs ran" in j["basis"]


def test_triton_gemms_at_seventy_percent_are_tensor_core_time_and_pointwise_is_not():
    k = _k([(TRITON_MM, 6 * MS), (POINTWISE, 4 * MS)])
    m = _levels([(0, 6 * MS, 70.0, 95.0), (6 * MS, 10 * MS, 0.0, 95.0)])
    r = analyze_tensor_cores(k, m, th=TH)
    assert r.engaged is True and r.tensor_active_during_gemm == pytest.approx(0.7)
    assert r.share_of_kernel_time == pytest.approx(0.6)  # not 100%: pointwise time never counts
    assert r.non_tc_gemm_share == 0.0 and r.non_tc_gemm_source is None
    assert r.confidence == "high"


@pytest.mark.parametrize("level,engaged", [(4.0, False), (6.0, True)])
def test_engaged_threshold(level, engaged):
    assert TH.tensor_active_engaged == 0.05
    k = _k([(TRITON_MM, 10 * MS)])
    r = analyze_tensor_cores(k, _levels([(0, 10 * MS, level, 90.0)]), th=TH)
    assert r.engaged is engaged
    assert r.share_of_kernel_time == pytest.approx(1.0 if engaged else 0.0)


def test_engaged_is_none_without_metrics_or_without_gemm_time():
    assert analyze_tensor_cores(_k([(TRITON_MM, 5 * MS)]), None, th=TH).engaged is None
    r = analyze_tensor_cores(_k([(POINTWISE, 5 * MS)]), _levels([(0, 5 * MS, 0.0, 90.0)]), th=TH)
    assert r.engaged is None and r.tensor_active_during_gemm is None
    assert r.share_of_kernel_time == 0.0 and "no GEMM" in r.basis


def test_idle_sms_say_nothing_about_the_math_path():
    k = _k([(TRITON_MM, 10 * MS)])
    r = analyze_tensor_cores(k, _levels([(0, 10 * MS, 0.0, 20.0)]), th=TH)
    assert r.engaged is False and r.non_tc_gemm_share == 0.0  # SMs mostly idle: latency-bound


def test_per_kernel_attribution_only_where_the_sampling_period_resolves_kernels():
    # long kernels (5 × the period): each judged by its own level
    k = _k([(TRITON_MM, 5 * MS), (TRITON_MM2, 5 * MS)])
    m = _levels([(0, 5 * MS, 70.0, 95.0), (5 * MS, 10 * MS, 0.0, 95.0)])
    r = analyze_tensor_cores(k, m, th=TH)
    assert r.share_of_kernel_time == pytest.approx(0.5)
    assert [x["name"] for x in r.non_tc_gemm_kernels] == [TRITON_MM2]
    assert "while it ran" in r.non_tc_gemm_kernels[0]["evidence"]
    # short kernels (half a period, alternating): only the level over all GEMM time decides
    rows, t = [], 0
    for i in range(40):
        rows.append(dict(name=TRITON_MM if i % 2 else TRITON_MM2, start_ns=t, end_ns=t + 500 * US))
        t += 500 * US
    short = kernels(rows)
    m2 = _levels([(0, t, 35.0, 95.0)])
    r2 = analyze_tensor_cores(short, m2, th=TH)
    assert r2.engaged is True and r2.share_of_kernel_time == pytest.approx(1.0)
    assert r2.confidence == "medium"  # nothing resolved one by one
    m3 = _levels([(0, t, 1.0, 95.0)])
    r3 = analyze_tensor_cores(short, m3, th=TH)
    assert r3.non_tc_gemm_share == pytest.approx(1.0)
    assert all("too short" in x["evidence"] for x in r3.non_tc_gemm_kernels)


def test_sample_rows_in_any_order_give_the_same_answer():
    k = _k([(TRITON_MM, 5 * MS), (TRITON_MM2, 5 * MS)])
    m = _levels([(0, 5 * MS, 70.0, 95.0), (5 * MS, 10 * MS, 0.0, 95.0)])
    shuffled = m.sample(frac=1.0, random_state=3).reset_index(drop=True)
    a = analyze_tensor_cores(k, m, th=TH).to_json()
    b = analyze_tensor_cores(k, shuffled, th=TH).to_json()
    for key in ("tensor_active_during_gemm", "tensor_active_mean", "share_of_kernel_time",
                "non_tc_gemm_share"):
        assert a.pop(key) == pytest.approx(b.pop(key))  # summation order only
    a.pop("basis"), b.pop("basis")
    assert a == b


def _triton_run(tensor_active: float):
    """A generated training loop whose GEMMs are Triton templates (names cannot tell), with GPU
    metrics: Tensor Active ``tensor_active`` % while the GEMM phases run, 0 in the pointwise one."""
    from nsys_diag.synth.scenarios import (GpuMetricsSpec, KernelSpec, PhaseSpec, Scenario)

    gemm = {"SMs Active [Throughput %]": 92.0, "SM Issue [Throughput %]": 40.0,
            "Tensor Active [Throughput %]": tensor_active}
    pw = {"SMs Active [Throughput %]": 90.0, "SM Issue [Throughput %]": 30.0,
          "Tensor Active [Throughput %]": 0.0}
    return Scenario(
        name="triton_gemms", steps=8, seed=3, gpu="H100",
        gpu_metrics=GpuMetricsSpec(period_ns=1 * MS, levels={
            "forward": gemm, "backward": gemm, "optimizer": pw}),
        phases=(
            PhaseSpec("forward", 40 * MS, canonical="forward", kernels=(
                KernelSpec("triton_mm", 3 * MS, 10), KernelSpec("triton_fused", 500 * US, 8))),
            PhaseSpec("backward", 80 * MS, canonical="backward", kernels=(
                KernelSpec("triton_addmm", 3 * MS, 20, thread="autograd"),
                KernelSpec("cutlass_generic", 3 * MS, 4, thread="autograd"))),
            PhaseSpec("optimizer", 20 * MS, canonical="optimizer", kernels=(
                KernelSpec("adam", 1 * MS, 16),)),
        ))


@pytest.mark.parametrize("level,engaged", [(1.0, False), (70.0, True)])
def test_generated_triton_loop_end_to_end(tmp_path, level, engaged):
    from nsys_diag.loaders import load_trace
    from nsys_diag.synth.writer import write_nsys_sqlite

    path = write_nsys_sqlite(tmp_path / "t.sqlite", _triton_run(level))
    b = load_trace(path)
    r = analyze_tensor_cores(b.kernels, b.gpu_metrics, th=TH)
    assert r.engaged is engaged and r.source == "gpu_metrics"
    # samples near GEMM edges mix in neighbours and idle time: a level, not an exact value
    assert r.tensor_active_during_gemm == pytest.approx(level / 100, abs=0.1)
    kt = b.kernels
    dur = (kt["end_ns"] - kt["start_ns"]).to_numpy()
    gemm = kt["short_name"].astype(str).str.contains("mm|Kernel2").to_numpy()
    if engaged:
        assert r.share_of_kernel_time == pytest.approx(dur[gemm].sum() / dur.sum(), abs=0.02)
        assert r.non_tc_gemm_share == 0.0
    else:
        assert r.share_of_kernel_time == pytest.approx(0.0, abs=0.02)
        assert r.non_tc_gemm_share == pytest.approx(dur[gemm].sum() / dur.sum(), abs=0.02)
        assert {x["short_name"] for x in r.non_tc_gemm_kernels} >= {"triton_tem_fused_mm_0",
                                                                     "triton_tem_fused_addmm_1"}
