"""Throughput and MFU: samples/s, achieved FLOP/s and model FLOP utilisation per step.

``MFU = model FLOP per step ÷ step time ÷ dense peak FLOP/s`` of the GPU for the dtype in use
(PaLM, Chowdhery et al. 2022, appendix B: model FLOPs, not hardware FLOPs — recomputation is not
counted). FLOP per step is ``--model-flops-per-step``, else ``--model-flops-per-sample`` ×
``--batch-size``. The peak is the datasheet's dense (no 2:4 sparsity) value from
``analyses/roofline/gpu_specs.py``: the FP16/BF16 Tensor Core peak when Tensor Cores carry the GEMMs
(share of kernel time ≥ ``TC_ENGAGED_SHARE``), else the FP32 CUDA-core peak — the assumption is
always stated (a TF32 run is then under-credited; its peak is given beside it).
Pure: no I/O; the result is a JSON-able dict.
"""
from __future__ import annotations

from nsys_diag.analyses.roofline.gpu_specs import lookup_gpu

TC_ENGAGED_SHARE = 0.5
"""Tensor Cores count as the dtype in use when ≥ 50% of kernel time runs in Tensor Core kernels:
GEMMs then dominate the FLOP count and run at the Tensor Core rate."""


MFU_HINT = ("pass --model-flops-per-step N (or --model-flops-per-sample N with --batch-size) "
            "and mark steps with NVTX")


def _unavailable(reason: str) -> dict:
    return {"available": False, "reason": reason, "hint": MFU_HINT}


def analyze_mfu(*, step_ms: float | None, batch_size: int | None = None,
                flops_per_sample: float | None = None, flops_per_step: float | None = None,
                gpu_name: str | None = None, tensor_core_share: float | None = None) -> dict:
    """Top-level ``mfu`` section. ``step_ms``: median analysed step; ``tensor_core_share``:
    ``tensor_cores.share_of_kernel_time`` (None when unknown: FP32 is assumed, and said).

    Keys: ``available``, ``reason``; ``flops_per_step``, ``flops_source``, ``step_ms``,
    ``samples_per_s`` (None without a batch size), ``achieved_tflops``, ``peak_tflops``,
    ``peak_precision``, ``gpu``, ``mfu`` (0..1), ``assumptions[]``.
    """
    if flops_per_step is None and flops_per_sample is not None and batch_size:
        flops_per_step, source = float(flops_per_sample) * int(batch_size), "per_sample×batch_size"
    elif flops_per_step is not None:
        source = "per_step"
    else:
        return _unavailable("needs --model-flops-per-step, or --model-flops-per-sample with "
                            "--batch-size")
    if not step_ms or step_ms <= 0:
        return _unavailable("no analysed steps: MFU is per step")
    step_s = float(step_ms) / 1e3
    achieved = float(flops_per_step) / step_s
    assumptions = ["median analysed step; one GPU (this trace)"]
    out: dict = {"available": True, "reason": None, "flops_per_step": float(flops_per_step),
           "flops_source": source, "step_ms": float(step_ms),
           "samples_per_s": (int(batch_size) / step_s) if batch_size else None,
           "achieved_tflops": achieved / 1e12, "peak_tflops": None, "peak_precision": None,
           "gpu": None, "mfu": None, "assumptions": assumptions}
    spec = lookup_gpu(gpu_name)
    if spec is None:
        assumptions.append("GPU not in the spec table: no peak, no MFU")
        return out
    tc = tensor_core_share is not None and tensor_core_share >= TC_ENGAGED_SHARE
    precision = "tensor_fp16" if tc else "fp32"
    peak = spec.peak_flop_per_s(precision)
    out["gpu"] = spec.display
    if peak is None:
        assumptions.append(f"no {precision} peak for {spec.display} in the spec table")
        return out
    out.update(peak_tflops=peak / 1e12, peak_precision=precision, mfu=achieved / peak)
    if tc:
        assumptions.append(f"BF16/FP16 Tensor Core dense peak ({spec.source}): Tensor Cores "
                                  f"carry {tensor_core_share:.0%} of kernel time")
    else:
        tf32 = spec.peak_flop_per_s("tensor_tf32")
        assumptions.append(
            f"FP32 CUDA-core peak ({spec.source}): Tensor Cores "
            + ("unknown" if tensor_core_share is None else f"carry {tensor_core_share:.0%}")
            + " of kernel time" + (f"; with TF32 the peak would be {tf32 / 1e12:.0f} TFLOP/s"
                                   if tf32 else ""))
    return out
