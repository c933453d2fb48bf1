"""One verdict from the analyses: code, headline, evidence (with thresholds), advice, projection.

``diagnose(inputs, th)`` works on ``VerdictInputs`` — plain numbers gathered by ``suite.py`` — so
each rule is testable without a trace. Every number it compares is a field of ``Thresholds``.

Rules, in the order they are applied
------------------------------------
0. ``insufficient_data`` — no CUDA kernel in the analysed window (or an empty window). An Nsight
   Compute CSV alone (kernel counters, no timeline) gives ``memory_bound``/``compute_bound`` when
   ≥ 50% of the profiled kernel time is in that roofline class, else ``insufficient_data``.
1. Costs, each a fraction of the analysed window (per GPU):
   * input = idle while the step thread is in a data phase + idle while copies run (``gaps``);
   * overhead = idle in overhead phases (logging/checkpoint/eval) + idle while the CPU is
     blocked in synchronising calls; when utilization < ``low_utilization`` the unexplained
     ("other") idle is added too — the host is busy with something no phase names;
   * launch = short idle gaps while the CPU issues launches;
   * communication = exposed (not overlapped by compute) communication kernel time / step time.
2. ``communication_bound`` when communication > ``communication_share`` and no idle cost is larger.
3. If compute utilization < ``high_utilization``: among input (≥ ``input_bound_verdict_share``),
   overhead (≥ ``overhead_share``), launch (≥ ``overhead_share`` and ≥
   ``launch_bound_small_kernel_frac`` of kernels shorter than ``small_kernel_ns``), the largest
   cost wins. If none reaches its threshold but utilization < ``low_utilization``, the largest
   idle cost still wins with low confidence.
4. Otherwise the GPU side decides (compute saturated or no dominant idle cause):
   ``memory_bound`` on counters (GPU-metrics DRAM bandwidth ≥ ``memory_bound_dram_util`` with
   Tensor activity low, or ≥ 50% of kernel time in memory-bound kernels on the ncu roofline);
   ``compute_bound_no_tensor_cores`` when GEMM/conv kernels without Tensor Cores take
   ≥ ``non_tc_gemm_share_flag`` of kernel time; ``memory_bound`` (low confidence) when, without
   counters, ≥ ``elementwise_share_memory_bound`` of kernel time is elementwise/reduction/memory
   kernels; else ``compute_bound``.

Every other rule that fired is listed in ``secondary``. ``projected_step_ms_if_fixed`` removes the
chosen cost from the mean step (input: loader overlapped → max(data, rest of step); no Tensor
Cores: non-TC GEMM time halved, a conservative speed-up) and is ``None`` when there is no step or
no sound projection (compute/memory bound).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from nsys_diag.model.thresholds import Thresholds
from nsys_diag.model.vocabulary import GAP_CAUSES, NSYS_CAPTURE_COMMAND, NSYS_TRACE_CUDA_NVTX


NON_TC_ASSUMED_SPEEDUP = 2.0
"""Projection only: GEMMs moved from CUDA cores to Tensor Cores assumed ≥ 2× faster (peak ratios
are 8–16× for TF32/BF16 vs FP32 on A100/H100; 2× keeps the promise conservative)."""
MEMORY_BOUND_ROOFLINE_SHARE = 0.5
"""ncu roofline: ≥ 50% of kernel time in memory-bound kernels → memory bound (majority)."""


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
    memory_peak_share: float | None = None
    data_warnings: int = 0
    capture_hints: tuple = ()
    missing: tuple = ()  # human list of what was not captured (for insufficient_data)


@dataclass(frozen=True)
class Evidence:
    metric: str
    value: float | str | None
    threshold: float | None
    comparison: str  # ">=", "<", ... or "info"
    source: str  # "timeline", "nvtx", "gpu_metrics", "ncu", "kernel names", "capture"

    def to_json(self) -> dict:
        return {"metric": self.metric, "value": self.value, "threshold": self.threshold,
                "comparison": self.comparison, "source": self.source}


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

    available = True

    def to_json(self) -> dict:
        return {"code": self.code, "headline": self.headline, "confidence": self.confidence,
                "scale_advice": self.scale_advice,
                "evidence": [e.to_json() for e in self.evidence],
                "recommendations": list(self.recommendations),
                "projected_step_ms_if_fixed": self.projected_step_ms_if_fixed,
                "secondary": list(self.secondary)}


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _lower(conf: str) -> str:
    return {"high": "medium", "medium": "low", "low": "low"}[conf]


RECOMMENDATIONS = {
    "input_bound": (
        "Overlap data loading with compute: DataLoader(num_workers>0, prefetch_factor>=2, "
        "persistent_workers=True) so the next batch is ready when the step ends.",
        "Use pinned host memory and asynchronous copies: DataLoader(pin_memory=True) and "
        ".to(device, non_blocking=True).",
        "Cache or pre-process the dataset (decoded tensors, WebDataset/shards, DALI) so each step "
        "does less CPU decoding and I/O.",
        "Move augmentation to the GPU (NVIDIA DALI, torchvision.transforms.v2 on CUDA tensors).",
    ),
    "overhead_bound": (
        "Make checkpointing asynchronous (torch.distributed.checkpoint.async_save or a background "
        "thread) and save less often.",
        "Log and evaluate less often; avoid .item()/.cpu()/print of GPU tensors every step — each "
        "one forces a host synchronization.",
        "Remove stray torch.cuda.synchronize()/cudaDeviceSynchronize calls from the training loop.",
    ),
    "launch_bound": (
        "Capture the step in CUDA graphs (torch.compile(mode='reduce-overhead') or "
        "torch.cuda.graphs) to remove per-kernel launch cost.",
        "Fuse small kernels: torch.compile, fused/foreach optimizers (Adam(fused=True)), fused "
        "layers (e.g. apex/TE fused LayerNorm).",
        "Give each kernel more work: a larger batch (if memory allows) or fewer, larger tensors.",
    ),
    "memory_bound": (
        "Fuse chains of elementwise/normalization kernels (torch.compile) to cut DRAM round trips.",
        "Keep activations in bf16/fp16 (autocast) to halve the bytes moved.",
        "Profile the top kernels with Nsight Compute (nsys-diag analyze --ncu) to confirm their "
        "place on the roofline.",
    ),
    "memory_bound_inference": (
        "Quantize weights (int8/fp8/int4) — inference without a backward pass is dominated by "
        "weight and KV-cache traffic.",
    ),
    "compute_bound_no_tensor_cores": (
        "Enable mixed precision: torch.autocast(device_type='cuda', dtype=torch.bfloat16) "
        "(or fp16 with GradScaler).",
        "Allow TF32 for FP32 matmuls/convs: torch.set_float32_matmul_precision('high') and "
        "torch.backends.cudnn.allow_tf32 = True.",
        "Align GEMM/conv dimensions (batch, hidden, channels) to multiples of 8 for fp16/bf16 "
        "(16 for int8/fp8) so cuBLAS/cuDNN can pick Tensor Core kernels.",
    ),
    "compute_bound": (
        "The GPU is the bottleneck: profile the top kernels with Nsight Compute (--ncu) and use "
        "fused/optimized kernels (FlashAttention, fused optimizers, torch.compile).",
        "Scale out: more GPUs (data parallel) help roughly linearly while communication stays "
        "overlapped.",
    ),
    "communication_bound": (
        "Overlap communication with backward: DDP bucket_cap_mb / gradient_as_bucket_view, FSDP "
        "backward_prefetch, and start all-reduces per bucket rather than at the end.",
        "Communicate less often or less: gradient accumulation, a larger per-GPU batch, gradient "
        "compression (PowerSGD) or bf16 gradients.",
        "Check the interconnect: NVLink/NVSwitch vs PCIe, and NCCL topology settings.",
    ),
}


def _memory_advice(x: VerdictInputs, th: Thresholds) -> tuple[str | None, Evidence | None]:
    if x.memory_peak_share is None:
        return None, None
    ev = Evidence("memory.peak_share", x.memory_peak_share, th.memory_headroom_frac, "<", "timeline")
    if x.memory_peak_share < th.memory_headroom_frac:
        return (f"GPU memory headroom: peak use is {_pct(x.memory_peak_share)} of device memory — "
                "raise the per-GPU batch size (or reduce gradient accumulation) to give each "
                "kernel more work.", ev)
    if x.memory_peak_share > th.memory_near_full_frac:
        ev = Evidence("memory.peak_share", x.memory_peak_share, th.memory_near_full_frac, ">", "timeline")
        return (f"GPU memory nearly full ({_pct(x.memory_peak_share)} peak): use activation "
                "(gradient) checkpointing, mixed precision or sharding (FSDP/ZeRO) before raising "
                "the batch.", ev)
    return None, None


def _insufficient(x: VerdictInputs) -> Verdict:
    missing = ", ".join(x.missing) if x.missing else "no CUDA kernels in the analysed window"
    recs = tuple(f"Re-capture: {h}" for h in x.capture_hints) or (
        f"Re-capture with: {NSYS_CAPTURE_COMMAND}, then nsys export --type sqlite report.nsys-rep",)
    return Verdict(
        code="insufficient_data",
        headline=f"Not enough data for a diagnosis: {missing}.",
        confidence="high",
        scale_advice="Unknown: the trace has no GPU activity to judge; re-capture it with the "
                     "flags below before deciding on more or bigger GPUs.",
        evidence=(Evidence("kernels_in_window", 0, None, "info", "capture"),),
        recommendations=recs,
        projected_step_ms_if_fixed=None,
    )


def _kernel_level(x: VerdictInputs) -> Verdict:
    """An ncu CSV without a timeline: classify the profiled kernel time, say what is missing."""
    mem = float(x.roofline_memory_share or 0.0)
    comp = float(x.roofline_compute_share or 0.0)
    conf = _lower(x.roofline_confidence or "medium")  # counters, but no run-level timeline
    ev = (Evidence("roofline.memory_bound_share", mem, MEMORY_BOUND_ROOFLINE_SHARE, ">=", "ncu"),
          Evidence("roofline.compute_bound_share", comp, MEMORY_BOUND_ROOFLINE_SHARE, ">=", "ncu"))
    timeline = (f"Capture an nsys timeline of the same run ({NSYS_TRACE_CUDA_NVTX}) to see "
                "whether the GPU waits on input, launches or the host between kernels.")
    if mem >= MEMORY_BOUND_ROOFLINE_SHARE or comp >= MEMORY_BOUND_ROOFLINE_SHARE:
        code = "memory_bound" if mem >= comp else "compute_bound"
        what = "memory-bound" if code == "memory_bound" else "compute-bound"
        head = (f"{what.capitalize()} kernels: {_pct(max(mem, comp))} of the profiled kernel time "
                f"(Nsight Compute roofline; kernel level only, no timeline).")
        recs = RECOMMENDATIONS[code] + (timeline,)
        return Verdict(code, head, conf, _scale_advice(code, x, {}, 0.0, 1.0), ev, recs, None)
    return Verdict(
        "insufficient_data",
        f"Kernel-level data only: {_pct(mem)} memory-bound and {_pct(comp)} compute-bound "
        "kernel time — most profiled time is latency-bound or under-occupied, and without a "
        "timeline the run cannot be judged.",
        conf, "Unknown without a timeline: capture one with nsys before deciding on more or "
        "bigger GPUs.", ev, (timeline, "Latency-bound kernels: raise occupancy and grid size "
                             "(larger batches, fewer tiny launches), then re-profile with ncu."),
        None)


@dataclass(frozen=True)
class _Signals:
    """What the rules read, derived once from the inputs: idle shares per gap cause (``g``,
    fractions of the window), utilization ``u``, the idle cost per timeline verdict, exposed
    communication, and the GPU-side memory / Tensor Core evidence."""

    g: dict[str, float]
    u: float
    costs: dict[str, float]
    comm: float
    unexplained_to_overhead: bool
    dram: float | None
    tensor: float | None
    mem_by_counters: bool
    mem_by_roofline: bool
    no_tc: bool
    ew_share: float
    mem_by_names: bool


def _signals(x: VerdictInputs, th: Thresholds) -> _Signals:
    g = {c: float(x.gap_share.get(c, 0.0)) for c in GAP_CAUSES}
    u = float(x.utilization)
    unexplained = u < th.low_utilization  # low utilization: unexplained idle counts as overhead
    costs = {
        "input_bound": g["input"] + g["transfer"],
        "overhead_bound": g["overhead"] + g["sync"] + (g["other"] if unexplained else 0.0),
        "launch_bound": g["launch"],
    }
    m = x.metrics or {}
    dram, tensor = m.get("dram_bandwidth"), m.get("tensor_active")
    ew_share = sum(float(x.category_share.get(c, 0.0)) for c in ("elementwise", "reduction", "memory"))
    return _Signals(
        g=g, u=u, costs=costs, comm=float(x.comm_exposed_share or 0.0),
        unexplained_to_overhead=unexplained, dram=dram, tensor=tensor,
        mem_by_counters=(dram is not None and dram >= th.memory_bound_dram_util
                         and (tensor is None or tensor < th.tensor_core_share_ok)),
        mem_by_roofline=(x.roofline_memory_share is not None
                         and x.roofline_memory_share >= MEMORY_BOUND_ROOFLINE_SHARE),
        no_tc=x.non_tc_gemm_share is not None and x.non_tc_gemm_share >= th.non_tc_gemm_share_flag,
        ew_share=ew_share, mem_by_names=ew_share >= th.elementwise_share_memory_bound)


def _timeline_code(x: VerdictInputs, th: Thresholds, sg: _Signals
                   ) -> tuple[str, str, list[str], list[Evidence]]:
    """(code from the idle time — '' when the GPU side decides —, confidence, codes that fired,
    evidence so far)."""
    g, u, costs, comm = sg.g, sg.u, sg.costs, sg.comm
    thresholds = {"input_bound": th.input_bound_verdict_share, "overhead_bound": th.overhead_share,
                  "launch_bound": th.overhead_share}
    eligible = {c: v for c, v in costs.items() if v >= thresholds[c]}
    if "launch_bound" in eligible and x.small_kernel_frac < th.launch_bound_small_kernel_frac:
        eligible.pop("launch_bound")
    ev: list[Evidence] = [Evidence("gpu.utilization", u, th.low_utilization if u < th.high_utilization
                                   else th.high_utilization, "<" if u < th.high_utilization else ">=",
                                   "timeline")]
    confidence = "medium"
    # secondary codes need named evidence: unexplained idle alone never flags overhead_bound
    fired: list[str] = [c for c in eligible if c != "overhead_bound"
                        or g["overhead"] + g["sync"] >= th.overhead_share]
    if comm > th.communication_share:
        fired.append("communication_bound")
    if comm > th.communication_share and comm >= max(costs.values()):
        code = "communication_bound"
        ev.append(Evidence("communication.exposed_share", comm, th.communication_share, ">", "timeline"))
    elif u < th.high_utilization and eligible:
        code = max(eligible, key=lambda c: eligible[c])
    elif u < th.low_utilization:
        code = max(costs, key=lambda c: costs[c])
        confidence = "low"
    else:
        code = ""
    if sg.mem_by_counters or sg.mem_by_roofline:
        fired.append("memory_bound")
    if sg.no_tc:
        fired.append("compute_bound_no_tensor_cores")
    return code, confidence, fired, ev


def _gpu_side_code(x: VerdictInputs, th: Thresholds, sg: _Signals) -> tuple[str, str]:
    """(code, confidence) when the idle time decides nothing: memory, Tensor Cores or compute."""
    if sg.mem_by_counters or sg.mem_by_roofline:
        return "memory_bound", "high" if sg.mem_by_counters else (x.roofline_confidence or "medium")
    if sg.no_tc:
        return "compute_bound_no_tensor_cores", "high" if sg.tensor is not None else (
            "medium" if (x.tc_confidence or "medium") != "low" else "low")
    if sg.mem_by_names:
        return "memory_bound", "low"
    return "compute_bound", "high" if sg.u >= th.high_utilization else "medium"


def _choose(x: VerdictInputs, th: Thresholds, sg: _Signals
            ) -> tuple[str, str, list[str], list[Evidence]]:
    """(code, confidence before the data-quality adjustment, fired codes, evidence so far)."""
    code, confidence, fired, ev = _timeline_code(x, th, sg)
    if not code:
        code, confidence = _gpu_side_code(x, th, sg)
    elif code != "communication_bound" and confidence != "low":
        top = sorted(sg.costs.values(), reverse=True)
        confidence = "high" if top[0] >= 2 * max(top[1], 1e-12) and x.steps_source and \
            not x.steps_source.startswith("repeat") else "medium"
    g = sg.g
    if code == "overhead_bound" and sg.unexplained_to_overhead and \
            g["other"] > g["overhead"] + g["sync"]:
        confidence = "low"  # mostly idle time no phase or CUDA call explains
    return code, confidence, fired, ev


def _idle_evidence(code: str, x: VerdictInputs, th: Thresholds, sg: _Signals) -> list[Evidence]:
    """Evidence rows of a timeline code (input, overhead, launch bound)."""
    g, ev = sg.g, []
    if code == "input_bound":
        ev.append(Evidence("gaps.input_share", g["input"], th.input_bound_verdict_share, ">=", "timeline"))
        if g["transfer"]:
            ev.append(Evidence("gaps.transfer_share", g["transfer"], None, "info", "timeline"))
        if "data" in x.phase_share:
            ev.append(Evidence("phases.data_share", x.phase_share["data"], th.input_bound_data_share,
                               ">", "nvtx"))
    elif code == "overhead_bound":
        ev.append(Evidence("gaps.overhead_share", g["overhead"], th.overhead_share, ">=", "timeline"))
        ev.append(Evidence("gaps.sync_share", g["sync"], th.overhead_share, ">=", "timeline"))
        if sg.unexplained_to_overhead:
            ev.append(Evidence("gaps.other_share", g["other"], None, "info", "timeline"))
        if "overhead" in x.phase_share:
            ev.append(Evidence("phases.overhead_share", x.phase_share["overhead"], th.overhead_share,
                               ">", "nvtx"))
    elif code == "launch_bound":
        ev.append(Evidence("gaps.launch_share", g["launch"], th.overhead_share, ">=", "timeline"))
        ev.append(Evidence("kernels.small_kernel_frac", x.small_kernel_frac,
                           th.launch_bound_small_kernel_frac, ">=", "timeline"))
    return ev


def _gpu_evidence(code: str, x: VerdictInputs, th: Thresholds, sg: _Signals) -> list[Evidence]:
    """Evidence rows of a GPU-side code (memory bound, Tensor Cores unused, compute bound)."""
    dram, tensor, ev = sg.dram, sg.tensor, []
    if code == "memory_bound":
        if dram is not None:
            ev.append(Evidence("gpu_metrics.dram_bandwidth_util", dram, th.memory_bound_dram_util, ">=",
                               "gpu_metrics"))
        if tensor is not None:
            ev.append(Evidence("gpu_metrics.tensor_active", tensor, th.tensor_core_share_ok, "<",
                               "gpu_metrics"))
        if x.roofline_memory_share is not None:
            ev.append(Evidence("roofline.memory_bound_share", x.roofline_memory_share,
                               MEMORY_BOUND_ROOFLINE_SHARE, ">=", "ncu"))
        ev.append(Evidence("kernels.elementwise_share", sg.ew_share, th.elementwise_share_memory_bound,
                           ">=", "kernel names"))
    elif code == "compute_bound_no_tensor_cores":
        ev.append(Evidence("tensor_cores.non_tc_gemm_share", x.non_tc_gemm_share,
                           th.non_tc_gemm_share_flag, ">=", "kernel names"))
        if tensor is not None:
            ev.append(Evidence("gpu_metrics.tensor_active", tensor, th.tensor_core_share_ok, "<",
                               "gpu_metrics"))
    elif code == "compute_bound":
        if x.tc_share_of_kernel_time is not None:
            ev.append(Evidence("tensor_cores.share_of_kernel_time", x.tc_share_of_kernel_time, None,
                               "info", "kernel names" if tensor is None else "gpu_metrics"))
        m = x.metrics or {}
        if x.metrics and m.get("sm_active") is not None:
            ev.append(Evidence("gpu_metrics.sm_active", m["sm_active"], None, "info", "gpu_metrics"))
    return ev


def _recommendations(code: str, x: VerdictInputs, fired: list[str]) -> tuple[list[str], tuple[str, ...]]:
    """(advice: the chosen code's first, then the secondary codes' first lines; secondary codes)."""
    recs: list[str] = list(RECOMMENDATIONS[code])
    if code == "memory_bound" and not x.has_backward and x.phase_share:
        recs[1:1] = list(RECOMMENDATIONS["memory_bound_inference"])
    if code == "compute_bound_no_tensor_cores" and x.non_tc_gemm_kernels:
        names = ", ".join(n for n, _ in x.non_tc_gemm_kernels[:3])
        recs.append(f"Kernels to check first (GEMM/conv without Tensor Cores): {names}.")
    secondary = tuple(dict.fromkeys(c for c in fired if c != code))
    for s in secondary:
        recs.append(RECOMMENDATIONS[s][0])
    return recs, secondary


def diagnose(x: VerdictInputs, th: Thresholds | None = None) -> Verdict:
    """Exactly one verdict (see module docstring for the rules)."""
    th = th or Thresholds()
    if (not x.has_kernels or x.window_ms <= 0) and x.kernel_level_only and \
            x.roofline_memory_share is not None:
        return _kernel_level(x)
    if not x.has_kernels or x.window_ms <= 0:
        return _insufficient(x)
    sg = _signals(x, th)
    code, confidence, fired, ev = _choose(x, th, sg)
    ev += _idle_evidence(code, x, th, sg) + _gpu_evidence(code, x, th, sg)
    if x.copy_only_share > 0.05:
        ev.append(Evidence("gpu.copy_only_share", x.copy_only_share, None, "info", "timeline"))
    if x.data_warnings and confidence != "low":
        confidence = _lower(confidence)
    if x.steps_source is None and confidence == "high" and code not in ("memory_bound",):
        confidence = "medium"

    recs, secondary = _recommendations(code, x, fired)
    mem_rec, mem_ev = _memory_advice(x, th)
    if mem_rec and mem_ev is not None:
        recs.append(mem_rec)
        ev.append(mem_ev)
    recs = list(dict.fromkeys(recs))
    costs, comm, u = sg.costs, sg.comm, sg.u
    return Verdict(code=code, headline=_headline(code, x, costs, comm, u, sg.ew_share, sg.dram),
                   confidence=confidence, scale_advice=_scale_advice(code, x, costs, comm, u),
                   evidence=tuple(ev), recommendations=tuple(recs),
                   projected_step_ms_if_fixed=_project(code, x, costs, comm, u, x.step_ms),
                   secondary=secondary)


def _project(code, x: VerdictInputs, costs, comm, u, step) -> float | None:
    if step is None or step <= 0:
        return None
    if code == "input_bound":
        data = x.phase_ms.get("data")
        if data:
            return max(data, step - data)
        return step * (1 - costs["input_bound"])
    if code in ("overhead_bound", "launch_bound"):
        return step * (1 - costs[code])
    if code == "communication_bound":
        return step * (1 - comm)
    if code == "compute_bound_no_tensor_cores" and x.non_tc_gemm_share:
        kernel_ms = u * step
        return step - kernel_ms * x.non_tc_gemm_share * (1 - 1 / NON_TC_ASSUMED_SPEEDUP)
    return None


def _headline(code, x: VerdictInputs, costs, comm, u, ew_share, dram) -> str:
    util = f"GPU utilization {_pct(u)}"
    if code == "input_bound":
        g = x.gap_share
        if float(g.get("transfer", 0.0)) > float(g.get("input", 0.0)):
            return (f"Input-bound: the SMs idle {_pct(costs['input_bound'])} of the time while "
                    f"host↔device copies run (copy engines busy is not utilization); {util}.")
        data = x.phase_share.get("data")
        part = f" (data phase {_pct(data)} of the step)" if data else ""
        return (f"Input-bound: the GPU waits for input {_pct(costs['input_bound'])} of the time"
                f"{part}; {util}.")
    if code == "overhead_bound":
        g = x.gap_share
        named = float(g.get("overhead", 0.0)) + float(g.get("sync", 0.0))
        if float(g.get("other", 0.0)) > named:
            return (f"Host-bound: the GPU idles {_pct(costs['overhead_bound'])} of the time while "
                    f"the CPU works outside CUDA calls and outside any data/overhead phase "
                    f"(unattributed host overhead — add NVTX phases to name it); {util}.")
        return (f"Overhead-bound: logging/checkpoint/eval phases and host synchronization keep "
                f"the GPU idle {_pct(costs['overhead_bound'])} of the time; {util}.")
    if code == "launch_bound":
        return (f"Launch-bound: {_pct(x.small_kernel_frac)} of kernels run < 10 µs and the GPU "
                f"idles {_pct(costs['launch_bound'])} of the time between launches; {util}.")
    if code == "communication_bound":
        return (f"Communication-bound: {_pct(comm)} of the step is communication not hidden "
                f"behind compute; {util}.")
    if code == "memory_bound":
        basis = (f"DRAM bandwidth at {_pct(dram)} of peak" if dram is not None else
                 f"{_pct(ew_share)} of kernel time in elementwise/reduction kernels")
        return f"Memory-bound: {basis}; the kernels wait on memory, not math; {util}."
    if code == "compute_bound_no_tensor_cores":
        return (f"Compute-bound without Tensor Cores: {_pct(x.non_tc_gemm_share)} of kernel time "
                f"is GEMM/conv on CUDA cores; {util}.")
    tc = (f"; {_pct(x.tc_share_of_kernel_time)} of kernel time on Tensor Cores"
          if x.tc_share_of_kernel_time is not None else "")
    return f"Compute-bound: the GPU is busy computing ({util}){tc}."


def _scale_advice(code, x: VerdictInputs, costs, comm, u) -> str:
    idle = _pct(1 - u)
    if code == "input_bound":
        return (f"More or bigger GPUs will not help: each GPU already idles {idle} of the time "
                "waiting for input, and N GPUs would wait N times as expensively. Fix the input "
                "pipeline first.")
    if code == "overhead_bound":
        return ("More GPUs will not help: host-side overhead (checkpoint/logging/syncs) does not "
                "shrink with more GPUs and a faster GPU only idles longer. Remove the overhead first.")
    if code == "launch_bound":
        return ("A bigger GPU will make this worse (kernels finish sooner, the CPU still launches at "
                "the same rate); more GPUs do not help per-GPU efficiency. Reduce launches first "
                "(CUDA graphs, fusion).")
    if code == "communication_bound":
        return ("Adding GPUs will make it worse: exposed communication grows with the number of "
                "ranks. Improve overlap or communicate less first; a faster interconnect helps.")
    if code == "memory_bound":
        return ("A GPU with more memory bandwidth (e.g. HBM3/HBM3e) speeds this up; more GPUs help "
                "throughput (data parallel) but each stays memory-bound. Fusion and lower "
                "precision are cheaper first steps.")
    if code == "compute_bound_no_tensor_cores":
        return ("Do not buy GPUs yet: the math runs on CUDA cores; enabling Tensor Cores "
                "(mixed precision/TF32) is typically a several-fold speed-up on the same hardware.")
    exposed = f" (exposed communication now {_pct(x.comm_exposed_share)})" \
        if x.comm_exposed_share is not None else ""
    return ("Yes: the GPU is the bottleneck, so a faster GPU or more GPUs (data parallel) will "
            f"help, close to linearly while communication stays hidden{exposed}.")
