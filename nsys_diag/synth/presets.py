"""Presets of the trace generator: scenarios whose answers are known by construction.

``PRESETS`` maps a name to a factory of no argument returning a :class:`Scenario`;
``Scenario.expected_verdict`` is the verdict the design aims at and
:func:`nsys_diag.synth.expected` computes the numbers from the built timeline. All durations are
integer ns (``MS``/``US`` multiples).
"""
from __future__ import annotations

from dataclasses import replace

from nsys_diag.synth.scenarios import (
    MS, NCCL_STREAM, US, GiB, GpuMemorySpec, GpuMetricsSpec, KernelSpec, MemcpySpec, MemsetSpec, MiB,
    PeriodicSpec, PhaseSpec, RangeSpec, Scenario, SyncSpec, scaled)
from nsys_diag.synth.cases import CASES


def _worked_example() -> Scenario:
    return Scenario(
        name="worked_example",
        description="The classic worked example: an 800 ms step (data loading 420 ms, forward "
                    "180, backward 150, optimizer 30, logging 20) on one H100; the GPU computes "
                    "192 ms per step (24%) and waits on the data loader the rest of the time.",
        expected_verdict="input_bound",
        steps=11,
        warmup_extra_ns=650 * MS,
        warmup_phase="forward",
        gpu="H100",
        nvtx_text="mixed",
        batch_size=32,
        gpu_memory=GpuMemorySpec(weights_bytes=12 * GiB, activation_bytes=18 * GiB),
        env={"CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "8", "PYTHONHASHSEED": "0"},
        phases=(
            PhaseSpec("data_loading", 420 * MS, canonical="data",
                      memcpys=(MemcpySpec("H2D", 64 * MiB, 2_800 * US, at=1.0),)),
            PhaseSpec("forward", 180 * MS, canonical="forward", kernels=(
                KernelSpec("gemm_bf16_sm90", 3_000 * US, 12),
                KernelSpec("nvjet", 2_000 * US, 8),
                KernelSpec("flash_fwd", 2_000 * US, 8),
                KernelSpec("layer_norm", 375 * US, 16),
                KernelSpec("ew_gelu", 750 * US, 8))),       # 36+16+16+6+6 = 80 ms
            PhaseSpec("backward", 150 * MS, canonical="backward", kernels=(
                KernelSpec("gemm_bf16_sm90", 2_000 * US, 24, thread="autograd"),
                KernelSpec("nvjet", 1_500 * US, 16, thread="autograd"),
                KernelSpec("flash_bwd", 2_500 * US, 8, thread="autograd"),
                KernelSpec("ew_add", 500 * US, 16, thread="autograd"))),  # 48+24+20+8 = 100 ms
            PhaseSpec("optimizer_step", 30 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 1_000 * US, 12),)),      # 12 ms
            PhaseSpec("logging", 20 * MS, canonical="overhead",
                      memcpys=(MemcpySpec("D2H", 4, 2 * US, host="pageable", at=0.5),),
                      syncs=(SyncSpec("cudaStreamSynchronize", at=0.5),)),
        ),
    )


def _healthy_tc() -> Scenario:
    return Scenario(
        name="healthy_tc",
        description="A healthy compute-bound bf16 run on one H100: Tensor Core GEMMs and flash "
                    "attention keep the GPU ≥ 90% busy; the loader prefetches, so the data phase "
                    "(a start/end NVTX range) is 6 ms of a 300 ms step.",
        expected_verdict="compute_bound",
        steps=10,
        warmup_extra_ns=400 * MS,
        warmup_phase="forward",
        jitter=0.02,
        seed=7,
        gpu="H100",
        nvtx_text="registered",
        batch_size=64,
        phases=(
            PhaseSpec("DataLoader.__next__", 6 * MS, canonical="data", kind="start_end",
                      memcpys=(MemcpySpec("H2D", 16 * MiB, 700 * US, at=1.0),)),
            PhaseSpec("forward", 95 * MS, canonical="forward",
                      ranges=(RangeSpec("aten::linear", count=12, span=0.95),
                              RangeSpec("aten::scaled_dot_product_attention", count=4, start=0.02,
                                        span=0.9, fill=0.3)),
                      kernels=(KernelSpec("nvjet", 2_500 * US, 24),
                               KernelSpec("flash_fwd", 2_500 * US, 8),
                               KernelSpec("layer_norm", 500 * US, 16),
                               KernelSpec("ew_gelu", 500 * US, 8))),        # 60+20+8+4 = 92
            PhaseSpec("backward", 180 * MS, canonical="backward", kernels=(
                KernelSpec("gemm_bf16_sm90", 2_500 * US, 48, thread="autograd"),
                KernelSpec("flash_bwd", 5_000 * US, 8, thread="autograd"),
                KernelSpec("ew_add", 500 * US, 32, thread="autograd"))),     # 120+40+16 = 176
            PhaseSpec("optimizer.step", 15 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 1_500 * US, 8),)),           # 12
            PhaseSpec("zero_grad", 4 * MS, canonical="optimizer",
                      memsets=(MemsetSpec(256 * MiB, 300 * US, at=0.2),)),
        ),
    )


def _simt_gemm() -> Scenario:
    return Scenario(
        name="simt_gemm",
        description="Compute-bound but on FP32 SIMT GEMMs (volta_sgemm / ampere_sgemm / ffma "
                    "xmma) on an A100: the host launches the step's kernels ahead of the GPU "
                    "and waits in loss.item() for them; the GPU is ~95% busy yet no Tensor Core "
                    "is used.",
        expected_verdict="compute_bound_no_tensor_cores",
        steps=12,
        warmup_extra_ns=300 * MS,
        warmup_phase="fwd",
        jitter=0.02,
        seed=11,
        gpu="A100",
        batch_size=32,
        phases=(
            PhaseSpec("dataloader", 6 * MS, canonical="data",
                      memcpys=(MemcpySpec("H2D", 16 * MiB, 900 * US, at=1.0),)),
            # the host runs ahead: 84 ms of launching for 248 ms of GPU work, then loss.item()
            # (a 4-byte read) waits ~164 ms for the queue to drain
            PhaseSpec("fwd", 30 * MS, canonical="forward", kernels=(
                KernelSpec("sgemm_volta", 3_000 * US, 16),
                KernelSpec("sgemm_ampere", 3_000 * US, 8),
                KernelSpec("softmax", 750 * US, 8),
                KernelSpec("layer_norm", 500 * US, 8))),             # 48+24+6+4 = 82
            PhaseSpec("loss.backward", 50 * MS, canonical="backward", kernels=(
                KernelSpec("sgemm_sm80_ffma", 3_000 * US, 40, thread="autograd"),
                KernelSpec("sgemm_volta", 3_000 * US, 8, thread="autograd"),
                KernelSpec("ew_add", 500 * US, 16, thread="autograd"),
                KernelSpec("reduce_mean", 500 * US, 8, thread="autograd"))),  # 120+24+8+4 = 156
            PhaseSpec("optimizer.step", 4 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 1_250 * US, 8),)),    # 10
            PhaseSpec("loss.item()", 175 * MS, canonical="forward",
                      memcpys=(MemcpySpec("D2H", 4, 2 * US, host="pageable", at=0.0),),
                      syncs=(SyncSpec("cudaStreamSynchronize", at=0.0),)),
        ),
    )


_MEM_LEVELS = {
    "SMs Active [Throughput %]": 48.0, "SM Issue [Throughput %]": 18.0,
    "Tensor Active [Throughput %]": 0.0, "DRAM Read Bandwidth [Throughput %]": 55.0,
    "DRAM Write Bandwidth [Throughput %]": 27.0,
}


def _memory_bound() -> Scenario:
    return Scenario(
        name="memory_bound",
        description="Many small elementwise/reduction kernels (~220 µs) keep an H100 ~91% busy, "
                    "but GPU metrics show DRAM read+write bandwidth at ~75% of peak with SMs "
                    "moderately active and no Tensor Core activity: memory-bandwidth bound.",
        expected_verdict="memory_bound",
        steps=8,
        warmup_extra_ns=60 * MS,
        warmup_phase="forward",
        jitter=0.02,
        seed=5,
        gpu="H100",
        batch_size=128,
        gpu_metrics=GpuMetricsSpec(period_ns=2 * MS, levels={"*": dict(_MEM_LEVELS)}),
        phases=(
            PhaseSpec("data", 1 * MS, canonical="data",
                      memcpys=(MemcpySpec("H2D", 4 * MiB, 200 * US, at=1.0),)),
            PhaseSpec("forward", 14 * MS, canonical="forward", kernels=(
                KernelSpec("ew_add", 220 * US, 20), KernelSpec("ew_mul", 220 * US, 20),
                KernelSpec("ew_gelu", 220 * US, 10), KernelSpec("ew_copy_bf16", 220 * US, 10))),
            PhaseSpec("backward", 22 * MS, canonical="backward", kernels=(
                KernelSpec("ew_mul", 220 * US, 40, thread="autograd"),
                KernelSpec("ew_add", 220 * US, 40, thread="autograd"),
                KernelSpec("ew_copy_bf16", 220 * US, 10, thread="autograd"),
                KernelSpec("reduce_mean", 100 * US, 10, thread="autograd"))),
            PhaseSpec("optimizer", 3 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 600 * US, 4),)),
        ),
    )


def _overhead_bound() -> Scenario:
    return Scenario(
        name="overhead_bound",
        description="A V100 run whose loop logs every step with `.item()` host syncs (45 ms of a "
                    "227 ms step) and saves a checkpoint every 5th step (320 ms, GPU idle, "
                    "pageable D2H copies behind cudaDeviceSynchronize).",
        expected_verdict="overhead_bound",
        steps=11,
        warmup_extra_ns=500 * MS,
        warmup_phase="fwd",
        jitter=0.01,
        seed=3,
        gpu="V100",
        batch_size=32,
        phases=(
            PhaseSpec("dataloader", 8 * MS, canonical="data",
                      memcpys=(MemcpySpec("H2D", 32 * MiB, 3_000 * US, at=1.0),)),
            PhaseSpec("fwd", 60 * MS, canonical="forward", kernels=(
                KernelSpec("gemm_fp16_volta", 1_750 * US, 24),
                KernelSpec("ew_add", 500 * US, 24))),                      # 42+12 = 54
            PhaseSpec("loss.backward", 100 * MS, canonical="backward", kernels=(
                KernelSpec("gemm_fp16_volta", 2_000 * US, 40, thread="autograd"),
                KernelSpec("ew_mul", 500 * US, 24, thread="autograd"))),   # 80+12 = 92
            PhaseSpec("optimizer.step", 14 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 1_500 * US, 8),)),      # 12
            PhaseSpec("log_metrics", 45 * MS, canonical="overhead",
                      memcpys=(MemcpySpec("D2H", 4, 2 * US, count=6, host="pageable"),),
                      syncs=(SyncSpec("cudaStreamSynchronize", count=6, at=None),
                             SyncSpec("cudaDeviceSynchronize", at=1.0)),
                      marks=("metrics_logged",)),
        ),
        periodic=(PeriodicSpec(every=5, phase=PhaseSpec(
            "save_checkpoint", 320 * MS, canonical="overhead",
            syncs=(SyncSpec("cudaDeviceSynchronize", at=0.0),),
            memcpys=(MemcpySpec("D2H", 40 * MiB, 6_000 * US, count=8, host="pageable",
                                api="cudaMemcpy", launch_ns=6_200 * US, at=0.05),))),),
    )


def _packed(n_items: int, launch_ns: int, gap_ns: int, margin_ns: int = 200 * US) -> int:
    return n_items * (launch_ns + gap_ns) + margin_ns


def _launch_bound() -> Scenario:
    fwd_n, bwd_n, opt_n = 480, 480, 240
    return Scenario(
        name="launch_bound",
        description="About 1,200 tiny kernels (2–5 µs) per step, each behind a 12–15 µs launch "
                    "call: the H100 idles in short gaps between kernels while the CPU launches "
                    "(≈20% busy).",
        expected_verdict="launch_bound",
        steps=4,
        warmup_extra_ns=20 * MS,
        warmup_phase="forward",
        seed=9,
        gpu="H100",
        batch_size=8,
        phases=(
            PhaseSpec("data", 1 * MS, canonical="data"),
            PhaseSpec("forward", _packed(fwd_n, 12 * US, 2 * US), canonical="forward",
                      launch_gap_ns=2 * US, kernels=(
                          KernelSpec("ew_fill", 2_000, fwd_n // 3, launch_ns=12 * US),
                          KernelSpec("triton_fused", 3_000, fwd_n // 3, launch_ns=12 * US),
                          KernelSpec("ew_add", 4_000, fwd_n // 3, launch_ns=12 * US))),
            PhaseSpec("backward", _packed(bwd_n, 15 * US, 2 * US), canonical="backward",
                      launch_gap_ns=2 * US, kernels=(
                          KernelSpec("ew_mul", 3_000, bwd_n // 2, thread="autograd",
                                     launch_ns=15 * US),
                          KernelSpec("ew_add", 4_000, bwd_n // 2, thread="autograd",
                                     launch_ns=15 * US))),
            PhaseSpec("optimizer.step", _packed(opt_n, 12 * US, 2 * US), canonical="optimizer",
                      launch_gap_ns=2 * US,
                      kernels=(KernelSpec("ew_add", 3_000, opt_n, launch_ns=12 * US),)),
        ),
    )


def _multi_gpu() -> Scenario:
    return Scenario(
        name="multi_gpu",
        description="Two ranks (one process per H100) training with DDP: gradient all-reduce "
                    "buckets overlap backward compute, but the last 40 ms all-reduce runs after "
                    "backward compute has drained (exposed communication ≈ 14% of the step).",
        expected_verdict="communication_bound",
        steps=7,
        warmup_extra_ns=300 * MS,
        warmup_phase="forward",
        jitter=0.01,
        seed=21,
        gpu="H100",
        n_devices=2,
        world_size=2,
        batch_size=32,
        command=("torchrun", "--nproc_per_node=2", "train.py"),
        env={"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
             "NCCL_DEBUG": "WARN"},
        phases=(
            PhaseSpec("data_loading", 5 * MS, canonical="data",
                      memcpys=(MemcpySpec("H2D", 16 * MiB, 700 * US, at=1.0),)),
            PhaseSpec("forward", 75 * MS, canonical="forward", kernels=(
                KernelSpec("nvjet", 2_500 * US, 20), KernelSpec("flash_fwd", 2_000 * US, 6),
                KernelSpec("ew_gelu", 500 * US, 16))),                     # 50+12+8 = 70
            PhaseSpec("backward", 175 * MS, canonical="backward", window=(0.0, 0.7), kernels=(
                KernelSpec("gemm_bf16_sm90", 2_500 * US, 48, thread="autograd"),
                KernelSpec("ew_add", 500 * US, 16, thread="autograd"),     # 120+8 = 128
                KernelSpec("nccl_allreduce", 10_000 * US, 3, thread="autograd",
                           stream=NCCL_STREAM, nvtx="ncclAllReduce", nvtx_domain="NCCL"),
                KernelSpec("nccl_allreduce", 40_000 * US, 1, thread="autograd",
                           stream=NCCL_STREAM, nvtx="ncclAllReduce", nvtx_domain="NCCL", at=0.72)),
                      # DDP's end of backward: the host waits for the last all-reduce
                      syncs=(SyncSpec("cudaStreamSynchronize", stream=NCCL_STREAM, at=0.74),)),
            PhaseSpec("optimizer_step", 15 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 1_500 * US, 8),)),
        ),
    )


def _no_cuda() -> Scenario:
    return Scenario(
        name="no_cuda",
        description="NVTX ranges only (captured with -t nvtx): steps and phases are visible but "
                    "there is no CUDA trace, so nothing can be said about the GPU.",
        expected_verdict="insufficient_data",
        steps=8,
        warmup_extra_ns=200 * MS,
        cuda=False,
        nvtx_text="registered",
        phases=(
            PhaseSpec("data_loading", 120 * MS, canonical="data"),
            PhaseSpec("forward", 90 * MS, canonical="forward"),
            PhaseSpec("backward", 160 * MS, canonical="backward"),
            PhaseSpec("optimizer_step", 20 * MS, canonical="optimizer"),
        ),
    )


def _inference() -> Scenario:
    return Scenario(
        name="inference",
        description="Batched inference (no backward) on an H100: elementwise/norm/softmax "
                    "kernels keep the GPU ~80% busy; GPU metrics show DRAM bandwidth ≈ 80% of "
                    "peak and no Tensor Core activity.",
        expected_verdict="memory_bound",
        steps=10,
        warmup_extra_ns=80 * MS,
        warmup_phase="model_forward",
        jitter=0.02,
        seed=13,
        gpu="H100",
        step_prefix="ProfilerStep#",
        batch_size=256,
        command=("python3", "serve.py"),
        gpu_metrics=GpuMetricsSpec(period_ns=2 * MS, levels={"*": {
            "SMs Active [Throughput %]": 45.0, "SM Issue [Throughput %]": 15.0,
            "Tensor Active [Throughput %]": 0.0, "DRAM Read Bandwidth [Throughput %]": 72.0,
            "DRAM Write Bandwidth [Throughput %]": 30.0}}),
        phases=(
            PhaseSpec("preprocess", 3 * MS, canonical="data",
                      memcpys=(MemcpySpec("H2D", 8 * MiB, 400 * US, at=1.0),)),
            PhaseSpec("model_forward", 30 * MS, canonical="forward", kernels=(
                KernelSpec("ew_add", 300 * US, 40), KernelSpec("ew_mul", 300 * US, 40),
                KernelSpec("layer_norm", 200 * US, 10), KernelSpec("softmax", 200 * US, 10))),
            PhaseSpec("postprocess", 2 * MS, canonical="other",
                      memcpys=(MemcpySpec("D2H", 1 * MiB, 90 * US, host="pageable", at=0.3),),
                      syncs=(SyncSpec("cudaStreamSynchronize", at=0.3),)),
        ),
    )


PRESETS: dict[str, object] = {
    "worked_example": _worked_example,
    "healthy_tc": _healthy_tc,
    "simt_gemm": _simt_gemm,
    "memory_bound": _memory_bound,
    "overhead_bound": _overhead_bound,
    "launch_bound": _launch_bound,
    "multi_gpu": _multi_gpu,
    "no_cuda": _no_cuda,
    "inference": _inference,
    # the worked example written in shuffled row order (nsys ≥ 2025.6 promises no order)
    "shuffled_rows": lambda: replace(_worked_example(), name="shuffled_rows", shuffle_seed=15),
    **CASES,  # one per idle cause and capture kind (synth/cases.py)
}
"""Preset name → factory. Use :func:`preset` to get a Scenario."""


def preset(name: str, **overrides) -> Scenario:
    """The preset Scenario ``name`` with dataclass fields replaced by ``overrides``
    (e.g. ``preset("worked_example", steps=50, env={"HF_TOKEN": "hf_FAKE_SECRET_123"})``).
    The extra override ``scale=K`` multiplies kernel counts (see :func:`scaled`)."""
    try:
        factory = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
    scale = overrides.pop("scale", 1)
    sc = factory()  # type: ignore[operator]
    if overrides:
        sc = replace(sc, **overrides)
    return scaled(sc, scale)
