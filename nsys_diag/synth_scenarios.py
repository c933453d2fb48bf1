"""Scenario model and presets of the trace generator (see :mod:`nsys_diag.synth`).

A :class:`Scenario` describes a training (or inference) loop the way a profiler sees it:

* ``steps`` NVTX step ranges (``<step_prefix><N>``, push/pop, main thread, level 0), step 0 being a
  longer warm-up (``warmup_extra_ns`` added to ``warmup_phase``);
* inside each step the :class:`PhaseSpec` ranges, **tiling the step exactly** in order, plus
  :class:`PeriodicSpec` phases appended every N-th step (e.g. a checkpoint);
* in each phase, CUDA work issued by a CPU thread: :class:`KernelSpec`, :class:`MemcpySpec`,
  :class:`MemsetSpec` launches and :class:`SyncSpec` host synchronisations. Launch calls are
  spread evenly over the phase's launch ``window`` (or packed back to back when
  ``launch_gap_ns`` is set, or placed at a fraction ``at`` of the phase); the GPU runs each stream
  in FIFO order, starting an op ``launch_latency_ns`` after its call began (so work queues up and
  may run past the end of the CPU phase that launched it);
* optional nested NVTX sub-ranges (:class:`RangeSpec`), NVTX marks, GPU-metrics sampling
  (:class:`GpuMetricsSpec`), GPU memory events (:class:`GpuMemorySpec`), several processes
  (one per GPU) and environment / host facts.

Every duration is an integer number of nanoseconds. Threads are named by key: ``"main"`` (the
Python main thread, tid = pid, holds the step/phase ranges) and ``"autograd"`` (``pt_autograd_0``,
launches backward kernels while the main thread sits in ``backward``); any other key creates a
thread named after it.

Presets (``PRESETS``) are functions of no argument returning a Scenario whose answers are known
by construction; ``Scenario.expected_verdict`` is the verdict the design aims at.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

MS = 1_000_000
US = 1_000
MiB = 1 << 20
GiB = 1 << 30

COMPUTE_STREAM = 7
"""The legacy default (NULL) stream id nsys reports for context 1 (§2.10: always 7)."""
NCCL_STREAM = 13


# ---------------------------------------------------------------------------------------------
# Kernel catalog: realistic names (taken from or modelled on real exports) + launch geometry.
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KernelInfo:
    """Static facts of one kernel function (what a KERNEL row repeats for each launch)."""

    demangled: str
    short: str
    mangled: str | None = None  # None: nsys stores the demangled id (library kernels, §2.1)
    grid: tuple[int, int, int] = (132, 1, 1)
    block: tuple[int, int, int] = (256, 1, 1)
    registers: int = 32
    static_smem: int = 0
    dynamic_smem: int = 0
    api: str = "cudaLaunchKernel"
    category: str = "other"  # gemm | attention | elementwise | reduction | norm | optimizer | nccl
    tensor_core: bool = False
    cluster: tuple[int, int, int] = (0, 0, 0)


_AT = "void at::native::"
KERNEL_CATALOG: dict[str, KernelInfo] = {
    # --- Tensor Core GEMMs / attention (Hopper) ---------------------------------------------
    "gemm_bf16_sm90": KernelInfo(
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas",
        grid=(132, 1, 1), block=(384, 1, 1), registers=168, dynamic_smem=213_196,
        api="cuLaunchKernel", category="gemm", tensor_core=True, cluster=(1, 1, 1)),
    "nvjet": KernelInfo(
        "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT",
        grid=(2, 66, 1), block=(384, 1, 1), registers=168, dynamic_smem=221_500,
        api="cuLaunchKernelEx", category="gemm", tensor_core=True, cluster=(2, 1, 1)),
    "flash_fwd": KernelInfo(
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4, "
        "(bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)128, (int)64, "
        "(int)4, cutlass::bfloat16_t>>, (bool)0, (bool)0, (bool)0, (bool)0, (bool)0, (bool)1, "
        "(bool)0, (bool)0>(flash::Flash_fwd_params)",
        "flash_fwd_kernel",
        "_ZN5flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi128ELi128ELi64ELi4ELb0ELb0EN7cutlass"
        "10bfloat16_tE19Flash_kernel_traitsILi128ELi128ELi64ELi4ES3_EELb0ELb0ELb0ELb0ELb0ELb1ELb0ELb0"
        "EEEvNS_16Flash_fwd_paramsE",
        grid=(8, 24, 16), block=(128, 1, 1), registers=255, dynamic_smem=49_152,
        category="attention", tensor_core=True),
    "flash_bwd": KernelInfo(
        "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<(int)128, "
        "(int)64, (int)128, (int)8, (int)2, (int)4, (int)2, (bool)0, (bool)0, cutlass::bfloat16_t, "
        "Flash_kernel_traits<(int)128, (int)64, (int)128, (int)8, cutlass::bfloat16_t>>, (bool)1, "
        "(bool)0, (bool)0, (bool)0, (bool)0, (bool)1, (bool)0>(flash::Flash_bwd_params)",
        "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
        "_ZN5flash44flash_bwd_dq_dk_dv_loop_seqk_parallel_kernelI23Flash_bwd_kernel_traitsILi128ELi64"
        "ELi128ELi8ELi2ELi4ELi2ELb0ELb0EN7cutlass10bfloat16_tE19Flash_kernel_traitsILi128ELi64ELi128EL"
        "i8ES3_EELb1ELb0ELb0ELb0ELb0ELb1ELb0EEEvNS_16Flash_bwd_paramsE",
        grid=(16, 24, 16), block=(256, 1, 1), registers=255, dynamic_smem=114_688,
        category="attention", tensor_core=True),
    "gemm_fp16_volta": KernelInfo(
        "volta_h884gemm_256x128_ldg8_nn", "volta_h884gemm_256x128_ldg8_nn",
        grid=(32, 8, 1), block=(256, 1, 1), registers=232, static_smem=0, dynamic_smem=65_536,
        api="cudaLaunchKernel", category="gemm", tensor_core=True),
    # --- FP32 SIMT GEMMs (no Tensor Cores) ----------------------------------------------------
    "sgemm_volta": KernelInfo(
        "volta_sgemm_128x64_nn", "volta_sgemm_128x64_nn", grid=(64, 16, 1), block=(256, 1, 1),
        registers=126, static_smem=12_544, category="gemm"),
    "sgemm_ampere": KernelInfo(
        "ampere_sgemm_64x64_nn", "ampere_sgemm_64x64_nn", grid=(128, 16, 1), block=(128, 1, 1),
        registers=122, static_smem=8_192, category="gemm"),
    "sgemm_sm80_ffma": KernelInfo(
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
        "alignc4_execute_kernel_cublas",
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
        "alignc4_execute_kernel_cublas",
        grid=(32, 16, 1), block=(128, 1, 1), registers=168, dynamic_smem=36_864,
        api="cuLaunchKernel", category="gemm"),
    # --- memory-bound PyTorch kernels --------------------------------------------------------
    "ew_add": KernelInfo(
        _AT + "vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<float>, "
        "std::array<char *, (unsigned long)3>>(int, T2, T3)",
        "vectorized_elementwise_kernel",
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEE"
        "viT0_T1_",
        grid=(46_800, 1, 1), block=(128, 1, 1), registers=32, category="elementwise"),
    "ew_mul": KernelInfo(
        _AT + "elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl<at::native::"
        "BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>>(at::"
        "TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)",
        "elementwise_kernel", None, grid=(46_800, 1, 1), block=(128, 1, 1), registers=32,
        category="elementwise"),
    "ew_gelu": KernelInfo(
        _AT + "vectorized_elementwise_kernel<(int)8, at::native::GeluCUDAKernelImpl(at::"
        "TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 1)]::operator ()() const::"
        "[lambda() (instance 4)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)], "
        "std::array<char *, (unsigned long)2>>(int, T2, T3)",
        "vectorized_elementwise_kernel",
        "_ZN2at6native29vectorized_elementwise_kernelILi8EZZZNS0_18GeluCUDAKernelImplERNS_18Tensor"
        "IteratorBaseENS0_8GeluTypeEENKUlvE_clEvENKUlvE2_clEvEUlN3c108BFloat16EE_St5arrayIPcLm2EEEEvi"
        "T0_T1_",
        grid=(23_400, 1, 1), block=(128, 1, 1), registers=30, category="elementwise"),
    "ew_copy_bf16": KernelInfo(
        _AT + "vectorized_elementwise_kernel<(int)8, at::native::bfloat16_copy_kernel_cuda(at::"
        "TensorIteratorBase &)::[lambda(float) (instance 1)], std::array<char *, (unsigned long)2>>"
        "(int, T2, T3)",
        "vectorized_elementwise_kernel",
        "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_25bfloat16_copy_kernel_cudaERNS_18Tens"
        "orIteratorBaseEEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
        grid=(46_800, 1, 1), block=(128, 1, 1), registers=28, category="elementwise"),
    "ew_fill": KernelInfo(
        _AT + "vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, "
        "std::array<char *, (unsigned long)1>>(int, T2, T3)",
        "vectorized_elementwise_kernel",
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0"
        "_T1_",
        grid=(1, 1, 1), block=(128, 1, 1), registers=16, category="elementwise"),
    "reduce_mean": KernelInfo(
        _AT + "reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::MeanOps<"
        "float, float, float, float>, unsigned int, float, (int)4, (int)4>>(T3)",
        "reduce_kernel",
        "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_",
        grid=(975, 1, 1), block=(32, 16, 1), registers=32, static_smem=16, category="reduction"),
    "layer_norm": KernelInfo(
        _AT + "<unnamed>::vectorized_layer_norm_kernel<float, float, (bool)0>(int, T2, const T1 *, "
        "const T1 *, const T1 *, T2 *, T2 *, T1 *)",
        "vectorized_layer_norm_kernel",
        "_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_"
        "kernelIffLb0EEEviT0_PKT_S6_S6_PS3_S7_PS4_",
        grid=(15_600, 1, 1), block=(32, 32, 1), registers=39, static_smem=24, category="norm"),
    "softmax": KernelInfo(
        _AT + "<unnamed>::cunn_SoftMaxForward<(int)4, float, float, float, at::native::<unnamed>::"
        "SoftMaxForwardEpilogue>(T4 *, const T2 *, int)",
        "cunn_SoftMaxForward", None, grid=(8_192, 1, 1), block=(512, 1, 1), registers=38,
        dynamic_smem=2_048, category="norm"),
    "adam": KernelInfo(
        _AT + "<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::TensorListMetadata<"
        "(int)4>, at::native::<unnamed>::FusedAdamMathFunctor<float, (int)4, (at::native::ADAM_MODE)"
        "1, (bool)0>, bool, float *, double, double, double, double, double, bool, bool, float *, "
        "float *>(T1, T2, T3...)",
        "multi_tensor_apply_kernel", None, grid=(320, 1, 1), block=(512, 1, 1), registers=64,
        category="optimizer"),
    "triton_fused": KernelInfo(
        "triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_0", grid=(64, 1, 1),
        block=(128, 1, 1), registers=24, api="cuLaunchKernel", category="elementwise"),
    # --- communication -------------------------------------------------------------------------
    "nccl_allreduce": KernelInfo(
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE",
        grid=(32, 1, 1), block=(640, 1, 1), registers=96, static_smem=21_568,
        dynamic_smem=82_240, api="cudaLaunchKernelExC", category="nccl", cluster=(1, 1, 1)),
}

_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


def kernel_info(name: str) -> KernelInfo:
    """Catalog entry for a key (``"nvjet"``) or a full name; unknown names get a derived short
    name (namespace, template arguments and parameter list stripped) and default geometry."""
    if name in KERNEL_CATALOG:
        return KERNEL_CATALOG[name]
    for info in KERNEL_CATALOG.values():
        if info.demangled == name:
            return info
    short = name
    if short.startswith("void "):
        short = short[5:]
    prev = None
    while prev != short:  # strip nested template argument lists
        prev, short = short, _TEMPLATE_ARGS.sub("", short)
    short = short.split("(")[0].split("::")[-1].strip() or name
    return KernelInfo(name, short)


# ---------------------------------------------------------------------------------------------
# Scenario specs
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KernelSpec:
    """``count`` launches of one kernel per phase occurrence.

    ``name`` is a :data:`KERNEL_CATALOG` key or a full demangled name. ``api`` defaults to the
    catalog's launch API (``cudaLaunchKernel`` runtime, ``cuLaunchKernel``/``cuLaunchKernelEx``
    driver, ``cudaLaunchKernelExC``). ``stream`` defaults to the compute stream (7). ``at``: place
    the launches back to back at that fraction of the phase (0 = start, 1 = end) instead of
    spreading them. ``nvtx``: wrap each launch call in an NVTX push/pop range with that text in
    ``nvtx_domain`` (e.g. ``ncclAllReduce`` in ``NCCL``)."""

    name: str
    dur_ns: int
    count: int = 1
    thread: str = "main"
    api: str | None = None
    stream: int | None = None
    launch_ns: int = 6 * US
    at: float | None = None
    nvtx: str | None = None
    nvtx_domain: str = ""


@dataclass(frozen=True)
class MemcpySpec:
    """``count`` copies per phase occurrence. ``kind``: H2D | D2H | D2D; ``host``: pinned |
    pageable (the host side of H2D/D2H)."""

    kind: str
    bytes: int
    dur_ns: int
    count: int = 1
    thread: str = "main"
    api: str = "cudaMemcpyAsync"
    host: str = "pinned"
    stream: int | None = None
    launch_ns: int = 8 * US
    at: float | None = None


@dataclass(frozen=True)
class MemsetSpec:
    bytes: int
    dur_ns: int
    count: int = 1
    thread: str = "main"
    api: str = "cudaMemsetAsync"
    stream: int | None = None
    launch_ns: int = 5 * US
    at: float | None = None


@dataclass(frozen=True)
class SyncSpec:
    """Host synchronisation: the call blocks until the stream (``cudaStreamSynchronize``,
    ``cudaEventSynchronize``) or the whole device (``cudaDeviceSynchronize``) has drained; it
    writes a SYNCHRONIZATION row. The wait is capped at the next call of the thread / phase end."""

    api: str = "cudaStreamSynchronize"
    count: int = 1
    thread: str = "main"
    stream: int | None = None
    at: float | None = 1.0
    min_ns: int = 3 * US


@dataclass(frozen=True)
class RangeSpec:
    """Nested NVTX sub-ranges inside a phase: ``count`` ranges evenly spread over
    ``[start, start + span]`` (fractions of the phase), each filling ``fill`` of its slot."""

    name: str
    count: int = 1
    start: float = 0.0
    span: float = 1.0
    fill: float = 0.9
    thread: str = "main"
    kind: str = "push_pop"


@dataclass(frozen=True)
class PhaseSpec:
    """One top-level NVTX range inside every step (CPU duration ``dur_ns``).

    ``canonical`` is the phase class the analyzer should map the name to (data, forward,
    backward, optimizer, overhead, communication, other) — used by :func:`expected` only.
    ``kind``: push_pop (eventType 59) or start_end (60). ``window``: fraction of the phase over
    which un-placed launches are spread; ``launch_gap_ns``: pack them back to back instead
    (call, gap, call, …) from the window start."""

    name: str
    dur_ns: int
    kernels: tuple[KernelSpec, ...] = ()
    memcpys: tuple[MemcpySpec, ...] = ()
    memsets: tuple[MemsetSpec, ...] = ()
    syncs: tuple[SyncSpec, ...] = ()
    ranges: tuple[RangeSpec, ...] = ()
    marks: tuple[str, ...] = ()
    canonical: str = "other"
    kind: str = "push_pop"
    window: tuple[float, float] = (0.0, 1.0)
    launch_gap_ns: int | None = None

    def __post_init__(self) -> None:  # accept lists as well as tuples
        for f in ("kernels", "memcpys", "memsets", "syncs", "ranges", "marks"):
            object.__setattr__(self, f, tuple(getattr(self, f)))
        if self.kind not in ("push_pop", "start_end"):
            raise ValueError(f"PhaseSpec.kind must be push_pop|start_end, not {self.kind!r}")
        if self.dur_ns <= 0:
            raise ValueError(f"phase {self.name!r}: dur_ns must be > 0")


@dataclass(frozen=True)
class PeriodicSpec:
    """An extra phase appended to every ``every``-th step (steps ``every-1, 2·every-1, …``; the
    warm-up step 0 never)."""

    phase: PhaseSpec
    every: int = 5


@dataclass(frozen=True)
class GpuMetricsSpec:
    """GPU metrics sampling (``--gpu-metrics-devices``). A sample at time t covers
    ``(t - period_ns, t]``; each metric = Σ over phases of (fraction of the period the GPU ran
    kernels launched by that phase) × that phase's level (``levels[phase]`` or ``levels['*']``).
    PCIe RX/TX follow H2D/D2H copy activity × ``pcie_level``."""

    period_ns: int = 1 * MS
    levels: dict[str, dict[str, float]] = field(default_factory=dict)
    pcie_level: float = 60.0

    def __post_init__(self) -> None:
        from nsys_diag.synth_schema import GPU_METRIC_NAMES

        for phase, lv in self.levels.items():
            unknown = set(lv) - set(GPU_METRIC_NAMES)
            if unknown:
                raise ValueError(f"GpuMetricsSpec.levels[{phase!r}]: unknown metrics {sorted(unknown)}; "
                                 f"use names from synth_schema.GPU_METRIC_NAMES")
        if self.period_ns <= 0:
            raise ValueError("GpuMetricsSpec.period_ns must be > 0")


DEFAULT_METRIC_LEVELS: dict[str, float] = {
    "SMs Active [Throughput %]": 85.0, "SM Issue [Throughput %]": 45.0,
    "Tensor Active [Throughput %]": 40.0, "DRAM Read Bandwidth [Throughput %]": 25.0,
    "DRAM Write Bandwidth [Throughput %]": 10.0,
}


@dataclass(frozen=True)
class GpuMemorySpec:
    """CUDA_GPU_MEMORY_USAGE_EVENTS (``--cuda-memory-usage=true``): ``chunks`` cudaMalloc
    allocations of weights+optimizer state and ``chunks`` more for activations (caching-allocator
    growth), all in the preamble, all freed (cudaFree) after the last step. Peak = their sum."""

    weights_bytes: int = 12 * GiB
    activation_bytes: int = 18 * GiB
    chunks: int = 4


@dataclass(frozen=True)
class Scenario:
    """A whole capture. See the module docstring for the timing model."""

    name: str = "custom"
    description: str = ""
    expected_verdict: str = "insufficient_data"
    steps: int = 10
    phases: tuple[PhaseSpec, ...] = ()
    periodic: tuple[PeriodicSpec, ...] = ()
    warmup_extra_ns: int = 0
    warmup_phase: str | None = None  # default: the first phase
    jitter: float = 0.0  # ± fraction on phase and GPU-op durations (never on step 0's extra)
    seed: int = 0
    gpu: str = "H100"  # key of synth_schema.GPU_CATALOG
    n_devices: int = 1  # processes in this file, one GPU each
    rank: int | None = None  # this file holds rank `rank` of `world_size` (env RANK, …)
    world_size: int | None = None
    gpu_metrics: GpuMetricsSpec | None = None
    gpu_memory: GpuMemorySpec | None = None
    env: dict[str, str] = field(default_factory=dict)
    hostname: str = "synth-node-01"
    process_name: str = "python3"
    command: tuple[str, ...] = ("python3", "train.py")
    nvtx_text: str = "inline"  # inline | registered | mixed (step ranges inline, phases registered)
    step_prefix: str = "train_step_"
    session_offset_ns: int = 1_250_000_000  # time of the first event (exports never start at 0)
    preamble_ns: int = 40 * MS
    tail_ns: int = 15 * MS
    step_gap_ns: int = 0
    cuda: bool = True  # False: NVTX only, no CUDA tables
    cuda_backtraces: bool = False  # eventClass-67 duplicates of API calls ≥ 10 µs (§2.2)
    launch_latency_ns: int = 5 * US  # GPU op start ≥ call start + latency (+0..6 µs pattern)
    gpu_gap_ns: int = 1_000  # min idle between back-to-back ops on one stream
    rank_skew_ns: int = 137 * US  # per-process start offset in multi-process files
    batch_size: int | None = None
    base_pid: int = 23_817
    utc_start_ns: int = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z

    def __post_init__(self) -> None:
        for f in ("phases", "periodic", "command"):  # accept lists as well as tuples
            object.__setattr__(self, f, tuple(getattr(self, f)))
        if self.steps < 1:
            raise ValueError("steps must be >= 1")
        if self.nvtx_text not in ("inline", "registered", "mixed"):
            raise ValueError(f"nvtx_text must be inline|registered|mixed, not {self.nvtx_text!r}")
        names = [p.name for p in self.phases] + [p.phase.name for p in self.periodic]
        if len(set(names)) != len(names):
            raise ValueError(f"phase names must be unique: {names}")

    @property
    def n_processes(self) -> int:
        return max(1, self.n_devices)

    def phase_named(self, name: str) -> PhaseSpec:
        for p in self.phases + tuple(q.phase for q in self.periodic):
            if p.name == name:
                return p
        raise KeyError(name)


def scaled(sc: Scenario, k: float) -> Scenario:
    """Multiply every kernel/copy/memset count by ``k`` and divide their durations by ``k`` (in
    packed phases also their launch-call durations and gaps): phase durations, busy fractions
    and shares stay the same while the number of GPU rows grows (benchmarks) or shrinks."""
    if k == 1:
        return sc

    def ops(specs):
        out = []
        for s in specs:
            n = max(1, int(round(s.count * k)))
            f = s.count / n
            kw = {"count": n, "dur_ns": max(200, int(round(s.dur_ns * f)))}
            if packed:
                kw["launch_ns"] = max(1_000, int(round(s.launch_ns * f)))
            out.append(replace(s, **kw))
        return tuple(out)

    def phase(p: PhaseSpec) -> PhaseSpec:
        nonlocal packed
        packed = p.launch_gap_ns is not None
        gap = None if p.launch_gap_ns is None else max(200, int(round(p.launch_gap_ns / k)))
        return replace(p, kernels=ops(p.kernels), memcpys=ops(p.memcpys), memsets=ops(p.memsets),
                       launch_gap_ns=gap)

    packed = False

    return replace(sc, phases=tuple(phase(p) for p in sc.phases),
                   periodic=tuple(replace(q, phase=phase(q.phase)) for q in sc.periodic))


# ---------------------------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------------------------

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
                    "xmma) on an A100: the GPU is ~89% busy yet no Tensor Core is used.",
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
            PhaseSpec("fwd", 90 * MS, canonical="forward", kernels=(
                KernelSpec("sgemm_volta", 3_000 * US, 16),
                KernelSpec("sgemm_ampere", 3_000 * US, 8),
                KernelSpec("softmax", 750 * US, 8),
                KernelSpec("layer_norm", 500 * US, 8))),             # 48+24+6+4 = 82
            PhaseSpec("loss.backward", 170 * MS, canonical="backward", kernels=(
                KernelSpec("sgemm_sm80_ffma", 3_000 * US, 40, thread="autograd"),
                KernelSpec("sgemm_volta", 3_000 * US, 8, thread="autograd"),
                KernelSpec("ew_add", 500 * US, 16, thread="autograd"),
                KernelSpec("reduce_mean", 500 * US, 8, thread="autograd"))),  # 120+24+8+4 = 156
            PhaseSpec("optimizer.step", 12 * MS, canonical="optimizer",
                      kernels=(KernelSpec("adam", 1_250 * US, 8),)),    # 10
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
