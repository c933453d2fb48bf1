"""Presets for the captures a trustworthy diagnosis must get right: one scenario per idle cause
and per capture kind, each with the verdict a performance engineer would give
(``expected_verdict``) and the cause its headline must name (``EXPECTED_CAUSE``).

Registered in :data:`nsys_diag.synth.presets.PRESETS`. Some are built on the generator's host
events (init/allocation API calls, OS-runtime calls, CPU samples, unified-memory copies, shuffled
rows: ``PhaseSpec.api_calls``/``host_calls``, ``Scenario.init_calls``/``shuffle_seed``,
``MemcpySpec`` kinds ``uvm_*``). Kept small (a few hundred kernels) so each test writes and analyses its file
in well under a second. Durations are integer ns.
"""
from __future__ import annotations

from dataclasses import replace

from nsys_diag.synth.scenarios import (MS, NCCL_STREAM, US, GpuMetricsSpec, KernelSpec, MemcpySpec,
                                       MiB, PhaseSpec, Scenario, SyncSpec)


EXPECTED_CAUSE: dict[str, str] = {
    "item_sync_stalls": "host_cpu", "cuda_graphs": "compute", "triton_gemm_no_tc": "no_tensor_cores",
    "triton_gemm_tc": "compute", "no_nvtx": "other", "grad_accumulation": "compute",
    "pageable_h2d": "transfer", "dataloader_workers": "input", "exposed_allreduce":
    "exposed_communication", "mpi_cuda": "communication", "tiny_two_kernels": "too_little_work",
    "startup_dominated": "startup", "healthy_control": "compute", "uvm_migrations":
    "unified_memory", "host_io_stalls": "host_io", "shuffled_rows": "input",
}
"""Preset → the finding cause (design C) its verdict comes from / its headline names."""


def _tc_levels(tensor: float) -> dict[str, float]:
    return {"SMs Active [Throughput %]": 88.0, "SM Issue [Throughput %]": 50.0,
            "Tensor Active [Throughput %]": tensor, "DRAM Read Bandwidth [Throughput %]": 20.0,
            "DRAM Write Bandwidth [Throughput %]": 8.0}


def item_sync_stalls() -> Scenario:
    layers = tuple(PhaseSpec(f"layer_{i}", 5 * MS, canonical="forward",
                             kernels=(KernelSpec("gemm_bf16_sm90", 2_000 * US, at=0.0),),
                             syncs=(SyncSpec("cudaStreamSynchronize", at=0.45),))
                   for i in range(12))
    return Scenario(
        name="item_sync_stalls",
        description="Per-layer `.item()`: after each of 12 forward layers the host calls "
                    "cudaStreamSynchronize, then does 2.7 ms of host work with the queue drained "
                    "(~34% of the step idle after a sync returned).",
        expected_verdict="overhead_bound", steps=8, warmup_extra_ns=30 * MS,
        warmup_phase="layer_0", gpu="H100",
        phases=(PhaseSpec("data", 2 * MS, canonical="data",
                          memcpys=(MemcpySpec("H2D", 4 * MiB, 200 * US, at=1.0),)),
                *layers,
                PhaseSpec("backward", 42 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 2_500 * US, 16, thread="autograd"),)),
                PhaseSpec("optimizer", 5 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 1_000 * US, 4),))))


def cuda_graphs() -> Scenario:
    return Scenario(
        name="cuda_graphs",
        description="Forward and backward replayed as CUDA graphs: hundreds of 300 µs kernels "
                    "queued at once through cudaGraphLaunch (2 µs host calls), the GPU busy back "
                    "to back — compute-bound, not launch-bound.",
        expected_verdict="compute_bound", steps=6, warmup_extra_ns=20 * MS,
        warmup_phase="forward", gpu="H100",
        phases=(PhaseSpec("data", 1 * MS, canonical="data"),
                PhaseSpec("forward", 40 * MS, canonical="forward", kernels=(
                    KernelSpec("nvjet", 300 * US, 130, api="cudaGraphLaunch", launch_ns=2 * US,
                               at=0.0),)),
                PhaseSpec("backward", 70 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 300 * US, 230, api="cudaGraphLaunch",
                               launch_ns=2 * US, at=0.0),)),
                PhaseSpec("optimizer", 2 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 500 * US, 3, at=0.0),))))


def _triton(name: str, tensor: float, verdict: str, what: str) -> Scenario:
    return Scenario(
        name=name,
        description=f"Triton GEMMs (triton_tem_fused_mm_0 / triton_mm_1: names that do not say "
                    f"the dtype) keep an H100 busy; GPU metrics show Tensor Active ≈ "
                    f"{tensor:g}% of cycles — {what}.",
        expected_verdict=verdict, steps=8, warmup_extra_ns=30 * MS, warmup_phase="forward",
        gpu="H100", gpu_metrics=GpuMetricsSpec(period_ns=1 * MS, levels={"*": _tc_levels(tensor)}),
        phases=(PhaseSpec("data", 1 * MS, canonical="data",
                          memcpys=(MemcpySpec("H2D", 4 * MiB, 200 * US, at=1.0),)),
                PhaseSpec("forward", 40 * MS, canonical="forward", kernels=(
                    KernelSpec("triton_tem_fused_mm_0", 1_500 * US, 24, at=0.0),
                    KernelSpec("triton_poi_fused_add_mul_0", 200 * US, 12, at=0.95))),
                PhaseSpec("backward", 70 * MS, canonical="backward", kernels=(
                    KernelSpec("triton_mm_1", 1_500 * US, 44, thread="autograd", at=0.0),)),
                PhaseSpec("optimizer", 3 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 1_000 * US, 2, at=0.0),))))


def triton_gemm_no_tc() -> Scenario:
    return _triton("triton_gemm_no_tc", 1.0, "compute_bound_no_tensor_cores",
                   "an FP32 fallback: the Tensor Cores are not used")


def triton_gemm_tc() -> Scenario:
    return _triton("triton_gemm_tc", 70.0, "compute_bound", "the Tensor Cores are engaged")


def no_nvtx() -> Scenario:
    return Scenario(
        name="no_nvtx",
        description="A training loop captured without NVTX (-t cuda only): the GPU idles "
                    "of the time (~50%) while the host prepares each batch, and no range names the "
                    "host work (verdict from the gaps, confidence at most medium).",
        expected_verdict="overhead_bound", steps=8, warmup_extra_ns=30 * MS,
        warmup_phase="forward", gpu="A100", nvtx=False,
        phases=(PhaseSpec("host_prep", 90 * MS, canonical="data"),
                PhaseSpec("forward", 40 * MS, canonical="forward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 1_750 * US, 20, at=0.0),)),
                PhaseSpec("backward", 60 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 2_000 * US, 28, at=0.0),))))


def grad_accumulation() -> Scenario:
    micro = []
    for i in range(4):
        micro.append(PhaseSpec(f"forward_micro{i}", 12 * MS, canonical="forward", kernels=(
            KernelSpec("nvjet", 1_000 * US, 11, at=0.0),)))
        micro.append(PhaseSpec(f"backward_micro{i}", 20 * MS, canonical="backward", kernels=(
            KernelSpec("gemm_bf16_sm90", 1_000 * US, 19, thread="autograd", at=0.0),)))
    return Scenario(
        name="grad_accumulation",
        description="Gradient accumulation: 4 forward/backward micro-batches inside each "
                    "ProfilerStep#N, then one optimizer step; one step per ProfilerStep, never "
                    "per micro-batch. GPU ~95% busy on Tensor Core GEMMs.",
        expected_verdict="compute_bound", steps=6, warmup_extra_ns=30 * MS,
        warmup_phase="forward_micro0", gpu="H100", step_prefix="ProfilerStep#",
        phases=(PhaseSpec("data", 1 * MS, canonical="data",
                          memcpys=(MemcpySpec("H2D", 4 * MiB, 200 * US, at=1.0),)),
                *micro,
                PhaseSpec("optimizer", 6 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 1_000 * US, 5, at=0.0),))))


def pageable_h2d() -> Scenario:
    return Scenario(
        name="pageable_h2d",
        description="Synchronous pageable host-to-device copies (cudaMemcpy of 512 MiB from "
                    "pageable memory, 60 ms) dominate a 130 ms step: input-bound via transfers; "
                    "pinned memory would help.",
        expected_verdict="input_bound", steps=8, warmup_extra_ns=30 * MS,
        warmup_phase="forward", gpu="H100",
        phases=(PhaseSpec("copy_batch", 62 * MS, canonical="data", memcpys=(
                    MemcpySpec("H2D", 512 * MiB, 60 * MS, host="pageable", api="cudaMemcpy",
                               launch_ns=60 * MS + 200 * US, at=0.0),)),
                PhaseSpec("forward", 28 * MS, canonical="forward", kernels=(
                    KernelSpec("nvjet", 1_250 * US, 20, at=0.0),)),
                PhaseSpec("backward", 40 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 1_250 * US, 30, thread="autograd", at=0.0),))))


def dataloader_workers() -> Scenario:
    return Scenario(
        name="dataloader_workers",
        description="The training process of a job whose DataLoader workers run in their own "
                    "processes (no GPU work there); the trainer waits 45% of each step on the "
                    "next batch. Tests add the worker processes' NVTX rows to the file.",
        expected_verdict="input_bound", steps=8, warmup_extra_ns=30 * MS,
        warmup_phase="forward", gpu="H100",
        phases=(PhaseSpec("DataLoader.__next__", 45 * MS, canonical="data",
                          memcpys=(MemcpySpec("H2D", 8 * MiB, 400 * US, at=1.0),)),
                PhaseSpec("forward", 22 * MS, canonical="forward", kernels=(
                    KernelSpec("nvjet", 1_000 * US, 20, at=0.0),)),
                PhaseSpec("backward", 33 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 1_000 * US, 30, thread="autograd", at=0.0),))))


def exposed_allreduce() -> Scenario:
    return Scenario(
        name="exposed_allreduce",
        description="Two ranks: the gradient all-reduce (45 ms) runs after backward compute "
                    "has drained and the host waits for it (~30% of the step exposed).",
        expected_verdict="communication_bound", steps=6, warmup_extra_ns=30 * MS,
        warmup_phase="forward", gpu="H100", n_devices=2, world_size=2,
        env={"WORLD_SIZE": "2", "NCCL_DEBUG": "WARN"},
        phases=(PhaseSpec("data", 2 * MS, canonical="data",
                          memcpys=(MemcpySpec("H2D", 4 * MiB, 200 * US, at=1.0),)),
                PhaseSpec("forward", 36 * MS, canonical="forward", kernels=(
                    KernelSpec("nvjet", 1_500 * US, 22, at=0.0),)),
                PhaseSpec("backward", 60 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 1_500 * US, 38, thread="autograd", at=0.0),)),
                PhaseSpec("allreduce", 48 * MS, canonical="communication", kernels=(
                    KernelSpec("nccl_allreduce", 45 * MS, 1, stream=NCCL_STREAM,
                               nvtx="ncclAllReduce", nvtx_domain="NCCL", at=0.0),),
                          syncs=(SyncSpec("cudaStreamSynchronize", stream=NCCL_STREAM,
                                          at=0.02),)),
                PhaseSpec("optimizer", 6 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 1_000 * US, 5, at=0.0),))))


def mpi_cuda() -> Scenario:
    return Scenario(
        name="mpi_cuda",
        description="MPI+CUDA: each iteration computes 18 ms on the A100, then exchanges halos "
                    "in MPI_Sendrecv and reduces in MPI_Allreduce (NVTX ranges named MPI_*), "
                    "the GPU idle ~60% of the time in MPI.",
        expected_verdict="communication_bound", steps=6, warmup_extra_ns=20 * MS,
        warmup_phase="compute", gpu="A100", command=("mpirun", "-np", "2", "./saxpy"),
        step_prefix="iteration_",
        phases=(PhaseSpec("compute", 20 * MS, canonical="forward", kernels=(
                    KernelSpec("saxpy_kernel(int, float, float*, float*)", 1_500 * US, 12,
                               at=0.0),)),
                PhaseSpec("MPI_Sendrecv", 22 * MS, canonical="communication", memcpys=(
                    MemcpySpec("D2H", 8 * MiB, 400 * US, at=0.0),
                    MemcpySpec("H2D", 8 * MiB, 400 * US, at=1.0))),
                PhaseSpec("MPI_Allreduce", 8 * MS, canonical="communication")))


def tiny_two_kernels() -> Scenario:
    return Scenario(
        name="tiny_two_kernels",
        description="A tiny PyTorch run: two kernels of 80 µs in two steps — too little GPU "
                    "work to diagnose anything.",
        expected_verdict="insufficient_data", steps=2, warmup_extra_ns=5 * MS,
        warmup_phase="forward", gpu="H100",
        phases=(PhaseSpec("forward", 3 * MS, canonical="forward",
                          kernels=(KernelSpec("ew_add", 80 * US, 1, at=0.1),)),))


def startup_dominated() -> Scenario:
    return Scenario(
        name="startup_dominated",
        description="A capture that is mostly start-up: the weights are uploaded, then 3 s of "
                    "initialisation (no NVTX) pass before the first kernel; the loop that "
                    "follows runs for 0.4 s.",
        expected_verdict="insufficient_data", steps=4, warmup_extra_ns=3_000 * MS,
        warmup_phase="load_model", gpu="H100", nvtx=False,
        phases=(PhaseSpec("load_model", 2 * MS, canonical="other", memcpys=(
                    MemcpySpec("H2D", 64 * MiB, 1_000 * US, at=0.0),)),
                PhaseSpec("forward", 50 * MS, canonical="forward", kernels=(
                    KernelSpec("nvjet", 2_000 * US, 22, at=0.0),)),
                PhaseSpec("backward", 80 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 2_000 * US, 38, at=0.0),))))


def healthy_control() -> Scenario:
    return Scenario(
        name="healthy_control",
        description="A healthy control: Tensor Core GEMMs queued back to back keep the H100 "
                    "~99% busy (1% idle), the loader prefetches.",
        expected_verdict="compute_bound", steps=8, warmup_extra_ns=20 * MS,
        warmup_phase="forward", gpu="H100",
        phases=(PhaseSpec("data", 1 * MS, canonical="data", kind="start_end"),
                PhaseSpec("forward", 45 * MS, canonical="forward", kernels=(
                    KernelSpec("nvjet", 2_000 * US, 22, at=0.0),)),
                PhaseSpec("backward", 75 * MS, canonical="backward", kernels=(
                    KernelSpec("gemm_bf16_sm90", 2_000 * US, 38, thread="autograd", at=0.0),)),
                PhaseSpec("optimizer", 3 * MS, canonical="optimizer",
                          kernels=(KernelSpec("adam", 1_000 * US, 3, at=0.0),))))


def _host_event_cases() -> dict[str, object]:
    """Presets built on the generator's host events (OS-runtime calls, init API calls, UVM copies)."""
    from nsys_diag.synth import scenarios as S

    def uvm_migrations() -> Scenario:
        return Scenario(
            name="uvm_migrations",
            description="Unified memory (stdpar/OpenACC style): page-fault migrations of managed "
                        "memory (copyKind 11) run 40 ms of each 85 ms iteration on the compute "
                        "stream ahead of the kernels, no kernel computing meanwhile; the host "
                        "waits for the queue — input-bound on unified-memory migrations.",
            expected_verdict="input_bound", steps=6, warmup_extra_ns=20 * MS,
            warmup_phase="compute", gpu="A100", step_prefix="iteration_",
            phases=(PhaseSpec("touch_arrays", 1 * MS, canonical="other", memcpys=(
                        MemcpySpec("uvm_h2d", 2 * MiB, 400 * US, count=100, at=0.0),)),
                    PhaseSpec("compute", 2 * MS, canonical="forward", kernels=(
                        KernelSpec("stencil_kernel(double*, const double*)", 2_000 * US, 20,
                                   at=0.0),)),
                    PhaseSpec("wait", 82 * MS, canonical="other",
                              syncs=(SyncSpec("cudaDeviceSynchronize", at=0.0),))))

    def host_io_stalls() -> Scenario:
        return Scenario(
            name="host_io_stalls",
            description="With OS-runtime tracing: the main thread blocks in read() for 6 × 6 ms "
                        "per step reading samples from disk, outside any data phase, the GPU "
                        "idle meanwhile — overhead-bound on host I/O.",
            expected_verdict="overhead_bound", steps=6, warmup_extra_ns=20 * MS,
            warmup_phase="forward", gpu="H100",
            phases=(PhaseSpec("prepare", 38 * MS, canonical="other",
                              host_calls=(S.HostCallSpec("read", 6 * MS, count=6),)),
                    PhaseSpec("forward", 30 * MS, canonical="forward", kernels=(
                        KernelSpec("nvjet", 1_400 * US, 20, at=0.0),)),
                    PhaseSpec("backward", 40 * MS, canonical="backward", kernels=(
                        KernelSpec("gemm_bf16_sm90", 1_300 * US, 30, at=0.0),))))

    def startup_with_init() -> Scenario:
        base = startup_dominated()
        return replace(base, name="startup_with_init",
                       init_calls=(("cuModuleLoadData", 400 * MS), ("cublasCreate_v2", 200 * MS)))

    return {"uvm_migrations": uvm_migrations, "host_io_stalls": host_io_stalls,
            "startup_with_init": startup_with_init}


CASES: dict[str, object] = {
    "item_sync_stalls": item_sync_stalls, "cuda_graphs": cuda_graphs,
    "triton_gemm_no_tc": triton_gemm_no_tc, "triton_gemm_tc": triton_gemm_tc,
    "no_nvtx": no_nvtx, "grad_accumulation": grad_accumulation, "pageable_h2d": pageable_h2d,
    "dataloader_workers": dataloader_workers, "exposed_allreduce": exposed_allreduce,
    "mpi_cuda": mpi_cuda, "tiny_two_kernels": tiny_two_kernels,
    "startup_dominated": startup_dominated, "healthy_control": healthy_control,
    **_host_event_cases(),
}
"""Issue-15 case → factory (merged into ``PRESETS``)."""
EXPECTED_CAUSE["startup_with_init"] = "startup"
