"""Every number a rule uses, in one documented place.

Each field states its default, its unit and where the default comes from (a published precedent —
the PyTorch TensorBoard profiler plugin, HTA, Nsight Compute's Speed-of-Light rules — or a
measurement; the table in docs/thresholds.md). Thresholds are never tuned to make our own generated
traces pass. Users may override any field with ``--thresholds FILE.toml`` (flat ``name = value``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path


@dataclass(frozen=True)
class Thresholds:
    # ---- steps ------------------------------------------------------------------------------
    warmup_steps: int = 1
    """Leading steps always treated as warm-up (first iteration pays compilation/cudnn autotune,
    allocator growth). Further leading steps are also warm-up while > ``outlier_factor`` × median."""
    outlier_mad_k: float = 3.5
    """A step is an outlier when |t - median| / (1.4826·MAD) > k (Iglewicz & Hoaglin modified
    z-score, 3.5 is their recommended cut-off)."""
    outlier_factor: float = 1.5
    """...and also at least this many times the median (guards against MAD≈0 on clean synthetic
    or very regular runs flagging 1% jitter)."""
    incomplete_step_kernel_frac: float = 0.8
    """Last step is incomplete when it holds < 80% of the median step's kernels (TB plugin guard)."""

    # ---- gaps -------------------------------------------------------------------------------
    min_gap_ns: int = 1_000
    """Idle intervals shorter than 1 µs are ignored (below kernel launch granularity)."""
    launch_gap_max_ns: int = 50_000
    """A gap ≤ 50 µs while the CPU is issuing launches is 'launch' overhead (HTA: launch API
    5–20 µs typical, runtime outlier 50 µs)."""
    small_kernel_ns: int = 10_000
    """Kernels shorter than 10 µs are 'small' (nsys-ai small-kernel rule)."""
    host_io_min_call_ns: int = 0
    """Shortest OS-runtime file/socket call (read/write/pread/pwrite/open/fsync/send/recv …) that
    counts as ``host_io`` gap evidence; 0: every call. Reasoning (issue 26): many short calls add
    up — 869 ``pwrite64`` calls of ~80 µs block the launching thread ~70 ms, which a per-call
    minimum of 1 ms counted as 8.65 ms. Only calls inside an idle stretch on a thread that
    enqueues GPU work count, so the background I/O of helper threads never does; sleeps and polls
    are not I/O (they are a thread waiting on purpose, not a cost of the data path)."""

    # ---- verdict ------------------------------------------------------------------------------
    input_bound_data_share: float = 0.05
    """Data phase > 5% of step time flags the loader (PyTorch TB plugin DataLoader rule)."""
    input_bound_verdict_share: float = 0.25
    """input_bound is the verdict when waiting-on-input explains ≥ 25% of step time and is the
    largest idle cause."""
    loader_saturated_busy_share: float = 0.8
    """DataLoader workers busy ≥ 80% of the analysed window (mean over workers) are saturated: the
    loader cannot produce batches faster, so an input-bound step needs more workers, cheaper
    decoding or caching (the same 80% "saturated" level as ``high_utilization``)."""
    loader_idle_busy_share: float = 0.5
    """Workers busy < 50% of the window have spare capacity half the time: when the step still
    waits on input, the main process (collate, pinning, the copy) is the bottleneck, not the
    workers (the same 50% level as ``low_utilization``)."""
    low_utilization: float = 0.5
    """Compute utilization < 50% means the GPU mostly waits (TB plugin GPU utilization rule)."""
    high_utilization: float = 0.8
    """≥ 80% compute busy counts as compute-saturated (ncu SOL 'bound' level, applied to time)."""
    latency_underfilled_share: float = 0.5
    """≥ 50% of kernel time in under-filled launches (``analyses/kernels/gpu_fill.py``: grid
    smaller than the SM count, blocks < 64 threads, or < 25% of the resident threads) on a GPU
    busy ≥ ``latency_busy_share`` of the window → ``latency_bound`` (issue 26: a majority)."""
    latency_busy_share: float = 0.5
    """The GPU must be time-busy ≥ 50% of the window (the ``low_utilization`` level) for its
    launch shapes, not its idle gaps, to be what bounds the run."""
    tensor_core_share_ok: float = 0.5
    """< 50% of GEMM/conv time on Tensor Cores means mixed precision is not reaching them."""
    non_tc_gemm_share_flag: float = 0.2
    """GEMM/conv kernels without Tensor Cores over 20% of kernel time → compute_bound_no_tensor_cores."""
    tc_name_known_min_share: float = 0.5
    """Tensor Cores from names only: confidence 'medium' when the names decide (Tensor Core or CUDA
    cores) for at least half of the GEMM/conv/attention + generated-kernel time, else 'low' (a
    simple-majority rule; no published precedent — DLProf/TB plugin gave no confidence at all)."""
    tensor_active_engaged: float = 0.05
    """nsys GPU metrics: Tensor Cores are *engaged* when the mean Tensor Active level (fraction of
    cycles) over the time GEMM/conv/attention kernels run is ≥ 5%. Real MMA kernels keep the
    tensor pipe busy tens of percent of cycles (61% for flash_fwd on B200, NCU_CSV.md §6.3);
    FP32 CUDA-core fallbacks read 0–1%, the residue of HFMA2.MMA-style constant materialisation
    (§6.2, the reason ncu's own cut is 1%). 5% sits well above that noise floor and far below any
    real MMA level, so a GEMM mix that is mostly on Tensor Cores never reads below it."""
    tc_busy_sm_active: float = 0.5
    """A kernel whose name cannot tell its math path counts as a CUDA-core GEMM only while the SMs
    are busy (SM Active ≥ 50% while it ran) and Tensor Active is below ``tensor_active_engaged``:
    idle or latency-bound SMs say nothing about the math pipes (a simple majority of SMs, no
    published precedent)."""
    memory_bound_dram_util: float = 0.6
    """DRAM bandwidth ≥ 60% of peak (GPU metrics) with SM/tensor activity low → memory bound
    (ncu: SOL < 60% is 'latency', ≥ 80% 'bound'; between counts as significant)."""
    elementwise_share_memory_bound: float = 0.5
    """Without counters, ≥ 50% of kernel time in elementwise/reduction kernels suggests memory
    bound (name heuristic, low confidence)."""
    overhead_share: float = 0.10
    """Overhead phases (logging/checkpoint/eval) or host syncs > 10% of step → overhead_bound
    (TB plugin 10% communication/overhead precedent)."""
    verdict_min_saving_share: float = 0.10
    """With the replay's what-ifs, the finding with the largest saving is the verdict only
    when its fix saves ≥ 10% of the mean analysed step (``analyses/diagnosis/verdict.py``); a
    smaller saving leaves the verdict to the GPU side or ``no_dominant_cause``. The same 10%
    bar as ``overhead_share`` (TB plugin precedent: below it a cost needs no advice)."""
    limiting_min_saving_share: float = 0.01
    """A fired finding whose what-if the replay applied but that saves < 1% of the mean
    analysed step is listed as not limiting: the step does not wait on it in this trace (e.g.
    exposed communication on a host-paced step), so it gives no secondary verdict and no
    advice (``analyses/diagnosis/verdict.py``)."""
    launch_bound_small_kernel_frac: float = 0.5
    """≥ 50% of kernels shorter than ``small_kernel_ns`` and launch gaps dominant → launch bound."""
    communication_share: float = 0.10
    """Exposed communication > 10% of step → communication_bound (TB plugin)."""
    memory_headroom_frac: float = 0.5
    """Peak allocation < 50% of device memory: 'headroom, raise batch size'."""
    memory_near_full_frac: float = 0.9
    """Peak allocation > 90% of device memory: 'near full'."""
    min_kernels_to_diagnose: int = 20
    """Abstain (``insufficient_data``) with fewer than 20 kernels in the analysed window: a
    steady-state training or inference step runs tens to thousands of kernels; under 20 the window
    is a micro-benchmark, a start-up slice or a tiny test, whose idle time says nothing about a
    workload (a single slow launch would decide the verdict)."""
    min_busy_share_to_diagnose: float = 0.01
    """Abstain when the GPU is busy (kernels and copies) < 1% of the whole capture and of the
    analysed window (a long capture whose steps keep the GPU busy is not blind): the rest is
    host time that the GPU's own timeline cannot explain (issue 26: judged on the capture, not on
    a kernel count — 162 ms of GEMMs is diagnosable). With the capture's kernel time known (the
    launch-shape sample) this rule and ``min_kernel_time_ns_to_diagnose`` decide, and the kernel
    count ``min_kernels_to_diagnose`` is not used."""
    min_kernel_time_ns_to_diagnose: int = 10_000_000
    """...or with less than 10 ms of kernel time: below that, one-off costs (context creation,
    module loading, a first cudaMalloc — each ms to hundreds of ms) dwarf the GPU work, so any
    share of the window is a share of start-up noise."""
    startup_dominated_share: float = 0.5
    """Start-up idle (before the first kernel, during one-off initialisation) ≥ 50% of the window →
    ``insufficient_data`` "the capture is mostly start-up": a simple majority — when most of the
    window is initialisation, the steady state is the minority and cannot be judged."""
    healthy_utilization: float = 0.9
    """Compute utilization ≥ 90% with no idle finding fired is a healthy run: at most 10% idle
    can remain, which is the ``overhead_share`` bar of every idle rule, so no idle cause can reach
    warning (TB plugin: ≥ 90% GPU utilization needs no idle-time advice)."""
    unattributed_idle_share: float = 0.25
    """Idle time no evidence names (``other``) must reach 25% of the window before it argues for
    ``overhead_bound``: weaker evidence than a named cause (10%), so the same bar as the input
    rule (``input_bound_verdict_share``)."""
    pageable_copy_min_bytes: int = 1 << 20
    """Pinned-memory advice needs ≥ 1 MiB of pageable copies per step (per second without steps):
    below that the staging copy through a pinned bounce buffer costs < ~0.1 ms at PCIe rates
    (≥ 10 GB/s), too little to be worth changing the allocation."""
    pageable_copy_min_window_share: float = 0.01
    """Or pageable copies run ≥ 1% of the analysed window (Σ their durations): at that share
    the synchronous staging is a cost worth naming even when the bytes per step are few (many
    small copies each pay the driver's staging and the host's wait)."""
    min_steps_for_high_confidence: int = 5
    """Fewer than 5 analysed steps cap confidence at medium: the outlier rule (modified z-score,
    ``outlier_mad_k``) needs ≥ 3 normal steps and one slow step among 4 moves a mean by 25%."""

    # ---- roofline (ncu) -------------------------------------------------------------------------
    sol_bound_pct: float = 80.0
    """ncu: a unit at ≥ 80% of peak is the bound."""
    sol_latency_pct: float = 60.0
    """ncu: all units < 60% of peak → latency bound."""
    sol_imbalance_pts: float = 10.0
    """ncu: compute vs memory SOL within 10 points → balanced."""
    sol_waves_min: float = 1.0
    """ncu SOLBottleneck: a latency-bound launch with < 1 wave per SM is a 'small grid'
    (under-occupied) rather than a latency issue."""
    tensor_pipe_active_pct: float = 1.0
    """ncu tensor-pipe utilisation ≥ 1% of peak counts as Tensor Core use. Real MMA kernels run at
    tens of percent (61% for flash_fwd on B200, NCU_CSV.md §6.3); below 1% is noise such as
    HFMA2.MMA constant materialisation (§6.2)."""
    roofline_above_peak_factor: float = 1.05
    """An achieved rate > 1.05 × its peak is flagged as a unit/parse error, never plotted as real
    (NCU_CSV.md §10.12, §11.4)."""
    ncu_join_max_duration_ratio: float = 10.0
    """ncu join: a name or family fallback (not the exact name) pairs an ncu kernel with a timeline
    kernel only when their per-launch durations are within 10× either way. Profiling replays add
    tens of percent at most and clocks locked by ncu ~2×; a 10× gap means a different problem
    size or another kernel of the family (issue 16: a 7.5 µs ncu sgemm paired with a timeline
    sgemm hundreds of times longer per launch)."""
    comparability_min_score: float = 0.5
    """``compare``: a pair whose comparability score (analyses/batch_summary.comparability: the
    time-weighted share of kernel time in kernel families common to both sides, × 0.5 for a
    different GPU model, × 0.75 for step counts more than 4× apart) is below 0.5 is incomparable
    and ``--fail-on-regression`` is not evaluated. Reasoning: below half of the GPU time in common
    kernels, the two traces run mostly different code and a step-time ratio says nothing about a
    change; the same code on another GPU model (factor 0.5) sits exactly at the cut-off and any
    further mismatch makes it incomparable. A judgement, stated as such, not fitted to a file."""

    def to_dict(self) -> dict:
        return asdict(self)

    def with_overrides(self, **kw) -> Thresholds:
        known = {f.name for f in fields(self)}
        unknown = set(kw) - known
        if unknown:
            raise ValueError(f"unknown thresholds: {sorted(unknown)}")
        return replace(self, **kw)

    @classmethod
    def from_toml(cls, path: str | Path) -> Thresholds:
        try:
            import tomllib  # type: ignore[import-not-found]
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        from nsys_diag.model.safe_files import MAX_OPTION_FILE_BYTES, read_capped

        text = read_capped(path, MAX_OPTION_FILE_BYTES, "a thresholds file").decode("utf-8")
        data = tomllib.loads(text)
        return cls().with_overrides(**data)


DEFAULT_THRESHOLDS = Thresholds()
