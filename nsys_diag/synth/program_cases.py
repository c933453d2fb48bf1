"""The program cases of :mod:`nsys_diag.synth.programs` (issue 26): one scenario factory per
nsys case, the after-write changes the scenario model does not express, and the kernels of the
ncu raw-page cases.

Kernel names, launch APIs, launch shapes, NVTX domains and thread / process names follow what
real exports of such programs hold (``docs/NSYS_SQLITE.md``; the MPI case mirrors the
shared ``saxpy_mpi_a100_2022.2`` export). Durations are integer ns.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable

from nsys_diag.synth.events import COPY_KIND
from nsys_diag.synth.kernels import KernelInfo
from nsys_diag.synth.ncu import SynthKernel
from nsys_diag.synth.scenarios import (MS, US, ApiCallSpec, HostCallSpec, KernelSpec, MemcpySpec,
                                       MiB, PhaseSpec, RangeSpec, Scenario, SyncSpec)

PYTORCH_ONLY_WORDS = (".item()", "DataLoader", "torch.compile", "torch.cuda", "pin_memory",
                      "FlashAttention", "AMP", "num_workers", "torch.", ".cpu()", "autocast",
                      "gradient", "loader worker", "batch size", "batch-size", "epoch",
                      "optimizer")
"""Words no advice to a non-PyTorch program may contain (issue 26, "Must hold"): PyTorch's own
and ML training's (gradients, loader workers, batch size, epochs, optimizers)."""

_OMP_STREAM = 14  # libomptarget / NVHPC create their own streams (cuStreamCreate)

_DRIVER_START = (("cuInit", 1_100 * US), ("cuDeviceGetCount", 2 * US), ("cuDeviceGet", 1 * US),
                 ("cuDevicePrimaryCtxRetain", 160 * MS), ("cuCtxSetCurrent", 2 * US),
                 ("cuModuleLoadDataEx", 4 * MS), ("cuModuleGetFunction", 3 * US),
                 ("cuStreamCreate", 12 * US))
"""Start-up of a program that uses the driver API only (libomptarget, the NVHPC runtime)."""
_DRIVER_START_NS = 200 * MS  # the first step starts after it
_RUNTIME_START = (("cuModuleGetLoadingMode", 1_200), ("cudaMalloc", 280 * US))
"""Start-up of a CUDA-C program: the runtime's one visible driver call, then its allocation."""


# ---------------------------------------------------------------------------------------------
# 1. OpenMP offload (clang libomptarget) on 2 × V100
# ---------------------------------------------------------------------------------------------

_OMP_REGIONS = (  # (function (mangled as clang names it), source line) of 22 target regions
    ("_Z13init_boundaryPdii", 38), ("_Z11jacobi_stepPKdPdii", 57), ("_Z8residualPKdS0_ii", 74),
    ("_Z11jacobi_stepPKdPdii", 57), ("_Z8residualPKdS0_ii", 74), ("_Z10swap_haloPdii", 91),
    ("_Z11jacobi_stepPKdPdii", 57), ("_Z8residualPKdS0_ii", 74), ("_Z12restrict_gridPKdPdii", 112),
    ("_Z11smooth_fineP6Level", 133), ("_Z13prolong_gridPKdPdii", 150), ("_Z11jacobi_stepPKdPdii", 57),
    ("_Z8residualPKdS0_ii", 74), ("_Z10swap_haloPdii", 91), ("_Z12restrict_gridPKdPdii", 112),
    ("_Z11smooth_fineP6Level", 133), ("_Z13prolong_gridPKdPdii", 150), ("_Z11jacobi_stepPKdPdii", 57),
    ("_Z8residualPKdS0_ii", 74), ("_Z10norm_errorPKdii", 188), ("_Z11jacobi_stepPKdPdii", 57),
    ("_Z10norm_errorPKdii", 188))


def _omp_kernel(func: str, line: int) -> KernelInfo:
    """``__omp_offloading_<device id>_<file id>_<function>_l<line>`` (clang's entry names; stored
    with no parameter list, demangled = short = mangled)."""
    name = f"__omp_offloading_31_18a80bc_{func}_l{line}"
    return KernelInfo(name, name, name, grid=(320, 1, 1), block=(128, 1, 1), registers=40,
                      api="cuLaunchKernel")


def openmp_offload() -> Scenario:
    """22 target regions: map (cuMemAlloc + H2D + sync), the kernel + cuStreamSynchronize,
    unmap (D2H + sync + cuMemFree), then up to 1.8 s of serial host code without CUDA calls."""
    phases: list[PhaseSpec] = []
    n = len(_OMP_REGIONS)
    for i, (func, line) in enumerate(_OMP_REGIONS):
        k_ns = 8 * MS + round(i * 16 * MS / (n - 1))  # 8 .. 24 ms, 352 ms in all
        host_ns = 1_800 * MS if i % 7 == 3 else (30 + 25 * i) * MS
        phases += [
            PhaseSpec(f"alloc_{i}", 200 * US,
                      api_calls=(ApiCallSpec("cuMemAlloc_v2", 40 * US, at=0.0),)),
            PhaseSpec(f"map_{i}", 2 * MS, memcpys=(MemcpySpec("H2D", 8 * MiB, 700 * US, api="cuMemcpyHtoDAsync_v2",
                                          stream=_OMP_STREAM, at=0.0),),
                      syncs=(SyncSpec("cuStreamSynchronize", stream=_OMP_STREAM, at=0.0),)),
            PhaseSpec(f"target_{i}", k_ns + 400 * US, kernels=(KernelSpec(
                _omp_kernel(func, line).demangled, k_ns, info=_omp_kernel(func, line),
                stream=_OMP_STREAM, launch_ns=9 * US, at=0.0),),
                syncs=(SyncSpec("cuStreamSynchronize", stream=_OMP_STREAM, at=0.0),)),
            PhaseSpec(f"unmap_{i}", 2 * MS,
                      memcpys=(MemcpySpec("D2H", 8 * MiB, 750 * US, api="cuMemcpyDtoHAsync_v2",
                                          stream=_OMP_STREAM, at=0.0),),
                      syncs=(SyncSpec("cuStreamSynchronize", stream=_OMP_STREAM, at=0.0),)),
            PhaseSpec(f"unmap_free_{i}", 200 * US,
                      api_calls=(ApiCallSpec("cuMemFree_v2", 30 * US, at=0.0),)),
            PhaseSpec(f"host_{i}", host_ns)]
    return Scenario(
        name="openmp_offload",
        description="Clang OpenMP offload (libomptarget) on a 2-GPU V100 node: 22 target regions "
                    "(352 ms of __omp_offloading_* kernels launched with cuLaunchKernel), each "
                    "waited for with cuStreamSynchronize, its data copied back and freed, then up "
                    "to 1.8 s of serial host code without CUDA calls; no NVTX.",
        expected_verdict="overhead_bound", steps=1, phases=tuple(phases), gpu="V100",
        idle_devices=1, nvtx=False, process_name="jacobi_mg_omp", command=("./jacobi_mg_omp",),
        preamble=_DRIVER_START, preamble_ns=_DRIVER_START_NS, tail_sync="cuCtxSynchronize",
        autograd_thread=False)


# ---------------------------------------------------------------------------------------------
# 2. OpenACC (NVHPC)
# ---------------------------------------------------------------------------------------------

def _acc_kernel(func: str, line: int, red: bool = False, grid: int = 65_535) -> KernelInfo:
    """NVHPC OpenACC compute-region kernels: ``<func>_<line>_gpu`` and the reduction's
    ``<func>_<line>_gpu__red``; C linkage, so no parameter list."""
    name = f"{func}_{line}_gpu" + ("__red" if red else "")
    return KernelInfo(name, name, name, grid=(grid if not red else 1, 1, 1),
                      block=(128 if not red else 256, 1, 1), registers=48 if not red else 22,
                      static_smem=0 if not red else 1_024, api="cuLaunchKernel")


def openacc() -> Scenario:
    """A Jacobi solver (laplace2d.c): per iteration the stencil region with its max-reduction
    (``main_86_gpu`` + ``main_86_gpu__red``, result copied back with cuMemcpyDtoHAsync and
    waited for), the copy-back region (``main_98_gpu``), then host bookkeeping with the GPU idle."""
    stencil, red, swap = _acc_kernel("main", 86), _acc_kernel("main", 86, red=True), \
        _acc_kernel("main", 98)
    return Scenario(
        name="openacc",
        description="NVHPC OpenACC Jacobi solver on an A100: per iteration main_86_gpu, its "
                    "reduction main_86_gpu__red (error copied back with cuMemcpyDtoHAsync + "
                    "cuStreamSynchronize) and main_98_gpu, launched with cuLaunchKernel; the host "
                    "idles the GPU between the regions (~60% of the capture); no NVTX.",
        expected_verdict="overhead_bound", steps=200, gpu="A100", nvtx=False,
        process_name="laplace2d_acc", command=("./laplace2d_acc",),
        phases=(PhaseSpec("stencil", 1_500 * US, kernels=(
                    KernelSpec(stencil.demangled, 900 * US, info=stencil, stream=_OMP_STREAM,
                               at=0.0),
                    KernelSpec(red.demangled, 40 * US, info=red, stream=_OMP_STREAM, at=0.0)),
                    memcpys=(MemcpySpec("D2H", 8, 3 * US, api="cuMemcpyDtoHAsync_v2",
                                        stream=_OMP_STREAM, at=0.0),),
                    syncs=(SyncSpec("cuStreamSynchronize", stream=_OMP_STREAM, at=0.0),)),
                PhaseSpec("swap", 1_100 * US, kernels=(
                    KernelSpec(swap.demangled, 500 * US, info=swap, stream=_OMP_STREAM, at=0.0),),
                    syncs=(SyncSpec("cuStreamSynchronize", stream=_OMP_STREAM, at=0.0),)),
                PhaseSpec("host_bookkeeping", 900 * US)),
        preamble=_DRIVER_START, preamble_ns=_DRIVER_START_NS, tail_sync="cuCtxSynchronize",
        autograd_thread=False)


# ---------------------------------------------------------------------------------------------
# 3. CUDA-C with tiny blocks (Rodinia gaussian) on an RTX 3090
# ---------------------------------------------------------------------------------------------

_FAN1 = KernelInfo("Fan1(float*, float*, int, int)", "Fan1", "_Z4Fan1PfS_ii", grid=(8, 1, 1),
                   block=(512, 1, 1), registers=16)
_FAN2 = KernelInfo("Fan2(float*, float*, float*, int, int, int)", "Fan2", "_Z4Fan2PfS_S_iii",
                   grid=(1024, 1024, 1), block=(4, 4, 1), registers=20)


def cuda_tiny_blocks() -> Scenario:
    """Gaussian elimination of a 4096 × 4096 system: 4095 iterations of Fan1 (8 × 512 threads)
    and Fan2 (1024 × 1024 blocks of 4 × 4 threads, 99.5% of kernel time), then
    cudaDeviceSynchronize."""
    return Scenario(
        name="cuda_tiny_blocks",
        description="CUDA-C Gaussian elimination (Rodinia gaussian, 4096 × 4096) on an RTX 3090: "
                    "Fan2 — 1M blocks of 16 threads — is 99.5% of kernel time, Fan1 the rest; "
                    "cudaLaunchKernel, cudaDeviceSynchronize after each pair; the GPU ~94% busy.",
        expected_verdict="latency_bound", steps=4095, gpu="RTX3090", nvtx=False,
        process_name="gaussian", command=("./gaussian", "-s", "4096"),
        phases=(PhaseSpec("iteration", 1_700 * US, kernels=(
                    KernelSpec(_FAN1.demangled, 8 * US, info=_FAN1, launch_ns=5 * US, at=0.0),
                    KernelSpec(_FAN2.demangled, 1_592 * US, info=_FAN2, launch_ns=5 * US,
                               at=0.0)),
                    syncs=(SyncSpec("cudaDeviceSynchronize", at=0.0),)),),
        preamble=_RUNTIME_START + (("cudaMalloc", 250 * US), ("cudaMalloc", 250 * US)),
        autograd_thread=False)


# ---------------------------------------------------------------------------------------------
# 4. Level-scheduled sparse triangular solve on a T4
# ---------------------------------------------------------------------------------------------

_SPTRSV = KernelInfo(
    "void sptrsv_level_kernel<double>(const int *, const int *, const double *, const int *, int, "
    "int, double *)", "sptrsv_level_kernel", "_Z19sptrsv_level_kernelIdEvPKiS1_PKdS1_iiPd",
    grid=(40, 1, 1), block=(32, 1, 1), registers=38)
_SPMV = KernelInfo(
    "void csr_spmv_vector_kernel<double, (int)32>(int, const int *, const int *, const double *, "
    "const double *, double *)", "csr_spmv_vector_kernel",
    "_Z22csr_spmv_vector_kernelIdLi32EEviPKiS1_PKdS3_Pd", grid=(4_096, 1, 1), block=(256, 1, 1),
    registers=40)


def sparse_solver_t4() -> Scenario:
    """One level per step: the level kernel (40 × 32 threads, ~69% of kernel time), a
    cudaStreamSynchronize, host time with cudaMallocAsync, then the residual SpMV."""
    return Scenario(
        name="sparse_solver_t4",
        description="Level-scheduled sparse triangular solve on a T4 (40 SMs): per level a "
                    "launch of ≤ 40 blocks × 32 threads (~69% of kernel time) waited for with "
                    "cudaStreamSynchronize, cudaMallocAsync in the host time after each sync, "
                    "and a residual SpMV; ~71% time-busy, most of it a few percent of the GPU.",
        expected_verdict="latency_bound", steps=1500, gpu="T4", nvtx=False,
        process_name="sptrsv_bench", command=("./sptrsv_bench", "nlpkkt80.mtx"),
        preamble=_RUNTIME_START + (("cudaMalloc", 200 * US),) * 5, autograd_thread=False,
        phases=(PhaseSpec("level", 380 * US, kernels=(
                    KernelSpec(_SPTRSV.demangled, 276 * US, info=_SPTRSV, launch_ns=5 * US,
                               at=0.0),),
                    syncs=(SyncSpec("cudaStreamSynchronize", at=0.0),),
                    api_calls=(ApiCallSpec("cudaMallocAsync", 30 * US, at=0.85),)),
                PhaseSpec("residual", 150 * US, kernels=(
                    KernelSpec(_SPMV.demangled, 124 * US, info=_SPMV, launch_ns=5 * US,
                               at=0.0),))))


# ---------------------------------------------------------------------------------------------
# 5. A short CUTLASS GEMM benchmark with pageable copies
# ---------------------------------------------------------------------------------------------

_CUTLASS_GEMM = KernelInfo(
    "void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::threadblock::"
    "MmaMultistage<cutlass::gemm::GemmShape<(int)128, (int)128, (int)16>, cutlass::transform::"
    "threadblock::PredicatedTileAccessIterator<cutlass::MatrixShape<(int)128, (int)16>, float, "
    "cutlass::layout::RowMajor, (int)1, cutlass::transform::PitchLinearWarpRakedThreadMap<"
    "cutlass::PitchLinearShape<(int)16, (int)128>, (int)128, cutlass::PitchLinearShape<(int)4, "
    "(int)8>, (int)4>, cutlass::AlignedArray<float, (int)4, (int)16>, (bool)0>, cutlass::gemm::"
    "warp::MmaTensorOp<cutlass::gemm::GemmShape<(int)64, (int)64, (int)16>, cutlass::tfloat32_t, "
    "cutlass::layout::RowMajor, float, cutlass::arch::OpMultiplyAdd>, (int)3>, cutlass::epilogue::"
    "threadblock::Epilogue<cutlass::gemm::GemmShape<(int)128, (int)128, (int)16>, cutlass::"
    "epilogue::thread::LinearCombination<float, (int)4, float, float>>, cutlass::gemm::"
    "threadblock::GemmIdentityThreadblockSwizzle<(int)8>>>(T1::Params)",
    "Kernel", "_ZN7cutlass6KernelINS_4gemm6kernel13GemmUniversalINS1_11threadblock13MmaMultistage"
    "EEEEEvNT_6ParamsE", grid=(64, 64, 1), block=(128, 1, 1), registers=230, dynamic_smem=98_304,
    tensor_core=True)


def cutlass_pageable() -> Scenario:
    """Upload A, B, C (3 × 256 MiB pageable cudaMemcpy), 6 GEMMs (162 ms), download D
    (256 MiB pageable), then host verification; 361 ms of pageable copies in all."""
    mat = 256 * MiB
    return Scenario(
        name="cutlass_pageable",
        description="A short CUTLASS TF32 GEMM benchmark on an A100: 6 GemmUniversal kernels "
                    "(162 ms) and 361 ms of synchronous pageable cudaMemcpy (3 uploads of 256 "
                    "MiB, one download); no NVTX. Diagnosable: the pageable copies dominate.",
        expected_verdict="input_bound", steps=1, gpu="A100", nvtx=False,
        process_name="cutlass_gemm_bench", command=("./cutlass_gemm_bench", "--m=8192",
                                                    "--n=8192", "--k=8192", "--iterations=6"),
        preamble=_RUNTIME_START, tail_sync=None, autograd_thread=False,
        phases=(PhaseSpec("init_host", 120 * MS,
                          api_calls=(ApiCallSpec("cudaMalloc", 400 * US, count=4, at=0.0),)),
                PhaseSpec("upload", 272 * MS, memcpys=(MemcpySpec(
                    "H2D", mat, 90 * MS, count=3, api="cudaMemcpy", host="pageable",
                    launch_ns=90 * MS + 250 * US, at=0.0),)),
                PhaseSpec("gemm", 164 * MS, kernels=(KernelSpec(
                    _CUTLASS_GEMM.demangled, 27 * MS, count=6, info=_CUTLASS_GEMM, at=0.0),),
                    syncs=(SyncSpec("cudaDeviceSynchronize", at=0.0),)),
                PhaseSpec("download", 92 * MS, memcpys=(MemcpySpec(
                    "D2H", mat, 91 * MS, api="cudaMemcpy", host="pageable",
                    launch_ns=91 * MS + 250 * US, at=0.0),)),
                PhaseSpec("verify_host", 60 * MS)))


# ---------------------------------------------------------------------------------------------
# 6. Many small host writes (NVHPC stdpar weather mini-app)
# ---------------------------------------------------------------------------------------------

_STDPAR = "void thrust::cuda_cub::core::_kernel_agent<thrust::cuda_cub::__parallel_for::" \
    "ParallelForAgent<thrust::cuda_cub::for_each_f<thrust::counting_iterator<int, thrust::" \
    "use_default, thrust::use_default, thrust::use_default>, thrust::detail::wrapped_function<" \
    "std::__stdpar::__no_exception_wrapper<{lam}>, void>>, int>, thrust::cuda_cub::for_each_f<" \
    "thrust::counting_iterator<int, thrust::use_default, thrust::use_default, thrust::" \
    "use_default>, thrust::detail::wrapped_function<std::__stdpar::__no_exception_wrapper<{lam}>, " \
    "void>>, int>(T2, T3)"


def _stdpar_kernel(func: str) -> KernelInfo:
    lam = f"{func}(double *, double *, double *, double)::[lambda(int) (instance 1)]"
    name = _STDPAR.format(lam=lam)
    return KernelInfo(name, "_kernel_agent", None, grid=(2_000, 1, 1), block=(256, 1, 1),
                      registers=64, api="cuLaunchKernel")


_MIGRATION_THREAD = "cuda-EvtHandlr"
"""The thread the generator files the migrations' calls on (``_detach_migrations`` deletes
them): not the launching thread, whose syncs would otherwise end at the next of those calls
before the work they wait for."""
_UVM_STREAM = 21
"""The migrations' own stream: page faults raised while the kernels run overlap them (on the
kernels' stream the generator would queue them between kernels)."""


def host_writes() -> Scenario:
    """11 output steps of a stdpar weather kernel: 2 x/z tendency kernels (3.8 ms) with 334
    page-fault migrations to the GPU while they run, then the output: 167 migrations back and 79 pwrite64
    calls of 80.5 µs on the launching (main) thread while the GPU idles (and an 8 ms ``poll`` of
    the CUDA event thread, which is no I/O)."""
    kx, kz = _stdpar_kernel("compute_tendencies_x"), _stdpar_kernel("compute_tendencies_z")
    k_ns = 1_909_091  # 2 × 11 kernels: 42.0 ms
    return Scenario(
        name="host_writes",
        description="An NVHPC stdpar weather mini-app (managed memory) on an A100: 42 ms of "
                    "kernels, 5,511 unified-memory migrations (copyKind 11/12) and, in the idle "
                    "stretch after each step, 79 pwrite64 calls of ~80 µs on the thread that "
                    "launches the work (869 calls, ~70 ms) — OS-runtime tracing on; no NVTX.",
        expected_verdict="overhead_bound", steps=11, gpu="A100", nvtx=False,
        process_name="miniWeather_stdpar", command=("./miniWeather_stdpar",),
        preamble=_DRIVER_START + (("cuMemAllocManaged", 90 * US),) * 6,
        preamble_ns=_DRIVER_START_NS, autograd_thread=False,
        env={"NVCOMPILER_ACC_NOTIFY": "0", "NX": "400", "NZ": "200"},
        phases=(PhaseSpec("compute", 5_600 * US,
                          memcpys=(MemcpySpec("uvm_h2d", 64 * 1024, 3 * US, count=334, at=0.02,
                                              thread=_MIGRATION_THREAD, stream=_UVM_STREAM),),
                          kernels=(KernelSpec(kx.demangled, k_ns, info=kx, at=0.02),
                                   KernelSpec(kz.demangled, k_ns, info=kz, at=0.02)),
                          syncs=(SyncSpec("cuStreamSynchronize", at=0.02),)),
                PhaseSpec("output", 9 * MS,
                          memcpys=(MemcpySpec("uvm_d2h", 64 * 1024, 3 * US, count=167,
                                              at=0.0, thread=_MIGRATION_THREAD,
                                              stream=_UVM_STREAM),),
                          host_calls=(HostCallSpec("pwrite64", 80_500, count=79, at=0.1),
                                      # not I/O: the CUDA event thread waiting, as in every
                                      # capture with OS-runtime tracing
                                      HostCallSpec("poll", 8 * MS, thread="cuda-EvtHandlr",
                                                   at=0.05)))))


# ---------------------------------------------------------------------------------------------
# 7./8. capture failures: launches without kernel rows; CUDA initialised, nothing launched
# ---------------------------------------------------------------------------------------------

_STREAM_KERNEL = KernelInfo("void triad_kernel<double>(double *, const double *, const double *, "
                            "double)", "triad_kernel", "_Z12triad_kernelIdEvPdPKdS2_d",
                            grid=(32_768, 1, 1), block=(256, 1, 1), registers=16)


def launches_no_kernel_rows() -> Scenario:
    """12,870 cudaLaunchKernel calls (10 × 1,287); the kernel table is dropped after writing."""
    return Scenario(
        name="launches_no_kernel_rows",
        description="A CUDA benchmark whose capture made 12,870 cudaLaunchKernel calls "
                    "(CUPTI_ACTIVITY_KIND_RUNTIME) but recorded no kernel activity: the "
                    "CUPTI_ACTIVITY_KIND_KERNEL table is absent (collection failed).",
        expected_verdict="insufficient_data", steps=10, gpu="A100", nvtx=False,
        process_name="stream_bench", command=("./stream_bench", "-n", "1287"),
        preamble=_RUNTIME_START + (("cudaMalloc", 300 * US),) * 2, tail_sync=None,
        autograd_thread=False,
        phases=(PhaseSpec("sweep", 40 * MS, kernels=(
                    KernelSpec(_STREAM_KERNEL.demangled, 25 * US, count=1_287,
                               info=_STREAM_KERNEL, launch_ns=4 * US),),
                    syncs=(SyncSpec("cudaDeviceSynchronize", at=1.0),)),))


def cuda_init_no_launch() -> Scenario:
    """A CPU build linked against CUDA: device query, a few allocations and frees, then 2.5 s of
    host computation; no kernel, no copy."""
    return Scenario(
        name="cuda_init_no_launch",
        description="A CPU build of an application that initialised CUDA (cuInit, "
                    "cudaGetDeviceCount, cudaMalloc/cudaFree) but launched no kernel and copied "
                    "nothing: the GPU tables are empty, CUDA was traced.",
        expected_verdict="insufficient_data", steps=1, gpu="A100", nvtx=False,
        process_name="lbm_cpu", command=("./lbm_cpu", "--backend=cpu"),
        preamble=(("cuInit", 1_300 * US), ("cuModuleGetLoadingMode", 1_100)), tail_sync=None,
        autograd_thread=False,
        phases=(PhaseSpec("probe", 3 * MS, api_calls=(
                    ApiCallSpec("cudaGetDeviceCount", 3 * US, at=0.0),
                    ApiCallSpec("cudaMalloc", 250 * US, count=4, at=0.1),
                    ApiCallSpec("cudaFree", 120 * US, count=4, at=0.8))),
                PhaseSpec("cpu_compute", 2_500 * MS)))


# ---------------------------------------------------------------------------------------------
# 9. MPI + CUDA saxpy (modelled on the shared saxpy_mpi_a100_2022.2 export)
# ---------------------------------------------------------------------------------------------

_SAXPY = KernelInfo("saxpy(double *, double *, double *, double, int)", "saxpy",
                    "_Z5saxpyPdS_S_di", grid=(2, 1, 1), block=(512, 1, 1), registers=26)


def _mpi(name: str, dur_ns: int, count: int = 1) -> PhaseSpec:
    """A host phase spent in ``count`` MPI calls (NVTX ranges in domain ``MPI``)."""
    return PhaseSpec(name, dur_ns, ranges=(RangeSpec(name.split("#")[0], count=count, fill=0.97,
                                                     domain="MPI"),))


def mpi_saxpy() -> Scenario:
    """MPI_Init, then 5 iterations of 2 × MPI_Send, cudaHostRegister + 2 pageable H2D copies of
    250 MiB, the saxpy kernel (17.7 ms, inside a default-domain ``saxpy`` range), a pageable D2H
    copy, MPI_Recv; then MPI_Finalize."""
    buf = 250 * MiB
    phases = [_mpi("MPI_Init", 650 * MS)]
    for i in range(5):
        phases += [
            _mpi(f"MPI_Send#{i}", 46 * MS, count=2),
            PhaseSpec(f"register_{i}", 40 * MS, api_calls=(
                ApiCallSpec("cudaHostRegister", 35 * MS, at=0.0),)),
            PhaseSpec(f"copy_in_{i}", 38 * MS, memcpys=(MemcpySpec(
                "H2D", buf, 18_500 * US, count=2, api="cudaMemcpy", host="pageable",
                launch_ns=18_700 * US, at=0.0),)),
            PhaseSpec(f"saxpy_{i}", 40 * MS, kernels=(KernelSpec(
                _SAXPY.demangled, 17_720 * US, info=_SAXPY, launch_ns=32 * US, nvtx="saxpy",
                at=0.0),), memcpys=(MemcpySpec(
                    "D2H", buf, 19_700 * US, api="cudaMemcpy", host="pageable",
                    launch_ns=37_800 * US, at=0.0),)),
            PhaseSpec(f"unregister_{i}", 1 * MS, api_calls=(
                ApiCallSpec("cudaHostUnregister", 220 * US, at=0.0),)),
            _mpi(f"MPI_Recv#{i}", 30 * MS)]
    phases.append(_mpi("MPI_Finalize", 7 * MS))
    return Scenario(
        name="mpi_saxpy",
        description="MPI + CUDA saxpy on an A100: 5 saxpy kernels (88.6 ms), pageable cudaMemcpy "
                    "of 250 MiB buffers, MPI_Init/MPI_Send/MPI_Recv as NVTX ranges in the 'MPI' "
                    "domain, the main thread named 'MPI Rank 0'.",
        expected_verdict="input_bound", steps=1, gpu="A100", nvtx_steps=False,
        phases=tuple(phases), process_name="./saxpy-mpi-cuda", main_thread_name="MPI Rank 0",
        command=("mpirun", "-np", "2", "./saxpy-mpi-cuda"),
        env={"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"},
        preamble=_RUNTIME_START + (("cudaMalloc", 280 * US),) * 2, tail_sync=None, autograd_thread=False)


# ---------------------------------------------------------------------------------------------
# registry, writing, after-write changes
# ---------------------------------------------------------------------------------------------

SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "openmp_offload": openmp_offload, "openacc": openacc, "cuda_tiny_blocks": cuda_tiny_blocks,
    "sparse_solver_t4": sparse_solver_t4, "cutlass_pageable": cutlass_pageable,
    "host_writes": host_writes, "launches_no_kernel_rows": launches_no_kernel_rows,
    "cuda_init_no_launch": cuda_init_no_launch, "mpi_saxpy": mpi_saxpy,
}
"""The nsys cases: name → scenario factory."""


def _drop_kernel_table(con: sqlite3.Connection) -> None:
    con.execute("DROP TABLE IF EXISTS CUPTI_ACTIVITY_KIND_KERNEL")


def _detach_migrations(con: sqlite3.Connection) -> None:
    """Unified-memory migrations are driver work, not API calls: remove the call the generator
    attached to each and give the rows correlationId 0, as real exports do."""
    kinds = (COPY_KIND["uvm_h2d"], COPY_KIND["uvm_d2h"], COPY_KIND["uvm_d2d"])
    q = ",".join("?" * len(kinds))
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IN (SELECT "
                f"correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind IN ({q}))", kinds)
    con.execute(f"UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET correlationId = 0 WHERE copyKind IN ({q})",
                kinds)


AFTER_WRITE: dict[str, Callable[[sqlite3.Connection], None]] = {
    "launches_no_kernel_rows": _drop_kernel_table, "host_writes": _detach_migrations}
"""Cases whose written file gets a change the scenario model does not express."""


# ---------------------------------------------------------------------------------------------
# 10. Nsight Compute raw page without FLOP or DRAM counters
# ---------------------------------------------------------------------------------------------

TENSOR_PIPE_METRIC = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
NCU_METRICS = ("gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
               TENSOR_PIPE_METRIC)
"""The metrics asked for (``ncu --metrics <these> --page raw --csv``): a tensor-pipe study, so
no FLOP (SASS op) counter and no DRAM / L2 / L1 bytes — the raw page holds only these."""

_NCU_KERNELS = (  # (name, duration ns, SM throughput %, tensor pipe %, grid, block)
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn", 182_000.0, 78.0, 61.0,
     (40, 24, 1), (256, 1, 1)),
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::GeluCUDAKernelImpl(at::"
     "TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 2)], std::array<char *, "
     "(unsigned long)2>>(int, T2, T3)", 21_000.0, 24.0, 0.0, (4_096, 1, 1), (128, 1, 1)),
    ("ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn", 240_000.0, 82.0, 66.0,
     (20, 24, 1), (256, 1, 1)),
    ("void at::native::<unnamed>::cunn_SoftMaxForward<(int)8, c10::Half, float, c10::Half, at::"
     "native::<unnamed>::SoftMaxForwardEpilogue>(T4 *, const T2 *, int)", 35_000.0, 31.0, 0.0,
     (8_192, 1, 1), (256, 1, 1)),
    ("void at::native::<unnamed>::vectorized_layer_norm_kernel<c10::Half, float, (bool)0>(int, "
     "T2, const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)", 28_000.0, 36.0, 0.0,
     (4_096, 1, 1), (32, 4, 1)),
    ("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::"
     "MeanOps<float, float, float, float>, unsigned int, float, (int)4, (int)4>>(T3)", 14_000.0,
     18.0, 0.0, (320, 1, 1), (32, 16, 1)),
    ("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x32_stage3_warpsize2x4x1_tensor16x8x16"
     "_kernel", 310_000.0, 85.0, 72.0, (16, 32, 1), (256, 1, 1)),
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<c10::"
     "Half>, std::array<char *, (unsigned long)3>>(int, T2, T3)", 16_000.0, 22.0, 0.0,
     (4_096, 1, 1), (128, 1, 1)),
)

NCU_CASES: dict[str, tuple[int, int]] = {"ncu_raw_no_flops": (4, 4), "ncu_raw_no_flops_64": (8, 8)}
"""ncu raw-page cases: name → (distinct kernels, launches each): 16 and 64 kernel rows."""


def ncu_kernels(name: str) -> list[SynthKernel]:
    """The kernels of an ncu case (no FLOP counts, no bytes: those counters are dropped)."""
    n_kernels, launches = NCU_CASES[name]
    return [SynthKernel(k, launches=launches, duration_ns=dur, sm_pct=sm, mem_pct=sm * 0.6,
                        waves=2.0, occupancy=40.0, tensor_pipe_inst=None, block=block, grid=grid,
                        extra_metrics={TENSOR_PIPE_METRIC: (tc, "%")})
            for k, dur, sm, tc, grid, block in _NCU_KERNELS[:n_kernels]]
