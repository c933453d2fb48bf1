"""MFU: numbers checkable by hand against the A100 datasheet (312 TF BF16 TC, 19.5 TF FP32)."""
from __future__ import annotations

import pytest

from nsys_diag.analyses.job.mfu import analyze_mfu


def test_tensor_core_run_against_the_bf16_peak():
    # 1e12 FLOP/sample × 32 samples = 3.2e13 FLOP per 200 ms step = 160 TFLOP/s; 160/312 = 51.3%
    m = analyze_mfu(step_ms=200.0, batch_size=32, flops_per_sample=1e12,
                    gpu_name="NVIDIA A100-SXM4-80GB", tensor_core_share=0.8)
    assert m["available"] and m["flops_source"] == "per_sample×batch_size"
    assert m["samples_per_s"] == pytest.approx(160.0)
    assert m["achieved_tflops"] == pytest.approx(160.0)
    assert m["peak_precision"] == "tensor_fp16" and m["peak_tflops"] == pytest.approx(312.0)
    assert m["mfu"] == pytest.approx(160 / 312)
    assert any("Tensor Core dense peak" in a for a in m["assumptions"])


def test_no_tensor_cores_assumes_fp32_and_says_so():
    m = analyze_mfu(step_ms=1000.0, flops_per_step=9.75e12, gpu_name="NVIDIA A100-SXM4-80GB",
                    tensor_core_share=0.0)
    assert m["peak_precision"] == "fp32" and m["mfu"] == pytest.approx(0.5)
    assert m["samples_per_s"] is None
    assert any("FP32" in a and "TF32" in a for a in m["assumptions"])


def test_unknown_gpu_gives_throughput_without_mfu():
    m = analyze_mfu(step_ms=100.0, batch_size=8, flops_per_sample=1e9, gpu_name="Mystery GPU")
    assert m["available"] and m["mfu"] is None and m["achieved_tflops"] == pytest.approx(0.08)


@pytest.mark.parametrize("kw", [{}, {"batch_size": 8}, {"flops_per_sample": 1e9}])
def test_missing_inputs_are_unavailable_with_the_reason(kw):
    m = analyze_mfu(step_ms=100.0, **kw)
    assert m["available"] is False and "--model-flops" in m["reason"]


def test_no_steps_is_unavailable():
    assert analyze_mfu(step_ms=None, flops_per_step=1e12)["available"] is False
