"""The verdict's input and output records: ``VerdictInputs`` (the numbers the rules of
``verdict.diagnose`` read) and ``Verdict`` (exactly one per process). Kept apart from the rules
so the modules that gather the inputs or render the verdict import no rule code;
``diagnosis/verdict.py`` re-exports both."""
from __future__ import annotations

from dataclasses import dataclass, field

from nsys_diag.analyses.diagnosis.findings import Advice, Evidence, Finding


@dataclass(frozen=True)
class VerdictInputs:
    """Numbers the rules read. Shares are fractions 0..1; ``None`` = not measured."""

    has_kernels: bool
    window_ms: float
    step_ms: float | None = None  # mean analysed step
    steps_source: str | None = None
    utilization: float = 0.0  # compute busy / window, mean over the process's GPUs
    copy_only_share: float = 0.0
    gap_share: dict = field(default_factory=dict)  # cause -> idle fraction of the window
    phase_share: dict = field(default_factory=dict)  # canonical -> share of the step
    phase_ms: dict = field(default_factory=dict)  # canonical -> mean ms per step
    has_backward: bool = False
    small_kernel_frac: float = 0.0
    category_share: dict = field(default_factory=dict)  # kernel category -> share of kernel time
    tc_share_of_kernel_time: float | None = None
    non_tc_gemm_share: float | None = None
    non_tc_gemm_kernels: tuple = ()
    tc_confidence: str | None = None
    metrics: dict | None = None  # sm_active, tensor_active, dram_bandwidth as fractions 0..1
    roofline_memory_share: float | None = None
    roofline_compute_share: float | None = None
    roofline_confidence: str | None = None
    kernel_level_only: bool = False  # an Nsight Compute CSV alone: per-kernel counters, no timeline
    comm_exposed_share: float | None = None
    comm_hidden_share: float | None = None  # communication hidden behind compute (0..1)
    scaling: tuple = ()  # (gpus, step ms, efficiency, exposed ms, basis) of scaling[] beyond 1 GPU
    memory_peak_share: float | None = None
    data_warnings: int = 0
    no_steps_warnings: int = 0  # of them, those that there are no steps (the no-steps cap's)
    capture_hints: tuple = ()
    missing: tuple = ()  # human list of what was not captured (for insufficient_data)
    launch_calls_without_kernels: int | None = None  # API launches, no kernel rows (blind)
    window_selection_empty: bool = False  # a --window / step selection holds none of the kernels
    gap_detail: dict = field(default_factory=dict)  # cause -> strongest evidence, human text
    kernel_count: int | None = None  # kernels in the analysed window (None: not counted)
    kernel_time_ms: float | None = None  # kernel time in the window, summed over GPUs
    analysed_steps: int | None = None
    phase_names: tuple = ()  # (phase name, canonical) pairs present
    periodic_slow_step: str | None = None  # e.g. "periodic (every 5 steps)" from steps.outliers
    pageable_bytes_per_step: float | None = None
    pageable_bytes_per_s: float | None = None  # set when there are no steps
    pageable_window_share: float | None = None  # pageable copy time / analysed window
    has_counters: bool | None = None  # GPU metrics or ncu present (None: derive from the above)
    tc_engaged: bool | None = None  # tensor_cores.engaged
    tensor_active_during_gemm: float | None = None  # tensor_cores.tensor_active_during_gemm
    loader: dict | None = None  # DataLoader workers (loader_workers.verdict_fact); None: none seen
    underfilled_share: float | None = None  # gpu_fill: kernel time in under-filled launches
    tiny_block_share: float | None = None  # gpu_fill: kernel time in blocks < 64 threads
    small_grid_share: float | None = None  # gpu_fill: kernel time in grids < the SM count
    fill_top: tuple = ()  # (name, blocks, threads per block, SMs, blocks per SM, fill) of the
    # top under-filled kernel (gpu_fill.kernels row)
    capture_kernel_ms: float | None = None  # kernel time of the whole capture (None: unknown)
    capture_kernel_count: int | None = None  # kernel launches of the whole capture (None: unknown)
    framework: str | None = None  # program.framework (None: not detected); words the advice
    trace_format: str | None = None  # trace.format ("kineto": capture advice in torch.profiler terms)
    techniques: tuple = ()  # program.techniques already in use (never advised again)
    capture_busy_share: float | None = None  # GPU busy: max(kernels / capture, window busy)
    savings: dict | None = None  # cause -> pricing.Saving from the replay; None: not priced
    replay_reason: str | None = None  # why the replay did not price (fallback evidence)
    made_of: tuple = ()  # (kind, ms per step, share): the critical path's top kinds


@dataclass(frozen=True)
class Verdict:
    code: str
    headline: str
    confidence: str  # high | medium | low
    scale_advice: str
    evidence: tuple[Evidence, ...]
    recommendations: tuple[str, ...]
    projected_step_ms_if_fixed: float | None
    secondary: tuple[str, ...] = ()
    advice: tuple[Advice, ...] = ()
    finding: str | None = None  # the cause of the finding the verdict came from
    findings: tuple[Finding, ...] = ()  # every finding (top-level ``findings[]`` of the JSON)

    available = True

    def to_json(self) -> dict:
        return {"code": self.code, "headline": self.headline, "confidence": self.confidence,
                "scale_advice": self.scale_advice,
                "evidence": [e.to_json() for e in self.evidence],
                "recommendations": list(self.recommendations),
                "projected_step_ms_if_fixed": self.projected_step_ms_if_fixed,
                "secondary": list(self.secondary),
                "advice": [a.to_json() for a in self.advice], "finding": self.finding}

    def findings_json(self) -> list[dict]:
        return [f.to_json() for f in self.findings]
