"""Hand-built view dicts that follow docs/JSON.md exactly, for the renderer tests.

They stand in for ``nsys_diag.report.view`` output (and are kept after it lands, as fixtures that
exercise edge cases real traces rarely have: every section unavailable, hostile strings, huge
tables). Numbers are internally consistent with the "worked example" of the analyze issue: an
800 ms step of which the data phase takes 420 ms (52.5%).

The roofline section's shape is not fixed by docs/JSON.md; ``_roofline()`` below is the shape the
renderer reads (see ``nsys_diag/report/charts.py::roofline_chart``).
"""
from __future__ import annotations

import copy

from nsys_diag.model.thresholds import Thresholds

GENERATED_AT = "2026-11-30T00:00:00Z"
MS = 1_000_000  # ns per ms

HOSTILE_KERNEL = "</script><img src=x onerror=alert(1)>"
HOSTILE_NVTX = "data|loader `rm -rf` <b>bold</b> \x1b[31mred\x1b[0m\x00\x07 @everyone\nnext"


def _gpu(device_id: int = 0, name: str = "NVIDIA A100-SXM4-80GB") -> dict:
    return {"id": device_id, "name": name, "sm_count": 108, "memory_bytes": 85_899_345_920,
            "memory_bandwidth_bytes_per_s": 2_039_000_000_000, "compute_capability": "8.0"}


def _phase(name, canonical, mean_ms, step_ms, busy_ms, work_ms, count=10) -> dict:
    return {"name": name, "canonical": canonical, "mean_ms": mean_ms, "share": mean_ms / step_ms,
            "gpu_busy_ms": busy_ms, "gpu_busy_share": (busy_ms / mean_ms) if mean_ms else None,
            "gpu_work_ms": work_ms, "count": count}


def _per_step(durations_ms: list[float], start_ns: int, warmup: list[int], outliers: list[int],
              incomplete: list[int]) -> list[dict]:
    out, t = [], start_ns
    for i, d in enumerate(durations_ms):
        kind = ("warmup" if i in warmup else "incomplete" if i in incomplete
                else "outlier" if i in outliers else "normal")
        out.append({"index": i, "start_ns": t, "duration_ms": d, "kind": kind})
        t += int(d * MS)
    return out


def _strip(label, step_index, start_ns, phases_ms, busy_profile, n_bins=160, devices=(0,)) -> dict:
    """A timeline strip: phases laid end to end from ``start_ns``; ``busy_profile`` maps a
    canonical phase to the busy fraction of the GPU during it."""
    phases, t = [], start_ns
    for name, canonical, ms in phases_ms:
        phases.append({"name": name, "canonical": canonical, "start_ns": t, "end_ns": t + int(ms * MS)})
        t += int(ms * MS)
    end_ns = t
    bin_ns = (end_ns - start_ns) // n_bins
    busy = []
    for b in range(n_bins):
        mid = start_ns + b * bin_ns + bin_ns // 2
        frac = 0.0
        for p in phases:
            if p["start_ns"] <= mid < p["end_ns"]:
                frac = busy_profile.get(p["canonical"], 0.0)
        # deterministic ripple so the strip does not look synthetic-flat
        busy.append(round(max(0.0, min(1.0, frac - (0.08 if frac and b % 7 == 3 else 0.0))), 3))
    return {"label": label, "step_index": step_index, "start_ns": start_ns, "end_ns": end_ns,
            "phases": phases,
            "devices": [{"device_id": d, "busy": busy if d == 0 else [round(x * 0.97, 3) for x in busy]}
                        for d in devices]}, bin_ns


def _kernel(name, short, count, total_ms, share, category, tc) -> dict:
    total_ns = int(total_ms * MS)
    mean = total_ns // count
    return {"name": name, "short_name": short, "count": count, "total_ns": total_ns,
            "mean_ns": mean, "median_ns": int(mean * 0.97), "max_ns": int(mean * 1.8),
            "share": share, "category": category, "tensor_core": tc}


def _kernels_worked_example() -> list[dict]:
    rows = [
        ("ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn",
         "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn", 1200, 1210.0, "gemm", True),
        ("void cutlass::Kernel<cutlass_80_tensorop_f16_s16816gemm_relu_f16_128x128_32x3_tn_align8>"
         "(cutlass_80_tensorop_f16_s16816gemm_relu_f16_128x128_32x3_tn_align8::Params)",
         "cutlass::Kernel", 800, 640.0, "gemm", True),
        ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>, "
         "true, false, false, false, true, false>(Flash_fwd_params)", "flash_fwd_kernel", 400, 420.0,
         "attention", True),
        ("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>(Flash_bwd_params)",
         "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", 400, 390.0, "attention", True),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
         "at::native::GeluType)::{lambda()#1}::operator()() const::{lambda(c10::Half)#1}, "
         "at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl, at::detail::Array<char*, 2>)",
         "vectorized_elementwise_kernel", 2400, 210.0, "elementwise", False),
        ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::Half, float, c10::Half, "
         "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::Half*, c10::Half const*, int)",
         "cunn_SoftMaxForward", 400, 120.0, "elementwise", False),
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, "
         "float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, "
         "float, float>, unsigned int, float, 4>)", "reduce_kernel", 800, 96.0, "reduction", False),
        ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float*, float, float, float, "
         "float, float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>, "
         "AdamFunctor<float>, float*, float, float, float, float, float, float, adamMode_t, float)",
         "multi_tensor_apply_kernel", 200, 180.0, "elementwise", False),
        ("void at::native::(anonymous namespace)::layer_norm_kernel<c10::Half>", "layer_norm_kernel", 800, 88.0,
         "elementwise", False),
        ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
         "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma", 100, 150.0,
         "gemm", False),
        ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>",
         "unrolled_elementwise_kernel", 600, 42.0, "memory", False),
        ("void at::native::index_elementwise_kernel<128, 4>", "index_elementwise_kernel", 300, 24.0,
         "elementwise", False),
    ]
    total = 3800.0  # ms of kernel time over the analysed steps (10 × 380 ms)
    return [_kernel(n, s, c, t, t / total, cat, tc) for n, s, c, t, cat, tc in rows]


def input_bound_view() -> dict:
    """The worked example: the data loader takes 420 of every 800 ms; verdict input_bound."""
    step_ms = 800.0
    start = 2_000_000_000  # session-timeline ns where analysed steps begin (not 0)
    durations = [1910.0] + [800.0 + d for d in (3.1, -2.4, 1.8, 0.4, -3.0, 2.2, -1.1, 0.9, -0.6, 1.4)] + [512.0]
    per_step = _per_step(durations, start - int(1910.0 * MS), warmup=[0], outliers=[], incomplete=[11])
    phases = [
        _phase("data loading", "data", 420.0, step_ms, 8.4, 0.0),
        _phase("forward", "forward", 180.0, step_ms, 171.0, 176.0),
        _phase("backward", "backward", 150.0, step_ms, 142.5, 174.0),
        _phase("optimizer.step", "optimizer", 30.0, step_ms, 25.5, 30.0),
        _phase("logging", "overhead", 20.0, step_ms, 0.0, 0.0),
        _phase("other", "other", 0.0, step_ms, 0.0, 0.0),
    ]
    strip_phases = [(p["name"], p["canonical"], p["mean_ms"]) for p in phases if p["mean_ms"] > 0]
    busy = {"data": 0.02, "forward": 0.95, "backward": 0.95, "optimizer": 0.85, "overhead": 0.0}
    rep, bin_ns = _strip("representative", 5, per_step[5]["start_ns"], strip_phases, busy)
    worst_phases = [("data loading", "data", 423.1)] + strip_phases[1:]
    worst, _ = _strip("worst", 1, per_step[1]["start_ns"], worst_phases, busy)
    kernels = _kernels_worked_example()
    view = {
        "schema_version": 1,
        "tool": {"name": "nsys-diag", "version": "0.1.0"},
        "generated_at": GENERATED_AT,
        "trace": {"path": "worked_example.sqlite", "format": "nsys-sqlite", "nsys_version": "2024.5.1",
                  "schema_version": "3.11", "gpus": [_gpu(0)], "processes": [{"pid": 4242, "name": "python"}],
                  "capture_span_ns": 14_500 * MS, "session_start_utc_ns": 1_764_460_800_000_000_000,
                  "tables": {"CUPTI_ACTIVITY_KIND_KERNEL": 7400, "CUPTI_ACTIVITY_KIND_MEMCPY": 220,
                             "CUPTI_ACTIVITY_KIND_RUNTIME": 9100, "NVTX_EVENTS": 132, "StringIds": 812,
                             "TARGET_INFO_GPU": 1}},
        "window": {"start_ns": start, "end_ns": start + 8_000 * MS, "duration_ms": 8000.0, "source": "steps"},
        "steps": {"available": True, "count": 12, "analysed_count": 10, "source": "nvtx:train_step",
                  "range_name": "train_step", "mean_ms": 800.07, "median_ms": 800.65, "p90_ms": 802.3,
                  "max_ms": 803.1, "min_ms": 797.0, "warmup": [0], "incomplete": [11], "outliers": [],
                  "per_step": per_step},
        "phases": phases,
        "gpu": {"utilization": 0.3806, "compute_busy_ms": 3045.0, "copy_busy_ms": 96.0, "busy_ms": 3110.0,
                "idle_ms": 4890.0, "window_ms": 8000.0, "copy_only_ms": 65.0,
                "per_device": [{"device_id": 0, "name": "NVIDIA A100-SXM4-80GB", "utilization": 0.3806,
                                "compute_busy_ms": 3045.0, "copy_busy_ms": 96.0, "busy_ms": 3110.0,
                                "idle_ms": 4890.0}]},
        "gaps": {"count": 1840, "total_ms": 4955.0, "min_gap_ns": 1000,
                 "by_cause": {"input": 4120.0, "transfer": 61.0, "sync": 205.0, "launch": 96.0,
                              "overhead": 200.0, "other": 273.0},
                 "histogram": [
                     {"lo_ns": 1_000, "hi_ns": 10_000, "count": 1204, "total_ms": 5.1},
                     {"lo_ns": 10_000, "hi_ns": 100_000, "count": 402, "total_ms": 14.2},
                     {"lo_ns": 100_000, "hi_ns": 1_000_000, "count": 150, "total_ms": 40.7},
                     {"lo_ns": 1_000_000, "hi_ns": 10_000_000, "count": 52, "total_ms": 195.0},
                     {"lo_ns": 10_000_000, "hi_ns": 100_000_000, "count": 22, "total_ms": 500.0},
                     {"lo_ns": 100_000_000, "hi_ns": 1_000_000_000, "count": 10, "total_ms": 4200.0}],
                 "top": [{"start_ns": per_step[i]["start_ns"], "duration_ms": 412.0 + i * 0.7, "device_id": 0,
                          "cause": "input", "cpu_activity": "DataLoader __next__ (worker wait)",
                          "phase": "data loading"} for i in (3, 7, 1, 9, 5)]
                        + [{"start_ns": per_step[4]["start_ns"] + 780 * MS, "duration_ms": 20.0, "device_id": 0,
                            "cause": "overhead", "cpu_activity": "wandb.log", "phase": "logging"},
                           {"start_ns": per_step[4]["start_ns"] + 752 * MS, "duration_ms": 2.1, "device_id": 0,
                            "cause": "sync", "cpu_activity": "cudaStreamSynchronize (loss.item())",
                            "phase": "optimizer.step"}]},
        "timeline": {"available": True, "bin_ns": bin_ns, "strips": [rep, worst]},
        "kernels": kernels,
        "kernels_total": 143,
        "tensor_cores": {"available": True, "share_of_kernel_time": 0.6947, "gemm_share": 0.7316,
                         "tc_share_of_gemm": 0.946, "evidence": "kernel names (s16816/tensorop/flash_fwd)",
                         "confidence": "medium", "non_tc_gemm_share": 0.0395,
                         "non_tc_gemm_kernels": [{"name": kernels[9]["name"], "share": kernels[9]["share"]}]},
        "transfers": {"available": True,
                      "by_kind": {"H2D": {"count": 200, "bytes": 4_026_531_840, "time_ms": 186.4,
                                          "gb_per_s": 21.6, "expected_gb_per_s": 25.0},
                                  "D2H": {"count": 20, "bytes": 2_560, "time_ms": 0.09, "gb_per_s": 0.028,
                                          "expected_gb_per_s": 25.0}},
                      "pageable_count": 20, "pageable_bytes": 2_560, "sync_copies": 20},
        "gpu_metrics": None,
        "throughput": {"batch_size": 64, "source": "--batch-size", "loader_samples_per_s": 152.4,
                       "model_samples_per_s": 168.4, "bottleneck": "loader"},
        "communication": None,
        "memory": None,
        "roofline": None,
        "processes": [],
        "verdict": {
            "code": "input_bound",
            "headline": "The GPU waits for input: data loading takes 52% of every 800 ms step and the "
                        "GPU is busy only 38% of the time.",
            "confidence": "high",
            "scale_advice": "Adding GPUs will not help: each GPU would wait on its own data loader for the "
                            "same 420 ms per step. Fix the input pipeline first; then the step is ~380 ms "
                            "of GPU work and scaling out pays.",
            "evidence": [
                {"metric": "data_share", "value": 0.525, "threshold": 0.05, "comparison": ">",
                 "source": "NVTX phases"},
                {"metric": "idle_input_share", "value": 0.515, "threshold": 0.25, "comparison": ">=",
                 "source": "gap causes"},
                {"metric": "utilization", "value": 0.3806, "threshold": 0.5, "comparison": "<",
                 "source": "kernel timeline"},
            ],
            "recommendations": [
                "Raise DataLoader num_workers (one per CPU core available to the job) and set "
                "persistent_workers=True.",
                "Set pin_memory=True and copy with non_blocking=True so H2D copies overlap compute.",
                "Prefetch the next batch (prefetch_factor ≥ 2) or move decoding/augmentation to the GPU (DALI).",
                "Cache the decoded dataset if it fits in host memory.",
            ],
            "projected_step_ms_if_fixed": 420.0,
            "secondary": [],
        },
        "data_quality": [
            {"code": "warmup_excluded", "message": "Step 0 (1.91 s) is warm-up and is excluded from averages.",
             "count": 1, "severity": "info"},
            {"code": "incomplete_step", "message": "The last step (11) was cut by the end of the capture and is "
             "excluded.", "count": 1, "severity": "info"},
            {"code": "no_gpu_metrics", "message": "No GPU metrics were sampled: memory bandwidth and SM "
             "activity are not measured, Tensor Core use is inferred from kernel names.", "count": None,
             "severity": "warning"},
        ],
        "thresholds": Thresholds().to_dict(),
        "capture_hints": ["nsys profile -t cuda,nvtx,osrt --gpu-metrics-devices=all --cuda-memory-usage=true "
                          "-o report python train.py"],
    }
    return view


def _roofline() -> dict:
    """Roofline section shape the renderer reads: machine roofs + one point per kernel."""
    ks = [
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize1x1x1_execute_segment_k_off",
         "sm90_xmma_gemm_bf16bf16_bf16f32", 0.41, 310.0, 6.1e14, 71.0, 42.0, "compute", "tensor"),
        ("flash_fwd_kernel", "flash_fwd_kernel", 0.22, 190.0, 4.2e14, 66.0, 38.0, "compute", "tensor"),
        ("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", "flash_bwd_dq_dk_dv_loop", 0.12, 120.0, 3.1e14,
         58.0, 51.0, "balanced", "tensor"),
        ("vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>", "vectorized_elementwise_kernel", 0.08, 0.31,
         9.4e11, 12.0, 88.0, "memory", "fp32"),
        ("cunn_SoftMaxForward", "cunn_SoftMaxForward", 0.05, 1.2, 3.1e12, 22.0, 81.0, "memory", "fp32"),
        ("reduce_kernel<512, 1, MeanOps>", "reduce_kernel", 0.03, 0.9, 1.4e12, 9.0, 63.0, "memory", "fp32"),
        ("layer_norm_kernel", "layer_norm_kernel", 0.02, 2.5, 2.0e12, 19.0, 55.0, "latency", "fp32"),
        ("nccl_tiny_kernel", "nccl_tiny_kernel", 0.002, None, None, 1.0, 2.0, "latency", "fp32"),
    ]
    return {
        "available": True,
        "source": "ncu --page raw (8 kernels, 240 launches)",
        "device": "NVIDIA H100 80GB HBM3",
        "clock_source": "measured SM clock",
        "memory_level": "DRAM",
        "roofs": [
            {"name": "FP32", "kind": "compute", "value": 6.7e13},
            {"name": "BF16 Tensor", "kind": "compute", "value": 9.89e14},
            {"name": "DRAM", "kind": "memory", "value": 3.35e12},
            {"name": "L2", "kind": "memory", "value": 1.2e13},
        ],
        "kernels": [{"name": n, "short_name": s, "launches": 30, "time_share": sh, "arithmetic_intensity": ai,
                     "achieved_flops_per_s": perf, "sm_pct": sm, "mem_pct": mem, "bound": b, "precision": prec}
                    for n, s, sh, ai, perf, sm, mem, b, prec in ks],
        "kernels_total": 8,
        "notes": ["Peaks at the profiled clock (ncu locks clocks to base); datasheet peaks are higher.",
                  "One kernel moved no DRAM bytes and is listed but not plotted."],
    }


def compute_bound_view() -> dict:
    """A healthy 2-GPU data-parallel run on Tensor Cores, with GPU metrics and ncu roofline."""
    view = input_bound_view()
    step_ms = 312.0
    start = 5_000_000_000
    durations = [980.0] + [312.0 + d for d in (1.0, -0.8, 0.4, 2.0, -1.2, 0.3, 0.0, 1.6)] + [612.0] + \
                [312.0 + d for d in (0.2, -0.5, 0.9, -1.1, 0.7, 0.1, -0.3, 1.2, -0.9, 0.6)] + [311.8]
    per_step = _per_step(durations, start - int(980.0 * MS), warmup=[0], outliers=[9], incomplete=[])
    phases = [
        _phase("dataloader next", "data", 6.0, step_ms, 5.7, 0.0, 20),
        _phase("forward", "forward", 96.0, step_ms, 93.0, 95.0, 20),
        _phase("backward", "backward", 182.0, step_ms, 176.0, 180.0, 20),
        _phase("allreduce", "communication", 12.0, step_ms, 11.5, 12.0, 20),
        _phase("optimizer.step", "optimizer", 14.0, step_ms, 13.0, 14.0, 20),
        _phase("other", "other", 2.0, step_ms, 0.5, 0.0, 20),
    ]
    strip_phases = [(p["name"], p["canonical"], p["mean_ms"]) for p in phases]
    busy = {"data": 0.9, "forward": 0.97, "backward": 0.98, "communication": 0.95, "optimizer": 0.92, "other": 0.2}
    rep, bin_ns = _strip("representative", 5, per_step[5]["start_ns"], strip_phases, busy, n_bins=200,
                         devices=(0, 1))
    worst, _ = _strip("worst", 9, per_step[9]["start_ns"],
                      strip_phases[:-1] + [("checkpoint", "overhead", 300.0)], busy | {"overhead": 0.0},
                      n_bins=200, devices=(0, 1))
    h100 = {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "memory_bytes": 85_520_809_984,
            "memory_bandwidth_bytes_per_s": 3_350_000_000_000, "compute_capability": "9.0"}
    view.update({
        "trace": {**view["trace"], "path": "llama_ddp_rank0.sqlite", "nsys_version": "2025.3.1",
                  "gpus": [{"id": 0, **h100}, {"id": 1, **h100}],
                  "processes": [{"pid": 100, "name": "python (rank 0)"}, {"pid": 101, "name": "python (rank 1)"}]},
        "window": {"start_ns": start, "end_ns": start + int(sum(durations[1:]) * MS),
                   "duration_ms": sum(durations[1:]), "source": "steps"},
        "steps": {"available": True, "count": 21, "analysed_count": 20, "source": "nvtx:ProfilerStep",
                  "range_name": "ProfilerStep#N", "mean_ms": 312.2, "median_ms": 312.25, "p90_ms": 313.6,
                  "max_ms": 612.0, "min_ms": 310.8, "warmup": [0], "incomplete": [],
                  "outliers": [{"index": 9, "duration_ms": 612.0, "ratio_to_median": 1.96,
                                "reason": "checkpoint range inside the step"}],
                  "per_step": per_step},
        "phases": phases,
        "gpu": {"utilization": 0.934, "compute_busy_ms": 6118.0, "copy_busy_ms": 40.0, "busy_ms": 6130.0,
                "idle_ms": 430.0, "window_ms": 6550.0, "copy_only_ms": 12.0,
                "per_device": [{"device_id": 0, "name": h100["name"], "utilization": 0.934, "compute_busy_ms": 6118.0,
                                "copy_busy_ms": 40.0, "busy_ms": 6130.0, "idle_ms": 420.0},
                               {"device_id": 1, "name": h100["name"], "utilization": 0.927, "compute_busy_ms": 6072.0,
                                "copy_busy_ms": 38.0, "busy_ms": 6085.0, "idle_ms": 465.0}]},
        "gaps": {"count": 9120, "total_ms": 430.0, "min_gap_ns": 1000,
                 "by_cause": {"input": 18.0, "transfer": 4.0, "sync": 21.0, "launch": 82.0, "overhead": 290.0,
                              "other": 15.0},
                 "histogram": [
                     {"lo_ns": 1_000, "hi_ns": 10_000, "count": 8400, "total_ms": 38.0},
                     {"lo_ns": 10_000, "hi_ns": 100_000, "count": 650, "total_ms": 62.0},
                     {"lo_ns": 100_000, "hi_ns": 1_000_000, "count": 60, "total_ms": 30.0},
                     {"lo_ns": 1_000_000, "hi_ns": 10_000_000, "count": 8, "total_ms": 20.0},
                     {"lo_ns": 100_000_000, "hi_ns": 1_000_000_000, "count": 2, "total_ms": 290.0}],
                 "top": [{"start_ns": per_step[9]["start_ns"] + 300 * MS, "duration_ms": 288.0, "device_id": 0,
                          "cause": "overhead", "cpu_activity": "torch.save (checkpoint)", "phase": "checkpoint"},
                         {"start_ns": start + 40 * MS, "duration_ms": 1.9, "device_id": 1, "cause": "sync",
                          "cpu_activity": "cudaStreamSynchronize", "phase": "optimizer.step"}]},
        "timeline": {"available": True, "bin_ns": bin_ns, "strips": [rep, worst]},
        "tensor_cores": {"available": True, "share_of_kernel_time": 0.83, "gemm_share": 0.78,
                         "tc_share_of_gemm": 0.99, "evidence": "GPU metrics: Tensor Active 61% (counters)",
                         "confidence": "high", "non_tc_gemm_share": 0.004, "non_tc_gemm_kernels": []},
        "gpu_metrics": {"available": True, "per_device": [],
                        "overall": {"sm_active": 0.91, "tensor_active": 0.61, "dram_bandwidth": 0.44,
                                    "pcie_rx": 0.03, "pcie_tx": 0.01},
                        "per_phase": [{"phase": "forward", "sm_active": 0.93, "tensor_active": 0.66,
                                       "dram_bandwidth": 0.41, "pcie_rx": 0.0, "pcie_tx": 0.0},
                                      {"phase": "backward", "sm_active": 0.95, "tensor_active": 0.64,
                                       "dram_bandwidth": 0.47, "pcie_rx": 0.0, "pcie_tx": 0.0},
                                      {"phase": "allreduce", "sm_active": 0.35, "tensor_active": 0.0,
                                       "dram_bandwidth": 0.22, "pcie_rx": 0.2, "pcie_tx": 0.21}]},
        "throughput": {"batch_size": 32, "source": "--batch-size", "loader_samples_per_s": 5333.0,
                       "model_samples_per_s": 104.6, "bottleneck": "model"},
        "communication": {"per_device": [{"device_id": 0, "comm_ms": 640.0, "hidden_ms": 400.0, "exposed_ms": 240.0},
                                         {"device_id": 1, "comm_ms": 655.0, "hidden_ms": 405.0, "exposed_ms": 250.0}],
                          "exposed_share": 0.037},
        "memory": {"per_device": [{"device_id": 0, "peak_bytes": 61_000_000_000, "device_bytes": 85_520_809_984,
                                   "peak_share": 0.713},
                                  {"device_id": 1, "peak_bytes": 60_200_000_000, "device_bytes": 85_520_809_984,
                                   "peak_share": 0.704}],
                   "advice": "71% of device memory at peak: room for a somewhat larger batch."},
        "roofline": _roofline(),
        "processes": [{"pid": 100, "name": "python (rank 0)", "steps_mean_ms": 312.2, "verdict_code": "compute_bound"},
                      {"pid": 101, "name": "python (rank 1)", "steps_mean_ms": 312.4, "verdict_code": "compute_bound"}],
        "verdict": {
            "code": "compute_bound",
            "headline": "The GPUs are busy 93% of the time, 83% of kernel time on Tensor Cores: this run is "
                        "compute bound.",
            "confidence": "high",
            "scale_advice": "Adding GPUs will help: the step is GPU work, communication is 96% hidden behind "
                            "backward, so data-parallel scaling should be near linear.",
            "evidence": [
                {"metric": "utilization", "value": 0.934, "threshold": 0.8, "comparison": ">=", "source": "kernel timeline"},
                {"metric": "tc_share_of_gemm", "value": 0.99, "threshold": 0.5, "comparison": ">=",
                 "source": "GPU metrics"},
                {"metric": "exposed_comm_share", "value": 0.037, "threshold": 0.1, "comparison": "<",
                 "source": "NCCL kernels"},
            ],
            "recommendations": ["Try torch.compile to fuse the remaining elementwise kernels (8% of kernel time).",
                                "Checkpoint asynchronously: step 9 stalled 288 ms in torch.save."],
            "projected_step_ms_if_fixed": None,
            "secondary": ["overhead_bound"],
        },
        "data_quality": [{"code": "warmup_excluded", "message": "Step 0 (980 ms) is warm-up and is excluded.",
                          "count": 1, "severity": "info"}],
        "capture_hints": [],
    })
    view["kernels"] = [dict(k) for k in view["kernels"]]
    view["kernels"].insert(2, _kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                                      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 400, 640.0, 0.1, "communication", False))
    return view


def sparse_view() -> dict:
    """A CUDA-less, NVTX-less export: nearly every section unavailable, verdict insufficient_data."""
    hint = "nsys profile -t cuda,nvtx,osrt --cuda-graph-trace=node -o report python train.py"
    no_cuda = {"available": False, "reason": "The export holds no CUDA kernel or memcpy activity.",
               "hint": "Capture with -t cuda: " + hint}
    return {
        "schema_version": 1,
        "tool": {"name": "nsys-diag", "version": "0.1.0"},
        "generated_at": GENERATED_AT,
        "trace": {"path": "dynamicvit.sqlite", "format": "nsys-sqlite", "nsys_version": "2021.3.1",
                  "schema_version": None, "gpus": [], "processes": [{"pid": 7, "name": "python"}],
                  "capture_span_ns": 3_000 * MS, "session_start_utc_ns": None,
                  "tables": {"OSRT_API": 5120, "StringIds": 210}},
        "window": {"start_ns": 0, "end_ns": 3_000 * MS, "duration_ms": 3000.0, "source": "capture"},
        "steps": {"available": False, "reason": "No NVTX ranges and no repeating GPU pattern: steps cannot be found.",
                  "hint": "Annotate the training loop with NVTX (nsys_diag.annotate) and capture with -t nvtx."},
        "phases": [],
        "gpu": dict(no_cuda),
        "gaps": dict(no_cuda),
        "timeline": {"available": False, "reason": "No steps to draw.", "hint": "Capture NVTX step ranges."},
        "kernels": [],
        "kernels_total": 0,
        "tensor_cores": dict(no_cuda),
        "transfers": dict(no_cuda),
        "gpu_metrics": None,
        "throughput": None,
        "communication": None,
        "memory": None,
        "roofline": None,
        "processes": [],
        "verdict": {"code": "insufficient_data",
                    "headline": "This export cannot say what limits the job: it holds no CUDA activity and no NVTX ranges.",
                    "confidence": "low",
                    "scale_advice": "Unknown: capture CUDA activity first.",
                    "evidence": [], "recommendations": ["Re-capture with: " + hint],
                    "projected_step_ms_if_fixed": None, "secondary": []},
        "data_quality": [{"code": "no_cuda", "message": "No CUDA activity tables in the export.", "count": None,
                          "severity": "warning"},
                         {"code": "no_nvtx", "message": "No NVTX ranges in the export.", "count": None,
                          "severity": "warning"}],
        "thresholds": Thresholds().to_dict(),
        "capture_hints": [hint, "nsys export --type sqlite report.nsys-rep"],
    }


def _hostile(s: str) -> str:
    return f"{s} {HOSTILE_NVTX}"


def hostile_view() -> dict:
    """compute_bound_view with attacker-controlled strings everywhere a trace can put them."""
    view = copy.deepcopy(compute_bound_view())
    view["trace"]["path"] = "evil</title><script>alert(1)</script>.sqlite"
    view["trace"]["gpus"][0]["name"] = "<svg onload=alert(1)>"
    view["trace"]["processes"][0]["name"] = _hostile("python")
    view["trace"]["tables"]["<b>EVIL_TABLE</b>"] = 1
    for k in view["kernels"]:
        k["name"] = HOSTILE_KERNEL + " " + k["name"]
    view["kernels"][0]["short_name"] = HOSTILE_KERNEL
    view["kernels"][1]["short_name"] = "`tick` | pipe <b>b</b> \x1b[31mred\x1b[0m \ud800 \x07bell"
    view["kernels"][2]["short_name"] = "x" * 5000
    view["kernels"][3]["category"] = "<i>cat</i>|`x`"
    for p in view["phases"]:
        p["name"] = _hostile(p["name"])
    for strip in view["timeline"]["strips"]:
        for p in strip["phases"]:
            p["name"] = _hostile(p["name"])
    view["gaps"]["top"][0]["cpu_activity"] = HOSTILE_KERNEL
    view["gaps"]["top"][0]["phase"] = _hostile("checkpoint")
    view["roofline"]["kernels"][0]["short_name"] = HOSTILE_KERNEL
    view["roofline"]["kernels"][1]["name"] = _hostile("flash")
    view["tensor_cores"]["non_tc_gemm_kernels"] = [{"name": HOSTILE_KERNEL, "share": 0.3}]
    view["verdict"]["headline"] = _hostile("headline")
    view["verdict"]["scale_advice"] = _hostile("advice")
    view["verdict"]["recommendations"] = [_hostile("fix"), "```\nclose fence"]
    view["verdict"]["evidence"][0]["source"] = _hostile("source")
    view["data_quality"].append({"code": "<x>", "message": _hostile("message"), "count": 3, "severity": "warning"})
    view["capture_hints"] = [_hostile("nsys profile")]
    view["processes"][0]["name"] = _hostile("rank")
    return view


def large_view(n_kernels: int = 20_000, n_steps: int = 50_000, name_len: int = 3_000) -> dict:
    """A view as big as a careless builder could make it: far more kernels than the cap, very long
    names, tens of thousands of steps. The renderer must still produce < 2 MB."""
    view = input_bound_view()
    base = view["kernels"][0]
    view["kernels"] = [{**base, "name": f"k{i}_" + "T" * name_len, "short_name": f"k{i}_" + "t" * 200,
                        "share": 1.0 / n_kernels} for i in range(n_kernels)]
    view["kernels_total"] = n_kernels
    view["steps"]["per_step"] = [{"index": i, "start_ns": i * 800 * MS, "duration_ms": 800.0 + (i % 17),
                                  "kind": "normal"} for i in range(n_steps)]
    view["gaps"]["top"] = [{"start_ns": i * MS, "duration_ms": 1.0, "device_id": 0, "cause": "input",
                            "cpu_activity": "y" * 500, "phase": "data"} for i in range(5000)]
    view["data_quality"] = [{"code": "c", "message": "m" * 400, "count": i, "severity": "info"} for i in range(3000)]
    return view


ALL_VIEWS = {
    "input_bound": input_bound_view,
    "compute_bound": compute_bound_view,
    "sparse": sparse_view,
    "hostile": hostile_view,
}


def input_bound_with_advice(n: int) -> dict:
    """``input_bound_view`` whose verdict recommends ``n`` numbered fixes ("Fix number 1." …):
    for the caps on the advice the summaries show."""
    view = input_bound_view()
    view["verdict"]["recommendations"] = [f"Fix number {i}." for i in range(1, n + 1)]
    return view
