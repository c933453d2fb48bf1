"""Scenario model of the trace generator (see :mod:`nsys_diag.synth`; presets in
:mod:`nsys_diag.synth.presets`, the kernel catalog in :mod:`nsys_diag.synth.kernels`).

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

``Scenario.expected_verdict`` is the verdict a preset's design aims at.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from nsys_diag.synth.kernels import KernelInfo
from nsys_diag.synth.schema import GPU_METRIC_NAMES

MS = 1_000_000
US = 1_000
MiB = 1 << 20
GiB = 1 << 30

COMPUTE_STREAM = 7
"""The legacy default (NULL) stream id nsys reports for context 1 (§2.10: always 7)."""
NCCL_STREAM = 13


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
    ``nvtx_domain`` (e.g. ``ncclAllReduce`` in ``NCCL``). ``grid``/``block``: launch this spec with
    another geometry than the catalog's (one kernel name under two launch configurations).
    ``info``: the kernel's full description (names, geometry, registers, shared memory, launch
    API) for a kernel outside the catalog; ``name`` is then only a label."""

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
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    info: KernelInfo | None = None


@dataclass(frozen=True)
class MemcpySpec:
    """``count`` copies per phase occurrence. ``kind``: H2D | D2H | D2D, or a unified-memory
    migration uvm_h2d | uvm_d2h | uvm_d2d (copyKind 11/12/13, managed memory on both sides,
    ``migration_cause`` from ENUM_CUDA_UNIF_MEM_MIGRATION: 1 user prefetch, 2 page fault, 4
    eviction); ``host``: pinned | pageable (the host side of H2D/D2H)."""

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
    migration_cause: int = 2


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
class ApiCallSpec:
    """``count`` CUDA runtime/driver (or library) calls per phase occurrence that launch no GPU
    work, each ``dur_ns`` long: module/library loading (``cuModuleLoadData``,
    ``cuLibraryLoadData``), handle creation (``cublasCreate_v2``, ``cudnnCreate``), allocation
    (``cudaMalloc``, ``cudaFree``, ``cudaMallocHost``) … Placed like kernel launches (spread over
    the phase window, or back to back at fraction ``at``)."""

    name: str
    dur_ns: int
    count: int = 1
    thread: str = "main"
    at: float | None = None

    @property
    def launch_ns(self) -> int:
        return self.dur_ns


@dataclass(frozen=True)
class HostCallSpec:
    """``count`` OS runtime calls (OSRT_API rows, ``-t osrt``) per phase occurrence on
    ``thread``, each ``dur_ns`` long: ``read``, ``poll``, ``pthread_cond_wait``, ``nanosleep`` …
    spread evenly over the phase, or back to back from fraction ``at``."""

    name: str
    dur_ns: int
    count: int = 1
    thread: str = "main"
    at: float | None = None


@dataclass(frozen=True)
class CpuSamplingSpec:
    """CPU sampling (``--sample=process-tree``): every ``period_ns`` one sample per sampled
    thread (COMPOSITE_EVENTS + SAMPLING_CALLCHAINS). The top frame is the OS runtime call the
    thread is in (thread state OS runtime), else ``frames[phase]`` of the phase the main thread is
    in, else ``default_frame`` (state running); frames below it are ``stack``."""

    period_ns: int = 1 * MS
    threads: tuple[str, ...] = ("main",)
    frames: dict[str, str] = field(default_factory=dict)
    default_frame: str = "PyEval_EvalFrameDefault"
    stack: tuple[str, ...] = ("_PyEval_Vector", "Py_RunMain", "main")

    def __post_init__(self) -> None:
        object.__setattr__(self, "threads", tuple(self.threads))
        object.__setattr__(self, "stack", tuple(self.stack))
        if self.period_ns <= 0:
            raise ValueError("CpuSamplingSpec.period_ns must be > 0")


@dataclass(frozen=True)
class RangeSpec:
    """Nested NVTX sub-ranges inside a phase: ``count`` ranges evenly spread over
    ``[start, start + span]`` (fractions of the phase), each filling ``fill`` of its slot.
    ``domain``: an NVTX domain name (its texts registered, as the MPI interposer writes them);
    empty = the default domain."""

    name: str
    count: int = 1
    start: float = 0.0
    span: float = 1.0
    fill: float = 0.9
    thread: str = "main"
    kind: str = "push_pop"
    domain: str = ""


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
    api_calls: tuple[ApiCallSpec, ...] = ()
    host_calls: tuple[HostCallSpec, ...] = ()

    def __post_init__(self) -> None:  # accept lists as well as tuples
        for f in ("kernels", "memcpys", "memsets", "syncs", "ranges", "marks", "api_calls",
                  "host_calls"):
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
        for phase, lv in self.levels.items():
            unknown = set(lv) - set(GPU_METRIC_NAMES)
            if unknown:
                raise ValueError(f"GpuMetricsSpec.levels[{phase!r}]: unknown metrics {sorted(unknown)}; "
                                 f"use names from nsys_diag.synth.schema.GPU_METRIC_NAMES")
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
    gpu: str = "H100"  # key of schema.GPU_CATALOG
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
    nvtx: bool = True  # False: no NVTX rows at all (a capture without -t nvtx)
    cuda_backtraces: bool = False  # eventClass-67 duplicates of API calls ≥ 10 µs (§2.2)
    launch_latency_ns: int = 5 * US  # GPU op start ≥ call start + latency (+0..6 µs pattern)
    gpu_gap_ns: int = 1_000  # min idle between back-to-back ops on one stream
    rank_skew_ns: int = 137 * US  # per-process start offset in multi-process files
    batch_size: int | None = None
    base_pid: int = 23_817
    utc_start_ns: int = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
    init_calls: tuple[tuple[str, int], ...] = ()  # (API, ns) appended to the preamble calls
    cpu_sampling: CpuSamplingSpec | None = None
    shuffle_seed: int | None = None  # write event-table rows in this seed's random order
    nvtx_steps: bool = True  # False: steps and phases write no NVTX ranges (sub-ranges still do)
    main_thread_name: str | None = None  # ThreadNames name of the main thread (default: process)
    idle_devices: int = 0  # more GPUs in TARGET_INFO_GPU that no process of the file uses
    autograd_thread: bool = True  # False: no pt_autograd_0 thread (a program that is not PyTorch)
    preamble: tuple[tuple[str, int], ...] | None = None  # (API, ns) start-up calls; None: PyTorch's
    tail_sync: str | None = "cudaDeviceSynchronize"  # the drain call after the last step; None: none

    def __post_init__(self) -> None:
        if self.preamble is not None:
            object.__setattr__(self, "preamble", tuple(self.preamble))
        for f in ("phases", "periodic", "command", "init_calls"):  # accept lists as well as tuples
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
    packed = False  # the phase being scaled packs its launches (set by phase() below)

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

    return replace(sc, phases=tuple(phase(p) for p in sc.phases),
                   periodic=tuple(replace(q, phase=phase(q.phase)) for q in sc.periodic))

